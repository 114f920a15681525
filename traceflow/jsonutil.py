"""JSON output: NaN/inf become null, NumPy scalars and arrays become Python values."""
import json
import math


def jsonable(obj):
    """A JSON-safe copy of ``obj`` (dicts, lists, tuples, floats, NumPy values, nested)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if getattr(obj, "ndim", 0) > 0 and hasattr(obj, "tolist"):  # numpy arrays
        return jsonable(obj.tolist())
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars and 0-d arrays
        return jsonable(obj.item())
    return obj


def dumps(obj, **kwargs):
    """``json.dumps(jsonable(obj))`` with a 2-space indent unless told otherwise."""
    kwargs.setdefault("indent", 2)
    return json.dumps(jsonable(obj), **kwargs)

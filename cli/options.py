"""Options and helpers shared by several commands."""
import json
import sys

import click


def json_option(f):
    return click.option("--json", "as_json", is_flag=True,
                        help="Print a machine-readable JSON summary on stdout.")(f)


def echo_json(obj):
    """Print ``obj`` as JSON (NaN/inf become null) on stdout."""
    click.echo(json.dumps(_clean(obj), indent=2, sort_keys=False))


def _clean(obj):
    import math

    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if getattr(obj, "ndim", 0) > 0 and hasattr(obj, "tolist"):  # numpy arrays
        return _clean(obj.tolist())
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars and 0-d arrays
        return _clean(obj.item())
    return obj


def progress(iterable=None, length=None, label=None):
    """A progress bar on stderr (hidden when stderr is not a terminal)."""
    return click.progressbar(iterable, length=length, label=label, file=sys.stderr,
                             show_eta=True, show_pos=True)

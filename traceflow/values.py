"""Dotted keys and command-line values for nested TOML-like dicts (scenarios, models).

One implementation behind ``--set``, ``--grid`` and the model → scenario merge of ``replay``.
"""
import copy
import re
import tomllib
from pathlib import Path

from traceflow.errors import ScenarioError


def parse_value(text):
    """A command-line value as TOML (``10``, ``2.5``, ``true``, ``"red"``, ``[1, 2]``, inline
    tables); anything that is not a TOML value is taken as a bare string (``droptail``)."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text.strip()


def merge(base, over, *, replace=()):
    """A deep copy of ``base`` with ``over`` merged in: nested tables merge key by key, anything
    else (and the tables named in ``replace``) is replaced whole."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict) and k not in replace:
            out[k] = merge(out[k], v, replace=replace)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _step(node, part, key):
    """The child ``part`` of a table or list (list indices as numbers)."""
    if isinstance(node, list):
        if not part.isdigit() or int(part) >= len(node):
            raise ScenarioError(f"cannot set {key}: no list element {part}")
        return int(part)
    if not isinstance(node, dict):
        raise ScenarioError(f"cannot set {key}: {part} is inside a value, not a table")
    return part


def set_dotted(tree, key, value):
    """``tree["a"]["b"] = value`` for ``key="a.b"``, in place; missing tables are created and
    numeric parts index lists (``traffic.0.count``)."""
    *parents, leaf = key.split(".")
    node = tree
    for part in parents:
        index = _step(node, part, key)
        if isinstance(node, dict) and index not in node:
            node[index] = {}
        node = node[index]
    node[_step(node, leaf, key)] = value


def get_dotted(tree, key, default=None):
    """The value at dotted ``key`` of a nested dict, or ``default``."""
    node = tree
    for part in key.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return default
    return node


def apply_overrides(tree, overrides):
    """A copy of ``tree`` with ``path.key=value`` strings applied (``--set``; values by
    :func:`parse_value`)."""
    tree = copy.deepcopy(tree)
    for item in overrides or ():
        if "=" not in item:
            raise ScenarioError(f"--set {item!r}: expected path.key=value")
        key, value = item.split("=", 1)
        set_dotted(tree, key.strip(), parse_value(value))
    return tree


def read_toml(path, *, text=None):
    """The dict of a TOML file (or of ``text``, ``path`` then only names it in errors);
    a missing file or bad TOML is a :class:`ScenarioError` naming ``path``."""
    try:
        if text is None:
            text = Path(path).read_text()
        return tomllib.loads(text)
    except FileNotFoundError:
        raise ScenarioError("scenario file not found", path=path) from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"invalid TOML: {exc}", path=path) from None


_RATE_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_RATE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgGtT]?)"
                      r"(bit|bps|b|Bps|B|byte|bytes)?(/s)?\s*$")


def parse_rate(text):
    """A rate in bit/s from ``10e6``, ``1.5Mbit``, ``100 kbit/s``, ``2Gbps``, ``1.5Mb/s`` or
    ``12.5MB/s`` (SI prefixes, powers of 1000; ``B``/``byte`` means bytes: ×8)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        m = _RATE_RE.match(str(text))
        if not m or (m.group(2) and m.group(2) not in "kMGTmgt") or \
                (m.group(4) and not m.group(3)):
            raise ScenarioError(f"bad rate {text!r} (examples: 10e6, 1.5Mbit, 100kbit/s, 2Gbps)")
        number, prefix, unit = m.group(1), m.group(2), m.group(3) or ""
        value = float(number) * _RATE_PREFIX[prefix.lower()] * (8 if unit[:1] == "B" else 1)
    if not value > 0 or value == float("inf"):
        raise ScenarioError(f"rate must be positive, got {text!r}")
    return value

"""The papers' set-ups value by value (``replays/setups.toml``, issue 45): what each paper states
(file:line), the ns release defaults of its year where it is silent ("era", dated by ns-2's own
``tcl/lib/ns-default.tcl``), and our choices with their reasons; and the departures of a scenario
file or an ns-2 script from them.

Functions: :func:`values` (the table), :func:`lookup` (a dotted path in a replay file),
:func:`departures` (values a scenario file does not use), :func:`ns2_defaults` (the ``array set
P`` defaults of an ns-2 oracle script) and :func:`ns2_departures`.
"""
from __future__ import annotations

import importlib.resources
import math
import re
import tomllib
from pathlib import Path

KINDS = ("stated", "era", "choice")


def _replays():
    return importlib.resources.files("traceflow.replays")


def values(paper=None, kind=None):
    """The ``[[value]]`` entries of ``replays/setups.toml`` (optionally one paper's / kind's)."""
    table = tomllib.loads((_replays() / "setups.toml").read_text())["value"]
    return [v for v in table if (paper is None or v["paper"] == paper)
            and (kind is None or v["kind"] == kind)]


def load_file(name):
    """The parsed ``replays/<name>.toml``."""
    return tomllib.loads((_replays() / f"{name}.toml").read_text())


MISSING = object()


def lookup(spec, path):
    """The value at dotted ``path`` of a parsed replay file (integers index arrays); a sentinel
    ``MISSING`` when a key is absent."""
    node = spec
    for key in path.split("."):
        if isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        elif isinstance(node, dict) and key in node:
            node = node[key]
        else:
            return MISSING
    return node


def same(a, b):
    """Equal values, floats within a relative 1e-9 (lists element-wise)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)
    return a == b


def departures(entries=None):
    """``[(entry, what the file uses)]`` for every entry whose replay file does not use its value
    (a missing key counts as a departure)."""
    out = []
    for v in values() if entries is None else entries:
        used = lookup(load_file(v["file"]), v["path"])
        if used is MISSING or not same(used, v["value"]):
            out.append((v, None if used is MISSING else used))
    return out


_ARRAY = re.compile(r"array set P \{(.*?)\n\}", re.S)
_TOKEN = re.compile(r'"[^"]*"|\{[^}]*\}|\S+')


def ns2_defaults(script):
    """``{param: value}`` of the ``array set P {...}`` block of ``script`` (a path), values as
    the Tcl strings (quotes and braces stripped)."""
    m = _ARRAY.search(Path(script).read_text())
    if m is None:
        raise ValueError(f"{script}: no 'array set P {{...}}' block")
    body = "\n".join(line.split("#", 1)[0] for line in m.group(1).splitlines())
    tokens = [t.strip('"{}') if t[0] in '"{' else t for t in _TOKEN.findall(body)]
    return dict(zip(tokens[::2], tokens[1::2]))


def ns2_departures(ns2_dir, entries=None):
    """``[(entry, the script's default)]`` for every entry with an ``ns2`` table whose script's
    default ``P(param)`` differs from it (compared as numbers where both parse)."""
    out = []
    for v in values() if entries is None else entries:
        if "ns2" not in v:
            continue
        ns2 = v["ns2"]
        got = ns2_defaults(Path(ns2_dir) / ns2["script"]).get(ns2["param"])
        want = str(ns2["value"])
        if got is None or not _tcl_equal(got, want):
            out.append((v, got))
    return out


def _tcl_equal(a, b):
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-9)
    except ValueError:
        return a == b

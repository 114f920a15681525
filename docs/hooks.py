"""MkDocs hook: pages generated from the code at build time, so they cannot drift from it.

``<!-- generated: model-fields -->`` becomes the fields of :class:`traceflow.models.model.Model`
(recursively, with types, defaults and the comments beside each field in model.py), and
``<!-- generated: scenario-keys -->`` the scenario keys of :mod:`traceflow.sim.scenario` (types,
defaults, bounds and ``doc`` from each field's ``meta()``), with the parameters of every
registered queue discipline and sender hook. A field someone adds appears on the next build.
"""
from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from pathlib import Path

_FIELD = re.compile(r"^\s+(\w+)\s*:\s*[^=#]+?(?:=.*?)?(?:#\s*(?P<comment>.*))?$")


def _type_name(tp) -> str:
    text = tp if isinstance(tp, str) else getattr(tp, "__name__", None) or repr(tp)
    return re.sub(r"\b(?:typing|traceflow\.[\w.]+)\.", "", str(text)).replace("|", "\\|")


def _hints(cls) -> dict:
    """``cls``'s field annotations, resolved where its module can resolve them."""
    try:
        return typing.get_type_hints(cls)
    except NameError:  # a name only a type checker imports: keep that annotation's text
        return {}


def _cell(text) -> str:
    """``text`` made safe for a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _comments(cls) -> dict[str, str]:
    """Each field's comment in ``cls``'s source: the ``# ...`` after it, or the ``#:`` lines
    above it."""
    out, above = {}, []
    for line in inspect.getsource(cls).splitlines():
        stripped = line.strip()
        if stripped.startswith("#:"):
            above.append(stripped[2:].strip())
            continue
        m = _FIELD.match(line)
        if m and ":" in stripped and not stripped.startswith(("def ", "return", "class ")):
            out[m.group(1)] = " ".join(above + ([m["comment"]] if m["comment"] else []))
        above = [] if not stripped.startswith("#") else above
    return out


def _from_doc(cls, name) -> str:
    """What ``cls``'s docstring says of field ``name`` ("``name`` the ..."), up to the end of
    its clause; empty when the docstring does not name it at the head of a clause."""
    doc = " ".join((inspect.getdoc(cls) or "").split())
    m = re.search(r"``%s``\s*(?:=\s*|is\s+)?(.*?)(?=[,;.](?:\s+``|\s*$)|$)" % re.escape(name), doc)
    if m is None or not m.group(1)[:1].isalnum():
        return ""
    text, depth = m.group(1), 0
    for i, ch in enumerate(text):  # a ';' outside parentheses ends the clause
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and ch == ";":
            return text[:i]
    return text


#: model.py's unit convention: a field's unit from the end of its name
UNITS = {"_ns": "ns", "_per_s": "1/s", "_s": "s", "_bps": "bit/s", "_bytes": "bytes",
         "bytes": "bytes", "_share": "share", "_pkts": "packets"}


def _unit(name) -> str:
    return next((unit for end, unit in UNITS.items() if name.endswith(end)), "")


def _default(f) -> str:
    if f.default is not dataclasses.MISSING:
        return f"`{f.default!r}`"
    if f.default_factory is not dataclasses.MISSING:
        try:
            value = f.default_factory()
        except TypeError:
            return ""
        return "" if dataclasses.is_dataclass(value) else f"`{value!r}`"
    return "required"


def _nested(tp):
    """The dataclass inside an annotation (``Tail | None``, ``list[Traffic]``), or None."""
    if dataclasses.is_dataclass(tp):
        return tp
    for arg in typing.get_args(tp):
        inner = _nested(arg)
        if inner is not None:
            return inner
    return None


def _doc(cls) -> str:
    doc = inspect.getdoc(cls) or ""
    return "" if doc.startswith(cls.__name__ + "(") else doc  # dataclasses' generated signature


class _Tables:
    """Markdown tables of a dataclass and, after it, of each dataclass its fields hold.

    ``columns``: the header names after ``type | default``; ``cells(cls, field)``: their values;
    ``title(cls, path)``: a table's heading."""

    def __init__(self, columns, cells, title):
        self.columns, self.cells, self.title = columns, cells, title
        self.lines, self.seen = [], set()

    def add(self, cls, path, title=None):
        if cls in self.seen:
            return
        self.seen.add(cls)
        hints = _hints(cls)
        self.lines.extend([f"### {title or self.title(cls, path)}", "", _doc(cls), "",
                           "| " + " | ".join(["field", "type", "default", *self.columns]) + " |",
                           "|---" * (len(self.columns) + 3) + "|"])
        later = []
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            tp = hints.get(f.name, f.type)
            inner = _nested(tp)
            cells = [_cell(c) for c in self.cells(cls, f)]
            if inner is not None and not cells[-1]:  # a table of its own: its first sentence
                cells[-1] = _cell(" ".join(_doc(inner).split()).split(". ")[0].rstrip("."))
            self.lines.append(f"| `{f.name}` | {_type_name(tp)} | {_default(f)} | "
                              + " | ".join(cells) + " |")
            if inner is not None:
                later.append((inner, f"{path}.{f.name}" if path else f.name))
        self.lines.append("")
        for inner, sub in later:
            self.add(inner, sub)


def model_fields() -> str:
    from traceflow.models import model

    tables = _Tables(["unit", "meaning"],
                     lambda cls, f: [_unit(f.name),
                                     _comments(cls).get(f.name) or _from_doc(cls, f.name)],
                     lambda cls, path: f"`{path or 'model.json'}` ({cls.__name__})")
    tables.add(model.Model, "")
    return "\n".join(tables.lines)


def _bounds(md) -> str:
    return ", ".join(f"{k} {md[k]!r}" for k in ("min", "max", "gt", "choices")
                     if md.get(k) is not None)


def scenario_keys() -> str:
    from traceflow.sim import scenario

    tables = _Tables(["bounds", "meaning"],
                     lambda cls, f: [_bounds(f.metadata), f.metadata.get("doc", "")],
                     lambda cls, path: f"`[{path}]`")
    for f in dataclasses.fields(scenario.Scenario):
        inner = _nested(_hints(scenario.Scenario).get(f.name))
        if inner is not None:
            tables.add(inner, f.name, f"`[[{f.name}]]`" if f.name == "traffic" else None)
    for heading, registry in (("Queue disciplines (`queue = {kind = ...}`)", scenario.QUEUES),
                              ("Sender hooks (`hook = {kind = ...}`)", scenario.HOOKS)):
        tables.lines += [f"## {heading}", ""]
        for kind, reg in sorted(registry.items()):
            tables.add(reg.params, kind, f"`kind = \"{kind}\"`")
    return "\n".join(tables.lines)


GENERATED = {"<!-- generated: model-fields -->": model_fields,
             "<!-- generated: scenario-keys -->": scenario_keys}


def on_page_markdown(markdown, page, config, files):
    for marker, make in GENERATED.items():
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return markdown


#: pages other work adds: listed at the end of the navigation once they exist
OPTIONAL_PAGES = {"bbr.md": "BBR validation", "scale.md": "Scaling"}


def on_config(config):
    docs = Path(config["docs_dir"])
    for page, title in OPTIONAL_PAGES.items():
        if (docs / page).exists():
            config["nav"].append({title: page})
    return config

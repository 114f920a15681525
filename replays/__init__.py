"""Scenario files reproducing the source papers' experiments and replay templates (installed as
traceflow.replays).

Commands that take a scenario (``simulate``, ``sweep``, ``replay --scenario``) accept a file path or
the name of a bundled scenario (``dumbbell``, ``replay_testbed``, ...): :func:`resolve_scenario`.
``traceflow scenarios list`` shows them all.
"""
import importlib.resources
import tomllib
from pathlib import Path


def bundled():
    """``{name: path}`` of every bundled scenario file, by name."""
    root = importlib.resources.files(__name__)
    return {Path(r.name).stem: Path(str(r)) for r in sorted(root.iterdir(), key=lambda r: r.name)
            if r.name.endswith(".toml")}


def describe(path):
    """``(kind, one-line description)`` of a scenario file: kind "experiment" for the paper
    reproductions (``traceflow reproduce NAME``), else "scenario"."""
    try:
        doc = tomllib.loads(Path(path).read_text())
    except tomllib.TOMLDecodeError as exc:
        return "invalid", f"invalid TOML: {exc}"
    if isinstance(doc.get("experiment"), dict):
        exp = doc["experiment"]
        return "experiment", f"{exp.get('title', '')} ({exp.get('reproduces', '')})"
    return "scenario", str(doc.get("description") or doc.get("name") or "")


def resolve_scenario(spec):
    """The path of scenario ``spec``: an existing file, else a bundled scenario of that name
    (``dumbbell`` or ``dumbbell.toml``). Anything else is a one-line "not found" error (never an
    "invalid TOML" complaint about the name itself)."""
    from traceflow.errors import ScenarioError

    path = Path(spec)
    if path.is_file():
        return path
    if path.exists():
        raise ScenarioError("is not a file", path=spec)
    names = bundled()
    name = path.name.removesuffix(".toml") if path.parent == Path(".") else None
    if name in names:
        return names[name]
    raise ScenarioError("scenario not found (neither a file nor a bundled scenario: "
                        "traceflow scenarios list)", path=spec)

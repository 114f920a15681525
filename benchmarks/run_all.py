"""Run every ``benchmarks/bench_*.py`` and print one table of side-by-side ratios.

Each benchmark module defines ``run(quick=False) -> list[dict]`` with rows
``{"benchmark", "ours", "reference", "unit", "ratio", "target", "ok"}`` (optionally ``"note"``),
ours and reference measured in the same run. A module that fails, or that lacks an optional tool
(an ImportError or a missing executable), becomes one row saying so; the table is still printed.

    python benchmarks/run_all.py [--quick] [--json PATH] [--only NAME] [--strict] [--dir DIR]

Exit status: 1 when a benchmark crashed (or, with ``--strict``, missed its target), else 0.
"""
import argparse
import contextlib
import importlib.util
import json
import math
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # spawned workers import bench modules by name
    sys.path.insert(0, str(HERE))
COLUMNS = ("benchmark", "ours", "reference", "unit", "ratio", "target", "ok")


def discover(only=None, root=HERE):
    """The benchmark module files, sorted by name (``only`` keeps names containing it)."""
    files = sorted(Path(root).glob("bench_*.py"))
    return [f for f in files if not only or any(o in f.stem for o in only)]


def load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    # Registered so task functions defined in the module pickle by reference for worker processes.
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def run_module(path, quick):
    """Rows of one benchmark module; a failure becomes one row with ``status`` and ``note``."""
    name = path.stem.removeprefix("bench_")
    start = time.perf_counter()
    try:
        # Progress lines a benchmark prints go to stderr: stdout holds only the table.
        with contextlib.redirect_stdout(sys.stderr):
            rows = list(load(path).run(quick=quick))
    except (ImportError, FileNotFoundError) as exc:
        # An optional oracle (nolds, tshark, ns-2 ...) or data set is missing here.
        return [_status_row(name, "SKIP", f"missing: {exc}")]
    except Exception as exc:  # noqa: BLE001 - report it in the table and keep going
        traceback.print_exc(file=sys.stderr)
        return [_status_row(name, "ERROR", f"{type(exc).__name__}: {exc}")]
    if not rows:
        return [_status_row(name, "SKIP", "produced no rows")]
    elapsed = time.perf_counter() - start
    out = []
    for row in rows:
        missing = [c for c in COLUMNS if c not in row]
        if missing:
            out.append(_status_row(row.get("benchmark", name), "ERROR",
                                   f"row lacks {', '.join(missing)}"))
            continue
        row = dict(row)
        row["ok"] = bool(row["ok"])
        row.setdefault("status", "ok" if row["ok"] else "MISS")
        row.setdefault("module", path.name)
        row["seconds"] = round(elapsed, 2)
        out.append(row)
    return out


def _status_row(name, status, note):
    return {"benchmark": name, "ours": math.nan, "reference": math.nan, "unit": "",
            "ratio": math.nan, "target": "", "ok": False, "status": status, "note": note}


def _fmt(value):
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:.4g}"
    return str(value)


def format_table(rows):
    """The rows as an aligned text table (status and note columns last)."""
    header = [*COLUMNS, "status", "note"]
    cells = [[_fmt(r.get(c, "")) for c in header] for r in rows]
    widths = [max(len(h), *(len(row[i]) for row in cells)) if cells else len(h)
              for i, h in enumerate(header)]
    numeric = {"ours", "reference", "ratio"}
    lines = []
    for row in [header, ["-" * w for w in widths], *cells]:
        parts = [v.rjust(w) if h in numeric else v.ljust(w)
                 for v, w, h in zip(row, widths, header)]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small inputs (a smoke run)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON to PATH")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run only benchmark modules whose name contains NAME (repeatable)")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 when a benchmark misses its target")
    parser.add_argument("--dir", default=HERE, type=Path,
                        help="directory of the bench_*.py modules (default: this one)")
    args = parser.parse_args(argv)

    rows = []
    for path in discover(args.only, args.dir):
        print(f"running {path.name} ...", file=sys.stderr, flush=True)
        rows += run_module(path, args.quick)
    if not rows:
        print("no benchmarks found", file=sys.stderr)
        return 1
    print(format_table(rows))
    if args.json:
        clean = [{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                  for k, v in r.items()} for r in rows]
        Path(args.json).write_text(json.dumps(clean, indent=2) + "\n")
    crashed = any(r["status"] == "ERROR" for r in rows)
    missed = any(r["status"] == "MISS" for r in rows)
    return 1 if crashed or (args.strict and missed) else 0


if __name__ == "__main__":
    sys.exit(main())

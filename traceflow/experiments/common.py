"""Helpers shared by the experiment runners: spec access and output files."""
import copy
import math
from pathlib import Path

from traceflow.atomic import atomic_path
from traceflow.errors import ScenarioError


def experiment(spec):
    """The ``[experiment]`` table of a replay spec."""
    exp = spec.get("experiment")
    if not isinstance(exp, dict):
        raise ScenarioError("no [experiment] table")
    return exp


def base(spec):
    """A deep copy of the base scenario: every table of the spec but ``[experiment]``."""
    return {k: copy.deepcopy(v) for k, v in spec.items() if k != "experiment"}


def duration(exp, quick):
    """Simulated seconds: the paper's ``duration`` or, in quick mode, ``quick_duration``."""
    key = "quick_duration" if quick else "duration"
    if key not in exp:
        raise ScenarioError(f"[experiment] lacks {key}")
    return float(exp[key])


def save_table(df, out_dir, name):
    """Write a Polars frame atomically as ``out_dir/name`` (Parquet); return the name."""
    with atomic_path(Path(out_dir) / name) as tmp:
        df.write_parquet(tmp)
    return name


def figure(nrows=1, ncols=1, **kw):
    """A new matplotlib figure and axes on the non-interactive Agg backend."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt.subplots(nrows, ncols, **kw)


def save_fig(fig, out_dir, name):
    """Save ``fig`` as ``out_dir/name`` through the report module and release it (pyplot keeps
    every open figure alive); return the name."""
    import matplotlib.pyplot as plt

    from traceflow.report.figures import save
    save(fig, Path(out_dir) / name)
    plt.close(fig)
    return name


def row(quantity, paper, ours, agree, note=""):
    """One paper-vs-ours comparison row of a runner's result (no verdict on a NaN of ours)."""
    if isinstance(ours, float) and not math.isfinite(ours):
        agree = None
    return {"quantity": quantity, "paper": paper, "ours": ours,
            "agree": None if agree is None else bool(agree), "note": note}

"""Helpers shared by the experiment runners: spec access and output files."""
import copy
from pathlib import Path


def experiment(spec):
    """The ``[experiment]`` table of a replay spec."""
    return spec["experiment"]


def base(spec):
    """A deep copy of the base scenario: every table of the spec but ``[experiment]``."""
    return {k: copy.deepcopy(v) for k, v in spec.items() if k != "experiment"}


def duration(exp, quick):
    """Simulated seconds: the paper's ``duration`` or, in quick mode, ``quick_duration``."""
    return float(exp["quick_duration"] if quick else exp["duration"])


def save_table(df, out_dir, name):
    """Write a Polars frame as ``out_dir/name`` (Parquet); return the name for the manifest."""
    df.write_parquet(Path(out_dir) / name)
    return name


def figure(nrows=1, ncols=1, **kw):
    """A new matplotlib figure and axes on the non-interactive Agg backend."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt.subplots(nrows, ncols, **kw)


def save_fig(fig, out_dir, name):
    """Save ``fig`` as ``out_dir/name`` through the report module; return the name."""
    from traceflow.report.figures import save
    save(fig, Path(out_dir) / name)
    return name


def row(quantity, paper, ours, agree, note=""):
    """One paper-vs-ours comparison row of a runner's result."""
    return {"quantity": quantity, "paper": paper, "ours": ours,
            "agree": None if agree is None else bool(agree), "note": note}

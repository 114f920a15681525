"""Sweep throughput: the same small sweep with 1 worker (inline) and with 2 worker processes.

Target: 2 workers finish at least 1.8x as many cells per second as 1 worker on a 2-core machine
(process start-up and result collection are the only overhead a sweep may add). The cells are real
simulations when the simulator is built (the dumbbell of replays/dumbbell.toml at 50 Mb/s,
400 simulated seconds, about 1 s of CPU each), else a CPU-bound NumPy stand-in. The ratio is
only meaningful on an otherwise idle machine.
"""
import json
import os
import tempfile
from pathlib import Path

import numpy as np
from timing import timed

from traceflow.scale.sweep import run_sweep

TARGET = 1.8


def cpu_cell(scenario):
    """A CPU-bound stand-in for a simulation (single-threaded NumPy work, seeded)."""
    rng = np.random.default_rng(scenario["simulation"]["seed"])
    total = 0.0
    for _ in range(scenario["rounds"]):
        x = rng.normal(size=200_000)
        total += float(np.sort(np.cumsum(x))[len(x) // 2])
    return {"median_walk": total / scenario["rounds"]}


def _setup(quick):
    """(task, base scenario, grid, description): real simulator cells when it is built."""
    cells = 8 if quick else 24
    try:
        from importlib.resources import files

        from traceflow.scale.parallel import run_summary
        from traceflow.sim import load_scenario as validate
        from traceflow.scale.sweep import load_scenario, set_dotted

        base, _ = load_scenario(files("traceflow.replays") / "dumbbell.toml")
        set_dotted(base, "simulation.duration", 60.0 if quick else 400.0)
        set_dotted(base, "topology.bottleneck.rate", 5e7)
        validate(base)
        grid = {"topology.bottleneck.queue.limit": list(range(20, 20 + cells))}
        return run_summary, base, grid, f"{cells} dumbbell simulations"
    except ImportError:
        base = {"simulation": {"seed": 5}, "rounds": 40 if quick else 60}
        return cpu_cell, base, {"cell": list(range(cells))}, f"{cells} NumPy stand-in cells"


def _throughput(task, base, grid, workers):
    """(cells per second, mean wall time of one cell in s) of one sweep run."""
    with tempfile.TemporaryDirectory() as tmp:
        result, elapsed = timed(run_sweep, base, grid, Path(tmp) / "sweep", task=task,
                                workers=workers, progress=False)
        cell_seconds = [json.loads(p.read_text())["seconds"]
                        for p in (Path(tmp) / "sweep" / "cells").glob("*.json")]
    assert not result.failed, result.failed
    return result.total / elapsed, sum(cell_seconds) / len(cell_seconds)


def run(quick=False):
    task, base, grid, kind = _setup(quick)
    load = os.getloadavg()[0]
    one, cell_one = _throughput(task, base, grid, workers=1)
    two, cell_two = _throughput(task, base, grid, workers=2)
    ratio = two / one
    # A cell that takes longer with 2 workers than alone means the 2 CPUs were not free.
    return [{"benchmark": f"sweep throughput, 2 vs 1 workers ({kind})", "ours": two,
             "reference": one, "unit": "cells/s", "ratio": ratio, "target": f">= {TARGET}",
             "ok": ratio >= TARGET,
             "note": f"one cell {cell_one:.2f} s alone, {cell_two:.2f} s with 2 workers; load "
                     f"average {load:.1f} before, {os.getloadavg()[0]:.1f} after, "
                     f"{os.cpu_count()} CPUs"}]


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)

"""Parameter sweeps: scenario × grid of overrides × replications; resumable and fault-tolerant.

A sweep directory holds::

    sweep.json            the base scenario, grid, replications and base seed (the sweep's identity)
    cells/<cell>.json     one finished cell: grid values, replication, seed, run summary, wall time
    cells/<cell>.parquet  the same as a one-row table (written last: its presence marks "done")
    failed.json           cells that still failed after their retries (absent when none did)
    results.parquet       one row per finished cell, in grid order: the grid values (columns named
                          by their dotted keys), ``replication``, ``seed``, ``cell``, then the
                          summary metrics (nested summary keys joined with dots)

Every file is written atomically (temporary file + rename) by the coordinating process, so workers
need no shared file system, an interrupted sweep leaves no partial file, and running the same sweep
again only runs the cells that are missing. Seeds come from one base seed through
:class:`numpy.random.SeedSequence` keyed by each cell's grid values and replication number, so a
cell's seed does not depend on execution order, on the worker, or on the other grid values.
"""
import contextlib
import copy
import hashlib
import itertools
import json
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from traceflow.atomic import atomic_path, remove_stale_in, write_text
from traceflow.errors import ScenarioError, TraceflowError
from traceflow.jsonutil import jsonable
from traceflow.scale.parallel import iter_tasks, run_summary
from traceflow.values import get_dotted, parse_value, read_toml, set_dotted

SEED_KEY = "simulation.seed"  # where the simulator's scenarios keep their seed
DEFAULT_SEED = 1


@contextlib.contextmanager
def _sigint_deferred():
    """Hold SIGINT until the block is done, then deliver it (main thread only: elsewhere Python
    runs no signal handler anyway)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda *args: caught.append(args))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            if callable(previous):
                previous(*caught[0])
            elif previous == signal.SIG_DFL:
                raise KeyboardInterrupt


@dataclass(frozen=True)
class Cell:
    """One run of a sweep: grid values (dotted key → value), replication number and seed."""

    index: int
    params: dict
    replication: int
    seed: int

    @property
    def key(self):
        """Stable identity of the cell: a hash of its grid values and replication."""
        return cell_key(self.params, self.replication)


def cell_key(params, replication):
    text = json.dumps({"params": params, "replication": replication}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def parse_grid(specs):
    """``["key=v1,v2", ...]`` → ``{"key": [v1, v2], ...}`` (each value by :func:`parse_value`)."""
    grid = {}
    for spec in specs:
        key, sep, values = spec.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise TraceflowError(f"bad --grid {spec!r}: expected key=v1,v2,...")
        if key in grid:
            raise TraceflowError(f"--grid {key} given twice")
        grid[key] = [parse_value(v) for v in values.split(",")]
    return grid


def derive_seed(base_seed, params, replication):
    """A 32-bit seed for one cell, independent of every other cell's."""
    digest = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).digest()
    entropy_key = (int.from_bytes(digest[:8], "little"), int(replication))
    sequence = np.random.SeedSequence(int(base_seed), spawn_key=entropy_key)
    return int(sequence.generate_state(1, np.uint32)[0])


def expand(grid, replications=1, base_seed=DEFAULT_SEED):
    """All cells: the Cartesian product of the grid (keys in the given order) × replications."""
    if replications < 1:
        raise TraceflowError(f"replications must be at least 1 (got {replications})")
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise TraceflowError(f"grid {key}: expected a non-empty list of values")
    keys = list(grid)
    cells = []
    for combo in itertools.product(*(grid[k] for k in keys)):
        params = dict(zip(keys, combo))
        for rep in range(replications):
            cells.append(Cell(len(cells), params, rep, derive_seed(base_seed, params, rep)))
    return cells


def cell_scenario(base, cell, seed_key=SEED_KEY):
    """The base scenario with the cell's overrides and seed applied (a new dict)."""
    scenario = copy.deepcopy(base)
    for key, value in cell.params.items():
        set_dotted(scenario, key, value)
    set_dotted(scenario, seed_key, cell.seed)
    return scenario


def load_scenario(path):
    """``(scenario, sweep_table)`` from a TOML scenario file; the ``[sweep]`` table is removed."""
    path = Path(path)
    scenario = read_toml(path)
    sweep = scenario.pop("sweep", {})
    unknown = set(sweep) - {"grid", "replications", "seed"}
    if unknown:
        raise ScenarioError(f"unknown [sweep] key(s): {', '.join(sorted(unknown))}", path=path)
    return scenario, sweep


# -- running -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Job:
    task: object
    scenario: dict


def _run_job(job):
    start = time.perf_counter()
    summary = job.task(job.scenario)
    return summary, time.perf_counter() - start


def flatten(summary, prefix=""):
    """Nested summary dict → ``{"a.b": scalar}``; lists and other objects become JSON strings."""
    flat = {}
    for key, value in summary.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        elif value is None or isinstance(value, (bool, int, float, str)):
            flat[name] = value
        elif isinstance(value, np.generic):
            flat[name] = value.item()
        else:
            flat[name] = json.dumps(jsonable(value))
    return flat


def _dumps(obj):
    """Strict JSON text (NaN and infinities as null, NumPy values as Python ones)."""
    return json.dumps(jsonable(obj), indent=2) + "\n"


def cell_row(cell, summary):
    row = {**cell.params, "replication": cell.replication, "seed": cell.seed, "cell": cell.key}
    for name, value in flatten(summary).items():
        row[f"summary.{name}" if name in row else name] = value
    return row


class SweepDir:
    """The files of one sweep directory (see the module docstring)."""

    def __init__(self, path):
        self.path = Path(path)
        self.cells = self.path / "cells"
        self.manifest = self.path / "sweep.json"
        self.failed = self.path / "failed.json"
        self.results = self.path / "results.parquet"

    def prepare(self, identity):
        """Create the directory, or check that it holds this same sweep; drop stale temp files."""
        if self.manifest.exists():
            old = json.loads(self.manifest.read_text())
            # Compare as JSON: that is how the identity was stored (tuples become lists ...).
            if old.get("identity") != json.loads(json.dumps(identity, default=str)):
                raise TraceflowError("holds a sweep of another scenario or base seed; "
                                     "choose another -o", path=self.path)
        elif self.path.exists() and any(self.path.iterdir()):
            raise TraceflowError("exists and is not a sweep directory", path=self.path)
        self.cells.mkdir(parents=True, exist_ok=True)
        # Left by a process killed mid-write (SIGKILL skips the cleanup in write_cell).
        remove_stale_in(self.cells)
        remove_stale_in(self.path)
        for orphan in self.cells.glob("*.json"):
            if not orphan.with_suffix(".parquet").exists():
                orphan.unlink()

    def done(self, cell):
        return (self.cells / f"{cell.key}.parquet").exists()

    def write_cell(self, cell, summary, seconds):
        import polars as pl

        record = {"cell": cell.key, "params": cell.params, "replication": cell.replication,
                  "seed": cell.seed, "seconds": seconds, "summary": summary}
        summary_path = self.cells / f"{cell.key}.json"
        with _sigint_deferred():  # an interrupt never separates a cell's two files
            try:
                write_text(summary_path, _dumps(record))
                with atomic_path(self.cells / f"{cell.key}.parquet") as tmp:
                    pl.DataFrame([cell_row(cell, summary)]).write_parquet(tmp)
            except BaseException:
                summary_path.unlink(missing_ok=True)  # failed between the two: not done
                raise

    def gather(self, cells):
        """Write results.parquet from the finished cells among ``cells`` (in their order)."""
        import polars as pl

        parts = [self.cells / f"{c.key}.parquet" for c in cells if self.done(c)]
        if not parts:
            return None
        frame = pl.concat([pl.read_parquet(p) for p in parts], how="diagonal_relaxed")
        # a value summary.json has as null (NaN: not computable) is null here too
        frame = frame.with_columns(pl.selectors.float().fill_nan(None))
        with atomic_path(self.results) as tmp:
            frame.write_parquet(tmp)
        return frame


@dataclass
class SweepResult:
    total: int
    skipped: int
    ran: int
    failed: list
    results: object  # polars.DataFrame or None
    path: Path

    def as_dict(self):
        return {"sweep_dir": str(self.path), "cells": self.total, "skipped": self.skipped,
                "ran": self.ran, "failed": [{"cell": f["cell"], "params": f["params"],
                                             "replication": f["replication"], "error": f["error"]}
                                            for f in self.failed],
                "results": str(self.path / "results.parquet") if self.results is not None else None}


def run_sweep(base, grid, out_dir, *, replications=1, base_seed=None, task=run_summary,
              seed_key=SEED_KEY, executor="local", workers=None, scheduler=None, retries=2,
              progress=True):
    """Run every cell of ``base`` × ``grid`` × ``replications`` not yet finished in ``out_dir``.

    ``base`` is a scenario dict; ``grid`` maps dotted scenario keys to lists of values;
    ``task(scenario) -> dict`` is a top-level function returning the run's summary (default: the
    simulator, :func:`traceflow.scale.parallel.run_summary`, whose scenarios are validated up front so a
    bad grid key fails at once); each cell's seed is written at ``seed_key``. The base seed
    defaults to the scenario's own seed there (else 1). A cell that still fails after
    ``retries`` retries is listed in ``failed.json`` and in the returned :class:`SweepResult`;
    the other cells are kept.
    """
    if base_seed is None:
        base_seed = get_dotted(base, seed_key, DEFAULT_SEED)
    if not isinstance(base_seed, int) or base_seed < 0:
        raise ScenarioError(f"{seed_key} must be a non-negative integer (got {base_seed!r})")
    cells = expand(grid, replications, base_seed)
    scenarios = [cell_scenario(base, c, seed_key) for c in cells]
    if task is run_summary:  # a bad key or value fails now, before any file is written
        from traceflow.sim.scenario import load_scenario as validate

        for scenario in scenarios:
            validate(scenario)
    sweep = SweepDir(out_dir)
    identity = {"scenario": base, "base_seed": base_seed,
                "task": f"{task.__module__}.{task.__qualname__}"}
    sweep.prepare(identity)
    write_text(sweep.manifest, json.dumps(
        {"identity": identity, "grid": grid, "replications": replications, "cells": len(cells)},
        indent=2, default=str) + "\n")

    todo = [c for c in cells if not sweep.done(c)]
    jobs = [_Job(task, scenarios[c.index]) for c in todo]
    failed = []
    outcomes = iter_tasks(_run_job, jobs, executor=executor, workers=workers, scheduler=scheduler,
                          retries=retries, label="cells", progress=progress,
                          done=len(cells) - len(todo), total=len(cells))
    for outcome in outcomes:
        cell = todo[outcome.index]
        if outcome.ok:
            summary, seconds = outcome.value
            sweep.write_cell(cell, summary, seconds)
        else:
            failed.append({"index": cell.index, "cell": cell.key, "params": cell.params,
                           "replication": cell.replication,
                           "seed": cell.seed, "attempts": outcome.attempts, "error": outcome.error,
                           "traceback": outcome.traceback})
    failed.sort(key=lambda f: f["index"])
    if failed:
        write_text(sweep.failed, _dumps(failed))
    else:
        sweep.failed.unlink(missing_ok=True)
    results = sweep.gather(cells)
    return SweepResult(len(cells), len(cells) - len(todo), len(todo) - len(failed), failed,
                       results, sweep.path)

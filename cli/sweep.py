"""``traceflow sweep SCENARIO.toml --grid key=v1,v2 ... -o SWEEP_DIR``: a resumable sweep."""
from pathlib import Path

import click

from traceflow.cli.options import echo_json, json_option
from traceflow.errors import TraceflowError
from traceflow.scale.parallel import executor_options, resolve_executor


def load_task(target):
    """The function named by ``"package.module:function"``."""
    import importlib

    module_name, sep, attr = target.partition(":")
    try:
        if not sep:
            raise ValueError("expected 'module:function'")
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise TraceflowError(f"bad --task {target!r}: {exc}") from None


@click.command("sweep")
@click.argument("scenario", metavar="SCENARIO")
@click.option("--grid", "grids", multiple=True, metavar="KEY=V1,V2,...",
              help="Scenario key (dotted, as for --set) and its values; repeat for more keys. "
                   "Adds to / replaces the scenario's [sweep] grid.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Fixed scenario override for every cell (dotted key, as for simulate --set).")
@click.option("--replications", type=click.IntRange(min=1), default=None,
              help="Runs per grid cell, each with its own seed (default: [sweep] replications, "
                   "else 1).")
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Base seed every cell's seed derives from (default: the scenario's seed).")
@click.option("--retries", type=click.IntRange(min=0), default=2, show_default=True,
              help="Retries of a failing cell before it is reported as failed.")
@click.option("--task", "task_name", default=None, metavar="MODULE:FUNCTION",
              help="Run this function(scenario dict) -> summary dict per cell instead of the "
                   "simulator.")
@executor_options
@click.option("-o", "--output", "out_dir", required=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="Sweep directory; rerunning into it resumes the sweep.")
@json_option
def command(scenario, grids, overrides, replications, seed, retries, task_name, executor, workers,
            scheduler, out_dir, as_json):
    """Run SCENARIO over a grid of parameter values × replications.

    Each finished cell is written to SWEEP_DIR/cells/ as it completes; SWEEP_DIR/results.parquet
    has one row per cell (grid values, replication, seed, summary metrics). Interrupt it at any
    time: the same command finishes only the missing cells. Exit status 1 if cells failed.
    SCENARIO is a TOML file or the name of a bundled scenario (traceflow scenarios list).

    \b
    Examples:
      traceflow sweep dumbbell --grid topology.bottleneck.rate=5e6,1e7 -o sweep/
      traceflow sweep dumbbell --grid tcp.cc=reno,vegas --replications 5 \\
          --set simulation.duration=30 -o sweep/ --workers 2
    """
    from traceflow.replays import resolve_scenario
    from traceflow.scale.parallel import run_summary
    from traceflow.scale.sweep import load_scenario, parse_grid, run_sweep
    from traceflow.values import apply_overrides

    base, table = load_scenario(resolve_scenario(scenario))
    base = apply_overrides(base, overrides)
    grid = {k: list(v) if isinstance(v, list) else [v] for k, v in table.get("grid", {}).items()}
    grid.update(parse_grid(grids))
    if not grid and not (replications or table.get("replications", 1)) > 1:
        raise click.UsageError("nothing to sweep: give --grid KEY=V1,V2 or --replications N "
                               "(or a [sweep] table in the scenario)")
    task = load_task(task_name) if task_name else run_summary
    result = run_sweep(base, grid, out_dir,
                       replications=replications or table.get("replications", 1),
                       base_seed=seed if seed is not None else table.get("seed"), task=task,
                       executor=resolve_executor(executor, scheduler), workers=workers,
                       scheduler=scheduler, retries=retries)
    if as_json:
        echo_json(result.as_dict())
    else:
        click.echo(f"{result.total} cells: {result.skipped} already done, {result.ran} ran, "
                   f"{len(result.failed)} failed")
        if result.results is not None:
            click.echo(f"results: {out_dir / 'results.parquet'}")
    if result.failed:
        first = result.failed[0]
        raise CellsFailed(f"{len(result.failed)} of {result.total} cells failed (first: "
                          f"{first['params']} replication {first['replication']}: "
                          f"{first['error']}); details in {out_dir / 'failed.json'}; "
                          "rerun to retry them")


class CellsFailed(TraceflowError):
    """Some cells failed: a failure of the runs, not of the user's input (exit status 1)."""

    exit_code = 1

"""``traceflow simulate SCENARIO.toml [--set path.key=value ...] [--seed N] -o RUN_DIR [--json]``."""
import sys

import click

from traceflow.cli.options import echo_json, json_option

_KEYS = ("duration_s", "throughput_bps", "link_utilization", "goodput_bps", "loss_rate",
         "retransmission_rate", "reliable_throughput", "mean_queue_pkts", "buffer_occupancy",
         "flows", "transfers", "transfers_completed", "wall_s")


class _Bar:
    """Progress bar over simulated seconds, shown for runs that take more than a moment."""

    def __init__(self):
        self.bar = None
        self.done = 0

    def __call__(self, now_s, duration_s):
        if self.bar is None:
            self.bar = click.progressbar(length=int(duration_s) or 1, label="simulating",
                                         file=sys.stderr, show_eta=True, show_pos=False)
            self.bar.__enter__()
        step = int(now_s) - self.done
        if step > 0:
            self.bar.update(step)
            self.done += step

    def close(self):
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


@click.command("simulate")
@click.argument("scenario", metavar="SCENARIO")
@click.option("--set", "overrides", multiple=True, metavar="PATH.KEY=VALUE",
              help="Override a scenario value (TOML syntax), e.g. --set topology.bottleneck.rate=5e6.")
@click.option("--seed", type=int, default=None, help="Replace simulation.seed.")
@click.option("-o", "--output", "run_dir", required=True, type=click.Path(file_okay=False),
              help="Run directory to write (replaced atomically).")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar on stderr (default: when stderr is a terminal).")
@json_option
def command(scenario, overrides, seed, run_dir, progress, as_json):
    """Run SCENARIO (a TOML file, or the name of a bundled scenario: traceflow scenarios list)
    in the packet-level simulator and write RUN_DIR (summary.json,
    flows/transfers/series/queue/links Parquet tables, scenario.json, pcaps).

    \b
    Examples:
      traceflow simulate dumbbell -o runs/db
      traceflow simulate dumbbell -o runs/vegas --set tcp.cc="vegas" --seed 2
      traceflow simulate my_scenario.toml -o runs/mine --json
    """
    from traceflow.replays import resolve_scenario
    from traceflow.sim import load_scenario, run

    sc = load_scenario(resolve_scenario(scenario), overrides, seed)
    show = sys.stderr.isatty() if progress is None else progress
    bar = _Bar() if show else None
    try:
        result = run(sc, progress=bar)
    finally:
        if bar is not None:
            bar.close()
    result.write(run_dir)
    if as_json:
        echo_json({"run_dir": str(run_dir), **result.summary})
    else:
        s = result.summary
        click.echo(f"{run_dir}: " + ", ".join(f"{k}={s[k]:.4g}" if isinstance(s[k], float)
                                               else f"{k}={s[k]}" for k in _KEYS))

"""``traceflow simulate SCENARIO.toml [--set path.key=value ...] [--seed N] -o RUN_DIR [--json]``."""
import sys

import click

from traceflow.cli.options import echo_json, json_option

_KEYS = ("duration_s", "throughput_bps", "link_utilization", "goodput_bps", "loss_rate",
         "retransmission_rate", "reliable_throughput", "mean_queue_pkts", "buffer_occupancy",
         "flows", "transfers", "transfers_completed")


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
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option("--set", "overrides", multiple=True, metavar="PATH.KEY=VALUE",
              help="Override a scenario value (TOML syntax), e.g. --set topology.bottleneck.rate=5e6.")
@click.option("--seed", type=int, default=None, help="Replace simulation.seed.")
@click.option("-o", "--output", "run_dir", required=True, type=click.Path(file_okay=False),
              help="Run directory to write (replaced atomically).")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar on stderr (default: when stderr is a terminal).")
@json_option
def command(scenario, overrides, seed, run_dir, progress, as_json):
    """Run SCENARIO.toml in the packet-level simulator and write RUN_DIR
    (summary.json, flows/transfers/series/queue/links Parquet tables, scenario.json, pcaps)."""
    from traceflow.sim import load_scenario, run

    sc = load_scenario(scenario, overrides, seed)
    show = sys.stderr.isatty() if progress is None else progress
    bar = _Bar() if show else None
    try:
        result = run(sc, progress=bar)
    finally:
        if bar is not None:
            bar.close()
    result.write(run_dir)
    if as_json:
        echo_json({"run_dir": str(run_dir), **result.summary, **result.timing})
    else:
        s = result.summary
        click.echo(f"{run_dir}: " + ", ".join(f"{k}={s[k]:.4g}" if isinstance(s[k], float)
                                               else f"{k}={s[k]}" for k in _KEYS)
                   + f", wall_s={result.timing['wall_s']:.4g}")

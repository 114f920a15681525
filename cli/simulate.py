"""``traceflow simulate SCENARIO.toml [--set path.key=value ...] [--seed N] -o RUN_DIR [--json]``."""
import sys

import click

from traceflow.cli.options import echo_json, json_option


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
        echo_json({"run_dir": str(run_dir), **result.summary, **result.timing})
    else:
        click.echo(format_summary(run_dir, result.summary, result.timing))


def format_summary(run_dir, s, timing):
    """A run's headline numbers in human units (``n/a`` where a quantity has no value)."""
    from traceflow import units

    return "\n".join([
        f"wrote {run_dir} ({units.duration(s['duration_s'])} simulated in "
        f"{units.duration(timing['wall_s'])})",
        f"bottleneck: throughput {units.rate(s['throughput_bps'])}, goodput "
        f"{units.rate(s['goodput_bps'])}, utilization {units.number(s['link_utilization'])}, "
        f"mean queue {units.number(s['mean_queue_pkts'])} packets (buffer occupancy "
        f"{units.share(s['buffer_occupancy'])})",
        f"loss {units.share(s['loss_rate'])}, retransmissions "
        f"{units.share(s['retransmission_rate'])}, reliable throughput "
        f"{units.share(s['reliable_throughput'])}",
        f"{s['flows']:,} flows, {s['transfers_completed']:,} of {s['transfers']:,} transfers "
        "completed",
    ])

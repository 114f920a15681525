"""``traceflow testbed OUTDIR``: real-kernel TCP captures with known ground truth and real RTTs."""
import sys

import click

from traceflow.cli.options import Duration, DurationList, Rate, echo_json, json_option


def _param(parser):
    """A click callback turning an option's text into a value with
    ``traceflow.testbed.params.<parser>`` (its errors become one-line usage errors)."""
    def convert(ctx, param, value):
        from traceflow.errors import TraceflowError
        from traceflow.testbed import params

        try:
            return getattr(params, parser)(value)
        except TraceflowError as exc:
            raise click.BadParameter(str(exc)) from None
    return convert


@click.command("testbed")
@click.argument("outdir", type=click.Path(file_okay=False))
@click.option("--clients", type=click.IntRange(min=1), default=32, show_default=True,
              help="Concurrent client request loops (loop i is in RTT class i mod #classes).")
@click.option("--alpha", type=float, default=1.35, show_default=True,
              help="Pareto shape of the file sizes (> 1).")
@click.option("--mean", type=float, default=4100.0, show_default=True,
              help="Mean file size in bytes (sets the Pareto location k = mean (alpha-1)/alpha).")
@click.option("--idle", type=Duration(), default="1s", show_default=True,
              help="Mean exponential think time between a loop's transfers.")
@click.option("--rate", type=Rate(), default="1.5Mbit", show_default=True, metavar="RATE",
              help="Bottleneck rate (HTB on the router's egress toward the clients), e.g. 1.5Mbit.")
@click.option("--buffer", default="6000B", show_default=True,
              callback=_param("parse_buffer"),
              help="Bottleneck FIFO: bytes (12000B, a bfifo) or packets (40p, a pfifo).")
@click.option("--rtt", type=DurationList(zero=True), default="0ms", show_default=True,
              metavar="DURATIONS",
              help="Round-trip propagation delays, one per client class, e.g. 10ms,60ms,180ms "
                   "(added by a user-space delay relay in the router; 0 adds none).")
@click.option("--cc", default="reno", show_default=True,
              help="Kernel congestion control of both hosts (reno, cubic, bbr, ...).")
@click.option("--duration", type=Duration(), default="300s", show_default=True,
              help="No transfer starts after this.")
@click.option("--drain", type=Duration(), default="30s", show_default=True,
              help="Transfers still running this long after --duration are cut (ok = 0).")
@click.option("--max-size", type=click.IntRange(min=1), default=50_000_000, show_default=True,
              help="Cap on a file size draw, bytes.")
@click.option("--seed", type=int, default=1, show_default=True,
              help="Seeds every loop's think times and file sizes.")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar on stderr (default: when stderr is a terminal).")
@json_option
def command(outdir, clients, alpha, mean, idle, rate, buffer, rtt, cc, duration, drain, max_size,
            seed, progress, as_json):
    """Run Linux kernel TCP through a shaped bottleneck in network namespaces and write OUTDIR:
    server_side.pcap and client_side.pcap (both sides of the router), transfers.parquet (ground
    truth per transfer) and params.json (parameters, kernel, qdisc/capture/relay counters).
    Needs root on Linux, iproute2, tcpdump and ethtool. OUTDIR is replaced atomically.

    \b
    Examples:
      traceflow testbed runs/tb --duration 60s
      traceflow testbed runs/rtt3 --rtt 10ms,60ms,180ms --cc cubic --buffer 12000B --seed 7
    """
    from traceflow.testbed import Params, run_testbed
    from traceflow.testbed.params import rtt_classes

    p = Params(clients=clients, alpha=alpha, mean=mean, idle=idle, rate=int(round(rate)),
               buffer=buffer[0],
               buffer_unit=buffer[1], rtt=rtt_classes(rtt), cc=cc, duration=duration, drain=drain,
               seed=seed, max_size=max_size)
    show = sys.stderr.isatty() if progress is None else progress
    bar = click.progressbar(length=int(duration) or 1, label="testbed", file=sys.stderr,
                            show_eta=True) if show else None
    done = [0]

    def advance(elapsed, total):
        step = int(elapsed) - done[0]
        if step > 0:
            bar.update(step)
            done[0] += step

    try:
        if bar is not None:
            bar.__enter__()
        doc = run_testbed(p, outdir, progress=advance if bar is not None else None)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    drops = sum(q.get("drops", 0) for q in doc["qdisc"] if q["kind"] in ("bfifo", "pfifo"))
    if as_json:
        echo_json({"outdir": str(outdir), **doc})
        return
    t, caps = doc["transfers"], doc["captures"]
    click.echo(f"{outdir}: {t['completed']}/{t['started']} transfers completed, "
               f"{drops} packets dropped at the bottleneck, "
               f"capture drops {caps['server_side'].get('dropped_by_kernel')}/"
               f"{caps['client_side'].get('dropped_by_kernel')}, wall {doc['wall_seconds']:.0f} s")

"""``traceflow dispersion``: variance/mean across time scales, c.o.v. per RTT, tracking ability."""
from pathlib import Path

import click

from traceflow.cli.options import Duration, DurationList, echo_json, filter_options, json_option
from traceflow.cli.series import DIRECTION_HELP


@click.command("dispersion")
@click.argument("input", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--bin", "bin_", type=Duration("ns"), default=None,
              help="Base bin for a capture/packets input [default: 10ms]; required for a plain "
                   "table column (its row spacing).")
@click.option("--column", default="packets", show_default=True,
              help="Counts to analyse: packets or bytes (captures/series), or any table column.")
@click.option("--scales", type=DurationList(), default=None,
              help="Comma-separated aggregation levels [default: 10ms,20ms,50ms,...,100s].")
@click.option("--rtt", "rtts", type=Duration("ns"), multiple=True,
              help="Interval for the c.o.v. of counts per RTT (repeatable), e.g. --rtt 100ms.")
@click.option("--with", "other", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Second input: print the correlation coefficient (tracking ability).")
@click.option("--with-column", default=None, help="Column of the --with input [default: --column].")
@click.option("--direction", default=None, help=DIRECTION_HELP)
@filter_options("packets")
@click.option("--min-blocks", default=10, show_default=True, type=click.IntRange(2),
              help="Skip scales with fewer whole intervals than this.")
@json_option
def command(input, bin_, column, scales, rtts, other, with_column, direction, filter_, proto,
            min_blocks, as_json):
    """Index of dispersion (variance/mean of counts per interval) at 10 ms ... 100 s, the
    c.o.v. of packets per RTT, and the correlation of two series.

    \b
    Examples:
      traceflow dispersion trace.pcap --rtt 100ms
      traceflow dispersion trace.pcap --scales 10ms,100ms,1s,10s --proto udp
      traceflow dispersion measured.pcap --with run/g1-g2.pcap --json
    """
    from traceflow.stats.dispersion import DEFAULT_SCALES, cov_per_interval, dispersion_curve, tracking
    from traceflow.errors import TraceflowError
    from traceflow.stats.series import counts_label, format_duration, is_timed, load_series
    from traceflow.suggest import shorter_bins

    loaded = load_series(input, column=column, bin=bin_ if bin_ is None or is_timed(input) else None,
                         direction=direction, filter=filter_, proto=proto)
    bin_ns = loaded.bin_ns
    if bin_ns is None:
        if bin_ is None:
            raise TraceflowError("give --bin: the row spacing of the column", path=input)
        bin_ns = bin_
    scale_list = [format_duration(ns) for ns in scales] if scales else DEFAULT_SCALES
    curve = dispersion_curve(loaded.values, bin_ns, scale_list, min_blocks=min_blocks, column=column)
    summary = {"n": int(loaded.values.size), "bin_s": bin_ns / 1e9,
               "counts": counts_label(column, loaded.kind, direction),
               "dispersion": curve.summary(),
               "cov": [cov_per_interval(loaded.values, bin_ns, format_duration(r)) for r in rtts]}
    if other is not None:
        second = load_series(other, column=with_column or column,
                             bin=bin_ if bin_ is None or is_timed(other) else None,
                             direction=direction, filter=filter_, proto=proto)
        if loaded.frame is not None and second.frame is not None:
            summary["tracking"] = tracking(loaded.frame, second.frame, column=loaded.column,
                                           other_column=second.column)
        else:
            summary["tracking"] = tracking(loaded.values, second.values)
    if as_json:
        echo_json(summary)
        return
    click.echo(f"{summary['counts']}: {summary['n']} bins of {bin_ns / 1e9:g} s")
    click.echo("scale        mean      variance   var/mean")
    for s, m, v, r in zip(curve.summary()["scales"], curve.mean, curve.variance, curve.ratio):
        click.echo(f"{s:>8s} {m:11.4g} {v:13.4g} {r:10.4g}")
    if curve.skipped:
        click.echo("skipped: " + ", ".join(f"{s['scale']} ({s['reason']})" for s in curve.skipped))
    if curve.slope == curve.slope:
        click.echo(f"log-log slope of var/mean against the time scale: {curve.slope:.3f} "
                   "(2H - 1 only for exactly self-similar counts)")
    else:
        click.echo("log-log slope of var/mean: n/a (fewer than 2 scales)")
        if loaded.kind in ("capture", "packets"):  # a short capture: finer bins and scales
            short, fine = shorter_bins(summary["n"], bin_ns, blocks=min_blocks)
            click.echo(f"for a capture this short use a smaller --bin and shorter --scales, e.g. "
                       f"--bin {short} --scales {','.join(fine)}")
    for c in summary["cov"]:
        click.echo(f"c.o.v. per {c['interval']}: {c['cov']:.4f} (mean {c['mean']:.4g} per interval; "
                   f"Poisson {c['poisson_cov']:.4f})")
    if "tracking" in summary:
        t = summary["tracking"]
        since = {"relative": ", aligned on time since each start (the two do not overlap)",
                 "absolute": ", aligned on clock time"}.get(t.get("aligned"), "")
        click.echo(f"correlation coefficient (tracking): {t['r']:.4f} over {t['n']} bins{since}")


"""``traceflow hurst``: Hurst exponent by V-T, R/S, wavelet, Whittle, DFA and periodogram."""
from pathlib import Path

import click

from traceflow.cli.options import Duration, filter_options, json_option, warn_then_json
from traceflow.cli.series import DIRECTION_HELP


@click.command("hurst")
@click.argument("input", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--bin", "bin_", type=Duration("ns"), default=None,
              help="Bin width for a capture/packets input [default: 10ms], or a coarser width for a series.")
@click.option("--method", "methods", default=None,
              help="Comma-separated: vt,rs,wavelet,whittle,whittle_fgn,dfa,periodogram or 'all' "
                   "[default: all but whittle_fgn].")
@click.option("--column", default=None,
              help="Quantity: bytes or packets for captures/series [default: bytes]; any numeric "
                   "column of another Parquet/CSV table.")
@click.option("--direction", default=None, help=DIRECTION_HELP)
@filter_options("packets")
@click.option("--margin", default=0.15, show_default=True, type=click.FloatRange(0, 2),
              help="Warn (non-stationarity) when the estimates differ by more than this.")
@json_option
def command(input, bin_, methods, column, direction, filter_, proto, margin, as_json):
    """Estimate the Hurst exponent H of a link series (or of any column of a table).

    Every method is deterministic; the wavelet, Whittle and periodogram estimates carry 95 %
    confidence intervals. The quality line (and "quality" in the JSON) flags an H outside (0, 1),
    a series too short, and estimates spreading by more than --margin (the series is probably not
    stationary); each flag is also a warning on stderr.

    \b
    Examples:
      traceflow hurst trace.pcap
      traceflow hurst trace.pcap --bin 100ms --method wavelet,whittle --proto tcp
      traceflow hurst series.parquet --column packets --json
    """
    from traceflow.errors import TraceflowError
    from traceflow.stats.hurst import estimate
    from traceflow.stats.series import counts_label, format_duration, load_series
    from traceflow.suggest import shorter_bins

    loaded = load_series(input, column=column, bin=bin_, direction=direction, filter=filter_,
                         proto=proto)
    try:
        report = estimate(loaded.values, methods, margin=margin)
    except TraceflowError as exc:  # too short a capture: say which --bin gives it enough points
        if loaded.kind not in ("capture", "packets") or loaded.values.size >= 1000:
            raise
        raise TraceflowError(f"{exc.reason}: {loaded.values.size} bins of "
                             f"{format_duration(loaded.bin_ns)}; try a smaller --bin, e.g. "
                             f"--bin {shorter_bins(loaded.values.size, loaded.bin_ns)[0]}",
                             path=input) from None
    summary = report.summary()
    summary["column"] = loaded.column
    summary["counts"] = counts_label(loaded.column, loaded.kind, direction)
    summary["bin"] = format_duration(loaded.bin_ns) if loaded.bin_ns else None
    quality = report.quality()
    if warn_then_json(quality, "Hurst", summary, as_json):
        return
    click.echo(f"n = {report.n}" + (f" bins of {summary['bin']}" if summary["bin"] else "")
               + f" ({summary['counts']})")
    unit = f" (x {summary['bin']})" if summary["bin"] else " samples"
    for name, r in report.results.items():
        ci = f"  95% CI [{r.ci[0]:.3f}, {r.ci[1]:.3f}]" if r.ci else ""
        extra = ""
        if name == "wavelet":
            extra = f"  octaves {r.extra['octaves'][0]}-{r.extra['octaves'][1]}"
        elif len(r.scales) and name in ("vt", "rs", "dfa"):
            extra = f"  scales {int(r.scales.min())}-{int(r.scales.max())}{unit}"
        click.echo(f"{name:12s} H = {r.H:.3f}{ci}{extra}")
    click.echo(str(quality))

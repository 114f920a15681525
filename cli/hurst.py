"""``traceflow hurst``: Hurst exponent by V-T, R/S, wavelet, Whittle, DFA and periodogram."""
from pathlib import Path

import click

from traceflow.cli.options import echo_json, json_option
from traceflow.cli.series import DIRECTION_HELP, FILTER_HELP


@click.command("hurst")
@click.argument("input", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--bin", "bin_", default=None,
              help="Bin width for a capture/packets input [default: 10ms], or a coarser width for a series.")
@click.option("--method", "methods", default=None,
              help="Comma-separated: vt,rs,wavelet,whittle,whittle_fgn,dfa,periodogram or 'all' "
                   "[default: all but whittle_fgn].")
@click.option("--column", default=None,
              help="Quantity: bytes or packets for captures/series [default: bytes]; any numeric "
                   "column of another Parquet/CSV table.")
@click.option("--direction", default=None, help=DIRECTION_HELP)
@click.option("--filter", "filter_", default=None, help=FILTER_HELP)
@click.option("--margin", default=0.15, show_default=True, type=click.FloatRange(0, 2),
              help="Warn (non-stationarity) when the estimates differ by more than this.")
@json_option
def command(input, bin_, methods, column, direction, filter_, margin, as_json):
    """Estimate the Hurst exponent H of a link series (or of any column of a table).

    Every method is deterministic; the wavelet, Whittle and periodogram estimates carry 95 %
    confidence intervals. When the estimates spread by more than --margin a warning is printed
    on stderr (and included in the JSON): the series is probably not stationary.
    """
    from traceflow.stats.hurst import estimate
    from traceflow.stats.series import format_duration, load_series

    loaded = load_series(input, column=column, bin=bin_, direction=direction, filter=filter_)
    report = estimate(loaded.values, methods, margin=margin)
    summary = report.summary()
    summary["column"] = loaded.column
    summary["bin"] = format_duration(loaded.bin_ns) if loaded.bin_ns else None
    if report.warning:
        click.echo(f"traceflow: warning: {report.warning}", err=True)
    if as_json:
        echo_json(summary)
        return
    click.echo(f"n = {report.n} ({loaded.column}" + (f" per {summary['bin']})" if summary["bin"] else ")"))
    for name, r in report.results.items():
        ci = f"  95% CI [{r.ci[0]:.3f}, {r.ci[1]:.3f}]" if r.ci else ""
        extra = ""
        if name == "wavelet":
            extra = f"  octaves {r.extra['octaves'][0]}-{r.extra['octaves'][1]}"
        elif len(r.scales) and name in ("vt", "rs", "dfa"):
            extra = f"  scales {int(r.scales.min())}-{int(r.scales.max())} samples"
        click.echo(f"{name:12s} H = {r.H:.3f}{ci}{extra}")

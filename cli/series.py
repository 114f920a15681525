"""``traceflow series``: bin packets into a link time series (bytes and packets per bin)."""
from pathlib import Path

import click

from traceflow.cli.options import echo_json, json_option

FILTER_HELP = ("Polars SQL WHERE clause over packet columns, e.g. \"proto = 6 AND (sport = 80 OR "
               "dport = 80)\" or \"payload_len > 0\".")
DIRECTION_HELP = "Keep packets by address: src:CIDR or dst:CIDR (e.g. src:10.0.0.0/8, dst:2001:db8::1)."


@click.command("series")
@click.argument("input", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--bin", "bin_", default="10ms", show_default=True,
              help="Bin width (ns, us, ms, s, min; a bare number is seconds). For a series input: "
                   "re-aggregate to this width (a multiple of its own).")
@click.option("--direction", default=None, help=DIRECTION_HELP)
@click.option("--filter", "filter_", default=None, help=FILTER_HELP)
@click.option("--size", type=click.Choice(["ip_len", "wirelen"]), default="ip_len", show_default=True,
              help="Bytes per packet: IP length (right for truncated captures) or frame length on the wire.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the series (t, bytes, packets) as Parquet.")
@json_option
def command(input, bin_, direction, filter_, size, output, as_json):
    """Bytes and packets per BIN of a capture, packets table or series table (empty bins are 0).

    Bins start at integer multiples of BIN since the epoch; time stays integer nanoseconds.
    """
    import numpy as np

    from traceflow.atomic import atomic_path
    from traceflow.errors import TraceflowError
    from traceflow.stats.series import (format_duration, is_packets, is_series, link_series,
                                        packet_batches, parse_duration, read_table, resample,
                                        stream_series, table_columns, table_kind)

    width = parse_duration(bin_)
    kind = table_kind(input)
    if kind == "capture" or (kind == "parquet" and {"ts", "wirelen"} <= set(table_columns(input))):
        batches = packet_batches(input, direction=direction, filter=filter_)
        frame = stream_series(batches, width, direction, filter_, size=size)
    else:
        table = read_table(input)
        if is_packets(table):
            frame = link_series(table, width, direction, filter_, size=size)
        elif is_series(table):
            if direction or filter_:
                raise TraceflowError("--direction/--filter need packets, not a series", path=input)
            frame = resample(table.select("t", "bytes", "packets"), width)
        else:
            raise TraceflowError("neither a capture, a packets table nor a series table", path=input)
    if output is not None:
        with atomic_path(output) as tmp:
            frame.write_parquet(tmp)
    secs = width / 1e9
    b = frame.get_column("bytes").to_numpy().astype(float)
    p = frame.get_column("packets").to_numpy().astype(float)
    summary = {"bins": frame.height, "bin": format_duration(width),
               "start": str(frame.get_column("t").min()) if frame.height else None,
               "duration_s": frame.height * secs, "bytes": int(b.sum()), "packets": int(p.sum()),
               "mean_rate_bps": float(8 * b.mean() / secs) if b.size else None,
               "peak_rate_bps": float(8 * b.max() / secs) if b.size else None,
               "empty_bins": int(np.sum(p == 0)), "output": str(output) if output else None}
    if as_json:
        echo_json(summary)
    else:
        click.echo(f"{summary['bins']} bins of {summary['bin']} from {summary['start']}: "
                   f"{summary['packets']} packets, {summary['bytes']} bytes, "
                   f"mean {summary['mean_rate_bps'] or 0:.4g} bit/s, peak {summary['peak_rate_bps'] or 0:.4g} bit/s, "
                   f"{summary['empty_bins']} empty bins" + (f" -> {output}" if output else ""))

"""``traceflow series``: bin packets into a link time series (bytes and packets per bin)."""
from pathlib import Path

import click

from traceflow.cli.options import (Duration, check_stdout, echo_json, filter_options, json_option,
                                   table_output_option)
from traceflow.scale.parallel import executor_options, resolve_executor

DIRECTION_HELP = "Keep packets by address: src:CIDR or dst:CIDR (e.g. src:10.0.0.0/8, dst:2001:db8::1)."


@click.command("series")
@click.argument("input", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--bin", "bin_", type=Duration("ns"), default="10ms", show_default=True,
              help="Bin width (ns, us, ms, s, min; a bare number is seconds). For a series input: "
                   "re-aggregate to this width (a multiple of its own).")
@click.option("--direction", default=None, help=DIRECTION_HELP)
@filter_options("packets")
@click.option("--size", type=click.Choice(["ip_len", "wirelen"]), default="ip_len", show_default=True,
              help="Bytes per packet: IP length (right for truncated captures) or frame length on the wire.")
@table_output_option("series (t, bytes, packets)")
@executor_options
@json_option
def command(input, bin_, direction, filter_, proto, size, output, head, executor, workers,
            scheduler, as_json):
    """Bytes and packets per BIN of a capture, packets table or series table (empty bins are 0).

    Bins start at the first packet, so the mean rate (bytes over the span from the first to the
    last packet) is the same at every bin width; time stays integer nanoseconds and timestamps
    are UTC. --workers N bins chunks of one uncompressed capture in N processes at once (the
    same series; default 1).

    \b
    Examples:
      traceflow series trace.pcap --bin 100ms
      traceflow series trace.pcap --bin 1s --proto tcp --filter "sport = 443" -o series.csv
      traceflow series series.parquet --bin 1s -o -
      traceflow series big.pcap --bin 1ms -o series.parquet --workers 2
    """
    from traceflow import units
    from traceflow.errors import TraceflowError
    from traceflow.output import TableSink, table_format
    from traceflow.stats.series import (counts_label, format_duration, is_series, packet_series,
                                        read_table, resample, table_columns, table_kind)

    check_stdout(output, as_json)
    if output is not None:
        table_format(output)  # an unknown suffix fails before the work
    width = bin_
    kind = "capture" if table_kind(input) == "capture" else "packets"
    if kind == "capture" or {"ts", "wirelen"} <= set(table_columns(input)):
        # packets: read batch by batch, only the columns needed (memory: one batch + the bins)
        bins = packet_series(input, width, direction, filter_, proto=proto, size=size,
                             workers=workers or 1, executor=resolve_executor(executor, scheduler),
                             scheduler=scheduler)
        frame = bins.frame()
        span_ns = bins.hi - bins.lo if bins.lo is not None else 0
    else:
        series, kind = read_table(input), "series"
        if not is_series(series):
            raise TraceflowError("neither a capture, a packets table nor a series table",
                                 path=input)
        if direction or filter_ or proto:
            raise TraceflowError("--direction/--filter/--proto need packets, not a series",
                                 path=input)
        frame = resample(series.select("t", "bytes", "packets"), width, partial=True)
        span_ns = frame.height * width
    if output is not None:
        with TableSink(output, head=head) as sink:
            # in slices: one Parquet row group each, so the writer's buffers stay small
            for part in frame.iter_slices(1 << 16):
                sink.write(part)
    total = int(frame.get_column("bytes").sum() or 0)
    secs = width / 1e9
    peak = frame.get_column("bytes").max() if frame.height else None
    start = frame.get_column("t").cast(int).min() if frame.height else None
    summary = {"bins": frame.height, "bin": format_duration(width),
               "start": units.timestamp(start) if start is not None else None,
               "start_ns": start, "span_s": span_ns / 1e9, "duration_s": frame.height * secs,
               "bytes": total, "packets": int(frame.get_column("packets").sum() or 0),
               "mean_rate_bps": 8 * total / (span_ns / 1e9) if span_ns else None,
               "peak_rate_bps": 8 * peak / secs if peak is not None else None,
               "empty_bins": int((frame.get_column("packets") == 0).sum()),
               "bytes_counted": counts_label("bytes", kind, direction, size),
               "output": str(output) if output else None}
    if as_json:
        echo_json(summary)
        return
    echo = (lambda m: click.echo(m, err=True)) if output == "-" else click.echo
    echo(f"{summary['bins']} bins of {summary['bin']} from {summary['start'] or 'n/a'}: "
         f"{summary['packets']:,} packets, {units.size(total)} over {units.duration(span_ns / 1e9)}, "
         f"mean {units.rate(summary['mean_rate_bps'])}, peak {units.rate(summary['peak_rate_bps'])} "
         f"per {summary['bin']} bin ({summary['bytes_counted']}), {summary['empty_bins']} empty "
         "bins"
         + (f" -> {output}" if output and output != "-" else ""))


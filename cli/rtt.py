"""``traceflow rtt``: path RTTs, RTT distribution, spectrum and classes of a trace."""
import click

from traceflow import units
from traceflow.cli.options import (Duration, echo_json, filter_options, json_option,
                                   reorder_option, warn_reordering)
from traceflow.errors import TraceflowError

COLUMNS = ["auto", "rtt_min", "rtt_median", "rtt_p90", "rtt_handshake", "rtt_min3", "rtt_syn",
           "rtt_ack", "rtt_data1", "rtt_data2"]
VANTAGE = {  # what the far half of the path (capture -> far host -> capture) is timed by
    "sender": "next to the data senders; every ACK or timestamp echo times the far half",
    "receiver": "next to the data receivers; timestamp echoes time the far half, or "
                "without timestamps the handshake and requests",
    "unknown": "mid-path or no handshakes to tell; both halves are timed"}
MAX_PATH_LINES = 20


def _classes(text):
    if text == "auto":
        return "auto"
    if text == "none":
        return None
    from traceflow.stats.series import parse_duration

    return [parse_duration(part) / 1e9 for part in text.split(",") if part.strip()]


@click.command("rtt")
@click.argument("input_path", metavar="INPUT", type=click.Path(dir_okay=False))
@click.option("--column", default="auto", show_default=True, type=click.Choice(COLUMNS),
              help="Which RTT of a connection: 'auto' picks for the vantage point (the "
                   "per-connection minimum path RTT rtt_min, or the handshake RTT where fewer "
                   "connections have one); or a flow table column.")
@click.option("--per", default="pair", show_default=True,
              help="Path unit: 'pair' (each connection takes the minimum over its host pair), "
                   "'/N' or '/N,/M' (over its pair of IPv4 /N, IPv6 /M networks, default /48), "
                   "or 'connection' (its own value).")
@click.option("--classes", default="auto", show_default=True,
              help="'auto' (Gaussian mixture on log RTT, number of classes by BIC), 'none', "
                   "or boundaries such as 10ms,100ms.")
@click.option("--bins", type=click.IntRange(min=1), default=40, show_default=True,
              help="Bins of the spectrum (log10(RTT/10us)).")
@click.option("--max-classes", type=click.IntRange(min=1), default=6, show_default=True)
@click.option("--idle-timeout", type=Duration(), default="300s", show_default=True,
              help="Flow idle timeout when INPUT is a capture or packets table.")
@click.option("--timestamps/--no-timestamps", default=True, show_default=True,
              help="Time path RTT samples from the TCP timestamp option where present "
                   "(otherwise from sequence numbers only).")
@click.option("--samples", is_flag=True,
              help="Also write every RTT sample (ts, connection = flow_id, half, rtt, path_rtt; "
                   "seconds) to the table -o (format from its suffix).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Where --samples writes: .parquet, .arrow, .csv, .tsv or .json.")
@filter_options("flows")
@reorder_option
@json_option
def command(input_path, column, per, classes, bins, max_classes, idle_timeout, timestamps,
            samples, output, filter_, proto, reorder, as_json):
    """Print the RTT distribution, spectrum and RTT classes of INPUT (capture, packets or flows
    Parquet), and the minimum RTT of every path.

    With --column auto (the default) the column comes from the capture's vantage point, the same
    choice report and fit make (traceflow.flows.rtt.rtt_column); a warning says when it and the
    handshake RTT disagree by more than 3 times.

    \b
    Examples:
      traceflow rtt trace.pcap
      traceflow rtt trace.pcap --per /24 --classes 10ms,100ms --filter "server_port = 443"
      traceflow rtt trace.pcap --samples -o samples.parquet
      traceflow rtt flows.parquet --column rtt_handshake --per connection --json
    """
    from traceflow.errors import warn
    from traceflow.output import table_format

    try:
        wanted = _classes(classes)
    except TraceflowError as exc:
        raise TraceflowError(f"--classes: {exc}") from None
    if samples != (output is not None):
        raise TraceflowError("--samples and -o go together")
    if output is not None:
        table_format(output)  # an unknown suffix fails before any work
    rows = _rtt_rows(input_path, column, per, idle_timeout, timestamps, output, reorder, filter_,
                     proto)
    summary = rows.summary(classes=wanted, bins=bins, max_classes=max_classes)
    if summary["warning"]:
        warn(summary["warning"])
    if as_json:
        echo_json(summary)
        return
    _print(summary)


def _rtt_rows(input_path, column, per, idle_timeout, timestamps, samples_path, reorder, filter_,
              proto):
    """What the summary reads of INPUT's selected TCP flows (:class:`RttRows`), taken from the
    flow table chunk by chunk as it streams; with ``samples_path``, the RTT samples are written
    there too (from the whole table)."""
    from traceflow.flows import input_kind, load_flows
    from traceflow.flows.rtt import RttRows
    from traceflow.flows.table import stream_flows
    from traceflow.selection import select_rows

    rows = RttRows(column, per)

    def add(table):
        table = select_rows(table, filter_, proto)
        rows.add(table.filter(table["proto"] == 6))

    options = dict(idle_timeout=idle_timeout, timestamps=timestamps, reorder=reorder)
    notes = []
    if samples_path is None:
        ordered = stream_flows([input_path], add, notes=notes, **options)
        warn_reordering(notes)
        if not ordered:  # chunks came out of the table's order: take the sorted table (rare)
            rows = RttRows(column, per)
            add(load_flows([input_path], **options))
        return rows
    if input_kind(input_path) == "flows":
        raise TraceflowError("RTT samples need a capture or packets table, not a flows table",
                             path=input_path)
    from traceflow.flows import flows_with_rtt_samples
    from traceflow.output import write_table

    table, samples = flows_with_rtt_samples(input_path, notes=notes, **options)
    warn_reordering((input_path, report) for report in notes)
    write_table(samples, samples_path)
    add(table)
    return rows


def _print(summary):
    q = summary["quantiles"]
    click.echo(f"vantage point: {summary['vantage']} ({VANTAGE[summary['vantage']]})")
    click.echo(f"RTT of a connection: {summary['column']} ({summary['column_reason']})")
    unit = "" if summary["per"] == "connection" else f", minimum per path ({summary['per']})"
    click.echo(f"{q['n']} TCP flows with {summary['column']}{unit} (of {summary['flows']})")
    if q["n"] == 0:
        return
    paths = summary["paths"]
    if paths:
        click.echo(f"{len(paths)} paths, minimum RTT:")
        for row in paths[:MAX_PATH_LINES]:
            click.echo(f"  {row['host_a']} - {row['host_b']}: {units.duration(row['rtt_min'])} "
                       f"({row['connections']} connections)")
        if len(paths) > MAX_PATH_LINES:
            click.echo(f"  ... {len(paths) - MAX_PATH_LINES} more (--json lists all)")
    click.echo("quantiles: " + ", ".join(
        f"{k} {units.duration(v)}" for k, v in q.items() if k.startswith("p")))
    peak = max(row["count"] for row in summary["spectrum"]) or 1
    click.echo("spectrum: log10(RTT/10us)  RTT from  count")
    for row in summary["spectrum"]:
        bar = "#" * round(40 * row["count"] / peak)
        click.echo(f"  {row['left']:6.2f} {units.duration(row['rtt_left']):>10} {row['count']:8d} "
                   f"{bar}")
    c = summary["classes"]
    if c:
        bounds = ", ".join(units.duration(b) for b in c["boundaries"]) or "none"
        click.echo(f"{c['n_classes']} RTT classes ({c['method']}), boundaries: {bounds}")
        for k, (n, med) in enumerate(zip(c["counts"], c["medians"])):
            click.echo(f"  class {k}: {n} flows, median {units.duration(med)}")

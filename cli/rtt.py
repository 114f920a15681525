"""``traceflow rtt``: path RTTs, RTT distribution, spectrum and classes of a trace."""
import click

from traceflow.cli.options import (Duration, echo_json, json_option, reorder_option,
                                   warn_reordering)
from traceflow.errors import TraceflowError

COLUMNS = ["auto", "rtt_min", "rtt_median", "rtt_p90", "rtt_handshake", "rtt_min3", "rtt_syn",
           "rtt_ack", "rtt_data1", "rtt_data2"]
VANTAGE = {  # what the far half of the path (capture -> far host -> capture) is timed by
    "sender": "next to the data senders; every ACK or timestamp echo times the far half",
    "receiver": "next to the data receivers; timestamp echoes time the far half, or "
                "without timestamps the handshake and requests",
    "unknown": "mid-path or no handshakes to tell; both halves are timed"}
WHY = {"rtt_min": "per-connection minimum path RTT, both halves around the capture summed",
       "rtt_handshake": "handshake RTT: fewer connections have a path RTT in both halves"}
MAX_PATH_LINES = 20
#: the flow columns the summary reads
FLOW_COLUMNS = ["proto", "client_addr", "server_addr", "payload_bytes_c2s", "payload_bytes_s2c",
                *COLUMNS[1:]]


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
                   "seconds) to the Parquet file -o.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Where --samples writes.")
@reorder_option
@json_option
def command(input_path, column, per, classes, bins, max_classes, idle_timeout, timestamps,
            samples, output, reorder, as_json):
    """Print the RTT distribution, spectrum and RTT classes of INPUT (capture, packets or flows
    Parquet), and the minimum RTT of every path."""
    from traceflow.flows.rtt import rtt_summary

    try:
        wanted = _classes(classes)
    except TraceflowError as exc:
        raise TraceflowError(f"--classes: {exc}") from None
    if samples != (output is not None):
        raise TraceflowError("--samples and -o go together")
    table = _flows(input_path, idle_timeout, timestamps, output, reorder)
    summary = rtt_summary(table.filter(table["proto"] == 6), column=column, per=per,
                          classes=wanted, bins=bins, max_classes=max_classes)
    if as_json:
        echo_json(summary)
        return
    _print(summary)


def _flows(input_path, idle_timeout, timestamps, samples_path, reorder):
    """The flow table of INPUT; with ``samples_path``, write its RTT samples there too."""
    from traceflow.flows import input_kind, load_flows

    notes = []
    if samples_path is None:
        table = load_flows([input_path], idle_timeout=idle_timeout, timestamps=timestamps,
                           columns=FLOW_COLUMNS, reorder=reorder, notes=notes)
        warn_reordering(notes)
        return table
    if input_kind(input_path) == "flows":
        raise TraceflowError("RTT samples need a capture or packets table, not a flows table",
                             path=input_path)
    from traceflow.atomic import atomic_path
    from traceflow.flows import flows_with_rtt_samples

    table, samples = flows_with_rtt_samples(input_path, idle_timeout=idle_timeout,
                                            reorder=reorder, notes=notes,
                                            timestamps=timestamps)
    warn_reordering((input_path, report) for report in notes)
    with atomic_path(samples_path) as tmp:
        samples.write_parquet(tmp)
    return table


def _print(summary):
    q = summary["quantiles"]
    if summary["vantage"] is not None:                 # --column auto
        click.echo(f"vantage point: {summary['vantage']} ({VANTAGE[summary['vantage']]})")
        click.echo(f"RTT of a connection: {summary['column']} ({WHY[summary['column']]})")
    unit = "" if summary["per"] == "connection" else f", minimum per path ({summary['per']})"
    click.echo(f"{q['n']} TCP flows with {summary['column']}{unit} (of {summary['flows']})")
    if q["n"] == 0:
        return
    paths = summary["paths"]
    if paths:
        click.echo(f"{len(paths)} paths, minimum RTT (ms):")
        for row in paths[:MAX_PATH_LINES]:
            click.echo(f"  {row['host_a']} - {row['host_b']}: {row['rtt_min'] * 1e3:.3f} "
                       f"({row['connections']} connections)")
        if len(paths) > MAX_PATH_LINES:
            click.echo(f"  ... {len(paths) - MAX_PATH_LINES} more (--json lists all)")
    click.echo("quantiles (ms): " + ", ".join(
        f"{k} {v * 1e3:.3f}" for k, v in q.items() if k.startswith("p")))
    peak = max(row["count"] for row in summary["spectrum"]) or 1
    click.echo("spectrum: log10(RTT/10us)  count")
    for row in summary["spectrum"]:
        bar = "#" * round(40 * row["count"] / peak)
        click.echo(f"  {row['left']:6.2f} {row['count']:8d} {bar}")
    c = summary["classes"]
    if c:
        bounds = ", ".join(f"{b * 1e3:.3f}" for b in c["boundaries"]) or "-"
        click.echo(f"{c['n_classes']} RTT classes ({c['method']}), boundaries (ms): {bounds}")
        for k, (n, med) in enumerate(zip(c["counts"], c["medians"])):
            click.echo(f"  class {k}: {n} flows, median {med * 1e3:.3f} ms")

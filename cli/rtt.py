"""``traceflow rtt``: handshake RTT distribution, spectrum and classes of a trace."""
import click

from traceflow import units

from traceflow.cli.options import Duration, echo_json, filter_options, json_option
from traceflow.errors import TraceflowError


def _classes(text):
    if text == "auto":
        return "auto"
    if text == "none":
        return None
    from traceflow.stats.series import parse_duration

    return [parse_duration(part) / 1e9 for part in text.split(",") if part.strip()]


@click.command("rtt")
@click.argument("input_path", metavar="INPUT", type=click.Path(dir_okay=False))
@click.option("--classes", default="auto", show_default=True,
              help="'auto' (Gaussian mixture on log RTT, number of classes by BIC), 'none', "
                   "or boundaries such as 10ms,100ms.")
@click.option("--column", default="auto", show_default=True,
              type=click.Choice(["auto", "rtt_min3", "rtt_handshake", "rtt_syn", "rtt_ack",
                                 "rtt_data1", "rtt_data2"]),
              help="Which RTT sample: 'auto' picks it from the capture's vantage point "
                   "(rtt_handshake, the whole path, unless few flows have one), or one column.")
@click.option("--bins", type=click.IntRange(min=1), default=40, show_default=True,
              help="Bins of the spectrum (log10(RTT/10us)).")
@click.option("--max-classes", type=click.IntRange(min=1), default=6, show_default=True)
@click.option("--idle-timeout", type=Duration(), default="300s", show_default=True,
              help="Flow idle timeout when INPUT is a capture or packets table.")
@filter_options("flows")
@json_option
def command(input_path, classes, column, bins, max_classes, idle_timeout, filter_, proto,
            as_json):
    """Print the RTT distribution of INPUT (capture, packets or flows Parquet).

    With --column auto (the default) the column comes from the capture's vantage point, the same
    choice report, fit and compare make (traceflow.flows.rtt.rtt_column); a warning says when
    rtt_handshake and rtt_min3 disagree by more than 3 times.

    \b
    Examples:
      traceflow rtt trace.pcap
      traceflow rtt trace.pcap --classes 10ms,100ms --filter "server_port = 443"
      traceflow rtt flows.parquet --column rtt_min3 --json
    """
    from traceflow.errors import warn
    from traceflow.flows import load_flows
    from traceflow.flows.rtt import rtt_column, rtt_summary
    from traceflow.selection import select_rows

    try:
        wanted = _classes(classes)
    except TraceflowError as exc:
        raise TraceflowError(f"--classes: {exc}") from None
    table = select_rows(load_flows([input_path], idle_timeout=idle_timeout), filter_, proto)
    table = table.filter(table["proto"] == 6)
    choice = rtt_column(table)
    if column == "auto":
        column = choice.column
        if choice.warning:
            warn(choice.warning)
    summary = rtt_summary(table, column=column, classes=wanted, bins=bins,
                          max_classes=max_classes)
    summary["vantage"] = choice.vantage
    summary["column_reason"] = choice.reason if column == choice.column else "chosen by --column"
    if as_json:
        echo_json(summary)
        return
    q = summary["quantiles"]
    click.echo(f"vantage point: {choice.vantage}; column {column} ({summary['column_reason']})")
    click.echo(f"{q['n']} TCP flows with {column} (of {summary['flows']})")
    if q["n"] == 0:
        return
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

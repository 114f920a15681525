"""``traceflow rtt``: handshake RTT distribution, spectrum and classes of a trace."""
import click

from traceflow.cli.options import Duration, echo_json, json_option
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
@click.option("--column", default="rtt_min3", show_default=True,
              type=click.Choice(["rtt_min3", "rtt_handshake", "rtt_syn", "rtt_ack",
                                 "rtt_data1", "rtt_data2"]),
              help="Which RTT sample: the paper's min of three, or one sample.")
@click.option("--bins", type=click.IntRange(min=1), default=40, show_default=True,
              help="Bins of the spectrum (log10(RTT/10us)).")
@click.option("--max-classes", type=click.IntRange(min=1), default=6, show_default=True)
@click.option("--idle-timeout", type=Duration(), default="300s", show_default=True,
              help="Flow idle timeout when INPUT is a capture or packets table.")
@json_option
def command(input_path, classes, column, bins, max_classes, idle_timeout, as_json):
    """Print the RTT distribution of INPUT (capture, packets or flows Parquet)."""
    from traceflow.flows import load_flows
    from traceflow.flows.rtt import rtt_summary

    try:
        wanted = _classes(classes)
    except TraceflowError as exc:
        raise TraceflowError(f"--classes: {exc}") from None
    table = load_flows([input_path], idle_timeout=idle_timeout)
    summary = rtt_summary(table.filter(table["proto"] == 6), column=column, classes=wanted,
                          bins=bins, max_classes=max_classes)
    if as_json:
        echo_json(summary)
        return
    q = summary["quantiles"]
    click.echo(f"{q['n']} TCP flows with {column} (of {summary['flows']})")
    if q["n"] == 0:
        return
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

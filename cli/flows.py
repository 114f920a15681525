"""``traceflow flows``: captures or packets tables → the flow table (Parquet) and a summary."""
import re

import click

from traceflow.cli.options import echo_json, json_option
from traceflow.errors import TraceflowError

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0,
          "h": 3600.0}


def parse_duration(text):
    """Seconds from "300", "300s", "500ms", "5m", "1.5h"; raises TraceflowError otherwise."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zµ]*)\s*", str(text))
    if not m or m.group(2) not in ("", *_UNITS):
        raise TraceflowError(f"bad duration {text!r} (examples: 300s, 500ms, 5m)")
    return float(m.group(1)) * _UNITS.get(m.group(2), 1.0)


class Duration(click.ParamType):
    name = "duration"

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)):
            return float(value)
        try:
            return parse_duration(value)
        except TraceflowError as exc:
            self.fail(str(exc), param, ctx)


@click.command("flows")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the flow table to this Parquet file.")
@click.option("--idle-timeout", type=Duration(), default="300s", show_default=True,
              help="A flow ends after this much silence (e.g. 300s, 5m, 500ms).")
@click.option("--partitions", type=click.IntRange(min=1), default=1, show_default=True,
              help="Process the endpoint pairs in this many disjoint parts (bounds memory for "
                   "packet tables larger than RAM).")
@json_option
def command(inputs, output, idle_timeout, partitions, as_json):
    """Build the TCP/UDP flow table of INPUT... (captures, packets or flows Parquet).

    Each input gets its own flows (column ``source``); ``flow_id`` numbers the result.
    """
    from traceflow.atomic import atomic_path
    from traceflow.flows import load_flows
    from traceflow.lifetimes import flows_summary

    if idle_timeout <= 0:
        raise TraceflowError("--idle-timeout must be > 0")
    table = load_flows(inputs, idle_timeout=idle_timeout, partitions=partitions)
    if output:
        with atomic_path(output) as tmp:
            table.write_parquet(tmp)
    summary = flows_summary(table)
    if as_json:
        echo_json({**summary, "output": output})
        return
    tcp = summary["tcp"]
    click.echo(f"{summary['flows']} flows ({tcp['connections']} TCP)"
               + (f" -> {output}" if output else ""))
    click.echo("TCP close: " + ", ".join(f"{k} {v}" for k, v in tcp["by_close"].items()))
    click.echo("TCP handshake: " + ", ".join(f"{k} {v}" for k, v in tcp["by_handshake"].items()))
    for row in tcp["short_lived"]:
        click.echo(f"lifetime < {row['threshold']} packets: "
                   f"{row['short_share_connections']:.1%} of connections, "
                   f"{row['short_share_bytes']:.1%} of bytes")

"""Options and helpers shared by several commands."""
import sys

import click

from traceflow.jsonutil import dumps


def json_option(f):
    return click.option("--json", "as_json", is_flag=True,
                        help="Print a machine-readable JSON summary on stdout.")(f)


def echo_json(obj):
    """Print ``obj`` as JSON (NaN/inf become null) on stdout."""
    click.echo(dumps(obj))


def warn_then_json(quality, what, summary, as_json):
    """Warn each of ``quality``'s flags (``what``: message), then echo ``summary`` as JSON when
    ``as_json``; True when it did (the command's text output is not wanted)."""
    from traceflow.errors import warn

    for flag in quality.flags:
        warn(f"{what}: {flag.message}")
    if as_json:
        echo_json(summary)
    return as_json


def progress(iterable=None, length=None, label=None):
    """A progress bar on stderr (hidden when stderr is not a terminal)."""
    return click.progressbar(iterable, length=length, label=label, file=sys.stderr,
                             show_eta=True, show_pos=True)


class Duration(click.ParamType):
    """A duration option such as ``300s``, ``10ms``, ``5m``, ``1.5h`` (a bare number is seconds),
    converted to float seconds (``unit="s"``) or integer nanoseconds (``unit="ns"``)."""

    name = "duration"

    def __init__(self, unit="s", *, zero=False):
        self.unit, self.zero = unit, zero  # zero: "0", "0ms" ... mean none (an added delay)

    def convert(self, value, param, ctx):
        from traceflow.errors import TraceflowError
        from traceflow.stats.series import parse_duration

        if self.zero and str(value).strip().rstrip("nmuµsinh") in ("0", "0.0"):
            return 0 if self.unit == "ns" else 0.0
        try:
            ns = parse_duration(str(value))
        except TraceflowError as exc:
            self.fail(str(exc), param, ctx)
        return ns if self.unit == "ns" else ns / 1e9


class Rate(click.ParamType):
    """A bit rate such as ``10e6``, ``1.5Mbit``, ``100kbit/s``, ``2Gbps`` (float bit/s)."""

    name = "rate"

    def convert(self, value, param, ctx):
        from traceflow.errors import TraceflowError
        from traceflow.values import parse_rate

        try:
            return parse_rate(value)
        except TraceflowError as exc:
            self.fail(str(exc), param, ctx)


class DurationList(click.ParamType):
    """Comma-separated durations (``10ms,100ms,1s``) as a list of integer nanoseconds."""

    name = "durations"

    def __init__(self, *, zero=False):
        self.zero = zero

    def convert(self, value, param, ctx):
        if isinstance(value, list):
            return value
        one = Duration("ns", zero=self.zero)
        return [one.convert(part.strip(), param, ctx) for part in str(value).split(",")
                if part.strip()]


def filter_options(what):
    """``--filter`` and ``--proto`` (:mod:`traceflow.selection`) over the ``what`` table
    ("packets" or "flows"); the command receives ``filter_`` and ``proto``."""
    examples = {"packets": "\"dport = 53\", \"payload_len > 0 AND sport = 443\"",
                "flows": "\"server_port = 443\", \"bytes > 1e6 AND close = 'FIN'\""}[what]

    def decorate(f):
        f = click.option("--proto", type=click.Choice(["tcp", "udp", "icmp"]), default=None,
                         help=f"Keep only TCP, UDP or ICMP (and ICMPv6) {what}.")(f)
        return click.option("--filter", "filter_", default=None, metavar="SQL",
                            help=f"Keep the {what} matching this Polars SQL WHERE clause over "
                                 f"the {what} table's columns, e.g. {examples}.")(f)
    return decorate


def table_output_option(what, *, required=False, extra=""):
    """``-o/--output`` for a table (format from the suffix, :mod:`traceflow.output`) and
    ``--head N`` for ``-o -``."""
    def decorate(f):
        f = click.option("--head", type=click.IntRange(min=1), default=None, metavar="N",
                         help="With -o -: print the first N rows (default 20).")(f)
        return click.option(
            "-o", "--output", type=click.Path(allow_dash=True), required=required,
            help=f"Write the {what} here; the suffix picks the format: .parquet, .arrow, .csv, "
                 f".tsv, .json (JSON lines); - prints a table on stdout.{extra}")(f)
    return decorate


def check_stdout(output, as_json):
    """``-o -`` and ``--json`` would both print on stdout: refuse the pair."""
    from traceflow.errors import TraceflowError

    if output == "-" and as_json:
        raise TraceflowError("-o - prints the table on stdout: drop --json or write the table "
                             "to a file")


def check_json_output(path):
    """Refuse an output that is written as JSON but named otherwise (``model.parquet``)."""
    from pathlib import Path

    from traceflow.errors import TraceflowError

    if path is not None and Path(path).suffix.lower() != ".json":
        raise TraceflowError("this output is JSON: give it a .json name", path=path)


def reorder_option(f):
    """``--reorder-window``: put packets in timestamp order within this window ('off': keep
    capture order); the value is float seconds or None."""
    def convert(ctx, param, value):
        if value in ("off", "0"):
            return None
        return Duration().convert(value, param, ctx)

    return click.option("--reorder-window", "reorder", default="1s", show_default=True,
                        callback=convert,
                        help="Put packets back in timestamp order within this window (captures "
                             "merged from several interfaces); 'off' keeps capture order. What "
                             "was re-ordered, or could not be, is reported on stderr.")(f)


def warn_reordering(notes):
    """Print one warning per input whose timestamps were out of order (``notes``: ``(input,
    report)`` pairs of :func:`traceflow.flows.load_flows`)."""
    from traceflow.errors import warn
    from traceflow.pcap.reorder import describe

    for name, report in notes:
        if (text := describe(report)) is not None:
            warn(text, path=name)

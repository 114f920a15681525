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


def progress(iterable=None, length=None, label=None):
    """A progress bar on stderr (hidden when stderr is not a terminal)."""
    return click.progressbar(iterable, length=length, label=label, file=sys.stderr,
                             show_eta=True, show_pos=True)


class Duration(click.ParamType):
    """A duration option such as ``300s``, ``10ms``, ``5m``, ``1.5h`` (a bare number is seconds),
    converted to float seconds (``unit="s"``) or integer nanoseconds (``unit="ns"``)."""

    name = "duration"

    def __init__(self, unit="s"):
        self.unit = unit

    def convert(self, value, param, ctx):
        from traceflow.errors import TraceflowError
        from traceflow.stats.series import parse_duration

        try:
            ns = parse_duration(str(value))
        except TraceflowError as exc:
            self.fail(str(exc), param, ctx)
        return ns if self.unit == "ns" else ns / 1e9


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
    from traceflow.pcap.reorder import describe

    for name, report in notes:
        if (text := describe(report)) is not None:
            click.echo(f"traceflow: warning: {name}: {text}", err=True)

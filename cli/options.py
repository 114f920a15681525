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

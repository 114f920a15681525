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

"""User-facing errors and warnings.

A :class:`TraceflowError` is a problem with the user's input or request (bad file, bad option,
bad scenario key). The CLI prints it as one line on stderr and exits with code 2, without a
traceback. Anything else that escapes is a bug.

A :class:`TraceflowWarning` (raised through :func:`warn`) is something the user must know about a
result that is still produced: a capture cut short, an estimate that is a guess. The CLI prints each
as one line ``traceflow: warning: ...`` on stderr; from Python they are ordinary warnings.
"""
import warnings


class TraceflowError(Exception):
    """An error caused by user input; ``str(err)`` is the one-line message shown to the user."""

    exit_code = 2

    def __init__(self, message, *, path=None, offset=None, record=None, hint=None):
        self.path = None if path is None else str(path)
        self.offset = offset
        self.record = record
        where = []
        if record is not None:
            where.append(f"record {record}")
        if offset is not None:
            where.append(f"offset {offset}")
        prefix = f"{self.path}: " if self.path else ""
        suffix = f" ({', '.join(where)})" if where else ""
        super().__init__(f"{prefix}{message}{suffix}" + (f"; {hint}" if hint else ""))


class InputFormatError(TraceflowError):
    """A malformed or unsupported input file (capture, table, model, scenario)."""


class ScenarioError(TraceflowError):
    """An invalid scenario key or value."""


class TraceflowWarning(UserWarning):
    """A result was produced, but the user should know something about it."""


def warn(message, *, path=None):
    """Issue a :class:`TraceflowWarning` (``path: message`` when ``path`` is given)."""
    warnings.warn(TraceflowWarning(f"{path}: {message}" if path is not None else message),
                  stacklevel=2)

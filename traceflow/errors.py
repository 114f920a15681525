"""User-facing errors.

A :class:`TraceflowError` is a problem with the user's input or request (bad file, bad option,
bad scenario key). The CLI prints it as one line on stderr and exits with code 2, without a
traceback. Anything else that escapes is a bug.
"""


class TraceflowError(Exception):
    """An error caused by user input; ``str(err)`` is the one-line message shown to the user."""

    exit_code = 2

    def __init__(self, message, *, path=None, offset=None, record=None):
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
        super().__init__(f"{prefix}{message}{suffix}")


class InputFormatError(TraceflowError):
    """A malformed or unsupported input file (capture, table, model, scenario)."""


class ScenarioError(TraceflowError):
    """An invalid scenario key or value."""

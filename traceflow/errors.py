"""User-facing errors and warnings.

A :class:`TraceflowError` is a problem with the user's input or request (bad file, bad option,
bad scenario key) or with the place an output goes (full disk, read-only file system, a file
where a directory should be). The CLI prints it as one line on stderr and exits with code 2,
without a traceback. Anything else that escapes is a bug.

A :class:`TraceflowWarning` (raised through :func:`warn`) is something the user must know about a
result that is still produced: a capture cut short, an estimate that is a guess. The CLI prints each
as one line ``traceflow: warning: ...`` on stderr; from Python they are ordinary warnings.
"""
import contextlib
import errno
import os
import re
import warnings


class TraceflowError(Exception):
    """An error caused by user input; ``str(err)`` is the one-line message shown to the user."""

    exit_code = 2

    def __init__(self, message, *, path=None, offset=None, record=None, hint=None):
        self.path = None if path is None else str(path)
        self.offset = offset
        self.record = record
        self.reason = message
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


@contextlib.contextmanager
def about(path):
    """Within the block, an :class:`InputFormatError` that names no file is about ``path`` (the
    input the block reads; None: nothing is named) and is raised again naming it."""
    try:
        yield
    except InputFormatError as exc:
        if exc.path is not None or path is None:
            raise
        raise InputFormatError(exc.reason, path=path, offset=exc.offset,
                               record=exc.record) from None


class ScenarioError(TraceflowError):
    """An invalid scenario key or value."""


class TraceflowWarning(UserWarning):
    """A result was produced, but the user should know something about it."""


def warn(message, *, path=None):
    """Issue a :class:`TraceflowWarning` (``path: message`` when ``path`` is given)."""
    warnings.warn(TraceflowWarning(f"{path}: {message}" if path is not None else message),
                  stacklevel=2)


class OutputError(TraceflowError):
    """An output cannot be written; ``path`` is the output as the user named it."""


#: errno values that only a write raises: whichever file a library names, the output is at fault
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})
# Arrow says "[errno 28]", Rust (Polars) "(os error 28)": their exceptions carry no errno attribute.
_ERRNO_TEXT = re.compile(r"(?:\berrno|\bos error) (\d+)", re.IGNORECASE)


def os_errno(exc):
    """The errno behind ``exc`` (an OSError, or an Arrow/Polars error quoting one), or None."""
    code = getattr(exc, "errno", None)
    if isinstance(code, int) and code > 0:
        return code
    m = _ERRNO_TEXT.search(str(exc))
    return int(m.group(1)) if m else None


def output_error(exc, path, temp=None):
    """An :class:`OutputError` naming ``path`` when ``exc`` is a failure to write it, else None.

    ``exc`` concerns the output when its errno is a write-only one (:data:`WRITE_ERRNOS`) or when
    it names ``temp`` (the hidden file or directory actually being written), which the message
    never shows. A missing or unreadable *input* keeps its own error.
    """
    if isinstance(exc, OutputError):
        return OutputError(exc.reason, path=path)
    code = os_errno(exc)
    if code is None:
        return None
    named = [str(n) for n in (getattr(exc, "filename", None), getattr(exc, "filename2", None))
             if n is not None]
    mentions_temp = temp is not None and (str(temp) in str(exc) or any(
        n == str(temp) or n.startswith(f"{temp}{os.sep}") for n in named))
    if code not in WRITE_ERRNOS and not mentions_temp:
        return None
    return OutputError(f"cannot write: {_reason(code)}", path=path)


def creation_error(exc, path):
    """An :class:`OutputError` for ``exc`` raised while creating ``path``'s directory or temp."""
    code = os_errno(exc)
    name = getattr(exc, "filename", None)
    if code in (errno.EEXIST, errno.ENOTDIR) and name is not None:
        return OutputError(f"cannot create: {name} is not a directory", path=path)
    if code is None:
        return OutputError(f"cannot create: {exc}", path=path)
    return OutputError(f"cannot create: {_reason(code)}", path=path)


def _reason(code):
    text = os.strerror(code)
    if code == errno.EFBIG:
        text += " (file-size limit)"
    return text[:1].lower() + text[1:]


def memory_limit():
    """The address-space limit (RLIMIT_AS) of this process in bytes, or None when unlimited."""
    try:
        import resource
    except ImportError:  # not POSIX
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


# Under an address-space limit, running out shows up as more than MemoryError: a shared library
# whose segments cannot be mapped, a Rust (Polars) thread that cannot start (EAGAIN) or allocate.
_NO_MEMORY_TEXT = re.compile(r"failed to map segment|cannot allocate memory|memory allocation of"
                             r"|Os \{ code: 12\b|os error 12\b|Polars binary is missing", re.IGNORECASE)
# EAGAIN starting a thread: memory for its stack, under an address-space limit
_NO_THREAD = re.compile(r"Os \{ code: 11\b|os error 11\b")
# what Python's threading raises when pthread_create fails
_NO_PY_THREAD = "can't start new thread"


def exhaustion(exc):
    """What ran out, when ``exc`` means the process ran out of memory; else None."""
    if isinstance(exc, MemoryError):
        return str(exc) or "a Python allocation failed"
    text = str(exc)
    if isinstance(exc, SystemError) and memory_limit() is not None:
        # a C extension whose allocation failed without setting MemoryError (seen importing
        # scikit-learn at 800 MiB)
        return f"a C extension failed: {text.splitlines()[0][:120] if text else 'SystemError'}"
    if isinstance(exc, RuntimeError) and _NO_PY_THREAD in text and memory_limit() is not None:
        # threading could not map a thread's stack (a prefetch or worker thread)
        return "a thread could not start"
    if not (_NO_MEMORY_TEXT.search(text) or memory_limit() is not None and _NO_THREAD.search(text)):
        return None
    if isinstance(exc, ImportError):
        return f"could not load {text.split(':')[0]}"
    if _NO_THREAD.search(text) and not _NO_MEMORY_TEXT.search(text):
        return "a native library could not start a thread"
    if type(exc).__name__ == "PanicException" or isinstance(exc, (UserWarning, OSError)):
        return f"a native library failed: {text.splitlines()[0][:120]}"
    return None


OUT_OF_MEMORY = "out of memory ("


def out_of_memory(detail):
    """The one-line message for an allocation that failed: ``detail`` and the memory limit."""
    limit = memory_limit()
    where = "" if limit is None else f"; address-space limit (ulimit -v) {limit / 2**20:.0f} MiB"
    return f"{OUT_OF_MEMORY}{detail}{where})"

"""Atomic output: write to a temporary file in the target directory, then rename.

An error mid-write never leaves a partial output behind, and a failure to write names the output
the user asked for, never the hidden temporary (:class:`~traceflow.errors.OutputError`).

Temporaries are named ``.NAME.tmp-PID-RANDOM`` next to ``NAME``, so they are recognisable and
owned: a process killed outright (SIGKILL, power loss) cannot remove its own, and the next write to
the same output removes every temporary of it whose process is gone (:func:`remove_stale`).
"""
import contextlib
import errno
import glob
import os
import re
import shutil
import tempfile
from pathlib import Path

from traceflow.errors import creation_error, os_errno, output_error

_OWNER = re.compile(r"\.tmp-(\d+)-[^/]*$")


def temp_prefix(path):
    """The name prefix of this process's temporaries for the output ``path``."""
    return f".{Path(path).name}.tmp-{os.getpid()}-"


@contextlib.contextmanager
def atomic_path(path, shown=None):
    """Yield a temporary path next to ``path``; on success rename it to ``path``, else delete it.

    ``shown`` is what an error calls the output (default: ``path``)."""
    path = Path(path)
    shown = path if shown is None else shown
    _prepare(path, shown)
    try:
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), dir=path.parent)
    except OSError as exc:
        raise creation_error(exc, shown) from None
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        if tmp.exists():
            # mkstemp creates 0600; give the output the permissions a plain open() would
            tmp.chmod(0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        error = _as_output_error(exc, shown, tmp)  # before the cleanup frees the space
        tmp.unlink(missing_ok=True)
        if error is not None:
            raise error from None
        raise


@contextlib.contextmanager
def atomic_dir(path, shown=None):
    """Yield a temporary directory next to ``path``; on success it replaces ``path`` whole."""
    path = Path(path)
    shown = path if shown is None else shown
    _prepare(path, shown)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(path), dir=path.parent))
    except OSError as exc:
        raise creation_error(exc, shown) from None
    try:
        yield tmp
        # mkdtemp creates 0700; give the output the permissions a plain mkdir() would
        tmp.chmod(0o777 & ~_umask())
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException as exc:
        error = _as_output_error(exc, shown, tmp)
        shutil.rmtree(tmp, ignore_errors=True)
        if error is not None:
            raise error from None
        raise


def _prepare(path, shown):
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise creation_error(exc, shown) from None
    remove_stale(path)


def _as_output_error(exc, shown, tmp):
    """``exc`` as an OutputError naming ``shown`` when it is about writing ``tmp``, else None."""
    error = output_error(exc, shown, tmp)
    if error is None and isinstance(exc, Exception) and os_errno(exc) is None:
        # Some writers lose the errno (Polars: "Invalid thrift: transport error" on a full disk):
        # ask the file system and the file-size limit what stopped the write.
        code = _write_blocker(tmp)
        error = None if code is None else output_error(OSError(code, os.strerror(code)), shown)
    return error


def _write_blocker(tmp):
    """ENOSPC when the file system of ``tmp`` is full, EFBIG when a file under ``tmp`` reached the
    file-size limit (RLIMIT_FSIZE); else None."""
    try:
        fs = os.statvfs(tmp.parent)
        if (fs.f_bfree if os.geteuid() == 0 else fs.f_bavail) == 0:
            return errno.ENOSPC
        import resource

        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    except (OSError, ImportError, AttributeError):
        return None
    if limit != resource.RLIM_INFINITY and any(
            p.stat().st_size >= limit for p in _files(tmp)):
        return errno.EFBIG
    return None


def _files(tmp):
    """``tmp`` itself, or the files in the directory ``tmp`` (what is left of them)."""
    if tmp.is_dir():
        return [p for p in tmp.rglob("*") if p.is_file()]
    return [tmp] if tmp.exists() else []


def remove_stale(path):
    """Delete the temporaries of ``path`` left by processes that no longer exist; their names."""
    path = Path(path)
    return _remove_dead(path.parent.glob(f".{glob.escape(path.name)}.tmp-*"))


def remove_stale_in(directory):
    """Delete every temporary in ``directory`` left by a process that no longer exists."""
    return _remove_dead(Path(directory).glob(".*.tmp-*"))


def _remove_dead(temps):
    removed = []
    for tmp in temps:
        m = _OWNER.search(tmp.name)
        if m is None or _alive(int(m.group(1)), tmp):
            continue
        with contextlib.suppress(FileNotFoundError):  # another process got there first
            if tmp.is_dir() and not tmp.is_symlink():
                shutil.rmtree(tmp)
            else:
                tmp.unlink()
        removed.append(tmp.name)
    return removed


def _alive(pid, tmp):
    """Whether the process that created ``tmp`` may still be writing it.

    A pid alone is not enough: a killed writer may linger as a zombie, or its pid be reused. A
    process that started after the temporary was last modified did not write it."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        pass
    state, started = _proc_stat(pid)
    if state == "Z":
        return False
    try:
        modified = tmp.lstat().st_mtime
    except FileNotFoundError:
        return True  # gone already: nothing to do
    return started is None or started <= modified + 1.0


def _proc_stat(pid):
    """State letter and start time (epoch seconds) of ``pid`` from /proc (Linux), else Nones."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    except (OSError, ValueError, IndexError, StopIteration):
        return None, None
    return fields[0], boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")  # fields 3 and 22


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path, text):
    """Atomically write ``text`` to ``path``."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


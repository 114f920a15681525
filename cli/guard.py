"""The ``traceflow`` command's guard: the command runs in a child process, and this parent turns
the deaths no Python code can catch into the one-line error every other failure gets.

Rust (Polars) and C libraries do not raise when an allocation fails: they print ``memory
allocation of N bytes failed`` (and a backtrace) on file descriptor 2 and abort (SIGABRT, exit
status 134). So the child's descriptor 2 is a pipe read here, while its Python ``sys.stderr``
still writes straight to the real stderr (progress bars still see a terminal; not under an
address-space limit, where CPython's unraisable MemoryErrors are dropped here). Lines arriving on
the pipe (native libraries, worker processes) are relayed as they come, except a native panic,
which is held back: if a process then died of it, one line says what ran out and the exit status
is 2; otherwise the held lines are shown. The child's own error line comes through the pipe too
(marked), so a worker's failed allocation and the coordinator's "task failed" make one line.

The child dies with this process (:func:`traceflow.lifeline.die_with_parent`), signals sent to
this process are passed on to it, and its exit status is this process's. ``TRACEFLOW_GUARD=0``
runs commands in-process.
"""
import os
import re
import select
import signal
import sys

from traceflow.errors import OUT_OF_MEMORY, memory_limit, out_of_memory
from traceflow.units import size

#: signals passed on to the child (a terminal's Ctrl-C reaches it directly: not passed twice)
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
SI_KERNEL = 0x80  # si_code of signals the tty driver sends to the whole foreground group
_MARK = b"\x00traceflow-error\x00"  # starts the child's one error line on the pipe
_ALLOC = re.compile(rb"memory allocation of (\d+) bytes failed")
# (anywhere in a line: threads dying at once interleave their writes)
_PANIC = re.compile(rb"memory allocation of|panicked at|fatal runtime error|<jemalloc>"
                    rb"|OpenBLAS error|terminate called|Check failed|^MemoryError\b|^Exception ignored")
# native lines that say memory ran out (jemalloc cannot start a thread under ulimit -v: EAGAIN;
# C++ code aborts on an uncaught std::bad_alloc, Arrow's C bridge on a failed malloc)
_NO_MEMORY = re.compile(rb"memory allocation (?:of|still failed)|<jemalloc>.*(?:failed|out of memory)"
                        rb"|Cannot allocate memory|std::bad_alloc|Out of memory: malloc", re.IGNORECASE)
_pipe = None  # in the child: the descriptor of the pipe to the guard


def wanted():
    """Whether to run the command under the guard (POSIX with sigtimedwait: not macOS, Windows)."""
    return (hasattr(os, "fork") and hasattr(signal, "sigtimedwait")
            and os.environ.get("TRACEFLOW_GUARD", "1") != "0")


def supervise():
    """Fork. In the child return None (run the command); in the parent relay and return the exit
    status of the child."""
    read_end, write_end = os.pipe()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        os.close(read_end)
        _become_child(parent, write_end)
        return None
    os.close(write_end)
    return _Guard(pid, read_end).run()


def _become_child(parent, pipe):
    global _pipe
    from traceflow.lifeline import die_with_parent

    die_with_parent(parent)
    # Under an address-space limit Python's stderr stays on the pipe as well: CPython prints a
    # MemoryError it cannot raise (an "unraisable" one) on sys.stderr, once per failed call (419
    # lines in one CI run), and the guard drops those lines when the command ran out of memory.
    terminal = os.dup(2) if memory_limit() is None else None  # not inherited (PEP 446)
    os.dup2(pipe, 2)
    os.close(pipe)
    _pipe = 2
    if terminal is not None:
        sys.stderr = open(terminal, "w", buffering=1, encoding=sys.stderr.encoding,
                          errors="backslashreplace")
    os.environ["TRACEFLOW_GUARD"] = "0"  # a traceflow run from inside needs no second guard


def report_error(message):
    """Print the command's one error line: through the guard when there is one."""
    if _pipe is None:
        sys.stderr.write(f"traceflow: error: {message}\n")
        sys.stderr.flush()
        return
    os.write(_pipe, _MARK + message.replace("\n", " ").encode("utf-8", "backslashreplace") + b"\n")


def command_name(argv):
    return next((a for a in argv if not a.startswith("-")), "traceflow")


class _Guard:
    def __init__(self, child, pipe):
        self.child = child
        self.pipe = pipe
        self.partial = b""
        self.held = []
        self.blanks = 0  # empty lines not relayed yet
        self.holding = False
        self.alloc = None  # largest failed native allocation (bytes)
        self.starved = False  # a native library said memory ran out
        self.error = None  # the child's error line

    def run(self):
        pidfd = _pidfd(self.child)
        status = None
        while status is None:
            watched = [fd for fd in (self.pipe, pidfd) if fd is not None]
            # Forwarded signals stay blocked and pending: poll them, at most 50 ms late.
            ready = select.select(watched, [], [], 0.05)[0] if watched else []
            self._forward_signals()
            if self.pipe in ready:
                data = os.read(self.pipe, 1 << 16)
                if data:
                    self._feed(data)
                else:  # every writer is gone
                    os.close(self.pipe)
                    self.pipe = None
            if pidfd is None or pidfd in ready:
                pid, status = os.waitpid(self.child, 0 if pidfd is not None else os.WNOHANG)
                status = status if pid else None
        self._drain()
        return self._finish(status)

    def _forward_signals(self):
        while (info := signal.sigtimedwait(FORWARDED, 0)) is not None:
            if info.si_code != SI_KERNEL:
                os.kill(self.child, info.si_signo)

    def _drain(self):
        """Read what the child wrote before it died; processes it left behind are not waited for."""
        if self.pipe is None:
            return
        os.set_blocking(self.pipe, False)
        try:
            while data := os.read(self.pipe, 1 << 16):
                self._feed(data)
        except BlockingIOError:
            pass
        os.close(self.pipe)

    def _feed(self, data):
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        for line in lines:
            self._line(line)

    def _line(self, line):
        if line.startswith(_MARK):
            self.error = line[len(_MARK):].decode("utf-8", "replace")
            return
        if m := _ALLOC.search(line):
            self.alloc = max(self.alloc or 0, int(m.group(1)))
        self.starved = self.starved or bool(_NO_MEMORY.search(line))
        self.holding = self.holding or bool(_PANIC.search(line) or _NO_MEMORY.search(line))
        if self.holding:
            self.held.append(line)
        elif line:
            _write(b"\n" * self.blanks + line + b"\n")
            self.blanks = 0
        else:  # Rust starts a panic message with an empty line: wait for what follows
            self.blanks += 1

    def _finish(self, status):
        if self.partial:
            self._line(self.partial)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            _remove_child_temporaries(sys.argv[1:])
        if code != 0 and (self.starved or self._child_starved()):
            # the held native lines (panics, allocation failures) are this one line's detail
            _write(f"traceflow: error: {self._starved_message()}\n".encode())
            return 2
        for line in [b""] * self.blanks + self.held:
            _write(line + b"\n")
        if self.error:
            _write(f"traceflow: error: {self.error}\n".encode())
        if code < 0:  # die of the same signal, as if there were no guard
            sig = -code
            if sig not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(sig, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
            os.kill(os.getpid(), sig)
            return 128 + sig
        return code

    def _child_starved(self):
        return self.error is not None and OUT_OF_MEMORY in self.error

    def _starved_message(self):
        if self._child_starved():  # the child said so itself
            return self.error
        detail = ("a native library could not allocate" if self.alloc is None else
                  f"a native allocation of {size(self.alloc)} failed")
        if self.error:  # e.g. a worker's allocation failed; the coordinator said what it lost
            return f"{self.error}: {out_of_memory(detail)}"
        return f"{command_name(sys.argv[1:])}: {out_of_memory(detail)}"


def _remove_child_temporaries(argv):
    """A child that aborted (native allocation failure, signal) could not remove the temporaries
    of its outputs (-o), which streamed commands write as they go: remove them now."""
    from traceflow.atomic import remove_stale

    for i, arg in enumerate(argv):
        if arg in ("-o", "--output") and i + 1 < len(argv):
            path = argv[i + 1]
        elif arg.startswith("--output="):
            path = arg.partition("=")[2]
        else:
            continue
        if path != "-":
            remove_stale(path)


def _pidfd(pid):
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux ≥ 5.3: waitpid is polled instead
        return None


def _write(data):
    sys.stderr.flush()
    view = memoryview(data)
    while view:
        view = view[os.write(2, view):]

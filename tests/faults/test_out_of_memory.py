"""Running out of memory where it cannot be raised as an ordinary MemoryError is one line too:
a thread that cannot start, a C++ library that aborts on ``std::bad_alloc``, an allocation that
fails where CPython can only print it (an "unraisable" exception), and (slow) every
address-space limit from the first import to the end of ``fit`` and ``flows``, not only the few
the default suite samples (test_output_errors.py). Found by that sweep: at 506, 512, 548, 554
and 560 MiB ``fit`` printed a traceback or died of SIGABRT instead, and at 644 MiB it hung; at
650 MiB it hung in 1 run of 3 (a Rust backtrace printed for want of memory)."""
import os
import resource
import subprocess
import sys
import textwrap

import pytest

from faultkit import leftovers, traceflow, write_pcap
from traceflow.errors import exhaustion


def test_a_thread_that_cannot_start_under_a_memory_limit_is_out_of_memory(monkeypatch):
    import traceflow.errors as errors

    exc = RuntimeError("can't start new thread")
    monkeypatch.setattr(errors, "memory_limit", lambda: None)
    assert exhaustion(exc) is None              # without a limit: not claimed (a thread limit?)
    monkeypatch.setattr(errors, "memory_limit", lambda: 500 << 20)
    assert exhaustion(exc) == "a thread could not start"


def _run(script):
    # -P: the installed traceflow, not the checkout's directory
    return subprocess.run([sys.executable, "-P", "-c", textwrap.dedent(script)],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("text", [
    # libstdc++ on an uncaught std::bad_alloc
    "terminate called after throwing an instance of 'std::bad_alloc'\\n  what():  std::bad_alloc",
    # Arrow's C bridge (CI, flows at 500 MiB)
    "/arrow/cpp/src/arrow/c/bridge.cc:90:  Check failed: _s.ok() Operation failed\\n"
    "Bad status: Out of memory: malloc of size 320 failed"])
def test_a_child_aborting_on_a_failed_native_allocation_is_one_line_through_the_guard(text):
    # the guard's real path: fork, the child writes what the library writes and aborts
    proc = _run(f"""
        import os, sys
        sys.argv = ["traceflow", "fit", "x.pcap"]
        from traceflow.cli import guard
        code = guard.supervise()
        if code is None:
            os.write(2, b"{text}\\n")
            os.abort()
        sys.exit(code)
    """)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        "traceflow: error: fit: out of memory (a native library could not allocate)"]


def test_unraisable_memory_errors_of_a_command_that_ran_out_are_dropped_by_the_guard():
    # what CPython prints of a MemoryError it cannot raise, when it cannot even call
    # sys.unraisablehook (CI: 419 times), on the child's Python stderr, under a memory limit
    proc = _run("""
        import os, resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
        sys.argv = ["traceflow", "fit", "x.pcap"]
        from traceflow.cli import guard
        code = guard.supervise()
        if code is None:
            for _ in range(419):
                sys.stderr.write("Exception ignored on building sys.unraisablehook arguments:\\n"
                                 "MemoryError\\n")
            sys.stderr.flush()
            guard.report_error("fit: out of memory (a Python allocation failed)")
            sys.exit(2)
        sys.exit(code)
    """)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == ["traceflow: error: fit: out of memory (a Python allocation "
                                        "failed)"]


def test_unraisable_memory_errors_are_not_printed_but_reported_once():
    # CPython hands an exception raised in __del__ to sys.unraisablehook, as it does a Cython
    # noexcept function's
    proc = _run("""
        import sys
        from traceflow.cli import main as m
        sys.unraisablehook = m._unraisable
        class Dying:
            def __del__(self):
                raise MemoryError
        for _ in range(419):
            Dying()
        print(m._lost_memory)
        class Other:
            def __del__(self):
                raise ValueError("a bug")
        Other()
    """)
    assert proc.stdout.split() == ["True"]
    assert "MemoryError" not in proc.stderr
    assert "ValueError: a bug" in proc.stderr    # anything else is printed as Python does


def test_rust_backtraces_are_off_under_a_memory_limit():
    """A Rust panic for want of memory, with RUST_BACKTRACE set, deadlocked symbolizing its
    backtrace (``fit`` at 650 MiB hung in 1 run of 3; the sweep below found it): under a limit
    the command turns backtraces off, whatever the environment said."""
    proc = subprocess.run([sys.executable, "-P", "-c", textwrap.dedent("""
        import os, resource
        resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
        from traceflow.cli import main
        main._prepare_for_memory_limit()
        print(os.environ["RUST_BACKTRACE"])
    """)], capture_output=True, text=True, timeout=60, env={**os.environ, "RUST_BACKTRACE": "1"})
    assert proc.stdout.split() == ["0"], proc.stderr


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    return write_pcap(tmp_path_factory.mktemp("cap") / "trace.pcap", 3000)


#: from below the first import that fails to above what each command needs on the capture
SWEEP = {"fit": range(380, 800, 6), "flows": range(280, 560, 6)}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SWEEP))
def test_every_memory_limit_is_one_line(name, capture, tmp_path):
    bad = []
    for mib in SWEEP[name]:
        out = tmp_path / f"out{mib}"
        out.mkdir()
        target = out / ("m.json" if name == "fit" else "f.parquet")
        proc = traceflow(name, capture, "-o", target, cwd=tmp_path,
                         limits=[(resource.RLIMIT_AS, mib << 20)], timeout=120)
        lines = proc.stderr.strip().splitlines()
        if proc.returncode == 0:
            continue                                # enough memory: the sweep's top
        if (proc.returncode != 2 or len(lines) != 1
                or not lines[0].startswith(f"traceflow: error: {name}: out of memory (")
                or leftovers(out)):
            bad.append((mib, proc.returncode, proc.stderr[-300:], leftovers(out)))
    assert not bad, bad

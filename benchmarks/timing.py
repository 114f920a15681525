"""Wall-clock timers shared by the benchmarks (seconds, ``time.perf_counter``), and the
measure of one child process (:func:`run_child`)."""
import math
import os
import signal
import subprocess
import sys
import time


def timed(fn, *args, **kw):
    """``(result, seconds)`` of one call of ``fn(*args, **kw)``."""
    start = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - start


def best_of(fn, repeat=3):
    """``(best seconds, last result)`` of ``repeat`` calls of ``fn()``: the least disturbed run."""
    best, out = float("inf"), None
    for _ in range(repeat):
        out, seconds = timed(fn)
        best = min(best, seconds)
    return best, out


#: runs the command in its arguments (output discarded) and prints the wall seconds, peak RSS
#: (KB), CPU seconds and exit code of that child. A child forked straight from a benchmark
#: reports at least the benchmark's own peak RSS: Linux records the forked image's high-water
#: mark in the child's ``ru_maxrss`` when it execs (``tox -e bench`` ran ``bench_memory`` after
#: other benchmarks, and every command "peaked" at the runner's 886 MB); this launcher is a
#: fresh process of ~10 MB
_LAUNCHER = r"""
import os, sys, time
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - start, usage.ru_maxrss, usage.ru_utime + usage.ru_stime,
      os.waitstatus_to_exitcode(status))
"""


def run_child(cmd, timeout=None):
    """``(wall seconds, CPU seconds, peak RSS in MB, exit code)`` of the process ``cmd`` alone
    (its output discarded; see :data:`_LAUNCHER`), killed with everything it started after
    ``timeout`` seconds (exit code -9, the other values NaN)."""
    proc = subprocess.Popen([sys.executable, "-c", _LAUNCHER, *map(str, cmd)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return math.nan, math.nan, math.nan, -9
    wall, rss_kb, cpu, code = out.split()
    return float(wall), float(cpu), int(rss_kb) / 1024.0, int(code)

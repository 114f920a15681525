"""Wall-clock timers shared by the benchmarks (seconds, ``time.perf_counter``)."""
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

"""Giving freed heap memory back to the system between the stages of a long computation.

glibc's malloc returns free memory to the system only from the top of the main heap; what the
decoder, numpy and the reduction threads freed elsewhere (other arenas, holes below live blocks)
stays in the process and adds to the next stage's peak. ``malloc_trim(0)`` releases the free
pages of every arena (as Dask's workers do). On a 16x capture, ``traceflow fit`` held 80 MB
less after its pass.
"""
import ctypes
import ctypes.util

try:
    _trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    _trim.argtypes, _trim.restype = [ctypes.c_size_t], ctypes.c_int
except (OSError, AttributeError):   # not glibc
    _trim = None


def trim_heap():
    """Release the C heap's free pages to the system (glibc; elsewhere nothing)."""
    if _trim is not None:
        _trim(0)

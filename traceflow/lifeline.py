"""Child processes that die with their parent.

A parent killed outright (SIGKILL, the out-of-memory killer) runs no cleanup, so its children must
notice by themselves. On Linux the kernel does it: ``prctl(PR_SET_PDEATHSIG)`` sends the child a
signal the moment its parent dies, even while the child is busy in C code holding the GIL (a
simulation), where no Python thread could run. Elsewhere a daemon thread polls the parent's pid,
which works only while the child lets Python threads run.
"""
import ctypes
import ctypes.util
import os
import signal
import threading
import time

PR_SET_PDEATHSIG = 1


def die_with_parent(parent, sig=signal.SIGKILL):
    """Have this process receive ``sig`` when ``parent`` (its parent's pid) dies.

    Exits at once if the parent is already gone (it may have died before this call). Returns
    True when the kernel does it (Linux), False when a polling thread does.
    """
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        armed = libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux
        armed = False
    if not armed:
        threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    # The death signal is armed only now: a parent that died before did not trigger it.
    if os.getppid() != parent:
        os._exit(1)
    return armed


def _exit_with_parent(parent, period=1.0):
    while os.getppid() == parent:
        time.sleep(period)
    os._exit(1)

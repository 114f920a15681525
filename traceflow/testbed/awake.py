"""Keep every CPU out of its idle halt while a testbed runs.

Under a hypervisor an idle virtual CPU halts (HLT exits to the host; on this project's machines,
Firecracker guests with no cpuidle driver, there is no polling idle state), and waking it for a
timer or a frame takes 0.1-1 ms. With both CPUs idle the relay's median handshake error was
0.26 ms, past half of issue 16's 0.5 ms tolerance, in three runs out of four; with one busy
process beside it the test passed. A spinner per CPU at ``SCHED_IDLE`` keeps the
CPUs running without taking time from anything that wants it: the scheduler runs such a task only
when no other task is runnable and preempts it as soon as one is (the relay runs ``SCHED_FIFO``).
"""
import os
import subprocess
import sys

SPIN = ("import os\n"
        "os.sched_setaffinity(0, {%d})\n"
        "os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
        "while True:\n"
        "    pass\n")


class KeepAwake:
    """One ``SCHED_IDLE`` busy loop per CPU this process may use, until :meth:`stop`."""

    def __init__(self):
        self.procs = [subprocess.Popen([sys.executable, "-c", SPIN % cpu],
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
                      for cpu in sorted(os.sched_getaffinity(0))]

    def stop(self):
        for proc in self.procs:
            proc.kill()
        for proc in self.procs:
            proc.wait()
        self.procs = []

"""tcpdump on the router's two interfaces: ``server_side.pcap`` (r0, data before the relay and the
queue) and ``client_side.pcap`` (r1, data after them). Nanosecond timestamps, TCP only, headers
(``snaplen`` bytes) only."""
import re
import signal
import subprocess

from traceflow.testbed.netns import read_line

START_TIMEOUT_S = 10

_COUNTERS = re.compile(r"(\d+) packets? (captured|received by filter|dropped by kernel)")


class Capture:
    """One tcpdump process writing ``path`` from router interface ``dev``."""

    def __init__(self, topology, dev, path, snaplen):
        self.dev = dev
        # -Z root: tcpdump would otherwise drop to its own user before opening the output file,
        # which then could not be created in the private temporary run directory.
        # --immediate-mode: without it packets wait in the kernel ring up to a second for their
        # block to fill, and the last second of a run would be lost when tcpdump is stopped.
        self.proc = topology.spawn(
            "rtr", ["tcpdump", "-i", dev, "-n", "-s", str(snaplen), "-B", "65536", "-Z", "root",
                    "--immediate-mode", "--time-stamp-precision=nano", "-w", str(path), "tcp"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def wait_ready(self):
        """Block until tcpdump says it is listening; a failure to start is an OSError."""
        seen = []
        while line := read_line(self.proc.stderr, START_TIMEOUT_S):
            seen.append(line.strip())
            if "listening on" in line:
                return
        raise OSError(f"tcpdump on {self.dev} did not start: {' / '.join(seen)}")

    def stop(self):
        """Stop tcpdump (it flushes on SIGINT) and return its counters: captured, received by
        filter, dropped by kernel."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return {name.replace(" ", "_"): int(n) for n, name in _COUNTERS.findall(err or "")}

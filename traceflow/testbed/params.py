"""Parameters of a testbed run: parsing of the user's values and the derived quantities.

Units: rates in bit/s, sizes and buffers in bytes (or packets when ``buffer_unit`` is "packets"),
times in seconds. Client loop ``i`` belongs to RTT class ``i mod len(rtt)`` and uses the source
address ``client_address(c)`` of its class ``c``.
"""
import re
from dataclasses import asdict, dataclass

from traceflow.errors import TraceflowError
from traceflow.values import parse_rate

SERVER_NET, CLIENT_NET = "10.201.1", "10.201.2"   # inside the run's own namespaces only
SERVER_PORT = 9000


def parse_buffer(text):
    """(size, unit) of ``12000B`` (bytes, a bfifo) or ``40p`` (packets, a pfifo)."""
    m = re.fullmatch(r"\s*(\d+)\s*([Bp])\s*", str(text))
    if not m or int(m.group(1)) < 1:
        raise TraceflowError(f"not a buffer size: {text!r} (bytes like 12000B or packets like 40p)")
    return int(m.group(1)), "bytes" if m.group(2) == "B" else "packets"


def rtt_classes(durations_ns):
    """RTT classes in seconds from round-trip delays in ns (``--rtt 10ms,60ms,180ms``; 0 means
    no added delay)."""
    out = tuple(d / 1e9 for d in durations_ns)
    if not out:
        raise TraceflowError("no RTT given (use e.g. --rtt 10ms,60ms,180ms)")
    if len(out) > 200:
        raise TraceflowError(f"at most 200 RTT classes, got {len(out)}")
    return out


@dataclass(frozen=True)
class Params:
    """One run. ``rtt``: configured round-trip propagation delays (s), one per class; the relay
    holds each frame rtt/2 per direction. ``mean``: population mean of the Pareto(alpha, k) file
    sizes (bytes), ``max_size`` caps a draw. ``idle``: mean of the exponential think time (s).
    ``drain``: after ``duration`` no transfer starts; transfers still running get ``drain`` more
    seconds before they are cut (ok = 0)."""

    clients: int = 32
    alpha: float = 1.35
    mean: float = 4100.0
    idle: float = 1.0
    rate: int = int(parse_rate("1.5Mbit"))   # bit/s, spelled as the CLI default
    buffer: int = 6000
    buffer_unit: str = "bytes"
    rtt: tuple = (0.0,)
    cc: str = "reno"
    duration: float = 300.0
    drain: float = 30.0
    seed: int = 1
    max_size: int = 50_000_000
    mtu: int = 1040
    snaplen: int = 96

    def __post_init__(self):
        if self.rate < 8000:  # HTB's rate table ends there
            raise TraceflowError(f"--rate must be at least 8kbit, got {self.rate} bit/s")
        if self.clients < 1:
            raise TraceflowError(f"--clients must be at least 1, got {self.clients}")
        if self.alpha <= 1.0:
            raise TraceflowError(f"--alpha must be > 1 for a finite mean, got {self.alpha}")
        if self.mean < 1 or self.idle <= 0 or self.duration <= 0:
            raise TraceflowError("--mean, --idle and --duration must be positive")
        if not re.fullmatch(r"[a-z0-9_]+", self.cc):
            raise TraceflowError(f"not a congestion control name: {self.cc!r}")

    @property
    def k(self):
        """Pareto location (bytes) giving the population mean ``mean``: k = mean (alpha−1)/alpha."""
        return self.mean * (self.alpha - 1.0) / self.alpha

    def to_dict(self):
        d = asdict(self)
        d["rtt"] = list(self.rtt)
        d["k"] = self.k
        return d


def client_address(rtt_class):
    """Source address of the clients of RTT class ``rtt_class``."""
    return f"{CLIENT_NET}.{10 + rtt_class}"


SERVER_ADDRESS = f"{SERVER_NET}.2"

"""Scenario files (TOML) → validated dataclasses, ``--set`` overrides, plug-in registries.

Units: time in seconds (float), rates in bit/s, sizes in bytes, windows and queue limits in
packets unless the key says otherwise. Unknown keys and bad values raise
:class:`traceflow.errors.ScenarioError` naming the key (``traffic[0].tcp.cc``).

The validation machinery and the queue/hook registries live in :mod:`.schema`, the ``[tcp]``
section and the congestion-control / loss-recovery registries in :mod:`.scenario_tcp`; their
public names are importable from here. Plug-ins: ``register_queue(kind, params_dataclass,
builder)``, ``register_hook(...)``, ``register_cc(name, builder)``,
``register_recovery(name, builder)``. At import, the optional modules
``traceflow.sim.disciplines`` and ``traceflow.sim.ssc`` are imported when present; they call these.
"""
from __future__ import annotations

import copy
import importlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

from traceflow.errors import ScenarioError
from traceflow.values import apply_overrides, merge, read_toml

from .schema import (HOOKS, QUEUES, DropListParams, DropTailParams, HookContext,  # noqa: F401
                     HookSpec, QueueContext, QueueSpec, REDParams, Registered, _err, _meta, build,
                     meta, register_hook, register_queue)
from .scenario_tcp import (CONGESTION, PROFILES, RECOVERY, CubicParams, RateParams,  # noqa: F401
                           TcpConfig, VegasParams, register_cc, register_recovery)

# ---------------------------------------------------------------------------------------------
# scenario sections

@dataclass
class Simulation:
    duration: float = _meta(60.0, gt=0, doc="simulated seconds")
    seed: int = _meta(1, min=0)
    mss: int = _meta(1000, min=1, doc="TCP/UDP payload bytes per full segment")
    tcp_header: int = _meta(40, min=0, doc="IP+TCP header bytes")
    udp_header: int = _meta(28, min=0, doc="IP+UDP header bytes")
    series_bin: float = _meta(0.01, gt=0, doc="link time-series bin, s")
    queue_sample: float = _meta(0.01, min=0, doc="queue sampling period, s (0 = off)")
    progress_every: float = _meta(0.0, min=0, doc="progress callback period, simulated s")


@dataclass
class LinkSpec:
    """One duplex link: both directions get the same delay and their own queue; the a->b
    direction runs at ``rate``, the b->a one at ``rate_rev`` (default: ``rate``; 0 or "line":
    unshaped, serialised at ``line_rate``). With ``burst`` > 0 each shaped direction is a token
    bucket (HTB/TBF-like): packets leave at ``line_rate`` while the bucket, filled at ``rate`` up
    to ``burst`` bytes, is not negative; each takes its size (+ ``overhead``) from it."""
    rate: float = _meta(10e6, gt=0, doc="bit/s")
    rate_rev: float | str | None = _meta(None, doc="bit/s of b->a; 0 or \"line\": unshaped")
    line_rate: float = _meta(10e9, gt=0, doc="bit/s of an unshaped direction and of bursts")
    burst: int = _meta(0, min=0, doc="token-bucket depth, bytes (0: plain rate serialisation)")
    overhead: int = _meta(0, min=0, doc="bytes the shaper counts per packet beyond the IP "
                                        "bytes (14: Ethernet header, as HTB counts it)")
    delay: float = _meta(0.001, min=0, doc="propagation delay, s")
    queue: QueueSpec = _meta(factory=lambda: QueueSpec("droptail", DropTailParams()))
    queue_reverse: QueueSpec | None = _meta(None, doc="queue of the b->a direction (default: same)")
    loss: float = _meta(0.0, min=0, max=1, doc="random loss probability a->b")
    loss_reverse: float = _meta(0.0, min=0, max=1, doc="random loss probability b->a")
    pcap: bool = _meta(False, doc="capture both directions into <a>-<b>.pcap")
    monitor: bool = _meta(False, doc="time series and queue samples for both directions")

    def validate(self, path):
        r = self.rate_rev
        if isinstance(r, str) and r != "line" or isinstance(r, float) and r < 0:
            raise _err(f"{path}.rate_rev", f"expected bit/s > 0, 0 or \"line\" (got {r!r})")

    def direction(self, reverse):
        """(shaped rate bit/s or 0 if unshaped, line rate bit/s) of one direction."""
        r = self.rate_rev if reverse else self.rate
        if reverse and r is None:
            r = self.rate
        return (0.0 if r == "line" or r == 0 else float(r)), self.line_rate


@dataclass
class CustomLink(LinkSpec):
    a: str = _meta("")
    b: str = _meta("")


@dataclass
class Topology:
    kind: str = _meta("dumbbell", choices=("dumbbell", "star", "chain", "custom"))
    left: int = _meta(1, min=1, doc="dumbbell: hosts l0.. on router g1")
    right: int = _meta(1, min=1, doc="dumbbell: hosts r0.. on router g2")
    clients: int = _meta(1, min=1, doc="star: hosts c0.. on gateway gw (server: srv)")
    sources: int = _meta(1, min=1, doc="chain: hosts h0.. on R1; R1-R2-dst")
    bottleneck: LinkSpec = _meta(factory=LinkSpec)
    access: LinkSpec = _meta(factory=lambda: LinkSpec(rate=100e6, delay=0.001))
    egress: LinkSpec | None = _meta(None, doc="chain: R2-dst link (default: access)")
    links: dict = _meta(factory=dict, doc="per-link overrides keyed 'a-b' (tables of LinkSpec keys)")
    nodes: list[str] = _meta(factory=list, doc="custom: node names")
    link: list[CustomLink] = _meta(factory=list, doc="custom: duplex links")


@dataclass
class UdpConfig:
    rate: float = _meta(0.0, min=0, doc="bit/s while sending (0 = line rate of the first hop)")
    spacing: float = _meta(0.0, min=0, doc="minimum inter-packet spacing tau, s")
    size: str = _meta("fixed", choices=("fixed", "exponential"))
    mean_size: float = _meta(0.0, min=0, doc="exponential: mean IP packet bytes (0 = mss+header)")


@dataclass
class SizeDist:
    dist: str = _meta("pareto", choices=("pareto", "exponential", "empirical", "fixed"))
    alpha: float = _meta(1.2, gt=0)
    k: float = _meta(0.0, min=0, doc="Pareto location, bytes (0 = from mean)")
    mean: float = _meta(4096.0, gt=0, doc="target mean size, bytes")
    values: list[float] = _meta(factory=list, doc="empirical sizes, bytes")
    normalize: str = _meta("none", choices=("none", "presample", "iterate"),
                           doc="sample-path normalization of the realized mean to `mean`")
    iterations: int = _meta(3, min=1, doc="iterate: maximum runs")

    def validate(self, path):
        if self.dist == "empirical" and not self.values:
            raise _err(f"{path}.values", "empirical size distribution needs values")
        if self.dist == "pareto" and self.k == 0 and self.alpha <= 1:
            raise _err(f"{path}.k", "alpha <= 1 has no mean: give k explicitly")


@dataclass
class Traffic:
    kind: str = _meta("infinite", choices=("infinite", "files", "poisson", "onoff", "trace"))
    transport: str = _meta("tcp", choices=("tcp", "udp"))
    src: str | list[str] = _meta("l*", doc="node names or a glob")
    dst: str | list[str] = _meta("r*")
    count: int = _meta(0, min=0, doc="flows (0 = max(len(src), len(dst)))")
    start: float = _meta(0.0, min=0)
    start_spread: float = _meta(0.0, min=0, doc="uniform random extra start delay, s")
    cls: int = _meta(0, min=0, doc="class tag for classful disciplines")
    extra_delay: float = _meta(0.0, min=0, doc="one-way delay added at both ends, s")
    tcp: dict = _meta(factory=dict, doc="overrides of [tcp] for this group")
    udp: UdpConfig = _meta(factory=UdpConfig)
    size: SizeDist = _meta(factory=SizeDist)
    idle: float = _meta(1.0, gt=0, doc="files: mean exponential idle time, s")
    first_idle: bool = _meta(True, doc="files: start each client with an idle period")
    pad_last: bool = _meta(False, doc="files: send ceil(size/mss) full segments (ns-2 agents)")
    idle_after: str = _meta("delivery", choices=("delivery", "last_ack"),
                            doc="files: the idle period starts when the receiver has the file "
                                "or when the sender has its last ACK")
    rate: float = _meta(100.0, gt=0, doc="poisson: packets per second per flow")
    on: list[float] = _meta(factory=lambda: [1.0, 1.0], doc="onoff: uniform on period [lo, hi], s")
    off: list[float] = _meta(factory=lambda: [1.0, 1.0], doc="onoff: uniform idle [lo, hi], s")
    persistent: bool = _meta(False, doc="onoff: one TCP connection for all on periods, the off "
                                        "period only stops releasing data (ns-2 FTP start/stop "
                                        "on one agent); false: a new connection per on period")
    table: str = _meta("", doc="trace: Parquet/CSV flows table (start, size; optional rtt, request, server_share)")
    rtt_measured: bool = _meta(False, doc="trace: the table's rtt is a measured handshake RTT, "
                                          "which holds the handshake packets' transmission times "
                                          "(the simulated links add them again; false: rtt is a "
                                          "propagation RTT)")

    def validate(self, path):
        for name in ("on", "off"):
            v = getattr(self, name)
            if len(v) != 2 or v[0] < 0 or v[1] < v[0]:
                raise _err(f"{path}.{name}", f"expected [lo, hi] with 0 <= lo <= hi (got {v})")


@dataclass
class Monitor:
    links: list[str] = _meta(factory=list, doc="directed links 'a->b' with series/queue samples "
                                                "(default: the topology's bottleneck)")


@dataclass
class Scenario:
    simulation: Simulation = _meta(factory=Simulation)
    topology: Topology = _meta(factory=Topology)
    tcp: TcpConfig = _meta(factory=TcpConfig)
    traffic: list[Traffic] = _meta(factory=list)
    monitor: Monitor = _meta(factory=Monitor)
    name: str = _meta("")
    description: str = _meta("")
    raw: dict = field(default_factory=dict, repr=False, compare=False, init=False)

    def validate(self, path):
        if not self.traffic:
            raise _err("traffic", "a scenario needs at least one [[traffic]] group")
        for i, t in enumerate(self.traffic):
            tcp_for(self, t, f"traffic[{i}].tcp")


def tcp_for(scenario, group, path="tcp"):
    """The [tcp] config with the group's overrides applied (validated)."""
    if not group.tcp:
        return scenario.tcp
    # the group's keys overlay the keys [tcp] gave explicitly, then the profile fills the rest
    merged = merge(scenario.tcp.explicit, group.tcp, replace=("hook",))
    return build(TcpConfig, merged, path)


# ---------------------------------------------------------------------------------------------
# loading and overrides

def load_scenario(source, overrides=(), seed=None):
    """Load a scenario from a TOML path, TOML text, a dict, or return a Scenario unchanged.

    ``overrides``: ``["path.key=value", ...]``; ``seed`` replaces ``simulation.seed``.
    """
    if isinstance(source, Scenario):
        if not overrides and seed is None:
            return source
        raw = source.raw
        path = None
    elif isinstance(source, dict):
        raw, path = source, None
    else:
        text, path = source, None
        if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source
                                         and source.endswith(".toml")):
            text, path = None, Path(source)
        raw = read_toml(path, text=text)
    raw = apply_overrides(raw, overrides)
    if seed is not None:
        raw.setdefault("simulation", {})["seed"] = int(seed)
    try:
        sc = build(Scenario, {k: v for k, v in raw.items()})
    except ScenarioError as exc:
        if path is not None:
            raise ScenarioError(str(exc), path=path) from None
        raise
    sc.raw = copy.deepcopy(raw)
    return sc


# ---------------------------------------------------------------------------------------------
# optional plug-ins (router disciplines, TCP-MT's SSC)

for _mod in ("traceflow.sim.disciplines", "traceflow.sim.ssc"):
    if importlib.util.find_spec(_mod) is not None:
        importlib.import_module(_mod)

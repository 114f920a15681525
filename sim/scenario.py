"""Scenario files (TOML) → validated dataclasses, ``--set`` overrides, plug-in registries.

Units: time in seconds (float), rates in bit/s, sizes in bytes, windows and queue limits in
packets unless the key says otherwise. Unknown keys and bad values raise
:class:`traceflow.errors.ScenarioError` naming the key (``traffic[0].tcp.cc``).

Plug-ins: ``register_queue(kind, params_dataclass, builder)`` and
``register_hook(kind, params_dataclass, builder)``. At import, the optional modules
``traceflow.sim.disciplines`` and ``traceflow.sim.ssc`` are imported when present; they call these.
"""
from __future__ import annotations

import copy
import dataclasses
import importlib
import importlib.util
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

from traceflow.errors import ScenarioError
from traceflow.values import apply_overrides, merge, read_toml

# ---------------------------------------------------------------------------------------------
# generic dict -> dataclass validation


def _meta(default=dataclasses.MISSING, *, factory=None, min=None, max=None, choices=None,
          gt=None, doc=""):
    md = {"min": min, "max": max, "choices": choices, "gt": gt, "doc": doc}
    if factory is not None:
        return field(default_factory=factory, metadata=md)
    return field(default=default, metadata=md)


meta = _meta   # public name for plug-in parameter dataclasses


def _err(path, msg):
    return ScenarioError(f"{path}: {msg}" if path else msg)


def _coerce(tp, value, path):
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _coerce(a, value, path)
            except ScenarioError as exc:
                errors.append(exc)
        raise errors[0] if len(errors) == 1 else _err(path, f"bad value {value!r}")
    if dataclasses.is_dataclass(tp):
        return build(tp, value, path)
    if tp is QueueSpec:
        return QueueSpec.parse(value, path)
    if tp is HookSpec:
        return HookSpec.parse(value, path)
    if origin is list:
        if not isinstance(value, list):
            raise _err(path, f"expected a list, got {value!r}")
        return [_coerce(args[0], v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise _err(path, f"expected a table, got {value!r}")
        return dict(value)
    if tp is bool:
        if not isinstance(value, bool):
            raise _err(path, f"expected true/false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                isinstance(value, float) and not value.is_integer()):
            raise _err(path, f"expected an integer, got {value!r}")
        return int(value)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _err(path, f"expected a number, got {value!r}")
        if not math.isfinite(value) and value != math.inf:
            raise _err(path, f"expected a finite number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise _err(path, f"expected a string, got {value!r}")
        return value
    raise _err(path, f"unsupported type {tp}")


def build(cls, data, path=""):
    """Validate the dict ``data`` into dataclass ``cls`` (unknown keys and bad values raise)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise _err(path, f"expected a table, got {data!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    for key in data:
        if key not in fields:
            raise _err(f"{path}.{key}" if path else key,
                       f"unknown key (valid: {', '.join(sorted(fields))})")
    kwargs = {}
    for name, f in fields.items():
        p = f"{path}.{name}" if path else name
        if name in data:
            v = _coerce(hints[name], data[name], p)
            md = f.metadata
            if md.get("choices") is not None and v not in md["choices"]:
                raise _err(p, f"must be one of {', '.join(map(str, md['choices']))} (got {v!r})")
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                if md.get("min") is not None and v < md["min"]:
                    raise _err(p, f"must be >= {md['min']} (got {v!r})")
                if md.get("gt") is not None and v <= md["gt"]:
                    raise _err(p, f"must be > {md['gt']} (got {v!r})")
                if md.get("max") is not None and v > md["max"]:
                    raise _err(p, f"must be <= {md['max']} (got {v!r})")
            kwargs[name] = v
    try:
        obj = cls(**kwargs)
    except TypeError as exc:
        raise _err(path, f"missing key ({exc})") from None
    check = getattr(obj, "validate", None)
    if check is not None:
        check(path)
    return obj


# ---------------------------------------------------------------------------------------------
# plug-in registries (queues, sender hooks)

@dataclass
class Registered:
    params: type
    builder: typing.Callable


QUEUES: dict[str, Registered] = {}
HOOKS: dict[str, Registered] = {}


def register_queue(kind, params_dataclass, builder):
    """Make ``queue = {kind = KIND, ...}`` available.

    ``builder(params, ctx) -> traceflow.sim._sim.Queue`` with ``ctx`` a :class:`QueueContext`.
    """
    QUEUES[kind] = Registered(params_dataclass, builder)


def register_hook(kind, params_dataclass, builder):
    """Make ``hook = {kind = KIND, ...}`` (in a traffic group or ``[tcp]``) available.

    ``builder(params, ctx) -> traceflow.sim._sim.SenderHook`` with ``ctx`` a :class:`HookContext`.
    """
    HOOKS[kind] = Registered(params_dataclass, builder)


@dataclass
class QueueContext:
    """What a queue builder may need: the link it serves and a private random stream."""
    link: str               # directed link name "a->b"
    rate_bps: float
    delay_s: float
    mss: int                # TCP payload bytes of the scenario
    packet_size: int        # typical data packet size on the wire (mss + TCP header)
    rng_state: typing.Any   # 4 uint64 words for Rng seeding (rng_seed / RED(rng_state=...))
    scenario: typing.Any    # the whole Scenario (flow groups, classes, RTTs)


@dataclass
class HookContext:
    flow: int               # flow id
    group: int              # index of the traffic group
    rng_state: typing.Any
    scenario: typing.Any
    base_rtt_s: float       # propagation RTT of the flow's path (plus extra delay)


class _Spec:
    registry: dict
    what: str

    def __init__(self, kind, params):
        self.kind = kind
        self.params = params

    @classmethod
    def parse(cls, value, path):
        if isinstance(value, str):
            value = {"kind": value}
        if not isinstance(value, dict) or "kind" not in value:
            raise _err(path, f"expected a table with a 'kind' key, got {value!r}")
        kind = value["kind"]
        reg = cls.registry.get(kind)
        if reg is None:
            raise _err(f"{path}.kind", f"unknown {cls.what} {kind!r} "
                       f"(known: {', '.join(sorted(cls.registry))})")
        rest = {k: v for k, v in value.items() if k != "kind"}
        return cls(kind, build(reg.params, rest, path))

    def build(self, ctx):
        return self.registry[self.kind].builder(self.params, ctx)

    def __repr__(self):
        return f"{type(self).__name__}({self.kind!r}, {self.params!r})"

    def __eq__(self, other):
        return type(self) is type(other) and (self.kind, self.params) == (other.kind, other.params)


class QueueSpec(_Spec):
    registry = QUEUES
    what = "queue kind"


class HookSpec(_Spec):
    registry = HOOKS
    what = "hook kind"


# ---- built-in queues ----

@dataclass
class DropTailParams:
    limit: int = _meta(100, min=0, doc="buffer in packets (0 = unlimited unless limit_bytes)")
    limit_bytes: int = _meta(0, min=0, doc="buffer in bytes (0 = no byte limit)")


@dataclass
class REDParams:
    limit: int = _meta(0, min=0, doc="physical buffer, packets (0 = none)")
    limit_bytes: int = _meta(0, min=0, doc="physical buffer, bytes (0 = none)")
    min_th: float = _meta(5.0, min=0)
    max_th: float = _meta(15.0, gt=0)
    max_p: float = _meta(0.1, gt=0, max=1)
    w_q: float = _meta(0.002, gt=0, max=1)
    mode: str = _meta("packets", choices=("packets", "bytes"))
    gentle: bool = _meta(False)
    mean_pktsize: float = _meta(0.0, min=0, doc="bytes; 0 = the scenario's data packet size")
    wait: bool = _meta(False, doc="ns-2 wait_: space drops at least 1/p_b arrivals apart")

    def validate(self, path):
        if self.max_th <= self.min_th:
            raise _err(f"{path}.max_th", f"must exceed min_th ({self.max_th} <= {self.min_th})")


def _build_droptail(p, ctx):
    from traceflow.sim._sim import DropTail
    return DropTail(p.limit, p.limit_bytes)


def _build_red(p, ctx):
    from traceflow.sim._sim import RED
    return RED(p.limit, p.limit_bytes, p.min_th, p.max_th, p.max_p, p.w_q, p.mode == "bytes",
               p.gentle, p.mean_pktsize or ctx.packet_size, ctx.rng_state, p.wait)


register_queue("droptail", DropTailParams, _build_droptail)
register_queue("red", REDParams, _build_red)


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
    """One duplex link: both directions get the same rate/delay and their own queue."""
    rate: float = _meta(10e6, gt=0, doc="bit/s")
    delay: float = _meta(0.001, min=0, doc="propagation delay, s")
    queue: QueueSpec = _meta(factory=lambda: QueueSpec("droptail", DropTailParams()))
    queue_reverse: QueueSpec | None = _meta(None, doc="queue of the b->a direction (default: same)")
    loss: float = _meta(0.0, min=0, max=1, doc="random loss probability a->b")
    loss_reverse: float = _meta(0.0, min=0, max=1, doc="random loss probability b->a")
    pcap: bool = _meta(False, doc="capture both directions into <a>-<b>.pcap")
    monitor: bool = _meta(False, doc="time series and queue samples for both directions")


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
class VegasParams:
    alpha: float = _meta(1.0, min=0)
    beta: float = _meta(3.0, min=0)
    gamma: float = _meta(1.0, min=0)

    def validate(self, path):
        if self.beta < self.alpha:
            raise _err(f"{path}.beta", "must be >= alpha")


@dataclass
class RateParams:
    """TCP Rate's control law (Park & Tuan 2000, sec. 3.6.3, Table I), per ACK with an RTT sample:
    dRTT < 0: cwnd += a xi / cwnd; dRTT > 0: cwnd -= (a xi / RTT) b tau; dRTT = 0: ``equal``."""
    a: float = _meta(1.0, gt=0, doc="increase, segments per RTT (Reno's slope; TCP-MT scales it by xi)")
    b: float = _meta(2.0, gt=0, doc="decrease per RTT relative to a, dimensionless (paper: 0 < a < b)")
    tau: float = _meta(0.0, min=0, doc="packet spacing, s (0: the measured spacing of the two ACKs)")
    equal: str = _meta("increase", choices=("increase", "hold", "decrease"),
                       doc="action on equal consecutive RTT samples (Table I: dRTT >= 0 decreases)")


@dataclass
class TcpConfig:
    cc: str = _meta("reno", choices=("tahoe", "reno", "newreno", "vegas", "rate"))
    init_cwnd: float = _meta(1.0, gt=0, doc="segments")
    init_ssthresh: float = _meta(1e9, gt=0, doc="segments")
    rwnd: int = _meta(1_000_000, min=1, doc="receiver window, segments")
    min_rto: float = _meta(0.2, gt=0)
    max_rto: float = _meta(60.0, gt=0)
    init_rto: float = _meta(3.0, gt=0)
    tick: float = _meta(0.01, min=0, doc="timer granularity, s (RTO rounded up to it)")
    rtt_per_ack: bool = _meta(False, doc="RTO estimator fed by every ACK's timestamp echo "
                                         "(default: one timed segment per RTT, as ns-2)")
    limited_transmit: bool = _meta(True, doc="RFC 3042 / ns-2 singledup_: one new segment on "
                                             "each of the first two duplicate ACKs")
    ns2_rto: bool = _meta(False, doc="ns-2's RTO arithmetic: samples in whole ticks (random tick "
                                     "phase per connection), srtt/rttvar in 1/8 and 1/4 ticks")
    delayed_ack: bool = _meta(False)
    delack_timeout: float = _meta(0.1, gt=0)
    handshake: bool = _meta(True, doc="SYN / SYN-ACK before data")
    xi: float = _meta(1.0, gt=0, doc="congestion-avoidance slope: cwnd += xi/cwnd")
    vegas: VegasParams = _meta(factory=VegasParams)
    rate: RateParams = _meta(factory=RateParams)
    hook: HookSpec | None = _meta(None)


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
    rate: float = _meta(100.0, gt=0, doc="poisson: packets per second per flow")
    on: list[float] = _meta(factory=lambda: [1.0, 1.0], doc="onoff: uniform on period [lo, hi], s")
    off: list[float] = _meta(factory=lambda: [1.0, 1.0], doc="onoff: uniform idle [lo, hi], s")
    table: str = _meta("", doc="trace: Parquet/CSV flows table (start, size, rtt)")

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
    base = _asdict_shallow(scenario.tcp)
    merged = merge(base, group.tcp, replace=("hook",))
    return build(TcpConfig, merged, path)


def _asdict_shallow(tcp):
    d = {}
    for f in dataclasses.fields(tcp):
        v = getattr(tcp, f.name)
        if dataclasses.is_dataclass(v):
            v = dataclasses.asdict(v)
        elif isinstance(v, _Spec):
            v = {"kind": v.kind, **dataclasses.asdict(v.params)}
        d[f.name] = v
    return {k: v for k, v in d.items() if v is not None}


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

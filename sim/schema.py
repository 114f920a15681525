"""Scenario schema machinery: dict -> dataclass validation and the plug-in registries.

``build(cls, data, path)`` validates a dict into a dataclass (unknown keys and bad values raise
:class:`traceflow.errors.ScenarioError` naming the key, ``traffic[0].tcp.cc``); ``meta()``
declares a field's default and bounds. ``register_queue(kind, params, builder)`` and
``register_hook(kind, params, builder)`` make ``queue = {kind = ...}`` / ``hook = {kind = ...}``
available; the built-in DropTail, RED and droplist queues are registered here.
Everything is re-exported by :mod:`traceflow.sim.scenario`.
"""
from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass, field

from traceflow.errors import ScenarioError

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


# types whose values pass unchanged, and what an error calls them
_PLAIN = {bool: "true/false", str: "a string"}


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
    if tp is bool or tp is str:
        if not isinstance(value, tp):
            raise _err(path, f"expected {_PLAIN[tp]}, got {value!r}")
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
    raise _err(path, f"unsupported type {tp}")


def build(cls, data, path=""):
    """Validate the dict ``data`` into dataclass ``cls`` (unknown keys and bad values raise)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise _err(path, f"expected a table, got {data!r}")
    explicit = data
    resolve = getattr(cls, "resolve", None)
    if resolve is not None:
        # presets (TcpConfig's profile): the explicit keys overlay the preset's defaults
        data = resolve(data, path)
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
    if resolve is not None:
        obj.explicit = dict(explicit)
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


@dataclass
class DropListParams:
    drop: list[int] = _meta(factory=list, doc="1-based arrival indices of the packets to drop")
    count: str = _meta("data", choices=("data", "all"), doc="count data packets, or all")
    limit: int = _meta(0, min=0, doc="buffer in packets (0 = unlimited unless limit_bytes)")
    limit_bytes: int = _meta(0, min=0)


def _build_droplist(p, ctx):
    from traceflow.sim._sim import DropList
    return DropList(p.drop, p.limit, p.limit_bytes, p.count == "all")


register_queue("droptail", DropTailParams, _build_droptail)
register_queue("red", REDParams, _build_red)
register_queue("droplist", DropListParams, _build_droplist)

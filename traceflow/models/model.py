"""The fitted traffic model: dataclasses that round-trip through one JSON document.

``traceflow fit`` writes a :class:`Model`; ``traceflow replay`` reads it back. The document carries
``schema_version``; a file written by a newer traceflow, or one that does not match the schema
(missing keys, wrong types), raises :class:`~traceflow.errors.InputFormatError` naming the bad key.

Units: times in seconds (float) unless a field name ends in ``_ns`` (integer nanoseconds), rates in
bit/s (``_bps``) or flows/s, sizes in bytes.
"""
from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from traceflow.atomic import write_text
from traceflow.jsonutil import jsonable
from traceflow.errors import InputFormatError

SCHEMA_VERSION = 2


@dataclass
class Span:
    """What was fitted: time span and totals of the inputs."""
    #: first packet's timestamp (ns since the Unix epoch)
    start_ns: int
    #: last packet's timestamp (ns since the Unix epoch)
    end_ns: int
    #: end_ns - start_ns (s)
    duration_s: float
    #: packets in the inputs (count)
    packets: int
    #: bytes of those packets (bytes)
    bytes: int
    #: the inputs' names, in the order fitted
    inputs: list[str] = field(default_factory=list)


@dataclass
class Link:
    """Link capacity estimate and load. ``capacity_bps`` is the peak of the bytes series at the
    finest scale that holds several packets per bin (a lower bound on the line rate, equal to it on a
    saturated bottleneck); ``utilization`` = mean rate / capacity."""
    capacity_bps: float
    #: mean rate of the data packets over the span (bit/s)
    mean_rate_bps: float
    utilization: float
    #: how ``capacity_bps`` was found (peak series, back-to-back spacing, or given)
    method: str
    peak_rate_bps: dict[str, float] = field(default_factory=dict)  # bin label -> peak rate


@dataclass
class Network:
    """The bottleneck and paths the capture came through (:mod:`traceflow.models.network`):
    ``rate_bps`` the bottleneck's service rate at the IP layer, ``buffer_bytes`` its DropTail
    buffer (IP bytes), ``full_queue_delay_s`` the queueing delay of a full buffer, ``burst_bytes``
    the shaper's token-bucket depth (0: none), ``reverse_rate_bps`` the rate of the reverse path
    (None: not a bottleneck), ``side`` where the capture sits (``downstream``: between the
    bottleneck and the clients; ``upstream``; ``unknown``), ``loss_share`` the retransmitted share
    of the data segments. ``evidence`` says what each value rests on; ``quality`` is ``ok`` or
    starts with ``lower bound``, ``guess``, ``default`` or ``unknown`` and says why."""
    rate_bps: float
    buffer_bytes: int
    full_queue_delay_s: float | None
    burst_bytes: int
    reverse_rate_bps: float | None
    side: str
    loss_share: float
    evidence: dict[str, str] = field(default_factory=dict)
    #: per value: ``ok``, or ``lower bound``/``guess``/``default``/``unknown`` and why
    quality: dict[str, str] = field(default_factory=dict)


@dataclass
class Tail:
    """Pareto tail above ``xmin``: P[X > x] = p_tail * (x / xmin) ** -alpha."""
    #: tail index (dimensionless; < 2: infinite variance)
    alpha: float
    #: where the tail starts (the sample's unit)
    xmin: float
    #: sample values at or above ``xmin`` (count)
    n_tail: int
    #: KS distance of the tail fit (0 to 1)
    ks: float


@dataclass
class Distribution:
    """Empirical body quantiles with an optional Pareto tail (a semi-parametric distribution).

    ``probs``/``quantiles`` are the empirical quantile function of the body (the values below
    ``tail.xmin``), or of the whole sample when there is no tail. A fraction ``p_tail`` of the mass
    lies above ``xmin`` and follows the fitted Pareto, so samples reach beyond the largest value
    observed.
    """
    #: the values' unit ("bytes" or "s")
    unit: str
    #: sample size (count)
    n: int
    #: sample mean (``unit``)
    mean: float
    #: smallest value (``unit``)
    minimum: float
    #: largest value (``unit``)
    maximum: float
    #: probabilities of ``quantiles`` (0 to 1, increasing)
    probs: list[float]
    quantiles: list[float]
    tail: Tail | None = None

    @property
    def p_tail(self):
        return 0.0 if self.tail is None or self.n == 0 else self.tail.n_tail / self.n

    def ppf(self, u):
        """Quantile function at probabilities ``u`` (array-like in [0, 1))."""
        u = np.atleast_1d(np.asarray(u, dtype=float))
        p_tail = self.p_tail
        if p_tail <= 0:
            return np.interp(u, self.probs, self.quantiles)
        cut = 1.0 - p_tail
        out = np.empty_like(u)
        hi = u >= cut
        # Pareto survival from xmin: (1 - u) / p_tail = (x / xmin) ** -alpha
        s = np.clip((1.0 - u[hi]) / p_tail, 1e-300, 1.0)
        out[hi] = self.tail.xmin * s ** (-1.0 / self.tail.alpha)
        body_q = np.minimum(self.quantiles, self.tail.xmin)
        out[~hi] = np.interp(u[~hi] / cut, self.probs, body_q) if cut > 0 else self.tail.xmin
        return out

    def sample(self, rng, n):
        """``n`` draws (float64) using ``rng`` (a ``numpy.random.Generator``)."""
        return self.ppf(rng.random(n))


@dataclass
class InterArrival:
    """Flow inter-arrival time fit (seconds): the best of exponential / Weibull / lognormal by KS."""
    #: the chosen distribution: "exponential", "weibull" or "lognormal"
    dist: str
    #: its parameters by name: ``scale`` (s), and ``shape`` (Weibull) or ``sigma`` (lognormal),
    #: dimensionless (scipy.stats' parameterisation, loc 0)
    params: dict[str, float]
    #: KS distance of the chosen fit (0 to 1)
    ks: float
    #: mean inter-arrival time (s)
    mean_s: float
    #: coefficient of variation of the inter-arrival times (std / mean; 1 for Poisson)
    cv: float
    candidates: dict[str, float] = field(default_factory=dict)  # dist -> KS distance


@dataclass
class Arrivals:
    """Flow arrival process: Poisson-like rate plus the inter-arrival fit."""
    #: TCP connections whose SYN was seen (count)
    n_flows: int
    #: n_flows / span duration (connections/s)
    rate_per_s: float
    interarrival: InterArrival | None = None


@dataclass
class Sessions:
    """Closed-loop client sessions (:mod:`traceflow.models.sessions`): ``sessions`` clients each
    run transfers one after another — a new connection, the whole response, then a think time
    (s, exponential with mean ``think_mean_s``, from the end of one connection to the SYN of the
    next) — so a session never has two transfers at once. Model-mode replays drive these sessions
    instead of the open arrival process of :class:`Arrivals`. ``hosts``: distinct client
    addresses; ``max_open``: the most connections seen open at once; ``log_likelihood_gain``: the
    fit's log-likelihood above open (Poisson) arrivals; ``exchanges_per_connection``: mean
    request/response exchanges per connection (1.0: every transfer opens a connection)."""
    sessions: int
    #: distribution of the think times ("exponential")
    think_dist: str
    #: mean think time (s)
    think_mean_s: float
    #: distinct client addresses (count)
    hosts: int
    #: most connections seen open at once (count)
    max_open: int
    #: the fit's log-likelihood above open (Poisson) arrivals (nats)
    log_likelihood_gain: float
    #: mean request/response exchanges per connection (1.0: one per connection)
    exchanges_per_connection: float


@dataclass
class Shares:
    """Short/long split of flows at ``threshold`` (bytes or seconds, per ``by``)."""
    #: what splits short from long: "packets" (per transfer), "bytes" or "seconds"
    by: str
    #: the split point (in the unit of ``by``); long = at or above it
    threshold: float
    #: share of transfers that are short (0 to 1)
    short_flows: float
    #: share of transfers that are long (0 to 1)
    long_flows: float
    #: share of the bytes carried by short transfers (0 to 1)
    short_bytes: float
    #: share of the bytes carried by long transfers (0 to 1)
    long_bytes: float


@dataclass
class RTTClass:
    #: the class's median RTT (s)
    center_s: float
    #: its smallest RTT (s)
    lo_s: float
    #: its largest RTT (s)
    hi_s: float
    #: share of the RTTs in this class (0 to 1)
    weight: float


@dataclass
class RTTModel:
    """Handshake RTT distribution (seconds) and its classes (clusters of log-RTT); the
    distribution over transfers of their path's propagation RTT (host pair minimum, s) and the
    median share of it on the servers' side of the capture point (0 to 1; see
    :func:`traceflow.models.fit.path_rtt`)."""
    #: the flow table's RTT column the distribution was taken from
    column: str
    distribution: Distribution | None
    #: RTT classes (clusters of log-RTT), by centre
    classes: list[RTTClass] = field(default_factory=list)
    propagation: Distribution | None = None
    #: median share of the path RTT on the servers' side of the capture (0 to 1; None: unknown)
    server_share: float | None = None


@dataclass
class Hosts:
    """End-host behaviour inferred from the trace (see :mod:`traceflow.flows.hosts`)."""
    #: MSS option of SYN / SYN-ACK, the smaller, mode over connections (bytes; None: no SYNs)
    mss: int | None
    #: payload of a full data segment as sent: MSS minus TCP options (bytes)
    segment_size: int | None
    initial_window: float | None          # segments, median of per-flow first flights
    #: connections the initial window was measured on (count)
    initial_window_flows: int
    initial_window_observable: bool       # False when the vantage point hides the first flight
    receiver_window: int | None           # bytes, median of the receivers' largest scaled windows
    min_rto_s: float | None               # RTO floor from true timeouts (Linux: rto_min)
    rto_samples: int                      # first timeouts it was estimated from
    #: receivers acknowledge every second segment (segments_per_ack >= sqrt 2)
    delayed_ack: bool | None
    segments_per_ack: float | None        # after the quick-ACK segments at connection start
    vantage: str                          # "sender", "receiver" or "unknown" (for the data direction)
    header_bytes: int | None = None       # IP + TCP header bytes of a full data segment
    rto_backoff: float | None = None      # ratio of successive timeouts of one segment (RFC 6298: 2)
    initial_rto_s: float | None = None    # RTO before any RTT sample (SYN, SYN/ACK retransmission)
    #: SYN / SYN-ACK retransmissions ``initial_rto_s`` was estimated from (count)
    initial_rto_samples: int = 0
    sack: bool | None = None              # SACK-permitted on both SYNs (most connections)
    timestamps: bool | None = None        # Timestamps option on both SYNs (most connections)
    window_scale: int | None = None       # the data receivers' window-scale shift
    request_delay_s: float | None = None  # client: handshake ACK -> request (median)
    response_delay_s: float | None = None  # server: end of request -> first response byte
    close_delay_s: float | None = None    # server: last data byte -> FIN
    #: per value (``initial_window``, ``segment_size``, ``min_rto_s``, ``initial_rto_s``): ``ok``,
    #: or what makes it doubtful (``lower bound``, ``default``, ``implausible``) and why
    quality: dict[str, str] = field(default_factory=dict)
    #: the senders' congestion control family read from the capture
    #: (:mod:`traceflow.flows.congestion`): "reno", "cubic", "bbr", or None when the capture
    #: cannot tell (then ``quality["congestion_control"]`` says why and the replay keeps its
    #: profile's)
    congestion_control: str | None = None
    #: how far the evidence supports it, in [0, 1] (None: cannot tell)
    congestion_control_confidence: float | None = None
    #: name -> number: the long connections and how each was labelled, loss episodes, the
    #: pooled reduction factor, growth per round trip, held ratio, share of paced senders
    congestion_control_evidence: dict[str, float] = field(default_factory=dict)


@dataclass
class Dispersion:
    """Index of dispersion for counts (variance / mean of bytes per bin) against bin width."""
    #: bin widths (s)
    scales_s: list[float]
    #: index of dispersion at each bin width (variance / mean of bytes per bin, bytes)
    idc: list[float]


@dataclass
class Levels:
    """Conditional traffic levels (TCP-MT paper): CondProb counts (h x (h+1)) and E[L2|L1]."""
    #: block length the series is aggregated to (s)
    scale_s: float
    #: number of traffic levels (count)
    h: int
    #: how rates map to levels ("quantile": equal-count levels)
    mapping: str
    #: CondProb counts, h rows x (h + 1) columns (count)
    condprob: list[list[float]]
    #: E[L2 | L1]: mean next level per level (level units; None: level never seen)
    expected: list[float | None]


@dataclass
class Model:
    """Everything a replay needs, fitted from one or more captures."""
    span: Span
    link: Link
    arrivals: Arrivals
    sizes: Distribution | None
    lifetimes: Distribution | None
    shares: Shares | None
    rtt: RTTModel
    hosts: Hosts
    #: Hurst parameter H of the bytes series by estimator (vt, rs, wavelet, whittle);
    #: dimensionless, 0 to 1 (None: series too short)
    hurst: dict[str, float | None] = field(default_factory=dict)
    dispersion: Dispersion | None = None
    levels: Levels | None = None
    #: bin width of the bytes series the Hurst, dispersion and level fits read (s)
    series_bin_s: float = 0.01
    requests: Distribution | None = None      # request bytes (client -> server) per transfer
    sessions: Sessions | None = None          # closed-loop clients (None: open arrivals)
    network: Network | None = None            # the bottleneck the capture came through
    #: version of this document's schema (integer)
    schema_version: int = SCHEMA_VERSION

    def to_dict(self):
        return jsonable(dataclasses.asdict(self))

    def to_json(self):
        return json.dumps(self.to_dict(), indent=2)

    def save(self, path):
        """Atomically write the model as JSON to ``path``."""
        write_text(path, self.to_json() + "\n")

    @classmethod
    def from_dict(cls, data, path=None):
        if not isinstance(data, dict):
            raise InputFormatError("not a traceflow model (expected a JSON object)", path=path)
        version = data.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise InputFormatError("not a traceflow model (no integer 'schema_version')", path=path)
        if version > SCHEMA_VERSION:
            raise InputFormatError(
                f"model schema_version {version} is newer than this traceflow supports "
                f"({SCHEMA_VERSION}); upgrade traceflow", path=path)
        if version < 1:
            raise InputFormatError(f"invalid model schema_version {version}", path=path)
        return _build(cls, data, "", path)

    @classmethod
    def load(cls, path):
        """Read a model JSON file; raise :class:`InputFormatError` when invalid."""
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except UnicodeDecodeError as exc:
            raise InputFormatError(f"not a JSON model ({exc.reason})", path=path) from None
        except json.JSONDecodeError as exc:
            raise InputFormatError(f"invalid JSON: {exc.msg}", path=path, offset=exc.pos) from None
        return cls.from_dict(data, path=path)


def _build(tp, value, where, path):
    """Check ``value`` against the annotation ``tp`` and convert it (dataclasses recursively)."""
    def bad(expected):
        raise InputFormatError(f"model key {where or '<root>'!r}: expected {expected}, "
                               f"got {type(value).__name__}", path=path)

    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            bad(" or ".join(getattr(a, "__name__", str(a)) for a in args))
        inner = [a for a in args if a is not type(None)]
        return _build(inner[0], value, where, path)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            bad("an object")
        hints = typing.get_type_hints(tp)
        names = {f.name for f in dataclasses.fields(tp)}
        unknown = sorted(set(value) - names)
        if unknown:
            raise InputFormatError(f"model key {where + '.' if where else ''}{unknown[0]!r} is unknown",
                                   path=path)
        kwargs = {}
        for f in dataclasses.fields(tp):
            key = f"{where}.{f.name}" if where else f.name
            if f.name not in value:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    raise InputFormatError(f"model key {key!r} is missing", path=path)
                continue
            kwargs[f.name] = _build(hints[f.name], value[f.name], key, path)
        return tp(**kwargs)
    if origin is list:
        if not isinstance(value, list):
            bad("a list")
        (item,) = typing.get_args(tp)
        return [_build(item, v, f"{where}[{i}]", path) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            bad("an object")
        _, item = typing.get_args(tp)
        return {k: _build(item, v, f"{where}.{k}", path) for k, v in value.items()}
    if tp is float:
        if value is None:  # NaN was written as null
            return math.nan
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            bad("a number")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            bad("an integer")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            bad("true/false")
        return value
    if tp is str:
        if not isinstance(value, str):
            bad("a string")
        return value
    raise TypeError(f"unsupported annotation {tp!r}")  # a bug in this module, not user input


def distribution_from_sample(x, unit, tail=None, n_quantiles=101):
    """A :class:`Distribution` from sample ``x`` (finite values kept) and an optional :class:`Tail`."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return None
    probs = np.linspace(0.0, 1.0, n_quantiles)
    if tail is not None:
        body = x[x < tail.xmin]
        # Quantiles of the body only; ppf maps [0, 1 - p_tail) onto them.
        qs = np.quantile(body if body.size else x, probs)
    else:
        qs = np.quantile(x, probs)
    return Distribution(unit=unit, n=int(x.size), mean=float(x.mean()), minimum=float(x.min()),
                        maximum=float(x.max()), probs=probs.tolist(), quantiles=qs.tolist(), tail=tail)

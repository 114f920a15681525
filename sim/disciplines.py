"""Router disciplines for scenarios: classful fair queueing with lifetime/RTT classification
(and the paper's eight presets), FairShare, and APM/CAPM/K-based perturbation droppers.

Queue kinds registered here (``queue = {kind = ..., ...}`` on any link):

* ``classful`` — DRR over per-class sub-queues (DropTail or RED, each ``limit / N`` packets).
  Classes come from a lifetime classifier (``lifetime``, ``threshold`` packets), RTT classes
  (``rtt_bounds`` in seconds) or both (SIX); without either, from the traffic's ``cls`` tag
  (``classes``, ``weights``).  The short/long split is fixed (``short_share``, paper 60 %) or
  DAS (``das = true``: re-allocated every ``das_period`` from measured demand, long >= ``min_long``).
  ``preset`` = one of MIX-DT, MIX-RED, LFT-DT, RTT-DT, SIX-DT, LFT-RED, RTT-RED, SIX-RED
  (Wu & Nikolaidis 2002) sets ``lifetime``, RTT classification and ``sub``.
* ``fairshare`` — FairShare's scheduled losses (the paper's Appendix) in front of ``inner``.
* ``perturb`` — APM (``apm``: drop D packets at a time), CAPM (``signatures``: code, chip time
  T_c, amplitude A drops/s) and K-based drop probabilities per aggregate (``drop_probability``,
  from :func:`traceflow.models.capm.fair_drop_probabilities`) in front of ``inner``.  Aggregates are the
  traffic groups' ``cls`` tags.

Units: seconds, packets, drops per second; rates of the link from the scenario.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from traceflow.errors import ScenarioError
from traceflow.sim.scenario import DropTailParams, QueueSpec, meta, register_queue

# The paper's eight schemes: (lifetime classes, RTT classes, per-class discipline)
PRESETS = {
    "MIX-DT": (False, False, "droptail"),
    "MIX-RED": (False, False, "red"),
    "LFT-DT": (True, False, "droptail"),
    "RTT-DT": (False, True, "droptail"),
    "SIX-DT": (True, True, "droptail"),
    "LFT-RED": (True, False, "red"),
    "RTT-RED": (False, True, "red"),
    "SIX-RED": (True, True, "red"),
}


@dataclass
class SubRED:
    """RED of each sub-queue; thresholds are for the whole buffer and scaled by 1/N when
    ``scale`` (a sub-queue holds 1/N of the buffer, so unscaled thresholds could exceed it)."""
    min_th: float = meta(5.0, min=0)
    max_th: float = meta(15.0, gt=0)
    max_p: float = meta(0.02, gt=0, max=1)
    w_q: float = meta(0.002, gt=0, max=1)
    scale: bool = meta(True)

    def validate(self, path):
        if self.max_th <= self.min_th:
            raise ScenarioError(f"{path}.max_th: must exceed min_th")


@dataclass
class ClassfulParams:
    preset: str = meta("", choices=("", *PRESETS), doc="one of the paper's eight schemes")
    limit: int = meta(100, min=1, doc="total buffer, packets (each of N classes gets limit // N)")
    sub: str = meta("droptail", choices=("droptail", "red"), doc="discipline of each sub-queue")
    red: SubRED = meta(factory=SubRED)
    lifetime: bool = meta(False, doc="short/long classes")
    threshold: int = meta(50, min=1, doc="packets after which a flow is long-lived")
    rtt_bounds: list[float] = meta(factory=list, doc="RTT class boundaries, s (empty: no RTT classes)")
    classes: int = meta(1, min=1, doc="without classification: classes by the traffic cls tag")
    weights: list[float] = meta(factory=list, doc="per-group weights (default: split or equal)")
    short_share: float = meta(0.6, gt=0, max=0.99, doc="fixed share of the short classes")
    das: bool = meta(False, doc="dynamic short/long allocation from measured demand")
    das_period: float = meta(1.0, gt=0, doc="DAS re-allocation period, s")
    min_long: float = meta(0.1, min=0, max=0.9, doc="DAS: minimum share of the long classes")
    das_headroom: float = meta(1.1, gt=0, doc="DAS: short share = headroom x smoothed demand")
    quantum: int = meta(0, min=0, doc="DRR quantum of the lightest class, bytes (0 = packet size)")

    def validate(self, path):
        if self.preset and PRESETS[self.preset][1] and not self.rtt_bounds:
            raise ScenarioError(f"{path}.rtt_bounds: preset {self.preset} needs RTT class boundaries")
        if any(b <= 0 for b in self.rtt_bounds) or list(self.rtt_bounds) != sorted(self.rtt_bounds):
            raise ScenarioError(f"{path}.rtt_bounds: must be positive and ascending")
        if any(w <= 0 for w in self.weights):
            raise ScenarioError(f"{path}.weights: must be positive")

    def resolved(self):
        """The parameters with ``preset`` applied."""
        if not self.preset:
            return self
        lifetime, rtt, sub = PRESETS[self.preset]
        return dataclasses.replace(self, preset="", lifetime=lifetime, sub=sub,
                                   rtt_bounds=list(self.rtt_bounds) if rtt else [])


def _droptail_default():
    return QueueSpec("droptail", DropTailParams())


@dataclass
class FairShareParams:
    inner: QueueSpec = meta(factory=_droptail_default, doc="queue behind the FairShare dropper")
    threshold: int = meta(50, min=0, doc="packets before a flow is long-lived (0 = at once)")
    long_share: float = meta(1.0, gt=0, max=1, doc="C_L as a fraction of the link rate")
    beta: float = meta(0.1, gt=0, max=1, doc="EWMA weight of the demand estimator")


@dataclass
class Signature:
    code: list[int] = meta(factory=list, doc="binary chips c_1..c_N")
    chip: float = meta(1.0, gt=0, doc="chip time T_c, s")
    amplitude: float = meta(0.0, min=0, doc="A, drops per second during a 1-chip")
    start: float = meta(0.0, min=0, doc="s")
    periodic: bool = meta(True, doc="repeat the code every N·T_c")
    aggregate: int = meta(-1, min=-1, doc="traffic cls tag perturbed (-1 = all)")

    def validate(self, path):
        if not self.code or any(c not in (0, 1) for c in self.code):
            raise ScenarioError(f"{path}.code: a non-empty list of 0/1 chips")


@dataclass
class Apm:
    time: float = meta(0.0, min=0, doc="s")
    drops: int = meta(1, min=1, doc="D, packets dropped from t on")
    aggregate: int = meta(-1, min=-1)


@dataclass
class PerturbParams:
    inner: QueueSpec = meta(factory=_droptail_default, doc="queue behind the dropper")
    signatures: list[Signature] = meta(factory=list)
    apm: list[Apm] = meta(factory=list)
    drop_probability: list[float] = meta(factory=list, doc="per aggregate (cls tag)")
    max_credit: float = meta(2.0, min=1)
    count_aggregates: int = meta(0, min=0, doc="count arrivals of cls tags 0..n-1 per bin")
    count_bin: float = meta(0.01, gt=0, doc="bin of the per-aggregate arrival counts, s")

    def validate(self, path):
        if any(not 0 <= p <= 1 for p in self.drop_probability):
            raise ScenarioError(f"{path}.drop_probability: values in [0, 1]")


def _sub_queues(p, n, ctx):
    from traceflow.sim import _sim

    each = max(1, p.limit // n)
    if p.sub == "droptail":
        return [_sim.DropTail(each, 0) for _ in range(n)]
    k = 1.0 / n if p.red.scale else 1.0
    states = np.random.SeedSequence(list(ctx.rng_state)).spawn(n)
    return [_sim.RED(each, 0, p.red.min_th * k, p.red.max_th * k, p.red.max_p, p.red.w_q,
                     False, False, ctx.packet_size, s.generate_state(4, np.uint64))
            for s in states]


def build_classful(params, ctx):
    from traceflow.sim import _sim

    p = params.resolved()
    classifier = None
    if p.lifetime or p.rtt_bounds:
        classifier = _sim.FlowClassifier(p.threshold if p.lifetime else 0, p.rtt_bounds)
        n = classifier.n_classes
    else:
        n = p.classes
    split = None
    if p.lifetime:
        split = _sim.ShortLongSplit(p.short_share, p.das, p.das_period, p.min_long,
                                    0.05, p.das_headroom, 0.5, ctx.rate_bps)
    weights = list(p.weights) or None
    if classifier is None and weights is not None and len(weights) != n:
        raise ScenarioError(f"queue.weights: {len(weights)} weights for {n} classes")
    return _sim.ClassfulQueue(_sub_queues(p, n, ctx), classifier, weights, None, split,
                              float(p.quantum or ctx.packet_size))


def build_fairshare(params, ctx):
    from traceflow.sim import _sim

    return _sim.FairShareQueue(params.inner.build(ctx), params.threshold, params.long_share,
                               params.beta)


def build_perturb(params, ctx):
    from traceflow.sim import _sim

    sigs = [{"code": s.code, "chip_s": s.chip, "amplitude": s.amplitude, "start_s": s.start,
             "periodic": s.periodic, "aggregate": s.aggregate} for s in params.signatures]
    apm = [(a.time, a.drops, a.aggregate) for a in params.apm]
    perturber = _sim.Perturber(sigs, apm, params.drop_probability, params.max_credit,
                               ctx.rng_state, params.count_aggregates, params.count_bin)
    return _sim.PerturbQueue(params.inner.build(ctx), perturber)


def preset_queue(name, limit, rtt_bounds=(), **extra):
    """The scenario ``queue`` table of one of the paper's eight schemes."""
    if name not in PRESETS:
        raise ScenarioError(f"unknown scheme {name!r} (known: {', '.join(PRESETS)})")
    q = {"kind": "classful", "preset": name, "limit": int(limit), **extra}
    if PRESETS[name][1]:
        q["rtt_bounds"] = [float(b) for b in rtt_bounds]
    return q


def rtt_bounds_from_spectrum(rtts_s, n_classes=3, *, seed=0):
    """RTT class boundaries (s) learned from a trace's RTT spectrum.

    k-means on log10 RTT (the paper plots the spectrum on a log axis); boundaries are the
    geometric midpoints between neighbouring cluster centres.
    """
    from sklearn.cluster import KMeans

    r = np.asarray(rtts_s, dtype=np.float64)
    r = r[np.isfinite(r) & (r > 0)]
    if r.size < n_classes:
        raise ScenarioError(f"need at least {n_classes} positive RTT samples, got {r.size}")
    km = KMeans(n_clusters=n_classes, n_init=10, random_state=seed).fit(np.log10(r)[:, None])
    centres = np.sort(km.cluster_centers_.ravel())
    return [float(10 ** ((a + b) / 2)) for a, b in zip(centres[:-1], centres[1:])]


register_queue("classful", ClassfulParams, build_classful)
register_queue("fairshare", FairShareParams, build_fairshare)
register_queue("perturb", PerturbParams, build_perturb)

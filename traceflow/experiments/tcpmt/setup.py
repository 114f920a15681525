"""The TCP-MT experiments' scenarios: the base scenario and its variants.

The base scenario is ``replays/tcpmt_base.toml`` (Park & Tuan sec. 5.1; its comments derive every
setting from the paper, the prior study it builds on, or ns-2's defaults of 1999); an experiment
file names it with ``base = "tcpmt_base.toml"`` in ``[experiment]`` and may override tables. A
variant sets the run length, seed, calibrated background (:mod:`.calibration`), the measured
connections' flavor, SSC hook, RTT and number.
"""
from __future__ import annotations

import copy
import importlib.resources
import tomllib
from dataclasses import asdict, dataclass

from traceflow.errors import ScenarioError
from traceflow.experiments.common import experiment as _exp
from traceflow.values import merge

OFF = {"kind": "ssc", "mode": "off"}
MEASURED_LINK, BACKGROUND_LINK = "g2->r1", "g2->r0"


def scenario_base(spec):
    """The experiment's scenario: ``[experiment] base`` (a file of ``traceflow.replays``) with the
    spec's own tables merged over it (every table of the spec but ``[experiment]``)."""
    exp = _exp(spec)
    own = {k: copy.deepcopy(v) for k, v in spec.items() if k != "experiment"}
    name = exp.get("base")
    if not name:
        return own
    try:
        text = importlib.resources.files("traceflow.replays").joinpath(name).read_text()
    except OSError as exc:
        raise ScenarioError(f"[experiment] base {name!r}: {exc}") from None
    return merge(tomllib.loads(text), own, replace=("traffic",))


def groups(base, kind):
    return [i for i, g in enumerate(base.get("traffic", [])) if g.get("kind") == kind]


def background_group(base):
    idx = groups(base, "files")
    if len(idx) != 1:
        raise ScenarioError("the base scenario needs exactly one background [[traffic]] group "
                            "with kind = 'files'")
    return base["traffic"][idx[0]]


def base_rtt(base):
    """Propagation RTT (s) of a measured connection: host -> g1 -> g2 -> host and back."""
    topo = base.get("topology", {})
    access = topo.get("access", {}).get("delay", 0.001)
    bott = topo.get("bottleneck", {}).get("delay", 0.001)
    return 2 * (2 * access + bott)


@dataclass(frozen=True)
class Background:
    """A calibrated background: Pareto ``alpha``, location ``k`` (bytes), mean ``idle`` (s); what
    the calibration run measured: ``mean_bytes`` (realized mean request), ``bps`` (bottleneck load of
    the background alone) and whether both hit their targets."""
    alpha: float
    k: float
    idle: float
    mean_bytes: float = float("nan")
    bps: float = float("nan")
    converged: bool = False

    def as_row(self):
        return asdict(self)


def variant(base, *, duration, seed, background=None, cc=None, hook=None, rtt=None, count=None,
            measured=True):
    """A copy of ``base`` with the experiment's knobs set.

    ``background``: a :class:`Background` (its k and idle, sizes not renormalized) or None (as in
    the base). ``hook``: the SSC hook table of the measured group(s) (None: no hook). ``rtt``: their
    propagation RTT (s), reached by extra delay at both ends (None: the base RTT). ``count``:
    measured connections (sources l32, l33, ...). ``measured=False`` drops them (calibration runs).
    """
    sc = copy.deepcopy(base)
    sim = sc.setdefault("simulation", {})
    sim["duration"] = float(duration)
    sim["seed"] = int(seed)
    bg = background_group(sc)
    if background is not None:
        bg["idle"] = float(background.idle)
        bg["size"] = dict(bg.get("size", {}), alpha=float(background.alpha), k=float(background.k),
                          normalize="none")
    measured_idx = groups(sc, "infinite")
    if not measured:
        sc["traffic"] = [g for i, g in enumerate(sc["traffic"]) if i not in measured_idx]
        return sc
    for i in measured_idx:
        g = sc["traffic"][i]
        tcp = dict(g.get("tcp", {}))
        if cc is not None:
            tcp["cc"] = cc
            if cc == "vegas":
                # ns-2's Vegas output() adds no header bytes to any segment (tcpmt.tcl sends 1040)
                tcp["ns2_bare_first"] = False
        if hook is not None:
            tcp["hook"] = dict(hook)
        else:
            tcp.pop("hook", None)
        g["tcp"] = tcp
        if rtt is not None:
            g["extra_delay"] = max(0.0, (float(rtt) - base_rtt(sc)) / 2)
        if count is not None:
            src = g.get("src", "l32")
            if not (isinstance(src, str) and src[:1] == "l" and src[1:].isdigit()):
                raise ScenarioError(f"count needs the measured group's src as one host 'lN', got {src!r}")
            g["src"] = [f"l{int(src[1:]) + j}" for j in range(int(count))]
            g["count"] = int(count)
    return sc


def hook(spec, **over):
    """The experiment's SSC hook table (``[experiment] ssc``) with ``over`` applied."""
    return {"kind": "ssc", **_exp(spec).get("ssc", {}), **over}

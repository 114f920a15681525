"""Wu & Nikolaidis Figs. 5 and 11-13 (long-lived fairness under the classification schemes)
against ns-2 (tests/sim/ns2/wu_classes.tcl) on identical flows: the same long- and short-lived
flows (start times, sizes, RTTs) of :func:`traceflow.experiments.classification.flows_table`,
the same 24-packet buffer and its 1/N split among the classes, the same 60/40 short/long
allocation, 150 s per run.

ns-2 has no lifetime/RTT classifier and no DRR over class queues, so the set-up differs in two
ways: ns-2 classifies statically (a long-lived flow is in its long class from its first packet;
traceflow moves it there after 50 packets, the paper's threshold) and serves the classes with
CBQ/WRR under the formal link-sharing guidelines, which shares a group's allocation among its
backlogged classes only approximately (greedy flows, one per class, 100 s: one backlogged
short class against three long classes gets 46 % instead of 60 %; one long class against three short
classes 36 % instead of 40 %; all backlogged: 60.0 / 40.0 %, exactly as DRR).

Measured, seeds 1-12, mean (sd) of the Jain index of the nine long-lived flows' goodputs:

  point                               traceflow       ns-2            |z|
  MIX-DT, 3.5 short flows/s           0.606 (0.100)   0.587 (0.075)   0.53
  SIX-DT, 3.5 short flows/s           0.851 (0.100)   0.863 (0.064)   0.35
  SIX-DT, RTT ratio 1 (2 flows/s)     0.853 (0.113)   0.794 (0.102)   1.34
  SIX-DT, RTT ratio 5 (2 flows/s)     0.911 (0.054)   0.918 (0.044)   0.35
  RTT-DT, RTT ratio 5 (2 flows/s)     0.721 (0.143)   0.915 (0.036)   4.56

Goodput at 3.5 short flows/s, packets/s, long / short: SIX-DT 39.6 / 57.5 (ns-2 38.0 / 58.9),
MIX-DT 22.6 / 74.4 (21.6 / 75.7); loss 1-2 points below ns-2's everywhere (issue 18, cause 8).

So ns-2 agrees with traceflow where the paper does not: SIX-DT is far fairer than MIX-DT at the
top load but not "ideal" (>= 0.95, wu...txt:170) in either simulator, and SIX-DT's fairness rises
from RTT ratio 1 to 5 in both (+0.058 here, +0.124 in ns-2; at ratio 1 the class bounds coincide
and the flows' +-10 % RTT jitter splits each class at random).  The one real difference is RTT-DT
at RTT ratio 5, and it is the scheduler: DRR with a one-packet quantum serves each backlogged
class every third packet time, evenly, so the ACK-clocked 20 ms flows of class I phase-lock into
their 8-packet class queue (seed 5: 19.8 / 0.5 / 0.4 packets/s; ns-2 4.4 / 6.8 / 6.4); CBQ/WRR
serves a class several packets per round.  With a 3-packet DRR quantum traceflow gives 0.858
(seeds 1, 2, 5, 8, 10, 11; asserted on 1-12: above the one-packet DRR by 0.1 and within 3
standard errors of ns-2); the paper's WFQ serves equal classes packet by packet like the
one-packet DRR.  LFT-DT at 3.5 short flows/s also differs (traceflow 0.703 (0.175), ns-2 0.851
(0.068), |z| 2.73; not asserted, cause not found: nine long flows in one 12-packet class; DRR
quanta of 3 / 6 / 12 packets give 0.748 / 0.656 / 0.607, so it is not the quantum alone).
Each run is 150 s; 4 min 41 s in all (two cores, shared).
"""
import functools
import sys
import tempfile
import tomllib
from pathlib import Path

import numpy as np
import pytest

from traceflow.experiments import classification
from traceflow.stats.fairness import jain

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sim" / "ns2"))
from ns2 import available, run_ns2  # noqa: E402

REPLAYS = Path(__file__).resolve().parents[2] / "replays"

# scheme -> (CBQ groups' allots, classes per group, classes from (long?, RTT class))
_NS2_CLASSES = {
    "MIX-DT": None,
    "LFT-DT": ("0.6 0.4", 1, lambda long, rtt: long.astype(int)),
    "RTT-DT": ("1.0", 3, lambda long, rtt: rtt),
    "SIX-DT": ("0.6 0.4", 3, lambda long, rtt: 3 * long.astype(int) + rtt),
}


def _spec(name):
    return tomllib.loads((REPLAYS / f"{name}.toml").read_text())


def point(spec, scheme, *, short_rate, rtt_ratio, seed, duration=None, quantum=0):
    """One (scheme, load, RTT ratio, seed) in traceflow and in ns-2 on the same flows: dict of
    Jain index of the long-lived goodputs, long and short goodput (packets/s) and loss per
    simulator.  ``quantum``: traceflow's DRR quantum, bytes (0: one packet)."""
    exp = spec["experiment"]
    duration = float(duration or exp["duration"])
    queue = classification.scheme_queue(exp, scheme, rtt_ratio) | ({"quantum": quantum} if quantum else {})
    task = classification._task(spec, {"scheme": scheme}, queue,
                                duration=duration, seed=seed, rtt_ratio=rtt_ratio,
                                short_rate=short_rate, long_per_class=exp["long_per_class"])
    ours = classification.simulate(task)
    t = task["table"]
    mss = spec["simulation"]["mss"]
    # the RTT class as the router's classifier sees it (at RTT ratio 1 the bounds coincide)
    rtt_cls = np.searchsorted(classification.rtt_bounds(rtt_ratio, exp["rtt_mid"]), t["rtt"],
                              side="right")
    packets = np.where(t["long"], -1, t["size"] // mss)
    kw = {"queue": "DropTail", "limit": exp["buffer"] + 1}   # ns-2's limit N holds N-1 waiting
    if _NS2_CLASSES[scheme] is not None:
        groups, per_group, cls_of = _NS2_CLASSES[scheme]
        n = len(groups.split()) * per_group
        kw = {"queue": "CBQ", "groups": groups, "per_group": per_group,
              "class_limit": exp["buffer"] // n}
        cls = cls_of(t["long"], rtt_cls)
    else:
        cls = np.zeros(t["long"].size, int)
    with tempfile.NamedTemporaryFile("w", suffix=".flows") as f:
        for row in zip(t["start"] / 1e9, packets, t["rtt"], cls):
            f.write("%.9f %d %.9f %d\n" % row)
        f.flush()
        out = run_ns2("wu_classes.tcl", flows=f.name, duration=duration, seed=seed,
                      pkt=mss, iw=int(spec["tcp"].get("init_cwnd", 1)), **kw)
    g = np.array([out[f"g{i}"] for i in range(t["long"].size)]) / duration
    long_ours = np.array(ours["long_goodput"])
    return {"scheme": scheme, "short_rate": short_rate, "rtt_ratio": rtt_ratio, "seed": seed,
            "jain_ours": ours["jain_long"], "jain_ns2": jain(g[t["long"]]),
            "long_ours": float(long_ours.sum()), "long_ns2": float(g[t["long"]].sum()),
            "short_ours": ours["short_goodput_pps"], "short_ns2": float(g[~t["long"]].sum()),
            "loss_ours": ours["loss"], "loss_ns2": out["drops"] / out["arrivals"]}


pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not available(), reason="needs ns-2 ('ns' on PATH: apt-get install ns2)")]


SEEDS = range(1, 13)


@functools.lru_cache(maxsize=None)
def _runs(name, scheme, short_rate, rtt_ratio, quantum=0):
    spec = _spec(name)
    rows = [point(spec, scheme, short_rate=short_rate, rtt_ratio=rtt_ratio, seed=s,
                  quantum=quantum) for s in SEEDS]
    return {k: np.array([r[k] for r in rows]) for k in rows[0] if k.endswith(("_ours", "_ns2"))}


def _z(a, b):
    """Difference of two means in standard errors (Welch)."""
    return (a.mean() - b.mean()) / np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)


def test_fig5_top_load_as_in_ns2():
    six = _runs("class_short_load", "SIX-DT", 3.5, 3.0)
    mix = _runs("class_short_load", "MIX-DT", 3.5, 3.0)
    for r in (six, mix):
        assert abs(_z(r["jain_ours"], r["jain_ns2"])) < 3.0
    for sim in ("jain_ours", "jain_ns2"):
        assert six[sim].mean() > mix[sim].mean() + 0.15
    for r in (six, mix):
        for what in ("long", "short"):
            assert r[f"{what}_ours"].mean() == pytest.approx(r[f"{what}_ns2"].mean(), rel=0.10)
    # the referee's verdict on the paper's "ideal fairness" at this load on this set-up
    assert six["jain_ns2"].mean() < 0.95


def test_six_dt_fairness_rises_with_the_rtt_ratio_in_ns2_too():
    low = _runs("class_rtt_ratio", "SIX-DT", 2.0, 1.0)
    high = _runs("class_rtt_ratio", "SIX-DT", 2.0, 5.0)
    for r in (low, high):
        assert abs(_z(r["jain_ours"], r["jain_ns2"])) < 3.0
    # rises in both (on ns-2 of 2002's timers one of the two rose by 0.045 over seeds 1-12, the
    # earlier timers gave +0.058 / +0.124): the direction, which is what claim 20's SIX-DT row
    # ("unchanged") turns on together with the size; the size is compared by the z-test above
    for sim in ("jain_ours", "jain_ns2"):
        assert high[sim].mean() > low[sim].mean()


def test_rtt_dt_difference_is_the_schedulers_service_pattern():
    packet = _runs("class_rtt_ratio", "RTT-DT", 2.0, 5.0)
    assert packet["jain_ours"].mean() < packet["jain_ns2"].mean() - 0.1
    burst = _runs("class_rtt_ratio", "RTT-DT", 2.0, 5.0, quantum=3000)
    assert burst["jain_ours"].mean() > packet["jain_ours"].mean() + 0.1
    assert abs(_z(burst["jain_ours"], burst["jain_ns2"])) < 3.0

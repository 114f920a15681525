"""Wu & Nikolaidis Fig. 1 against ns-2 (tests/sim/ns2/two_flows.tcl) on identical flows: the same
RTTs (with the seed's phase offsets), start times, buffer and RED parameters, 24 seeds per point
(the paper's 24 runs).

The seeds' spread decides the tolerance. Measured (24 seeds, fast/slow per seed): under RED the
standard deviation is 7-18 % of the mean in ns-2 and here (RTT ratio 2: ns-2 1.42 +- 0.25, ours
1.43 +- 0.14), so the median of 8 seeds moves by up to 25 % with the seed set (ns-2 at RTT ratio 2:
1.18 / 1.48 / 1.37 for seeds 1-8 / 9-16 / 17-24; the 8-seed test failed on the first). Under
DropTail the seeds' ratios are bimodal (the phase effect) and spread over a factor 10.
Asserted: per (policy, RTT ratio), the mean log ratio of ours and of ns-2 differ by less than 3
standard errors of the difference (measured |z| <= 1.72 over the 20 points, largest RED at ratio
8: 4.84 vs 4.50); and the median over RTT ratios 7-10 within 15 % (DropTail 27.8 vs 27.2, RED
5.07 vs 4.88). At RTT ratio 10 the medians are DropTail 29.8 (ns-2 19.9, a bimodal median), RED
6.16 (ns-2 5.91). Since links free in ns-2's order at equal instants (sim/link.pxi _poke) ours are
16.4 and 6.2 there, and the test passes as before (not re-measured point by point).
"""
import sys
import tomllib
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from traceflow.experiments import classification

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sim" / "ns2"))
from ns2 import available, run_ns2  # noqa: E402

REPLAY = Path(__file__).resolve().parents[2] / "replays" / "class_fig1.toml"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not available(), reason="needs ns-2 ('ns' on PATH: apt-get install ns2)")]


def _ns2_runs(spec):
    exp = spec["experiment"]
    packet_s = 8.0 * (spec["simulation"]["mss"] + spec["simulation"]["tcp_header"]) / \
        spec["topology"]["bottleneck"]["rate"]
    rows = []
    # ns-2's DropTail queue-limit N holds N-1 waiting packets, its RED queue-limit N holds N
    for policy, limit in (("DropTail", exp["droptail"]["limit"] + 1), ("RED", exp["red"]["limit"])):
        for r in exp["rtt_ratios"]:
            for seed in range(exp["seed"], exp["seed"] + exp["replications"]):
                t = classification.fig1_flows(exp, float(r), seed, packet_s)
                out = run_ns2("two_flows.tcl", rtt0=t["rtt"][0], rtt1=t["rtt"][1],
                              start0=t["start"][0] / 1e9, start1=t["start"][1] / 1e9,
                              queue=policy, limit=limit, window=spec["tcp"]["rwnd"],
                              iw=int(spec["tcp"]["init_cwnd"]), pkt=spec["simulation"]["mss"],
                              rate=f"{spec['topology']['bottleneck']['rate']:.0f}",
                              duration=exp["duration"], seed=seed)
                rows.append({"policy": policy, "rtt_ratio": float(r), "seed": seed,
                             "ratio": out["goodput1"] / out["goodput0"]})
    return pl.DataFrame(rows)


def _log_moments(df, tag):
    x = pl.col("ratio").log()
    return df.group_by("policy", "rtt_ratio").agg(x.mean().alias(f"m_{tag}"),
                                                  (x.var() / pl.len()).alias(f"v_{tag}"))


def _z(ours, ns):
    """Per (policy, RTT ratio): difference of the mean log ratio in standard errors (Welch)."""
    return _log_moments(ours, "o").join(_log_moments(ns, "n"), on=["policy", "rtt_ratio"]).select(
        "policy", "rtt_ratio",
        z=(pl.col("m_o") - pl.col("m_n")) / (pl.col("v_o") + pl.col("v_n")).sqrt())


def test_fig1_matches_ns2_on_the_same_flows():
    spec = tomllib.loads(REPLAY.read_text())
    ours = classification.fig1_runs(spec, quick=False, workers=2)
    ns = _ns2_runs(spec)
    z = _z(ours, ns)
    assert z.height == 2 * len(spec["experiment"]["rtt_ratios"])
    assert z["z"].abs().max() < 3.0, z.sort("z").to_dicts()
    high = pl.col("rtt_ratio") >= 7
    for policy in ("DropTail", "RED"):
        o = ours.filter((pl.col("policy") == policy) & high)["ratio"].median()
        n = ns.filter((pl.col("policy") == policy) & high)["ratio"].median()
        assert abs(o / n - 1) < 0.15, (policy, o, n)

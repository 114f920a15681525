"""Park & Tuan 2000 at full length (tox -e slow): every claim row of the ten TCP-MT experiments,
tested by the paper's sentence (the row's verdict), on the set-up of replays/tcpmt_base.toml.
Each row's note quotes its sentence as PT:line, a line of
../shared/papers/park-tuan-2000-multiple-time-scale-tcp.txt (e.g. Table II's CA-only row: PT:192
"The dominant performance gain, however, is affected by congestion avoidance").

A claim that holds is asserted to hold; one that does not is a strict xfail whose reason says what
we measured and what ns-2 shows on the same set-up (tests/sim/test_tcpmt_ns2.py), so a change that
makes it hold (or breaks one that holds) fails here. Runs as in the replays (10,000 s, their seeds),
except Figs. 9 and 10 with seeds 1 and 2 (four take twice as long).
"""
import functools
import tomllib
from pathlib import Path

import pytest

from traceflow.experiments import tcpmt

REPLAYS = Path(__file__).resolve().parents[2] / "replays"
OVERRIDES = {"fig9": {"seeds": [1, 2]}, "fig10": {"seeds": [1, 2]}}

NO_GAIN = ("at RTT 30 ms (37 packets of bandwidth-delay product) a faster linear increase has "
           "little to win; ns-2 on the same parameters (its own, lighter sample path of the "
           "background: 3.83 vs 5.12 Mb/s alone) gives theta = 1/4/8 6.38/6.46/6.74 Mb/s, no peak "
           "at 4, timeouts x1.6 (tests/sim/test_tcpmt_ns2.py)")
# (experiment, quantity) -> None if it holds, else why it does not
CLAIMS = {
    ("fig1", "T=1s: mutual information I(L1;L2), alpha=1.05 vs 1.95 (bit)"): None,
    ("fig1", "T=1s: alpha=1.05 diagonal mass Pr{L2=L1} vs independence"): None,
    ("fig1", "T=1s: alpha=1.95 distance of Pr{L2|L1} from Pr{L2} (TV)"): None,
    ("fig1", "T=5s: mutual information I(L1;L2), alpha=1.05 vs 1.95 (bit)"): None,
    ("fig1", "T=5s: alpha=1.05 diagonal mass Pr{L2=L1} vs independence"): None,
    ("fig1", "T=5s: alpha=1.95 distance of Pr{L2|L1} from Pr{L2} (TV)"): None,
    ("fig6", "reno, 5 Mb/s background: throughput(theta): shape"):
        "flat: 4.84-4.90 Mb/s for theta = 1..8 (1.2 % apart), " + NO_GAIN,
    ("fig6", "reno, 5 Mb/s background: throughput(theta): peak at"):
        "argmax at theta = 6 on a flat curve (4.90 vs 4.88 Mb/s at theta = 4), see shape",
    ("fig6", "reno, 2.5 Mb/s background: throughput(theta): shape"):
        "6.62-6.80 Mb/s, up and down by about 1 % (paper: increasing)",
    ("fig6", "reno, 7.5 Mb/s background: throughput(theta): shape"):
        "rising 3.61 -> 3.95 Mb/s (paper: decreasing)",
    # Fig. 7 rerun after the engine's arrival tie order (reproduce tcpmt_fig7, 10,000 s)
    ("fig7", "rate, 5 Mb/s background: throughput(theta): shape"):
        "TCP Rate (b = 2, not given in the paper) rises with theta, 3.89 -> 4.49 Mb/s from "
        "theta = 1 to 7: it leaves room that aggressiveness fills",
    ("fig7", "rate, 5 Mb/s background: throughput(theta): peak at"): "peak at theta = 8, see shape",
    ("fig7", "rate, 2.5 Mb/s background: throughput(theta): shape"):
        "flat within 1 % (6.67-6.74 Mb/s): the link is full",
    ("fig7", "rate, 7.5 Mb/s background: throughput(theta): shape"):
        "TCP Rate backs off to 1.27 Mb/s under heavy load and recovers with aggressiveness "
        "(2.3 Mb/s at theta = 7)",
    # holds since the tie order: CA coupling +19.0 %, slow-start coupling +8.8 % (was 1.3 / 2.9 %)
    ("fig7", "rate, 5 Mb/s: best gain with CA coupling vs SS coupling"): None,
    ("fig7", "5 Mb/s: mean throughput over theta, rate vs reno"):
        "TCP Rate below Reno (4.21 vs 4.87 Mb/s) with b = 2 (the paper gives no b)",
    # holds since the tie order: relative curvature Rate 0.150, Reno 0.012
    ("fig7", "5 Mb/s: curvature (peak above the lower end, relative), rate vs reno"): None,
    ("fig8", "reno: tracking correlation vs RTT (no SSC): shape"): None,
    ("fig8", "reno: mean correlation with SSC minus without"): None,
    ("fig8", "vegas: tracking correlation vs RTT (no SSC): shape"):
        "Vegas beside Reno background loses its share beyond 30 ms RTT (correlation near 0)",
    ("fig8", "vegas: mean correlation with SSC minus without"): None,
    ("fig8", "rate: tracking correlation vs RTT (no SSC): shape"): None,
    ("fig8", "rate: mean correlation with SSC minus without"): None,
    ("fig8", "tracking (mean correlation, no SSC; most negative first)"):
        "Reno tracks as well as Rate here, Vegas worst (starved by the Reno background)",
    # Figs. 9-10 (claim 24) measured with `reproduce` (4 seeds, 10,000 s) after the tie order;
    # the test runs seeds 1-2, so a verdict that depends on the seeds fails here as strict
    ("fig9", "reno: gain vs RTT: shape"): "irregular (paper: increasing)",
    ("fig9", "vegas: gain vs RTT: shape"): "irregular: -3.6 / -1.3 / -27 / +28 / +26 % (paper: increasing)",
    ("fig9", "rate: gain vs RTT: shape"): "rises 12.6 % -> 58 % at 200 ms, then 53 % at 450 ms",
    ("fig9", "rate: gain at RTT = 450 ms"): None,
    ("fig9", "largest gain at RTT = 450 ms"): None,
    ("fig9", "mean gain over RTT"): "vegas < reno < rate (paper: reno < vegas < rate)",
    ("fig9", "plain TCP throughput (mean over RTT)"): "vegas < rate < reno: Vegas starved by the Reno background",
    ("fig9", "reno: mean gain, CA-only coupling vs CA + slow start"): "CA-only 8.8 % vs 25.6 %",
    ("fig9", "vegas: mean gain, CA-only coupling vs CA + slow start"): None,
    ("fig9", "rate: mean gain, CA-only coupling vs CA + slow start"): None,
    ("fig10", "reno: gain ratio alpha=1.05 / alpha=1.95"): "4.9 % / 3.2 % = 1.5 (paper >= 2)",
    ("fig10", "reno: gain vs alpha: shape"): "irregular (paper: decreasing)",
    ("fig10", "reno: plain TCP throughput alpha=1.95 vs 1.05"): "lower at 1.95 (5.08 vs 5.64 Mb/s): "
        "the background is calibrated on seed 1 only, other seeds' alpha = 1.05 paths carry less",
    ("fig10", "vegas: gain ratio alpha=1.05 / alpha=1.95"): "-3.6 % vs +32 %",
    ("fig10", "vegas: gain vs alpha: shape"): "irregular",
    ("fig10", "vegas: plain TCP throughput alpha=1.95 vs 1.05"): "0.89 vs 0.98 Mb/s",
    ("fig10", "rate: gain ratio alpha=1.05 / alpha=1.95"): "12.6 % / 9.0 % = 1.4 (paper >= 2)",
    ("fig10", "rate: gain vs alpha: shape"): "unimodal, peak 17.5 % at alpha = 1.35",
    ("fig10", "rate: plain TCP throughput alpha=1.95 vs 1.05"): "3.39 vs 4.94 Mb/s",
    ("fig10", "reno: mean gain, CA-only coupling vs CA + slow start"): "0.7 % vs 4.0 %",
    ("fig10", "vegas: mean gain, CA-only coupling vs CA + slow start"): "-0.5 % vs 4.5 %",
    ("fig10", "rate: mean gain, CA-only coupling vs CA + slow start"): None,
    ("fig11", "nu=0.01: mean A over the second half"): "A stays near 1.2: little to gain from A",
    ("fig11", "nu=0.05: mean A over the second half"): "A settles near 1.6: little to gain from A",
    ("fig11", "nu=0.25: mean A over the second half"): "A wanders to 10.4 with a large step",
    ("fig11", "oscillation of A (std, second half) grows with nu"): None,
    ("fig12", "static A: throughput(A): shape"):
        "rising 4.18 -> 4.94 Mb/s for A = 1..10 (paper: unimodal, A* = 6); ns-2 not run on it",
    ("fig12", "static A: throughput(A): peak at"): "best at A = 10, see shape",
    ("fig12", "dynamic metacontrol / best static A"):
        "0.87: the metacontrol stays below the largest static A on a curve that keeps rising",
    ("fig12", "plain TCP below the dynamic metacontrol"): None,
    ("table2", "100 s: Case I has the largest gain"): "gains of 1-4 %, within run-to-run noise",
    ("table2", "500 s: Case I has the largest gain"): None,
    ("table2", "1000 s: Case I has the largest gain"): "gains of 0.2-1 %, within noise",
    ("table2", "2000 s: Case I has the largest gain"): None,
    ("table2", "500 s: gain by case"): None,
    ("table2", "1000 s: gain by case"): "gains of 0.2-1 %, within noise",
    ("table2", "Case I minus Case III gain, 100 s vs 2000 s"): "gains of 1-2 %, within noise",
    ("table2", "Case I: mean gain, CA-only coupling vs CA + slow start"): None,
    ("table3", "TCP-MT total throughput vs n: shape"):
        "the total keeps rising to 18 connections (1588 KB/s at n = 2, 1866 at 6, 2190 at 18; "
        "paper 1623, 1764, 1251): more flows fill the link",
    ("table3", "TCP-MT total throughput vs n: peak at"): "peak at n = 18, see shape",
    # after the engine's arrival tie order: max/min 1.06 (paper 1.43, test <= 1.5); was 1.78
    ("table3", "largest max/min throughput ratio among TCP-MT connections"): None,
    ("table3", "Reno total throughput vs n: shape"): "rising, as TCP-MT's",
}


@functools.lru_cache(maxsize=None)
def comparison(name):
    spec = tomllib.loads((REPLAYS / f"tcpmt_{name}.toml").read_text())
    spec["experiment"].update(OVERRIDES.get(name, {}))
    import tempfile
    with tempfile.TemporaryDirectory() as out:
        res = getattr(tcpmt, name)(spec, out, workers=2)
    return {r["quantity"]: r for r in res["comparison"]}


def _params():
    for (name, quantity), why in CLAIMS.items():
        marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
        yield pytest.param(name, quantity, marks=marks, id=f"{name}: {quantity}")


pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name, quantity", list(_params()))
def test_claim(name, quantity):
    row = comparison(name)[quantity]
    assert row["agree"] is True, (row["paper"], row["ours"], row["note"])


@pytest.mark.parametrize("name", sorted({n for n, _ in CLAIMS}))
def test_every_claim_row_is_listed(name):
    """No claim row escapes this file: every row with a verdict is in CLAIMS."""
    judged = {q for q, r in comparison(name).items() if r["agree"] is not None}
    assert judged == {q for n, q in CLAIMS if n == name}

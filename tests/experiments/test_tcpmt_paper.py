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
           "background) gives theta = 1/4/8 6.41/6.61/6.74 Mb/s, rising, timeouts x1.6; ours there "
           "5.35/5.38/5.19, timeouts x2.6 (tests/sim/test_tcpmt_ns2.py)")
# (experiment, quantity) -> None if it holds, else why it does not
CLAIMS = {
    ("fig1", "T=1s: mutual information I(L1;L2), alpha=1.05 vs 1.95 (bit)"): None,
    ("fig1", "T=1s: alpha=1.05 diagonal mass Pr{L2=L1} vs independence"): None,
    ("fig1", "T=1s: alpha=1.95 distance of Pr{L2|L1} from Pr{L2} (TV)"): None,
    ("fig1", "T=5s: mutual information I(L1;L2), alpha=1.05 vs 1.95 (bit)"): None,
    ("fig1", "T=5s: alpha=1.05 diagonal mass Pr{L2=L1} vs independence"): None,
    ("fig1", "T=5s: alpha=1.95 distance of Pr{L2|L1} from Pr{L2} (TV)"): None,
    # Fig. 6 rerun after the FIFO arrival order and ns-2's header-less first segment (issue 18)
    ("fig6", "reno, 5 Mb/s background: throughput(theta): shape"):
        "5.35 / 5.38 / 5.39 / 5.38 / 5.37 / 5.27 / 5.22 / 5.19 Mb/s for theta = 1..8: up 0.7 % to "
        "a peak at 3, then down 3.8 % to theta = 8; the rise is inside the 1 % the shape rule "
        "counts as flat, so it reads as decreasing (paper: unimodal, peak at 4). " + NO_GAIN,
    ("fig6", "reno, 5 Mb/s background: throughput(theta): peak at"):
        "argmax at theta = 3 (5.393 vs 5.379 Mb/s at theta = 4), see shape",
    ("fig6", "reno, 2.5 Mb/s background: throughput(theta): shape"):
        "7.05-7.07 Mb/s up to theta = 5, then down to 6.87 at 8 (paper: increasing)",
    ("fig6", "reno, 7.5 Mb/s background: throughput(theta): shape"): None,
    # Fig. 7 rerun after the FIFO arrival order and the header-less first segment (10,000 s)
    ("fig7", "rate, 5 Mb/s background: throughput(theta): shape"):
        "TCP Rate (b = 2, not given in the paper) rises with theta, 4.43 -> 4.62 Mb/s from "
        "theta = 1 to 8: it leaves room that aggressiveness fills",
    ("fig7", "rate, 5 Mb/s background: throughput(theta): peak at"): "peak at theta = 8, see shape",
    ("fig7", "rate, 2.5 Mb/s background: throughput(theta): shape"):
        "7.03-7.06 Mb/s to theta = 4, 6.93 from 5 on: the link is full (paper: increasing)",
    ("fig7", "rate, 7.5 Mb/s background: throughput(theta): shape"):
        "TCP Rate backs off to 1.09 Mb/s under heavy load and recovers with aggressiveness "
        "(1.71 Mb/s at theta = 8)",
    # with shuffled ties it held (CA +19.0 %, SS +8.8 %); with FIFO ties CA +4.2 %, SS +4.9 %
    ("fig7", "rate, 5 Mb/s: best gain with CA coupling vs SS coupling"):
        "CA coupling's best gain +4.2 %, slow-start coupling's +4.9 % (both +8.0 %): gains of a "
        "few per cent whose order the tie rule alone reverses",
    ("fig7", "5 Mb/s: mean throughput over theta, rate vs reno"):
        "TCP Rate below Reno (4.51 vs 5.32 Mb/s) with b = 2 (the paper gives no b)",
    # relative curvature Rate 0.041, Reno 0.038 (shuffled ties: 0.150, 0.012)
    ("fig7", "5 Mb/s: curvature (peak above the lower end, relative), rate vs reno"): None,
    ("fig8", "reno: tracking correlation vs RTT (no SSC): shape"): None,
    ("fig8", "reno: mean correlation with SSC minus without"): None,
    ("fig8", "vegas: tracking correlation vs RTT (no SSC): shape"):
        "Vegas tracks best of all at 30 ms (-0.985) and hardly at all beyond it (-0.02 to -0.12 "
        "at 100-450 ms): beside the Reno background it loses its share",
    ("fig8", "vegas: mean correlation with SSC minus without"): None,
    ("fig8", "rate: tracking correlation vs RTT (no SSC): shape"): None,
    ("fig8", "rate: mean correlation with SSC minus without"): None,
    ("fig8", "tracking (mean correlation, no SSC; most negative first)"):
        "mean over the RTTs Reno -0.698, Rate -0.703, Vegas -0.263: Reno tracks as well as "
        "Rate here, Vegas worst (starved beyond 30 ms by the Reno background)",
    # Fig. 9 (claim 24) rerun with seeds 1-2 (10,000 s) after the FIFO arrival order and the
    # header-less first segment
    ("fig9", "reno: gain vs RTT: shape"): "+2.5 / +22.9 / +25.5 / +23.3 / +41.6 % at 30-450 ms: "
        "a jump from 30 to 100 ms and a dip at 300 ms beyond the shape test's 0.02 (paper: "
        "increasing)",
    ("fig9", "vegas: gain vs RTT: shape"): "+3.4 / -14.4 / +104.7 / +16.0 / +50.2 % (paper: increasing)",
    # re-run at stop 25 (after stop 24's Vegas timing fix): Rate's gains 0.0665 / 0.3405 /
    # 0.3897 / 0.3802 / 0.4547 rise (the 300 ms dip is within the shape test's 0.02); they had
    # dipped at 200 ms and at 450 ms
    ("fig9", "rate: gain vs RTT: shape"): None,
    ("fig9", "rate: gain at RTT = 450 ms"): None,
    ("fig9", "largest gain at RTT = 450 ms"):
        "Vegas's +50.2 % (on a plain Vegas starved at 450 ms) above Rate's +45.5 %",
    # holds at stop 25 on a close call: reno 23.2 % < vegas 32.0 % < rate 32.6 %, Vegas's mean
    # carried by a noisy +104.7 % at 200 ms on its starved plain runs (it was vegas < reno < rate)
    ("fig9", "mean gain over RTT"): None,
    ("fig9", "plain TCP throughput (mean over RTT)"):
        "vegas 1.19 < rate 1.60 < reno 2.09 Mb/s: Vegas starved by the Reno background",
    ("fig9", "reno: mean gain, CA-only coupling vs CA + slow start"): "CA-only 9.5 % vs 23.2 %",
    ("fig9", "vegas: mean gain, CA-only coupling vs CA + slow start"): "CA-only 10.6 % vs 32.0 %",
    ("fig9", "rate: mean gain, CA-only coupling vs CA + slow start"): None,
    # Fig. 10 rerun with seeds 1-2 after the FIFO arrival order and the header-less first segment;
    # Reno's ratio holds on gains of 2.5 % and 0.5 % (stop 25), within run-to-run noise
    ("fig10", "reno: gain ratio alpha=1.05 / alpha=1.95"): None,
    # holds at stop 25: +2.5 / +3.8 / +1.7 / +0.5 % (the rise to 1.35 is within the shape test's
    # 0.02), on gains within run-to-run noise (it was +2.3 / +3.9 / +1.1 / +0.3 %)
    ("fig10", "reno: gain vs alpha: shape"): None,
    ("fig10", "reno: plain TCP throughput alpha=1.95 vs 1.05"): "lower at 1.95 (5.15 vs 6.01 Mb/s), "
        "as in ns-2 on the same files (test_tcpmt_ns2.py: 5.08 vs 6.19)",
    ("fig10", "vegas: gain ratio alpha=1.05 / alpha=1.95"): "3.4 % / 2.8 % = 1.2 (paper >= 2)",
    ("fig10", "vegas: gain vs alpha: shape"): "+3.4 / +3.1 / +4.9 / +2.8 %: irregular",
    ("fig10", "vegas: plain TCP throughput alpha=1.95 vs 1.05"): "4.46 vs 5.23 Mb/s",
    ("fig10", "rate: gain ratio alpha=1.05 / alpha=1.95"): "6.7 % / 5.9 % = 1.1 (paper >= 2)",
    ("fig10", "rate: gain vs alpha: shape"): "+6.7 / +5.1 / +4.9 / +5.9 %: flat",
    ("fig10", "rate: plain TCP throughput alpha=1.95 vs 1.05"): "2.52 vs 5.25 Mb/s",
    ("fig10", "reno: mean gain, CA-only coupling vs CA + slow start"): "-0.1 % vs +2.1 %",
    ("fig10", "vegas: mean gain, CA-only coupling vs CA + slow start"): None,
    ("fig10", "rate: mean gain, CA-only coupling vs CA + slow start"): None,
    # Fig. 11 and Table III rerun after the FIFO arrival order and the header-less first segment
    ("fig11", "nu=0.01: mean A over the second half"): "A stays near 1.3: little to gain from A",
    ("fig11", "nu=0.05: mean A over the second half"): "A settles near 2.5: little to gain from A",
    ("fig11", "nu=0.25: mean A over the second half"): "A wanders around 3.0 (std 1.85)",
    ("fig11", "oscillation of A (std, second half) grows with nu"): None,
    # Fig. 12 rerun after the FIFO arrival order and ns-2's header-less first segment (issue 18)
    ("fig12", "static A: throughput(A): shape"): None,
    ("fig12", "static A: throughput(A): peak at"):
        "unimodal but the peak is at A = 4 (4.744 Mb/s; A = 6 4.698, A = 1 4.653, A = 10 4.633): "
        "a 2 % rise and fall (paper: A* = 6)",
    ("fig12", "dynamic metacontrol / best static A"): None,
    ("fig12", "plain TCP below the dynamic metacontrol"): None,
    # Table II rerun after the FIFO arrival order and the header-less first segment: gains of
    # 0-4.4 %, whose order changes from run to run (ns-2: -1.4 to +3.2 %, test_tcpmt_ns2.py)
    ("table2", "100 s: Case I has the largest gain"): None,
    ("table2", "500 s: Case I has the largest gain"): "I 1.66 %, II 1.72 %, III 2.01 %: within noise",
    ("table2", "1000 s: Case I has the largest gain"): None,
    ("table2", "2000 s: Case I has the largest gain"): None,
    ("table2", "500 s: gain by case"): "I 1.66 %, II 1.72 %, III 2.01 %: reversed, within noise",
    ("table2", "1000 s: gain by case"): None,
    ("table2", "Case I minus Case III gain, 100 s vs 2000 s"):
        "1.76 vs 1.80 points: Case III does not catch up; gains of 2-4 %",
    ("table2", "Case I: mean gain, CA-only coupling vs CA + slow start"): None,
    ("table3", "TCP-MT total throughput vs n: shape"):
        "the total keeps rising to 18 connections (1514 KB/s at n = 2, 1905 at 6, 2209 at 18; "
        "paper 1623, 1764, 1251): more flows fill the link",
    ("table3", "TCP-MT total throughput vs n: peak at"): "peak at n = 18, see shape",
    ("table3", "largest max/min throughput ratio among TCP-MT connections"):
        "1.69 (paper 1.43, test <= 1.5); it was 1.78 with FIFO ties and long first segments and "
        "1.06 with shuffled ties: the tie rule alone moves it across the bound on one seed",
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

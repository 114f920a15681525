"""The papers' conclusions at full length (tox -e slow): every claim of traceflow.report.claims
but Park & Tuan's (TCP-MT's rows are asserted one by one in test_tcpmt_paper.py, owned with the
TCP-MT code), judged on the comparison rows of `traceflow reproduce` (run_experiment, full
length, two workers) exactly as the closing table (`traceflow reproduce --claims`) judges them.

A claim that holds is asserted to hold. One that does not is a strict xfail whose reason gives
our numbers beside the paper's and what ns-2 shows on the same set-up (the referee tests named in
the claim), so a change that makes it hold, or breaks one that holds, fails here.
The reasons' numbers were measured before the event engine's tie order of same-nanosecond
arrivals (sim/engine.pxi); the verdicts were checked again after it (27 passed, 13 xfailed),
and some numbers moved a little (e.g. claim 12's DropTail decreases 44.2 / 33.6 %, claim 16's
RED ratio 6.1:1, claim 19's last/first 2.77). After links came to free in ns-2's order at equal
instants (sim/link.pxi _poke) and Feng's set-up became the paper's ns (stop 22), a full run gave
27 passed, 12 xfailed and claim 15 failed (now a strict xfail, numbers in its reason); the
reasons of claims 7 and 15 were measured then, the others stand.
"""
import functools
import tempfile
from pathlib import Path

import pytest

from traceflow.cli.reproduce import run_experiment
from traceflow.report.claims import CLAIMS, PT, verdict

# claim number -> what we measured (full length) and what ns-2 shows on the same set-up
FAILING = {
    2: ("46 and 128 kB: loss falls linearly as alpha -> 1 (Spearman -1.0, 12-14 % off the "
        "line) and 2 kB is flat, as the paper says, but 10 kB is flat too: 5.6 / 6.2 / 5.9 / "
        "5.9 % for alpha 1.05 / 1.35 / 1.65 / 1.95 (3 seeds; at 1.05 they range 3.6-6.7 %). ns-2 "
        "on the same file sizes at 10 kB, alpha 1.05: 3.64 / 7.25 / 6.86 % for seeds 1-3 (ours "
        "3.65 / 6.68 / 6.43 %), alpha 1.95: 6.40 / 6.34 / 6.44 % (ours 5.91 / 5.92 / "
        "5.99 %): ns-2 is flat at 10 kB too (mean 5.9 vs 6.4 %)"),
    4: ("judged two-sided (issue 45), on ns of 2000's timers, seed 1: the largest excess over "
        "Poisson at 10-38 clients is Reno +0.282 (38 clients, 0.07 % loss), Reno+delack +0.172, "
        "Vegas +0.004, Reno/RED +0.030, Vegas/RED +0.004: Vegas and the RED variants do not "
        "'noticeably' modulate (> +0.1); below 38 clients nothing is lost and every TCP is within "
        "2.5 % of Poisson. ns-2 on the same set-up (feng_star.tcl era defaults, seeds 1-2): Reno "
        "+0.029, Reno+delack +0.019, Vegas +0.011, Reno/RED +0.100, Vegas/RED +0.011"),
    8: ("model/simulation correlation 0.598 (< 0.7). The model starts in its uncongested steady "
        "state (window 20, no backlog: FT:190 'in the steady state ... always in the congestion "
        "avoidance phase'; from window 1 the start-up backlog synchronised 38 clients into eq. "
        "4's halving cycle, c.o.v. 0.24 vs simulated 0.056, correlation 0.54), so below 38 "
        "clients model and simulation agree within 2 %; what remains is heavy load: at 41 "
        "clients the model is still Poisson-like (0.075, simulated 0.113), above it the model "
        "rises to 0.319 at 100 clients while simulated Reno stays at 0.097-0.116 (model x2.39 "
        "on average: the overestimate the paper names). ns-2's Reno on the same set-up "
        "(test_burstiness_ns2.py::test_fig13_model_meets_ns2_reno_as_it_meets_ours, seed 1): "
        "correlation 0.629 with the model, model x2.24 under heavy load: the same verdicts"),
    10: ("ns-2 of 2003's timers: K of R1 with R2 on vs off 1.9 % apart at A = 10, 86 % at A = "
         "160; K(160)/K(10) = 0.12: the aggregate collapses under 2 x 160 drops/s. ns-2 on the "
         "same era set-up (test_capm_ns2.py::test_fig6_sources_and_k_match_ns2 passes): rates "
         "and K at A = 20 agree, and the same collapse at A = 160"),
    11: ("ns-2 of 2003's timers (minrto_ 1, windowInit_ 2): K1 274.8, K2 344.9 (paper 77.3, "
         "588.1), K2/K1 1.25 (7.61); demands 8512 / 3211 pkt/s (paper 5234 / 4547). No source "
         "model reaches both demands within 10 % (sensitivity.ks_sources: persistent 8514-8875 / "
         "3514-3825, a new connection per flow 1386-3057 / 2985-6611, window 20-1000): not "
         "decidable on the paper's text"),
    12: ("DropTail decreases 47.6 / 42.2 % of demand at 1.1 % loss (paper 25 / 52 % at 4 %); no "
         "buffer in [25, 500] packets gives ~4 % at a full link (sensitivity.ks_sources: at "
         "utilization >= 0.95 the loss is at most 2.3 %, 3.0-7.6 % only at 48-68 % utilization)"),
    13: ("ns-2 of 2003's timers: p1/p2 = 0.47 (paper 6.7), K-based decreases 44.1 / 61.1 % (39 / "
         "42 %), gap 17.0 vs DropTail's 5.4 points: eqs. 16-17 act on claim 11's K and demands, "
         "which the paper's text does not let us rebuild"),
    14: ("ns-2 of 2003's timers: K flat below 90 % (largest deviation 4.4 %) at 387, not about "
         "75 (claim 11's sources); earlier ns-2 (test_capm_ns2.py, pre-era): 364 at 46 %, 229 at "
         "69 %, 20 at a full link"),
    17: ("SIX-DT's Jain index is 0.94-0.96 up to 1.5 short flows/s, 0.925 at 2 and falls to 0.848 "
         "at 3.5 (MIX-DT 0.595; LFT-DT moves -0.047 and MIX-DT -0.151, as the paper says), 24 runs "
         "per point, after the engine's tie order: once the short classes saturate their 60 % "
         "(2.4 flows/s) nine long flows share 40 packets/s with 4-packet class buffers (the paper "
         "states the 24-packet buffer for Fig. 1 only; the 1/N split is ours) and time out. ns-2 "
         "on the same flows and class buffers (CBQ/WRR, test_class_schemes_ns2.py, seeds 1-12): "
         "SIX-DT 0.863, MIX-DT 0.587 at 3.5 flows/s (traceflow 0.851, 0.606): not ideal in ns-2 "
         "either"),
    20: ("MIX-DT falls by 0.181 and RTT-DT moves -0.042 with the RTT ratio, as the paper says, "
         "but SIX-DT rises by 0.080 (0.842 at RTT ratio 1, 0.942 / 0.925 / 0.945 / 0.922 at 2-5; "
         "24 runs per point, after the engine's tie order): at ratio 1 both class bounds sit at "
         "100 ms, so the +-10 % RTT jitter sorts the flows into classes I and III at random, "
         "unevenly (class II empty). ns-2 on the same flows and classes "
         "(test_class_schemes_ns2.py, seeds 1-12): SIX-DT 0.794 at ratio 1, 0.918 at 5 (+0.124; "
         "traceflow +0.058 on those seeds): it rises in ns-2 too"),
    15: ("DropTail's median fast/slow at RTT ratio 10 is 16.4 (24 seeds), under the factor-2 "
         "band's 17; the ratio grows with the RTT ratio (rank correlation 0.87). The seeds' ratios "
         "are bimodal (the phase effect), so the median at one point jumps between the modes: "
         "29.8 before links freed in ns-2's order at equal instants (sim/link.pxi _poke), and "
         "ns-2 gives 19.9 on the same flows; test_class_fig1_ns2.py still finds ours and ns-2 "
         "within 3 standard errors at every RTT ratio"),
    16: ("RED: median fast/slow at RTT ratio 10 is 6.2 (paper 14:1; 24 seeds), RED fairer than "
         "DropTail at 6 of 7 RTT ratios >= 4 (not at 5, where DropTail's bimodal median is 1.2). "
         "ns-2 on the same flows (test_class_fig1_ns2.py): 5.9:1 and 6 of 7: the paper's RED "
         "set-up differs in something it does not state"),
}


@functools.lru_cache(maxsize=None)
def comparison(name):
    with tempfile.TemporaryDirectory() as tmp:
        return run_experiment(name, Path(tmp) / name, workers=2)["comparison"]


def _params():
    for claim in CLAIMS:
        if claim.paper != PT:
            why = FAILING.get(claim.number)
            marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
            yield pytest.param(claim, marks=marks, id=f"claim {claim.number}: {claim.source}")


pytestmark = pytest.mark.slow


@pytest.mark.parametrize("claim", list(_params()))
def test_claim(claim):
    v = verdict(claim, {e: comparison(e) for e in claim.experiments})
    off = [(r["quantity"], r["paper"], r["ours"]) for r in v["rows"] if r["agree"] is not True]
    assert v["holds"] is True, (claim.headline, off, v["missing"])


@pytest.mark.parametrize("claim", [c for c in CLAIMS if c.paper != PT],
                         ids=lambda c: f"claim {c.number}")
def test_every_row_of_a_claim_is_judged(claim):
    """Each (experiment, prefix) of the claim names judged rows of the full run: a renamed row
    cannot turn a claim into a silent xfail."""
    assert verdict(claim, {e: comparison(e) for e in claim.experiments})["missing"] == []

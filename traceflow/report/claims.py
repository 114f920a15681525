"""The five source papers' conclusions as a registry of 26 testable claims (issue 18).

Each :class:`Claim` quotes the paper's sentence by file:line (files under ``../shared/papers``),
states the test taken from it (a shape, an ordering, a ratio or a tolerance, never a sign alone),
names the comparison rows of ``traceflow reproduce`` that carry the test (``(experiment,
quantity prefix)``; an empty prefix takes every judged row of the experiment), the paper's headline
number and what ns-2 shows on the same set-up (with the referee test that runs it).

A claim holds when every one of its rows agrees, does not hold when one disagrees, and is
undecided while a row is missing or not compared (quick runs decide nothing). ``reproduce`` adds
the verdicts of an experiment's claims to its ``summary.json`` and page (:func:`judge`);
``traceflow reproduce --claims DIR`` lists all 26 from a directory of full reproductions
(:func:`closing_table`).
"""
from dataclasses import dataclass

PKC = "park-kim-crovella-1997-self-similarity-performance.txt"
FT = "feng-tinnakornsrisuphap-2000-tcp-burstiness.txt"
KS = "kalantari-shayman-capm-responsiveness.txt"
WN = "wu-nikolaidis-2002-lifetime-rtt-classification.txt"
PT = "park-tuan-2000-multiple-time-scale-tcp.txt"

PAPERS = {PKC: "Park, Kim & Crovella 1997", FT: "Feng & Tinnakornsrisuphap 2000",
          KS: "Kalantari & Shayman", WN: "Wu & Nikolaidis 2002", PT: "Park & Tuan 2000"}


@dataclass(frozen=True)
class Claim:
    """One conclusion of a paper. ``lines``: line numbers of the sentence in ``paper``;
    ``rows``: ``((experiment, quantity prefix), ...)``; ``headline``: the paper's number(s);
    ``ns2``: ns-2 on the same set-up and the referee test, or why there is none."""

    number: int
    paper: str
    lines: tuple
    statement: str
    test: str
    rows: tuple
    headline: str
    ns2: str

    @property
    def source(self):
        return f"{self.paper}:{','.join(str(n) for n in self.lines)}"

    @property
    def experiments(self):
        return tuple(dict.fromkeys(e for e, _ in self.rows))


def _c(number, paper, lines, statement, test, rows, headline, ns2):
    return Claim(number, paper, tuple(lines), statement, test, tuple(rows), headline, ns2)


CLAIMS = (
    # ---- Park, Kim & Crovella 1997 -------------------------------------------------------------
    _c(1, PKC, (176, 180),
       "On the baseline (about 4 % loss at alpha = 1.05) H falls roughly linearly with alpha, "
       "below the ON/OFF line (3 - alpha)/2 near alpha = 1, above it near 2, nearly coinciding "
       "at 1.65",
       "Spearman <= -0.9; slope in (-0.5, -0.1); H(1.05) below, H(1.95) above the line, "
       "|H(1.65) - 0.675| <= 0.05; loss at 1.05 (mean of the 3 seeds) within 10 % of 4 %",
       (("selfsim_fig4", ""),),
       "loss about 4 % at alpha = 1.05; H crosses (3 - alpha)/2 near alpha = 1.65",
       "test_selfsim_ns2.compare on the era set-up (ns of 1997's timers, window 20, idle 0.82 s), "
       "3000 s on the same file sizes: alpha 1.05 loss 3.87 / 5.05 % for seeds 1, 2 (ours 3.82 / "
       "4.96 %), H 0.999 / 0.915 (ours 0.999 / 0.904); alpha 1.95 seed 1 loss 4.18 % (ours "
       "4.01 %), H 0.670 (ours 0.682)"),
    _c(2, PKC, (195, 197),
       "Loss degrades gradually and linearly as alpha -> 1, flat at the smallest buffer (2 kB) "
       "and steepest at the intermediate buffers (10, 46 kB)",
       "loss rank correlation with alpha <= -0.8 and inner points within 35 % of the straight "
       "line, per buffer above 2 kB; 2 kB's relative change below the intermediate buffers'",
       (("selfsim_fig5", "10 kB: loss"), ("selfsim_fig5", "46 kB: loss"),
        ("selfsim_fig5", "128 kB: loss"), ("selfsim_fig5", "loss change")),
       "Fig. 5: linear in alpha; 2 kB flat",
       "ns-2 on the same file sizes at 10 kB (seeds 1-3): alpha 1.05 3.64 / 7.25 / 6.86 %, "
       "1.95 6.40 / 6.34 / 6.44 % (ours 3.65 / 6.68 / 6.43 and 5.91 / 5.92 / 5.99 %): flat"),
    _c(3, PKC, (229,),
       "Mean queue length is invariant across alpha at a small buffer and grows "
       "disproportionately as alpha -> 1 at 128 kB",
       "2 kB: max/min over alpha <= 1.25; 128 kB: queue(1.05)/queue(1.95) >= 2 and convex",
       (("selfsim_fig5", "2 kB: mean queue"), ("selfsim_fig5", "128 kB: mean queue")),
       "Fig. 6 (middle): 'disproportionate (i.e., exponential) increase'",
       "no ns-2 run of Fig. 6"),
    # ---- Feng & Tinnakornsrisuphap 2000 ---------------------------------------------------------
    _c(4, FT, (119, 123),
       "UDP's c.o.v. is very close to Poisson's; under moderate congestion (10-38 clients) every "
       "TCP's c.o.v. is up to 50 % above Poisson's",
       "UDP within 10 % of Poisson; each TCP's largest excess over 10-38 clients in (+0.1, +0.5]: "
       "'up to 50 %' bounds it, 'noticeably' asks more than UDP's 'very close' 10 % (two-sided)",
       (("burst_fig2_4", "UDP: c.o.v."), ("burst_fig2_4", "")),
       "TCP up to +50 % over Poisson",
       "feng_star.tcl with ns of 2000's timers (seeds 1-2, issue 45): largest excess over "
       "Poisson at 10-38 clients Reno +0.029, Reno+delack +0.019, Vegas +0.011, Reno/RED +0.100, "
       "Vegas/RED +0.011 (ours, same seeds: +0.128, +0.074, -0.018, +0.009, -0.018); at 10-30 "
       "clients every TCP within 2.5 % of Poisson in both"),
    _c(5, FT, (125,),
       "Under heavy congestion the c.o.v. rises sharply for every TCP but Vegas: Reno over 140 % "
       "and Reno/RED over 200 % above Poisson",
       "excess > +1.4 (Reno), > +2.0 (Reno/RED), > +0.5 (other TCPs but Vegas), Vegas < +0.5 "
       "and below Reno at every client count > 41",
       (("burst_fig2_4", "Reno: c.o.v. above Poisson, heavy"),
        ("burst_fig2_4", "Reno/RED: c.o.v. above Poisson, heavy"),
        ("burst_fig2_4", "Reno+delack: c.o.v. above Poisson, heavy"),
        ("burst_fig2_4", "Vegas: c.o.v. above Poisson, heavy"),
        ("burst_fig2_4", "Vegas/RED: c.o.v. above Poisson, heavy"),
        ("burst_fig2_4", "heavy congestion: Vegas c.o.v. below Reno")),
       "Reno > +140 %, Reno/RED > +200 %",
       "tests/sim/test_burstiness_ns2.py: holds in ns-2 (Vegas/RED +122 %, ours +170 %)"),
    _c(6, FT, (137,),
       "TCPs with RED perform worse than their plain counterparts in c.o.v., throughput and loss",
       "Reno/RED and Vegas/RED worse than Reno and Vegas at >= 75 % of the heavy-congestion "
       "client counts, for each of c.o.v., throughput and loss",
       (("burst_fig2_4", "heavy congestion: Reno/RED worse"),
        ("burst_fig2_4", "heavy congestion: Vegas/RED worse")),
       "worse in all three",
       "tests/sim/test_burstiness_ns2.py: holds in ns-2, and the RED variants' c.o.v., "
       "throughput and loss match it (Reno/RED loss 1.44 vs ours 1.42 % at 45 clients)"),
    _c(7, FT, (135, 165),
       "Clients added to a Reno background lose fewer packets with Vegas than with Reno, behind "
       "every gateway (20 and 40 background clients, 50 and 1500 packets, FIFO and RED)",
       "mean loss of added Vegas clients below added Reno's, per (background, buffer, gateway)",
       # the stated cases only: 50 packets FIFO (FT:133, Figs. 5, 9) and 1500 packets with and
       # without RED (FT:135, 165); RED behind 50 packets is not a case the text states
       (("burst_bg20", "added Vegas loss below added Reno (buffer 50, fifo)"),
        ("burst_bg20", "added Vegas loss below added Reno (buffer 1500"),
        ("burst_bg40", "added Vegas loss below added Reno (buffer 50, fifo)"),
        ("burst_bg40", "added Vegas loss below added Reno (buffer 1500")),
       "Figs. 6, 8, 10, 12: Vegas variants' loss lower",
       "tests/experiments/test_burst_background_ns2.py (20 Reno background, 50 packets, both "
       "sending 1500-byte packets): added loss matches; under RED, mean over the added counts "
       "and seeds 1-5, ns-2 has Vegas 1.49 vs Reno 1.40 % (ours 1.53 vs 1.41 %): Vegas loses "
       "more in both; the 1500-packet FIFO drops nothing in ns-2 either"),
    _c(8, FT, (202,),
       "The stochastic model's c.o.v. follows simulated Reno's trend and overestimates it under "
       "heavy load",
       "correlation > 0.7; model above simulation at every client count > 41; light load "
       "within 25 %",
       (("burst_fig13", ""),),
       "Fig. 13",
       "tests/sim/test_burstiness_ns2.py::test_fig13_model_meets_ns2_reno_as_it_meets_ours: "
       "the model against ns-2's Reno on the same set-up (seed 1) correlates 0.629 (ours "
       "0.598) and is x2.24 above it under heavy load (ours x2.39): the same verdicts"),
    # ---- Kalantari & Shayman ---------------------------------------------------------------------
    _c(9, KS, (205, 207),
       "A router's drop signature appears in the aggregate rate with a 180-degree phase shift, "
       "and two routers' signatures add",
       "mean rate during s1 = 1 chips at least 5 % below the s1 = 0 chips (R1 alone, R1 + R2); "
       "no dip without perturbation",
       (("capm_signature", ""),),
       "Figs. 4-5: visible, additive",
       "tests/experiments/test_capm_ns2.py referees the sources: Fig. 4's 50 unperturbed on/off "
       "sources carry 4179 / 4254 pkt/s (seeds 1, 2), ns-2 4510 / 4468 (FTP start/stop on one "
       "agent, window 20)"),
    _c(10, KS, (214, 216),
       "The matched-filter output is linear in the amplitude A and unaffected by the other "
       "router's perturbation",
       "K of each router with the other on vs off within 10 % at every A and over all A; "
       "K(A = 160)/K(A = 10) within 20 % of 1",
       (("capm_orthogonality", ""),),
       "Fig. 6: solid and dashed lines coincide, linear",
       "tests/experiments/test_capm_ns2.py::test_fig6_sources_and_k_match_ns2, same set-up "
       "(ErrorModel/Periodic per run of 1-chips, ns-2's arrivals through traceflow's matched "
       "filter), seeds 1, 2: K of R1 at A = 20 alone 57 / 67 (ours 64 / 106), with R2 on 36 / 57 "
       "(ours 32 / 96); at A = 160 on both routers the aggregate collapses in ns-2 too (167 / 176 "
       "pkt/s of 4500; ours 92 / 91): these sources (about 2300 pkt/s under test) leave the "
       "linear range far below 160 drops/s in both simulators; the paper does not give Fig. 6's "
       "aggregate rate. ns-2's periodic dropper falls behind at large A (92 of 160 drops/s on "
       "R1 alone), so there it perturbs less than traceflow's"),
    _c(11, KS, (225,),
       "The aggregate of larger flows is the more responsive: K1 = 77.3, K2 = 588.1",
       "K1, K2 and K2/K1 each within a factor 2 of the paper's (K2/K1 = 7.6)",
       (("capm_fairness", "K₁"), ("capm_fairness", "K₂")),
       "K1 = 77.3, K2 = 588.1; lambda 5234 / 4547 pkt/s",
       "tests/experiments/test_capm_ns2.py::test_fairness_experiment_matches_ns2 (seeds 1, 2, "
       "3 tests each): ns-2 K1 229 / 261, K2 270 / 259 (ours 239 / 295, 225 / 218), demands "
       "6886 / 2784 and 6962 / 2741 pkt/s (ours 6482 / 2565, 6610 / 2486): K2/K1 about 1 in "
       "both, as window-20 agents cap both groups' flows alike; the set-up differs from the "
       "paper's in its sources, which its text does not pin down (a new connection per on period "
       "without receiver limit: ns-2 1428 / 9200 pkt/s, traceflow 1330 / 7500)"),
    _c(12, KS, (227,),
       "Doubling the sources under DropTail cuts aggregate 1 by 25 % and aggregate 2 by 52 % of "
       "demand at about 4 % loss",
       "each decrease within 10 percentage points; loss within a factor 2 of 4 %",
       (("capm_fairness", "DropTail"),),
       "25 % / 52 %, loss 4 %",
       "tests/experiments/test_capm_ns2.py::test_fairness_experiment_matches_ns2: ns-2 loses "
       "0.30 % and cuts 34 / 39 % (seeds 1, 2: 34 / 39, 34 / 39), ours 0.27 %, 31 / 30 and "
       "31 / 33 %: the 500-packet buffer turns the overload into queueing delay of window-limited "
       "sources in both (the paper gives no buffer size)"),
    _c(13, KS, (234,),
       "K-based drop probabilities (p1 = 0.067, p2 = 0.010) equalize the decreases: 39 % / 42 %",
       "p1/p2 within a factor 2 of 6.7; each decrease within 10 percentage points; the gap at "
       "most half DropTail's",
       (("capm_fairness", "p₁ / p₂"), ("capm_fairness", "K-based"),
        ("capm_fairness", "decrease gap")),
       "39 % / 42 % (gap 27 -> 3 points)",
       "tests/experiments/test_capm_ns2.py::test_fairness_experiment_matches_ns2, eqs. 16-17 on "
       "each simulator's own K and demands: ns-2 p1/p2 = 0.48 and 0.39 (seeds 1, 2), "
       "decreases 32 / 43 and 31 / 46 % (ours 28 / 37, 26 / 44 %): with K1 about K2 the "
       "K-based split cannot differ from DropTail's much in either (see claim 11)"),
    _c(14, KS, (236,),
       "K is almost flat up to about 90 % utilization, about 75",
       "mean K below 90 % within a factor 2 of 75; every run below 90 % within 15 % of the mean",
       (("capm_utilization", ""),),
       "K about 75, flat to 90 %",
       "tests/experiments/test_capm_ns2.py::test_fig7_k_vs_utilization_matches_ns2 (seeds 1, "
       "2): at 50 sources ns-2 K 364 at 46 % utilization (seed 1, 3 tests; ours 277 at 45 %), "
       "70 sources 229 at 69 %, at 150 sources a full link and K 20 (ours 17): the same shape, "
       "K collapsing only at a saturated link, at the same level (see claim 11)"),
    # ---- Wu & Nikolaidis 2002 --------------------------------------------------------------------
    _c(15, WN, (29,),
       "Under DropTail the throughput ratio of two flows reaches 34:1 at RTT ratio 10, growing "
       "with the RTT ratio",
       "largest mean fast/slow over the RTT ratios ('up to' a maximum; the plotted points are "
       "averages of 24 runs, WN:159) within a factor 2 of 34; Spearman >= 0.7",
       (("class_fig1", "DropTail"),),
       "34:1",
       "tests/experiments/test_class_fig1_ns2.py: ns-2 19.9:1 at RTT ratio 10 on the same flows "
       "(24 seeds, bimodal; ours 16.4), and ours within 3 standard errors of ns-2 at every RTT "
       "ratio"),
    _c(16, WN, (29,),
       "RED is fairer: the ratio reaches only 14:1 at RTT ratio 10, below DropTail's",
       "largest mean fast/slow over the RTT ratios ('up to', WN:29, 159) within a factor 2 of "
       "14; Spearman >= 0.7; RED's median below DropTail's at "
       "every RTT ratio >= 4",
       (("class_fig1", "RED"),),
       "14:1 (vs 34:1)",
       "tests/experiments/test_class_fig1_ns2.py: ns-2 5.9:1 under RED at RTT ratio 10 (24 "
       "seeds; ours 6.2) and RED fairer at 6 of 7 RTT ratios, as ours: the paper's RED set-up "
       "differs in something it does not state"),
    _c(17, WN, (166, 168, 170),
       "As short-flow load grows, long-lived fairness falls without classification (MIX-DT), "
       "stays unchanged with lifetime classes (LFT-DT) and is ideal with SIX-DT",
       "MIX-DT Jain index falls >= 0.05; LFT-DT moves <= 0.05; SIX-DT >= 0.95 and above MIX-DT",
       (("class_short_load", "SIX-DT vs MIX-DT"), ("class_short_load", "MIX-DT fairness"),
        ("class_short_load", "LFT-DT fairness")),
       "Fig. 5",
       "tests/experiments/test_class_schemes_ns2.py (ns-2 CBQ/WRR classes with the same 1/N "
       "buffers, static classification, same flows, seeds 1-12): at 3.5 short flows/s SIX-DT "
       "0.863 vs MIX-DT 0.587 (traceflow 0.851 vs 0.606): SIX-DT is not ideal in ns-2 either; "
       "the 4-packet class buffers of the paper's unstated buffer split cause it"),
    _c(18, WN, (172, 174, 198),
       "A fixed 60 % allocation caps short-flow goodput at 60 packets/s; DAS's dynamic "
       "allocation gives short flows lower response times",
       "LFT-DT short goodput <= 63 packets/s at the top load; DAS mean response time below "
       "LFT-DT's",
       (("class_short_load", "short-flow goodput cap"), ("class_short_load", "DAS vs LFT-DT")),
       "60 packets/s (saturation at 2.4 flows/s)",
       "no ns-2 run (ns-2 has no DAS)"),
    _c(19, WN, (53, 208),
       "Short-flow response time deteriorates with long-lived load under RED and changes "
       "trivially under DAS",
       "from the first point with long-lived flows (the paper's runs always have them, "
       "WN:128) to the last: MIX-RED last/first > 1.2; DAS within 20 % and below MIX-RED's growth",
       (("class_long_load", ""),),
       "Figs. 2 and 10",
       "no ns-2 run (ns-2 has no DAS)"),
    _c(20, WN, (241, 245, 272),
       "As the RTT ratio grows long-lived fairness falls without RTT classes and is unchanged "
       "with them (RTT-DT, SIX-DT); MIX-RED is fairer than MIX-DT",
       "MIX-DT Jain index falls >= 0.05; RTT-DT, SIX-DT move <= 0.05; MIX-RED above MIX-DT at "
       "the top short load",
       (("class_rtt_ratio", ""), ("class_short_load", "MIX-RED vs MIX-DT")),
       "Figs. 11, 13",
       "tests/experiments/test_class_schemes_ns2.py (ns-2 CBQ/WRR classes, same flows, seeds "
       "1-12): SIX-DT 0.794 at RTT ratio 1 and 0.918 at 5 (traceflow 0.853, 0.911): it rises "
       "in ns-2 too (at ratio 1 the class bounds coincide); RTT-DT at ratio 5 differs (0.915 vs "
       "0.721) by the scheduler's service pattern (one-packet DRR phase-locks the 20 ms flows; "
       "a 3-packet quantum gives 0.858)"),
    # ---- Park & Tuan 2000 (rows of tests/experiments/test_tcpmt_paper.py CLAIMS) ---------------
    _c(21, PT, (104,),
       "Aggregate load levels one T_L apart are predictable under long-range dependence "
       "(alpha = 1.05) and nearly independent at alpha = 1.95",
       "mutual information larger at 1.05, diagonal mass above independence, TV distance "
       "small at 1.95 (T = 1 s and 5 s)",
       (("tcpmt_fig1", ""),),
       "Fig. 1",
       "not an ns-2 question (background traffic statistics)"),
    _c(22, PT, (242, 252),
       "Throughput vs the SSC threshold theta is unimodal with its peak at theta = 4, for Reno "
       "and (higher, more curved) for TCP Rate",
       "shape unimodal with the stated noise, peak at 4; Rate above Reno, more curved",
       (("tcpmt_fig6", ""), ("tcpmt_fig7", "")),
       "peak at theta = 4",
       "tests/sim/test_tcpmt_ns2.py::test_fig6_aggressiveness_costs_timeouts_in_ns2_and_ours, "
       "Fig. 6(a)'s parameters, 10,000 s (ns-2 draws its own files): theta = 1 / 4 / 8 give ns-2 "
       "6.41 / 6.61 / 6.74 Mb/s, timeouts x1.6; ours 5.35 / 5.38 / 5.19, x2.6: theta = 4 is a "
       "peak in neither; TCP Rate not run in ns-2"),
    _c(23, PT, (259,),
       "Tracking ability falls as RTT grows, SSC shifts the curves toward -1, Rate tracks best, "
       "then Vegas, then Reno",
       "correlation vs RTT shapes, SSC minus plain < 0, the order Rate < Vegas < Reno",
       (("tcpmt_fig8", ""),),
       "Fig. 8",
       "tests/sim/test_tcpmt_ns2.py, Reno on the same background files, TCP-MT as a static linear "
       "schedule (A = 6, CA coupling), 3000 s: plain tracking -0.964 at 30 ms, -0.697 at 450 ms in "
       "ns-2 (ours -0.960, -0.728; stop 25), with SSC -0.780 at 450 ms (ours -0.804; stop 22): "
       "tracking weakens with the RTT and SSC moves it toward -1 in both. Plain Vegas vs Reno on "
       "the same files (no Rate in ns-2, and its Vegas has no TCP-MT slope: tcp-vegas.cc adds "
       "1/cwnd), stop 25: at 30 ms Vegas tracks better than Reno in both (ns-2 -0.995 vs -0.964, "
       "ours -0.995 vs -0.960), as the paper says; at 450 ms worse (ns-2 -0.670 vs -0.697, ours "
       "-0.652 vs -0.728), and it carries less than Reno at both RTTs (ns-2 4.47 / 0.396 Mb/s, "
       "ours 4.51 / 0.447). The "
       "full-length run differs from these cells in its Vegas beyond 30 ms (tracking -0.02 to "
       "-0.12 at 100-450 ms beside a background calibrated over 10,000 s), not run in ns-2"),
    _c(24, PT, (274, 283),
       "TCP-MT's gain grows with RTT (up to 45 % for TCP Rate) and with long-range dependence",
       "gain vs RTT increasing, Rate's gain at 450 ms near 45 %, gain vs alpha decreasing",
       (("tcpmt_fig9", ""), ("tcpmt_fig10", "")),
       "up to 45 %",
       "tests/sim/test_tcpmt_ns2.py, Fig. 9's set-up with Reno on the same background files, "
       "static linear schedule (A = 6, CA coupling), 3000 s: gain +0.4 % at 30 ms, +15.0 % at "
       "450 ms in ns-2 (ours +1.1 %, +16.7 %): the gain grows with the RTT in both. Fig. 10's "
       "set-up (30 ms, alpha = 1.05 / 1.45 / 1.95 at one idle time, same files): gain +0.4 / -3.6 / "
       "-6.6 % in ns-2, +1.1 / +1.1 / -6.6 % in ours: no gain reaches 5 % and the gain at 1.95 is "
       "the most negative in both (no factor of two in either); plain Reno carries most beside "
       "the 1.05 background (ns-2 6.19 / 4.91 / 5.08 Mb/s, ours 6.28 / 4.92 / 5.16), not less as "
       "PT:283 says. TCP Rate's 45 % not run in ns-2"),
    _c(25, PT, (308, 310),
       "The metacontrol of A settles near A* ~ 6 and the dynamic control approximates the best "
       "static A, above plain TCP",
       "mean A over the second half; dynamic within 5 % of the best static A; plain below",
       (("tcpmt_fig11", ""), ("tcpmt_fig12", "")),
       "A* ~ 6",
       "tests/sim/test_tcpmt_ns2.py, Fig. 12's static-A sweep with Reno in place of TCP Rate (ns-2 "
       "has none), 10,000 s: A = 1 / 6 / 10 give ns-2 6.62 / 6.50 / 6.73 Mb/s (ours 5.37 / 5.27 / "
       "5.23): no peak at A = 6, best A within 2 % (ours 0.3 %) of A = 1, timeouts x1.65 (ours "
       "x2.47). Fig. 11's metacontrol with Reno on the same background files, 3000 s: its "
       "steps are a fair coin in both (nu = 0.05: ns-2 769 up / 730 down, ours 763 / 736; nu = "
       "0.25: 760 / 739, 746 / 753), so A drifts toward no A* and ends where its walk went "
       "(ns-2's second-half mean 2.52 at nu = 0.05, 6.19 at nu = 0.25)"),
    _c(26, PT, (192, 299, 314),
       "The gain is largest for Case I and comes mostly from congestion avoidance (Table II); "
       "TCP-MT's total throughput rises up to n = 6 connections, fairly shared (Table III)",
       "Case I largest per run length; CA-only vs CA + slow start; total vs n unimodal at 6, "
       "max/min ratio as Table III's",
       (("tcpmt_table2", ""), ("tcpmt_table3", "")),
       "peak at n = 6 (Table III)",
       "tests/sim/test_tcpmt_ns2.py, Table III's set-up with plain Reno, 3000 s: n = 2 / 6 / 12 / 18 "
       "give ns-2 15.2 / 17.8 / 18.5 / 18.8 Mb/s (ours 13.8 / 17.5 / 18.2 / 18.7): the total rises "
       "to a full link in both, no peak at n = 6. Table II's cases with Reno, static linear A = "
       "4, CA coupling, same background files, seeds 1-2 (test_table2_short_connections_gain_"
       "nothing_in_ns2_and_ours): the cases gain -1.7 to +7.2 % in ns-2 (mean +1.4 %) and -0.6 to "
       "+2.7 % in ours (mean +1.0 %) at 100-2000 s (paper 4.5-31.6 %), Case I not the largest in "
       "either on average; the slow-start "
       "coupling (the CA-only ablation) not run in ns-2, which has none"),
)


# ---- the four states of issue 45 ----------------------------------------------------------------
HOLDS = "holds on the paper's set-up"
WITHIN = "holds within a stated sensitivity range"
NS2_AGREES = "fails on the faithful set-up, ns-2 agrees"
UNDECIDABLE = "not decidable"
DEPARTURE = "fails on a departure from a stated value"   # open work, never a resting state
STATES = (HOLDS, WITHIN, NS2_AGREES, UNDECIDABLE, DEPARTURE)

# claim -> (state, reason) as measured at full length (closing note of issue 45); a claim not
# listed holds on the paper's set-up. ``closing_table`` flags a full run that contradicts it.
STATUS = {
    2: (NS2_AGREES, "on the era set-up (ns of 1997, window 20, idle calibrated on 3 seeds) 46 kB "
                    "is linear, but 10 kB is flat-ish (1.05 / 1.35 / 1.65 / 1.95: 2.9 / 3.1 / 2.5 / "
                    "2.1 %, 56 % off the line) and 128 kB drops nothing; ns-2 on the same file "
                    "sizes (3000 s, seeds 1-2): 10 kB 2.95 / 3.71 % at 1.05 (ours 2.93 / 3.59), "
                    "2.03 / 2.01 % at 1.95 (ours 2.02 / 1.99), 128 kB 0 % in both"),
    3: (NS2_AGREES, "128 kB: mean queue at 1.05 / 1.95 = 3.77 (holds); 2 kB: max/min over alpha "
                    "1.26 against the test's 1.25 (era set-up, 3 seeds); ns-2 on the same file "
                    "sizes (3000 s): 2 kB mean queue 94 / 127 bytes at 1.05 (seeds 1, 2; ours "
                    "103 / 134) and 139 at 1.95 (ours 142): the same ~25 % spread"),
    4: (NS2_AGREES, "judged two-sided on ns of 2000's timers: below 38 clients nothing is lost "
                    "and every TCP is within 2.5 % of Poisson; at 38 clients Reno +0.282 and "
                    "Reno+delack +0.172 (seed 1) but Vegas +0.004, Reno/RED +0.030, Vegas/RED "
                    "+0.004 are not 'noticeably' above (> +0.1); ns-2 on the same set-up (seeds "
                    "1-2): no TCP above +0.100 (Reno +0.029, Reno/RED +0.100)"),
    8: (NS2_AGREES, "judged on the trend by rank (FT:202): on ns of 2000's timers Spearman 0.524 "
                    "(Pearson 0.538), the model x2.49 above simulated Reno under heavy load (which "
                    "the paper predicts); ns-2's Reno on the same era set-up gives the same three "
                    "verdicts with a rank correlation within 0.1 of ours (test_burstiness_ns2.py::"
                    "test_fig13_model_meets_ns2_reno_as_it_meets_ours passes)"),
    10: (NS2_AGREES, "on ns-2 of 2003's timers the sources' rates and K at A = 20 agree with ns-2 "
                     "and the aggregate collapses at A = 160 in both (test_capm_ns2.py::"
                     "test_fig6_sources_and_k_match_ns2 passed on the era defaults, 397 s); ours: "
                     "K(160)/K(10) 0.12, R2 on vs off 86 % apart at A = 160"),
    11: (UNDECIDABLE, "the paper's sources cannot be rebuilt from its text: no source model "
                      "reaches lambda1 = 5234 and lambda2 = 4547 pkt/s within 10 % together "
                      "(sensitivity.ks_sources, ns of 2003: persistent 8514-8875 / 3514-3825, a "
                      "new connection per flow 1386-3057 / 2985-6611, window 20-1000); on the "
                      "era set-up K1 274.8, K2 344.9 (K2/K1 1.25, paper 7.6)"),
    12: (UNDECIDABLE, "no buffer in [25, 500] packets gives the stated ~4 % DropTail loss at a "
                      "full link with the stated sources (at most 2.3 % at utilization >= 0.95; "
                      "3.0-7.6 % only at 48-68 %); on the era set-up 1.1 %, decreases 47.6 / 42.2 %"),
    13: (UNDECIDABLE, "eqs. 16-17 act on claim 11's K and demands"),
    14: (UNDECIDABLE, "the shape holds (on the era set-up K within 4.4 % of its mean below 90 %); "
                      "the level (387, paper about 75) is claim 11's, whose sources the paper's "
                      "text does not let us rebuild"),
    16: (NS2_AGREES, "on ns-2 of 2002's timers and gentle RED, RED's largest mean ratio is 6.4 "
                     "(paper 14); test_class_fig1_ns2.py passes on the same era set-up (ours within "
                     "3 standard errors of ns-2 at every RTT ratio, medians at ratio >= 7 within "
                     "15 %)"),
    17: (NS2_AGREES, "on ns-2 of 2002's timers (minrto_ 1, windowInit_ 2) SIX-DT 0.816 vs MIX-DT "
                     "0.657 at 3.5 flows/s, MIX-DT moves -0.018 and LFT-DT -0.116 with the load; "
                     "ns-2 on the same flows and 1/N class buffers (test_class_schemes_ns2.py, "
                     "seeds 1-12): SIX-DT and MIX-DT within 3 standard errors of ours and SIX-DT "
                     "below 0.95 in ns-2 too (test_fig5_top_load_as_in_ns2 passes); it fails for "
                     "every plausible buffer in "
                     "[24, 96] packets with or without FairShare (sensitivity.wn_buffer, on the "
                     "earlier timers: SIX-DT 0.80-0.88 alone; with FairShare 0.97-0.99 from 48 "
                     "packets, but MIX-DT's fairness then rises with the load)"),
    19: (UNDECIDABLE, "on ns-2 of 2002's timers MIX-RED grows x3.73 from 1 to 8 long-lived flows "
                      "per class and DAS x1.21, one point past the registry's 20 % reading of "
                      "'changes trivially' (WN:208 gives no bound); ns-2 has no DAS, so no referee "
                      "on the same set-up can tell the set-up from the simulator (it held on the "
                      "earlier timers)"),
    20: (NS2_AGREES, "on ns-2 of 2002's timers MIX-DT falls by 0.154 with the RTT ratio, but "
                     "RTT-DT moves -0.053 and SIX-DT +0.052 (at ratio 1 both class bounds sit at "
                     "100 ms and the +-10 % RTT jitter sorts the flows at random); ns-2 on the same "
                     "flows and classes (CBQ/WRR, seeds 1-12): SIX-DT's Jain index at ratios 1 and "
                     "5 within 3 standard errors of ours and rising too (0.866 -> 0.912 in one "
                     "simulator): both sit at the 0.05 bound of 'unchanged'"),
    22: (NS2_AGREES, "no peak at theta = 4 in ns-2 (6.41 / 6.61 / 6.74 Mb/s) either"),
    23: (NS2_AGREES, "Vegas tracks worse than Reno at 450 ms in both; TCP Rate not in ns-2"),
    24: (NS2_AGREES, "the alpha rows fail in both; Rate's 45 % not run in ns-2"),
    25: (UNDECIDABLE, "the ns-2 referee ran Reno in place of TCP Rate (ns-2 has none): not the "
                      "same set-up; the paper gives Rate's parameters but no ns-2 to check them"),
    26: (NS2_AGREES, "Table III's total rises to a full link in ns-2 too, no peak at n = 6"),
}


def status(claim):
    """``(state, reason)`` of ``claim`` as registered in :data:`STATUS`."""
    return STATUS.get(claim.number, (HOLDS, "holds at full length"))


def verdict(claim, comparisons):
    """``{"holds", "rows", "missing"}`` of ``claim`` given ``{experiment: comparison rows}``.

    Only judged rows count (``agree`` True or False; a quick run's rows are all undecided).
    ``holds`` is False as soon as one row disagrees, None while a (experiment, prefix) of the
    claim has no judged row (listed in ``missing``), else True."""
    rows, missing = [], []
    for experiment, prefix in claim.rows:
        found = [r for r in comparisons.get(experiment, ())
                 if r.get("agree") is not None and r["quantity"].startswith(prefix)]
        if not found:
            missing.append(f"{experiment}: {prefix or 'any row'}")
        rows += [r for r in found if r not in rows]
    if any(r["agree"] is False for r in rows):
        holds = False
    else:
        holds = None if missing else True
    return {"holds": holds, "rows": rows, "missing": missing}


def _ours(rows):
    return "; ".join(f"{r['quantity']}: {r['ours']}" for r in rows)


def claim_row(claim, comparisons):
    """One table row: the claim, the paper's number, ns-2's, ours and the verdict."""
    v = verdict(claim, comparisons)
    failed = [r for r in v["rows"] if r["agree"] is False]
    state, reason = status(claim)
    if v["holds"] is not None and v["holds"] != (state in (HOLDS, WITHIN)):
        reason = f"this run contradicts the registered state; {reason}"
    return {"claim": claim.number, "source": claim.source, "statement": claim.statement,
            "test": claim.test, "paper": claim.headline, "ns-2": claim.ns2,
            "ours": _ours(failed or v["rows"]) or "not run", "holds": v["holds"],
            "missing": ", ".join(v["missing"]), "state": state, "reason": reason}


def judge(name, comparison):
    """Rows (:func:`claim_row`) of the claims that read experiment ``name``, judged on its
    ``comparison`` alone: a claim spanning other experiments stays undecided here."""
    return [claim_row(c, {name: comparison}) for c in CLAIMS if name in c.experiments]


def closing_table(comparisons):
    """All claims judged on ``{experiment: comparison rows}`` (e.g. every summary.json of a
    directory of full reproductions)."""
    return [claim_row(c, comparisons) for c in CLAIMS]

"""The TCP-MT base scenario (replays/tcpmt_base.toml, Park & Tuan sec. 5.1) in ns-2 and in traceflow
(issue 18: ns-2 as the referee), tests/sim/ns2/tcpmt.tcl with the same background parameters
(Pareto location k, idle time) and ns-2's defaults of 1999.

1. The alpha = 1.95 background alone (2000 s, seeds 1-2: short-tailed enough that one sample path
   stands for the load) carries the same load in both: seed 1 ns-2 5.19 Mb/s, ours 5.16 Mb/s
   (1000 s). ns-2 runs with 1999's syn_ and delay_growth_ false, the semantics of our one-way
   agents; with ns-2.35's delay_growth_ true (every file waits one more RTT) ns-2 carries 4.71.
2. Plain Reno beside that background: seed 1 / 2, ns-2 5.00 / 5.01 Mb/s, 636 / 636 timeouts,
   background 3.86 / 3.85 Mb/s, utilization 0.906 / 0.907, loss 0.45 / 0.43 %; ours 4.97 / 5.04 Mb/s,
   638 / 619 timeouts, 3.85 / 3.79 Mb/s, 0.902 / 0.903, 0.45 / 0.45 %. Two faults once hid behind
   each other here. ns-2 sends each file's first segment without header bytes (1000 B, the rest
   1040 B; tcp.ns2_bare_first), and same-nanosecond arrivals at g1 (equal delays and rates) were
   in FIFO order: ours gave 6.85 Mb/s and ~100 timeouts. Arrivals shuffled by a hash (the engine
   from then until the first-segment fault was found) gave 4.95 / 5.03 Mb/s before that fix and
   4.83 / 4.86 Mb/s, 686 / 677 timeouts after it; FIFO with it gives the numbers above.
3. Fig. 6 at 5 Mb/s (alpha = 1.05, 10,000 s, threshold schedule, A = 4, CA coupling, the same
   calibrated background parameters k = 252.5 B, idle 0.170 s; the sample paths differ, ns-2 draws
   its own files): PT:242's "unimodal with peak at theta = 4" holds in neither. theta = 1 / 4 / 8:
   ns-2 6.41 / 6.61 / 6.74 Mb/s, 1696 / 1759 / 2675 timeouts, background 2.68 / 2.46 / 2.24 Mb/s;
   ours 5.35 / 5.38 / 5.19 Mb/s, 1906 / 2224 / 4903 timeouts (with shuffled same-nanosecond
   arrivals and 40-byte-long first segments: 4.84 / 4.88 / 4.87, 2980 / 3314 / 5504). The levels
   differ because the backgrounds do: alone, with the parameters of the first record (idle
   0.172 s), ns-2's sample path carried 3.83 Mb/s and ours 5.12 (alpha = 1.05: a few huge files
   decide the load of one path; at alpha = 1.95, test 1, the two agree). In both, aggressiveness
   costs timeouts (x1.6, x2.6);
   ns-2's throughput keeps rising with theta, ours rises 0.5 % to theta = 4 and falls 3.6 % to 8.
4. Fig. 12's static-A sweep (claim 25, PT:310 "unimodal ... A* = 6") with Reno in place of TCP Rate
   (ns-2 has no TCP Rate): linear schedule (xi = A at level 1 down to 1 at level 8), CA coupling,
   the same calibrated alpha = 1.05 background, 10,000 s, seed 1. A = 1 / 2 / 4 / 6 / 8 / 10:
   ns-2 6.62 / 6.74 / 6.32 / 6.50 / 6.59 / 6.73 Mb/s, 1664 / 1861 / 2590 / 2676 / 2783 / 2752
   timeouts; ours 5.37 / 5.38 / 5.32 / 5.27 / 5.26 / 5.23 Mb/s, 1912 / 2531 / 3453 / 4067 / 4421 /
   4720 timeouts (with shuffled ties and long first segments ours gave 4.83-5.01 Mb/s). In both
   the best static A gains little over A = 1 (ns-2 +1.9 %, ours +0.3 %), A = 6 is no peak, and
   timeouts grow from A = 1 to 10 (x1.65, x2.47).
5. Table III's set-up (claim 26, PT:314 "increases ... up until n = 6 after which it begins to
   decline"; "a similar result holds for TCP Reno") with n plain Reno sources on the 20 Mb/s
   bottleneck beside the alpha = 1.05 background calibrated to 5 Mb/s, 3000 s, seed 1. Total of the
   n connections, n = 2 / 6 / 12 / 18: ns-2 15.17 / 17.79 / 18.47 / 18.75 Mb/s; ours 13.82 / 17.51 /
   18.25 / 18.66 (with shuffled ties and long first segments 14.32 / 17.50 / 18.30 / 18.67; ns-2
   then 15.22 / 17.73 / 18.45 / 18.71). In both more connections fill the link and the total keeps
   rising; the paper's totals (13.0 Mb/s at n = 2, peak 14.1 at n = 6, 10.0 at n = 18) leave a
   fifth to a half of the link unused.
"""
import functools
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from traceflow.experiments.tcpmt import batch, calibration, measures, setup, tables
from traceflow.experiments.tcpmt import claims as tcpmt_claims

sys.path.insert(0, str(Path(__file__).with_name("ns2")))
from ns2 import write_sizes  # noqa: E402

TCL = Path(__file__).with_name("ns2") / "tcpmt.tcl"
REPLAYS = Path(__file__).resolve().parents[2] / "replays"

pytestmark = pytest.mark.skipif(shutil.which("ns") is None,
                                reason="needs ns-2 ('ns' on PATH: apt-get install ns2)")


def ns2_start(**params):
    """tcpmt.tcl with ``params``, started (its result: :func:`ns2_result`)."""
    return subprocess.Popen(["ns", str(TCL), *(f"{k}={v}" for k, v in params.items())],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def ns2_result(proc):
    out, err = proc.communicate(timeout=3000)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, proc.args, out, err)
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def ns2(**params):
    return ns2_result(ns2_start(**params))


def base():
    return setup.scenario_base(tomllib.loads((REPLAYS / "tcpmt_fig6.toml").read_text()))


def ours(duration, seed, bg, hook=setup.OFF, measured=True):
    r = batch.simulate(setup.variant(base(), duration=duration, seed=seed, background=bg, cc="reno",
                                     hook=hook, measured=measured))
    if not measured:
        return {"background_bps": r["summary"]["background_bps"]}
    return {"throughput_bps": measures.reliable(r), "background_bps": r["summary"]["background_bps"],
            "link_utilization": r["summary"]["link_utilization"], "timeouts": r["measured"][0]["timeouts"]}


BG = setup.Background(alpha=1.95, k=2109.0, idle=0.16)   # ~5 Mb/s alone


@pytest.mark.slow
def test_background_alone_matches_ns2():
    """The background's load alone within 3 % (the calibration's own tolerance)."""
    for seed in (1, 2):
        ref = ns2(duration=2000, seed=seed, bg_k=BG.k, bg_idle=BG.idle, bg_alpha=BG.alpha, measured=0)
        got = ours(2000.0, seed, BG, measured=False)
        assert got["background_bps"] == pytest.approx(ref["background_bps"], rel=0.03), (got, ref)


def test_short_run_infinite_source_matches_ns2():
    """200 s, seed 1 (about 2 s each). ns-2: 5.05 Mb/s, 65 timeouts; ours 4.98 Mb/s, 65 (seeds
    1-8: ns-2 5.01-5.17 Mb/s, ours 4.93-5.11; with same-nanosecond arrivals shuffled 4.79-4.98)."""
    ref = ns2(duration=200, seed=1, bg_k=BG.k, bg_idle=BG.idle, bg_alpha=BG.alpha)
    got = ours(200.0, 1, BG)
    assert got["throughput_bps"] == pytest.approx(ref["throughput_bps"], rel=0.08), (got, ref)
    assert got["timeouts"] == pytest.approx(ref["timeouts"], rel=0.25), (got, ref)


@pytest.mark.slow
def test_reno_operating_point_matches_ns2():
    """The measured Reno beside the background: its throughput within 8 %, the background's share
    within 10 % and the utilization within 0.03 of ns-2's."""
    bg = BG
    for seed in (1, 2):
        ref = ns2(duration=2000, seed=seed, bg_k=bg.k, bg_idle=bg.idle, bg_alpha=bg.alpha)
        got = ours(2000.0, seed, bg)
        assert got["throughput_bps"] == pytest.approx(ref["throughput_bps"], rel=0.08), (got, ref)
        assert got["background_bps"] == pytest.approx(ref["background_bps"], rel=0.10), (got, ref)
        assert got["link_utilization"] == pytest.approx(ref["link_utilization"], abs=0.03), (got, ref)


@pytest.mark.slow
def test_fig6_aggressiveness_costs_timeouts_in_ns2_and_ours():
    """Fig. 6(a)'s set-up in both simulators: timeouts grow with the threshold theta (1.5x or more
    from theta = 1 to 8), and theta = 4 is no peak (not 1 % above both theta = 1 and theta = 8, the
    shape rule's noise, tcpmt/claims.py)."""
    cal = calibration.calibrate(base(), [(1.05, 5e6)], seed=1, duration=10000.0,
                          ex=batch.executor(workers=2))[(1.05, 5e6)]
    thetas = (1, 4, 8)
    ref = [ns2(duration=10000, seed=1, bg_k=cal.k, bg_idle=cal.idle, bg_alpha=cal.alpha, ssc=1,
               theta=th, A=4) for th in thetas]
    spec = {"experiment": {"ssc": {"schedule": "threshold", "metacontrol": False, "A": 4.0,
                                   "period": 2.0, "levels": 8}}}
    got = []
    for th in thetas:
        r = batch.simulate(setup.variant(base(), duration=10000.0, seed=1, background=cal, cc="reno",
                                         hook=setup.hook(spec, theta=float(th), couple="ca")))
        got.append({"throughput_bps": measures.reliable(r), "timeouts": r["measured"][0]["timeouts"]})
    print(ref, got)
    for runs in (ref, got):
        assert runs[-1]["timeouts"] >= 1.5 * runs[0]["timeouts"], runs
        tp = [r["throughput_bps"] for r in runs]
        assert tp[1] <= 1.01 * max(tp[0], tp[2]), runs


@pytest.mark.slow
def test_fig12_static_A_no_peak_at_6_in_ns2_and_ours():
    """Fig. 12's static A sweep (Reno, linear schedule, CA coupling): in both simulators timeouts grow
    1.5x or more from A = 1 to 10, the best A gains under 5 % over A = 1, and A = 6 is no peak (not
    1 % above every other A, the shape rule's noise)."""
    spec12 = tomllib.loads((REPLAYS / "tcpmt_fig12.toml").read_text())
    base12 = setup.scenario_base(spec12)
    cal = calibration.calibrate(base12, [(1.05, 5e6)], seed=1, duration=10000.0,
                                ex=batch.executor(workers=2))[(1.05, 5e6)]
    a_values = (1, 2, 4, 6, 8, 10)
    ref = [ns2(duration=10000, seed=1, bg_k=cal.k, bg_idle=cal.idle, bg_alpha=cal.alpha, ssc=1,
               schedule="linear", A=a) for a in a_values]
    spec = {"experiment": {"ssc": {"schedule": "linear", "metacontrol": False, "period": 2.0,
                                   "levels": 8}}}
    got = []
    for a in a_values:
        r = batch.simulate(setup.variant(base12, duration=10000.0, seed=1, background=cal, cc="reno",
                                         hook=setup.hook(spec, A=float(a), couple="ca")))
        got.append({"throughput_bps": measures.reliable(r), "timeouts": r["measured"][0]["timeouts"]})
    print(ref, got)
    for runs in (ref, got):
        assert runs[-1]["timeouts"] >= 1.5 * runs[0]["timeouts"], runs
        tp = [r["throughput_bps"] for r in runs]
        assert max(tp) <= 1.05 * tp[0], runs
        at6 = a_values.index(6)
        assert tp[at6] <= 1.01 * max(t for i, t in enumerate(tp) if i != at6), runs


@pytest.mark.slow
def test_table3_reno_total_rises_with_n_in_ns2_and_ours():
    """Table III with plain Reno: in both simulators the n connections' total rises with n (no peak
    at n = 6), and ours is within 10 % of ns-2's at every n (n = 2 differs most: 9 %)."""
    spec3 = tomllib.loads((REPLAYS / "tcpmt_table3.toml").read_text())
    base3 = setup.scenario_base(spec3)
    cal = calibration.calibrate(base3, [(1.05, 5e6)], seed=1, duration=3000.0,
                                ex=batch.executor(workers=2))[(1.05, 5e6)]
    counts = (2, 6, 12, 18)
    ref = [ns2(duration=3000, seed=1, bg_k=cal.k, bg_idle=cal.idle, bg_alpha=cal.alpha, measured=n,
               brate="20Mb")["total_bps"] for n in counts]
    got = []
    for n in counts:
        r = batch.simulate(setup.variant(base3, duration=3000.0, seed=1, background=cal, cc="reno",
                                         count=n, hook=setup.OFF))
        got.append(sum(c["throughput_bps"] for c in r["measured"]))
    print(ref, got)
    for totals in (ref, got):
        assert all(b > a for a, b in zip(totals, totals[1:])), totals
    assert got == pytest.approx(ref, rel=0.10), (got, ref)


# Figs. 8-10 on the same background files: TCP-MT where ns-2 can run it, a static linear schedule
# (A = 6, the paper's A*, CA coupling) on Reno; ns-2 has neither TCP Rate nor the metacontrol, and
# its Vegas no slope to couple (tcp-vegas.cc's congestion avoidance adds 1/cwnd, not
# increase_num_/cwnd as Reno's opencwnd does)
TCPMT = {"experiment": {"ssc": {"schedule": "linear", "metacontrol": False, "period": 2.0,
                                "levels": 8}}}
SAME_FILES_S = 3000.0
ALPHAS = (1.05, 1.45, 1.95)
TCL_FLAVOR = {"reno": "Reno", "vegas": "Vegas"}
_CELLS = {}   # (alpha, rtt, flavor, tcpmt) -> (ours, ns-2): the tests of one session share runs


def tcpmt_base():
    """Figs. 8-10's scenario: replays/tcpmt_base.toml (their files override no table)."""
    return setup.scenario_base(tomllib.loads((REPLAYS / "tcpmt_fig10.toml").read_text()))


@functools.cache
def same_files_backgrounds():
    """{alpha: Background} for ALPHAS at 5 Mb/s alone over SAME_FILES_S s, seed 1, as Fig. 10's
    runner sets them (tcpmt/gain.py): alpha = 1.05 by its idle time, the others at that idle time
    by k. Measured: 1.05 k 146.6 B, idle 0.284 s; 1.45 k 1896 B; 1.95 k 3377 B."""
    return calibration.backgrounds(tcpmt_base(), list(ALPHAS), 5e6, seed=1, duration=SAME_FILES_S,
                                   ex=batch.executor(workers=2))


def same_files_cell(base, bg, *, rtt, flavor, tcpmt):
    """(our scenario, tcpmt.tcl's parameters) of one run: the measured ``flavor`` (plain, or
    TCP-MT as above) at propagation RTT ``rtt`` beside background ``bg``, SAME_FILES_S s, seed 1."""
    hook = setup.hook(TCPMT, A=6.0, couple="ca") if tcpmt else setup.OFF
    sc = setup.variant(base, duration=SAME_FILES_S, seed=1, background=bg, cc=flavor, rtt=rtt,
                       hook=hook)
    params = dict(duration=int(SAME_FILES_S), seed=1, bg_k=bg.k, bg_idle=bg.idle, bg_alpha=bg.alpha,
                  rtt=rtt, flavor=TCL_FLAVOR[flavor])
    if tcpmt:
        params.update(ssc=1, schedule="linear", A=6)
    return sc, params


def same_files(cells, tmp, extra=None):
    """{key: (ours, ns-2)} for ``cells`` {key: (scenario with one measured connection, tcpmt.tcl's
    parameters of the same set-up)}: ns-2's background clients send the files ours requested, in
    the same order (200 more each, drawn from them, in case ns-2's clients ask for more). ns-2
    runs a cell while ours runs the next (two processes: the machine's two cores). ``extra``:
    a function of our run's result giving more measures of ours."""
    runs, pending = {}, None
    for i, (key, (scenario, params)) in enumerate(cells.items()):
        r = batch.simulate(scenario, sizes=True)
        sizes = Path(tmp) / f"sizes{i}"
        sizes.mkdir()
        write_sizes(sizes, r["sizes"], np.random.default_rng(1))
        got = {"throughput_bps": measures.reliable(r), "background_bps": r["summary"]["background_bps"],
               "timeouts": r["measured"][0]["timeouts"],
               "tracking": tcpmt_claims.tracking(r["series"], 2.0, setup.MEASURED_LINK,
                                                 setup.BACKGROUND_LINK), **(extra(r) if extra else {})}
        if pending is not None:
            runs[pending[0]] = (pending[1], ns2_result(pending[2]))
        pending = (key, got, ns2_start(sizes_dir=sizes, **params))
    if pending is not None:
        runs[pending[0]] = (pending[1], ns2_result(pending[2]))
    return runs


def same_files_runs(keys, tmp):
    """{(alpha, rtt, flavor, tcpmt): (ours, ns-2)} on the same files (:func:`same_files`), runs of
    earlier tests reused; printed."""
    bgs, base = same_files_backgrounds(), tcpmt_base()
    todo = {k: same_files_cell(base, bgs[k[0]], rtt=k[1], flavor=k[2], tcpmt=k[3])
            for k in dict.fromkeys(keys) if k not in _CELLS}
    _CELLS.update(same_files(todo, tmp))
    runs = {k: _CELLS[k] for k in keys}
    print(runs)
    return runs


def sides(runs):
    """(ours, ns-2) views {key: measures} of :func:`same_files_runs`' result."""
    return tuple({k: v[side] for k, v in runs.items()} for side in (0, 1))


def assert_same_operating_point(runs, keys, rel=0.05, track=0.03, timeouts=0.10):
    """On the same files, ours within ``track`` of ns-2's tracking, ``rel`` of its throughput and
    of its background load, and ``timeouts`` (relative) of its timeouts, at ``keys``
    (``timeouts=None``: not compared)."""
    for key in keys:
        got, ref = runs[key]
        assert got["tracking"] == pytest.approx(ref["tracking"], abs=track), (key, got, ref)
        assert got["background_bps"] == pytest.approx(ref["background_bps"], rel=rel), (key, got, ref)
        assert got["throughput_bps"] == pytest.approx(ref["throughput_bps"], rel=rel), (key, got, ref)
        if timeouts is not None:
            assert got["timeouts"] == pytest.approx(ref["timeouts"], rel=timeouts), (key, got, ref)


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "since links free in ns-2's order at equal instants (sim/link.pxi _poke, stop 22) plain Reno "
    "at 450 ms tracks at -0.728 where ns-2 gives -0.697 (0.031 apart, allowed 0.03; before: "
    "-0.717 vs -0.721); 30 ms, ns-2 vs ours: 6.30 vs 6.37 Mb/s, -0.964 vs -0.960, 386 vs 372 "
    "timeouts"))
def test_fig8_9_tracking_and_gain_vs_rtt_on_the_same_files(tmp_path):
    """Figs. 8-9's set-up (claims 23-24) with Reno, on the same background files in both
    simulators: TCP-MT as above, alpha = 1.05 background calibrated to 5 Mb/s, 3000 s, seed 1, RTT
    30 and 450 ms. In both, tracking weakens as the RTT grows (PT:259), SSC moves it toward -1 at
    450 ms, and the gain grows with the RTT (PT:274). Measured, plain / SSC (throughput Mb/s,
    tracking, timeouts):
    30 ms: ns-2 6.19 / 6.22, -0.967 / -0.960, 389 / 784; ours 6.28 / 6.35, -0.961 / -0.962, 379 / 711;
    450 ms: ns-2 0.476 / 0.547, -0.721 / -0.780, 172 / 228; ours 0.479 / 0.559, -0.717 / -0.804,
    168 / 237. Gain ns-2 +0.4 % -> +15.0 %, ours +1.1 % -> +16.7 % (paper: up to 45 % for TCP
    Rate). Before ns-2's header-less first segment was mirrored (tcp.ns2_bare_first) and
    same-nanosecond arrivals went back to FIFO (sim/engine.pxi), plain Reno at 30 ms gave ours
    6.08 Mb/s, -0.900, 584 timeouts beside ns-2's 6.45, -0.963, 354 (its background calibrated by
    ours, so its inputs moved too); the plain cells are now held to 5 %, 0.03 and 10 %."""
    runs = same_files_runs([(1.05, rtt, "reno", mt) for rtt in (0.03, 0.45) for mt in (False, True)],
                           tmp_path)
    for r in sides(runs):
        plain = {rtt: r[1.05, rtt, "reno", False] for rtt in (0.03, 0.45)}
        mt = {rtt: r[1.05, rtt, "reno", True] for rtt in (0.03, 0.45)}
        assert plain[0.45]["tracking"] >= plain[0.03]["tracking"] + 0.1, r
        assert mt[0.45]["tracking"] < plain[0.45]["tracking"], r
        gain = {rtt: mt[rtt]["throughput_bps"] / plain[rtt]["throughput_bps"] - 1 for rtt in plain}
        assert gain[0.45] >= gain[0.03] + 0.05, gain
    for key, (got, ref) in runs.items():
        assert got["tracking"] == pytest.approx(ref["tracking"], abs=0.03), (key, got, ref)
    assert_same_operating_point(runs, [(1.05, rtt, "reno", False) for rtt in (0.03, 0.45)])


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "at 450 ms Vegas tracks worse than Reno in both, but by less than the 0.1 asked (ns-2's gap "
    "when the test was written): ns-2 Vegas -0.670 vs Reno -0.697 (0.027), ours -0.652 vs "
    "-0.728 (0.076); Vegas 0.396 (ns-2) vs 0.447 Mb/s (ours), within the 15 % allowed (measured "
    "after stop 24's Vegas timing fix; the same runs' Reno is 0.031 apart, see the test above)"))
def test_fig8_vegas_against_reno_on_the_same_files(tmp_path):
    """Fig. 8(a)'s order (claim 23, PT:259: Rate tracks best, then Vegas, then Reno) for Vegas and
    Reno, plain, on the same files as above (ns-2 has no TCP Rate). Vegas: ns-2's defaults
    (alpha 1, beta 3, gamma 1, as sim/scenario_tcp.py); its packets 1040 bytes on the wire in both
    (tcpmt.tcl; ns-2's Vegas output() adds no header to any segment, so ours sends no header-less
    first segment for it). Measured at stop 25 (throughput Mb/s, tracking, timeouts):
    30 ms: Reno ns-2 6.30, -0.964, 386; ours 6.37, -0.960, 372;
           Vegas ns-2 4.47, -0.995, 0; ours 4.51, -0.995, 1;
    450 ms: Reno ns-2 0.470, -0.697, 173; ours 0.481, -0.728, 166;
            Vegas ns-2 0.396, -0.670, 62; ours 0.447, -0.652, 69.
    In both: Vegas carries less than Reno at both RTTs (PT:274 has Vegas use more of the available
    bandwidth); Vegas tracks better than Reno at 30 ms (the paper's order) and worse at 450 ms (the
    paper's order reversed). Ours' Vegas used to fall into a BaseRTT trap at 30 ms (1.13 Mb/s,
    tracking -0.038, 11 timeouts): after a timeout, a round with no RTT sample set BaseRTT to ~2
    packet times (ns-2's own rule, tcp-vegas.cc; ns-2 falls into it on some paths too), and ours
    timed out more often because the background's first segments were 40 bytes longer than
    ns-2's (tcp.ns2_bare_first, issue 18). Vegas is held to ns-2 within 5 % / 0.03 at 30 ms and
    15 % / 0.06 at 450 ms."""
    rtts = (0.03, 0.45)
    runs = same_files_runs([(1.05, rtt, fl, False) for rtt in rtts for fl in ("reno", "vegas")],
                           tmp_path)
    for r in sides(runs):
        reno = {rtt: r[1.05, rtt, "reno", False] for rtt in rtts}
        vegas = {rtt: r[1.05, rtt, "vegas", False] for rtt in rtts}
        for rtt in rtts:
            assert vegas[rtt]["throughput_bps"] < reno[rtt]["throughput_bps"], (rtt, reno, vegas)
        assert vegas[0.45]["tracking"] >= reno[0.45]["tracking"] + 0.1, (reno, vegas)
    assert_same_operating_point(runs, [(1.05, rtt, "reno", False) for rtt in rtts])
    assert_same_operating_point(runs, [(1.05, 0.03, "vegas", False)], timeouts=None)
    assert_same_operating_point(runs, [(1.05, 0.45, "vegas", False)], rel=0.15, track=0.06,
                                timeouts=None)


@pytest.mark.slow
def test_fig10_gain_vs_alpha_on_the_same_files(tmp_path):
    """Fig. 10's set-up (claim 24's long-range dependence part, PT:283) with Reno and TCP-MT as
    above on the same files, the base RTT (30 ms; the paper names no other for Fig. 10), the
    backgrounds of :func:`same_files_backgrounds`, 3000 s, seed 1. Measured, alpha = 1.05 / 1.45 /
    1.95, plain Reno: ns-2 6.19 / 4.91 / 5.08 Mb/s, tracking -0.967 / -0.849 / -0.722, background
    3.25 / 3.90 / 3.77 Mb/s, timeouts 389 / 941 / 910; ours 6.28 / 4.92 / 5.16, -0.961 / -0.839 /
    -0.717, 3.09 / 3.85 / 3.71, 379 / 918 / 850; gain of TCP-MT ns-2 +0.4 / -3.6 / -6.6 %, ours
    +1.1 / +1.1 / -6.6 %.
    PT:283's "gain increases by a factor of two or more for alpha = 1.05" holds in neither: no gain
    reaches 5 %. What both show: the gain is at most +5 % at every alpha and negative at 1.95;
    plain Reno carries most beside the alpha = 1.05 background (PT:283 says plain TCP does better
    at 1.95) and tracks it best, its tracking weakening step by step as alpha grows; ours within
    5 % / 0.03 / 10 % of ns-2 (plain)."""
    runs = same_files_runs([(a, 0.03, "reno", mt) for a in ALPHAS for mt in (False, True)], tmp_path)
    for r in sides(runs):
        plain = [r[a, 0.03, "reno", False] for a in ALPHAS]
        gain = [r[a, 0.03, "reno", True]["throughput_bps"] / p["throughput_bps"] - 1
                for a, p in zip(ALPHAS, plain)]
        assert max(gain) <= 0.05 and gain[-1] < 0, gain
        assert all(p["throughput_bps"] <= 0.9 * plain[0]["throughput_bps"] for p in plain[1:]), plain
        track = [p["tracking"] for p in plain]
        assert all(b >= a + 0.05 for a, b in zip(track, track[1:])), track
    assert_same_operating_point(runs, [(a, 0.03, "reno", False) for a in ALPHAS])


@pytest.mark.slow
def test_fig11_metacontrol_is_a_driftless_walk_in_ns2_and_ours(tmp_path):
    """Fig. 11's symmetric metacontrol (claim 25, PT:308 "settles to a common equilibrium
    A* ~ 6" for nu = 0.01, 0.05, 0.25) with Reno (ns-2 has no TCP Rate), linear schedule, CA
    coupling, A(0) = a = 1, alpha = 1.05 background calibrated to 5 Mb/s, 3000 s, seed 1, on
    the same background files. From A = 1, settling near 6 takes a drift: (6 - 1) / nu more
    up-steps than down-steps, and fewer above 6. In both simulators the steps are a fair coin
    instead (nu = 0.05: ns-2 769 up / 730 down, ours 763 / 736; nu = 0.25: ns-2 760 / 739,
    ours 746 / 753), so A ends wherever its walk went (ns-2's mean over the second half: 2.52 at
    nu = 0.05, 6.19 at nu = 0.25), and the throughput on these files is the same (nu = 0.05:
    ns-2 6.42, ours 6.29 Mb/s; nu = 0.25: 6.26, 6.29)."""
    spec11 = tomllib.loads((REPLAYS / "tcpmt_fig11.toml").read_text())
    base11 = setup.scenario_base(spec11)
    cal = calibration.calibrate(base11, [(1.05, 5e6)], seed=1, duration=3000.0,
                                ex=batch.executor(workers=2))[(1.05, 5e6)]
    cells = {}
    for nu in (0.05, 0.25):
        hook = setup.hook(spec11, metacontrol=True, nu=nu, couple="ca")
        cells[nu] = (setup.variant(base11, duration=3000.0, seed=1, background=cal, cc="reno",
                                   hook=hook),
                     dict(duration=3000, seed=1, bg_k=cal.k, bg_idle=cal.idle, bg_alpha=cal.alpha,
                          ssc=1, schedule="linear", meta=1, nu=nu))

    def steps(r):
        moves = np.diff(np.r_[1.0, r["measured"][0]["trace"]["A"]])
        return {"A_up": int((moves > 0).sum()), "A_down": int((moves <= 0).sum())}

    runs = same_files(cells, tmp_path, extra=steps)
    print(runs)
    for nu, (got, ref) in runs.items():
        up = [side["A_up"] / (side["A_up"] + side["A_down"]) for side in (got, ref)]
        sd = 0.5 / np.sqrt(got["A_up"] + got["A_down"])         # of a fair coin's share
        assert all(abs(u - 0.5) < 3 * sd for u in up), (got, ref)
        assert up[0] == pytest.approx(up[1], abs=4 * sd), (got, ref)
        assert got["throughput_bps"] == pytest.approx(ref["throughput_bps"], rel=0.15), (got, ref)


@pytest.mark.slow
def test_table2_short_connections_gain_nothing_in_ns2_and_ours(tmp_path):
    """Table II's short connections (claim 26, PT:299: gains of 25-32 % for Case I, 4.5-25 % for
    Case II, 6-27 % for Case III over the first 100-2000 s) with Reno, a static linear schedule
    (A = 4, replays/tcpmt_table2.toml) and CA coupling (ns-2 has no slow-start coupling), on the
    same background files, seeds 1-2, alpha = 1.05 background calibrated to 5 Mb/s. Case I's
    a-priori table is each simulator's own 2000 s TCP-MT run on seed + 1000. Gain (bits of the
    two seeds summed, %) per case at 100 / 500 / 1000 / 2000 s: ours I +2.7 / -0.6 / +0.5 / -0.1,
    II +1.0 / +1.0 / +1.1 / -0.5, III +2.2 / +1.8 / +0.6 / +2.1; ns-2 I -0.2 / -0.4 / +0.6 /
    +1.5, II +7.2 / +0.3 / +0.5 / +1.9, III -1.7 / +4.6 / +0.5 / +2.2 (means +1.0 and +1.4 %):
    in neither simulator does a short TCP-MT connection gain more than a few per cent on
    average, whatever it knows in advance; one 100-s window of ns-2's gains 7.2 %."""
    spec2 = tomllib.loads((REPLAYS / "tcpmt_table2.toml").read_text())
    base2 = setup.scenario_base(spec2)
    cal = calibration.calibrate(base2, [(1.05, 5e6)], seed=1, duration=3000.0,
                                ex=batch.executor(workers=2))[(1.05, 5e6)]
    t0, period, windows, warm = 20.0, 2.0, (100.0, 500.0, 1000.0, 2000.0), {"II": 300, "III": 30}
    length = t0 + max(warm.values()) + max(windows)
    common = dict(bg_k=cal.k, bg_idle=cal.idle, bg_alpha=cal.alpha, schedule="linear", A=4,
                  start=t0)
    bits = {}                        # (side, case, window, plain TCP?) -> bits over the seeds
    for seed in (1, 2):
        prior = tmp_path / f"prior{seed}.txt"
        theirs = ns2_start(duration=2000, seed=seed + 1000, ssc=1, prior_out=prior, **common)
        mine = batch.simulate(setup.variant(base2, duration=2000.0, seed=seed + 1000,
                                            background=cal, cc="reno",
                                            hook=setup.hook(spec2, couple="ca")))
        ns2_result(theirs)
        p = mine["measured"][0]["prior"]
        apriori = dict(table=p["condprob"], learn=False, norm="fixed", edges=p["edges"])
        cases = {"TCP": (setup.OFF, dict(ssc=0)),
                 "I": (setup.hook(spec2, couple="ca", **apriori), dict(ssc=1, prior_in=prior)),
                 **{c: (setup.hook(spec2, couple="ca", warmup=float(w)), dict(ssc=1, warmup=w))
                    for c, w in warm.items()}}
        cells = {case: (setup.variant(base2, duration=length, seed=seed, background=cal,
                                      cc="reno", hook=hook),
                        dict(duration=int(length), seed=seed,
                             trace_out=tmp_path / f"trace{seed}{case}", **common, **extra))
                 for case, (hook, extra) in cases.items()}
        (tmp_path / f"seed{seed}").mkdir()
        runs = same_files(cells, tmp_path / f"seed{seed}",
                          extra=lambda r: {"trace": r["measured"][0]["trace"]})
        for case, (got, _) in runs.items():
            blocks = np.loadtxt(cells[case][1]["trace_out"])
            traces = (got["trace"], {"t": np.round(blocks[:, 0] * 1e9).astype(np.int64),
                                     "gamma": blocks[:, 1]})
            # plain TCP is measured over each case's windows (after its warm-up)
            for side, tr in enumerate(traces):
                for c in (("I", *warm) if case == "TCP" else (case,)):
                    for w in windows:
                        key = (side, c, w, case == "TCP")
                        bits[key] = bits.get(key, 0.0) + tables.window_bits(
                            tr, t0, warm.get(c, 0), w, period)
    gains = {(side, c, w): 100 * (bits[side, c, w, False] / bits[side, c, w, True] - 1)
             for side in (0, 1) for c in ("I", *warm) for w in windows}
    print(gains)
    for side in (0, 1):
        cells = [g for (s, _, _), g in gains.items() if s == side]
        assert max(abs(g) for g in cells) < 8.0, gains            # the paper: 4.5 to 31.6 %
    means = [np.mean([g for (s, _, _), g in gains.items() if s == side]) for side in (0, 1)]
    assert means[0] == pytest.approx(means[1], abs=3.0), means

"""BBR v1 as Linux's tcp_bbr.c runs it, with departure-time pacing.

Unit dynamics: one BBR flow alone on a 10 Mbit/s, 40 ms path with a buffer that never overflows,
its state logged at every round start and every change of mode or gain phase (``Bbr.record``).
The oracle is the path (its rate and RTT) and tcp_bbr.c's rules: Startup ends after three rounds
in which the max bandwidth grew by less than 25 %, with the estimate at the bottleneck's rate;
ProbeBW cycles 5/4, 3/4 and six phases at 1, each about one min_rtt; ProbeRTT comes when min_rtt is
10 s old and holds 4 segments for 200 ms; segments leave paced at payload / (gain x bw x 0.99).

Kernel comparisons: single long flows of the real-Linux testbed (``testbed.py --cc bbr --clients 1
--rtt 60``, 1.5 and 10 Mbit/s, a small and a large buffer; their timeline facts in
``data/bbr_single_kernel.json``, made with :mod:`traceflow.experiments.bbr_timeline`) replayed by
the simulator; and the devbbr run (three RTT classes, 1.5 Mbit/s, 12 kB buffer) through the expert
replay path with the criteria of tests/replay/test_testbed_criteria.py.
"""
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import traceflow.sim as sim
from traceflow.sim import _sim
from traceflow.sim.runner import Built

DATA = Path(__file__).parent / "data"
STARTUP, DRAIN, PROBE_BW, PROBE_RTT = range(4)
RATE, RTT, MSS = 10e6, 0.04, 1000
WIRE = MSS + 52                      # payload + IP/TCP headers with timestamps


def _run(duration, seed=1, rate=RATE, rtt=RTT, limit=2000, pcap_dir=None, **bbr):
    sc = {"simulation": {"duration": duration, "seed": seed, "mss": MSS},
          "topology": {"kind": "dumbbell", "left": 1, "right": 1,
                       "bottleneck": {"rate": rate, "delay": rtt / 2 - 2e-6,
                                      "queue": {"kind": "droptail", "limit": limit}},
                       "access": {"rate": 10e9, "delay": 1e-6},
                       "links": {"l0-g1": {"pcap": pcap_dir is not None}}},
          "tcp": {"profile": "linux", "cc": "bbr", "bbr": bbr},
          "traffic": [{"kind": "infinite", "src": "l0", "dst": "r0"}]}
    built = Built(sim.load_scenario(sc), pcap_dir)
    built.finalize_sizes()
    snd = next(a for a in built.sim.agents if isinstance(a, _sim.TcpSender))
    snd.cc.record = True
    built.run()
    log = pl.DataFrame(snd.cc.events(), schema=list(_sim.Bbr.LOG_COLUMNS), orient="row")
    return snd, log.with_columns((pl.col("t_ns") * 1e-9).alias("t"),
                                 (pl.col("bw") * MSS * 8e6 / 2 ** 24).alias("bw_bps"))


@pytest.fixture(scope="module")
def long_run():
    return _run(25.0)


def _phases(log):
    """Rows where the mode or the gain phase changed, with how long each lasted (s)."""
    key = pl.col("mode") * 8 + pl.col("cycle_idx")
    ch = log.filter(key != key.shift(1).fill_null(-1))
    return ch.with_columns((pl.col("t").shift(-1) - pl.col("t")).alias("dur"))


def test_startup_ends_three_rounds_after_the_bandwidth_stops_growing(long_run):
    _, log = long_run
    ph = _phases(log)
    drain_t = float(ph.filter(pl.col("mode") == DRAIN)["t"][0])
    rounds = log.filter((pl.col("mode") == STARTUP) & pl.col("round_start").cast(pl.Boolean))
    exit_row = log.filter(pl.col("t") == drain_t).row(0, named=True)
    # tcp_bbr.c bbr_check_full_bw_reached: full after 3 rounds below 1.25 x full_bw
    assert exit_row["full_bw_cnt"] == 3
    assert exit_row["bw"] < exit_row["full_bw"] * 1.25
    # the estimate it stopped at is the bottleneck's payload rate
    payload_bps = RATE * MSS / WIRE
    assert exit_row["bw_bps"] == pytest.approx(payload_bps, rel=0.03)
    # ... and it was first reached (within 20 %) three or four rounds earlier: the last rounds
    # of Startup are the three that found no growth
    near = rounds.filter(pl.col("bw_bps") >= 0.8 * payload_bps)
    assert 3 <= exit_row["rtt_cnt"] - near["rtt_cnt"][0] <= 4
    bdp = payload_bps * RTT / 8 / MSS
    # Drain (pacing gain ln2/2) hands over to ProbeBW once inflight is at most one BDP + quanta
    entry = ph.filter(pl.col("mode") == PROBE_BW).row(0, named=True)
    assert entry["t"] - drain_t < 3 * RTT
    assert entry["in_flight"] <= bdp + 3 * 2 + 2


def test_probe_bw_gain_cycle(long_run):
    _, log = long_run
    ph = _phases(log).filter((pl.col("mode") == PROBE_BW) & (pl.col("t") > 2) & (pl.col("t") < 9))
    idx = ph["cycle_idx"].to_numpy()
    assert ((idx[1:] - idx[:-1]) % 8 == 1).all()                      # phases in order
    gains = dict(zip(ph["cycle_idx"], ph["pacing_gain"] / 256))
    assert gains == pytest.approx({0: 1.25, 1: 0.75, **{i: 1.0 for i in range(2, 8)}}, abs=0.004)
    # each phase lasts one min_rtt (the 3/4 phase may end early once inflight is down to a BDP)
    min_rtt = float(ph["min_rtt_us"][0]) * 1e-6
    assert min_rtt == pytest.approx(RTT + WIRE * 8 / RATE, rel=0.05)
    one = ph.filter(pl.col("pacing_gain") == 256)["dur"].drop_nulls().to_numpy()
    assert np.median(one) == pytest.approx(min_rtt, rel=0.1)
    assert ph.filter(pl.col("cycle_idx") == 1)["dur"].drop_nulls().max() <= min_rtt * 1.1
    # pacing rate = gain x bw x 99 % (bytes of payload per second)
    ratio = ph["pacing_rate"] * 8 / (ph["pacing_gain"] / 256 * ph["bw_bps"])
    assert ratio.to_numpy() == pytest.approx(0.99, abs=0.002)
    # cwnd = 2 BDP + 3 TSO goals (2 segments each), rounded up to even, + 2 in the probing phase,
    # + the ACK-aggregation allowance (delayed ACKs: a few segments)
    bdp = np.ceil(ph["bw"].to_numpy() * ph["min_rtt_us"].to_numpy() * 2 / 2 ** 24)
    target = ((bdp + 6 + 1) // 2) * 2 + np.where(idx == 0, 2, 0)
    extra = ph["cwnd"].to_numpy() - target
    assert extra.min() >= 0 and extra.max() <= 8


def test_random_first_phase():
    # bbr_reset_probe_bw_mode: cycle_idx = 7 - U{0..6}, then advanced: never the 3/4 phase
    first = set()
    for seed in range(1, 9):
        _, log = _run(1.5, seed=seed, rate=2e6, rtt=0.02)
        ph = _phases(log).filter(pl.col("mode") == PROBE_BW)
        first.add(int(ph["cycle_idx"][0]))
    assert 1 not in first and len(first) >= 3


def test_probe_rtt_every_ten_seconds(long_run):
    _, log = long_run
    ph = _phases(log)
    starts = ph.filter(pl.col("mode") == PROBE_RTT)
    assert len(starts) == 2
    # min_rtt stamped at the first sample (handshake) or a lower one; nothing below it after
    # Startup, so ProbeRTT comes 10 s (+ a jiffy) after the last stamp, then every 10 s + its length
    gap = float(starts["t"][1] - starts["t"][0])
    assert 10.2 <= gap <= 10.2 + 3 * RTT
    for t0, dur in zip(starts["t"], starts["dur"]):
        rows = log.filter((pl.col("t") >= t0) & (pl.col("t") < t0 + dur))
        assert (rows["cwnd"] == 4).all()
        # 200 ms after inflight reached 4, and at least one round: 0.2 s + up to ~2 RTT
        assert 0.2 <= dur <= 0.2 + 3 * RTT
    after = ph.filter(pl.col("t") > starts["t"][0] + starts["dur"][0]).row(0, named=True)
    assert after["mode"] == PROBE_BW and after["cwnd"] > 20      # prior cwnd restored


def test_pacing_spacing(tmp_path):
    from traceflow.pcap.reader import read_packets

    snd, log = _run(4.0, pcap_dir=tmp_path)
    pk = pl.from_arrow(read_packets(tmp_path / "l0-g1.pcap"))
    data = (pk.filter(pl.col("payload_len") == MSS)
            .select(pl.col("ts").cast(pl.Int64).alias("t")))
    ph = _phases(log).filter((pl.col("mode") == PROBE_BW) & (pl.col("t") > 1.5))
    checked = 0
    for row, nxt in zip(ph.iter_rows(named=True), ph["t_ns"][1:]):
        t = data.filter((pl.col("t") > row["t_ns"] + 2_000_000) & (pl.col("t") < nxt))["t"].to_numpy()
        if len(t) < 8:
            continue
        # departures are paced at payload / pacing_rate (ns) while the window allows them
        gap = np.median(np.diff(t))
        assert gap == pytest.approx(MSS * 1e9 / row["pacing_rate"], rel=0.02), row
        checked += 1
    assert checked > 20


def test_non_bbr_senders_do_not_pace():
    sc = sim.load_scenario({"simulation": {"duration": 1.0},
                            "topology": {"kind": "dumbbell", "left": 1, "right": 1},
                            "tcp": {"profile": "linux", "cc": "cubic"},
                            "traffic": [{"kind": "infinite", "src": "l0", "dst": "r0"}]})
    built = Built(sc, None)
    built.finalize_sizes()
    built.run()
    snd = next(a for a in built.sim.agents if isinstance(a, _sim.TcpSender))
    assert not snd.pacing and snd.wstamp == 0


def test_bbr_needs_linux_profile_and_sack_rack():
    from traceflow.errors import ScenarioError

    base = {"topology": {"kind": "dumbbell", "left": 1, "right": 1},
            "traffic": [{"kind": "infinite", "src": "l0", "dst": "r0"}]}
    with pytest.raises(ScenarioError, match="not available with profile 'ns2'"):
        sim.load_scenario({**base, "tcp": {"cc": "bbr"}})
    with pytest.raises(ScenarioError, match="sack_rack"):
        sim.load_scenario({**base, "tcp": {"profile": "linux", "cc": "bbr", "recovery": "classic"}})


# ---- the real kernel: single long flows (data/bbr_single_kernel.json) ----

KERNEL = json.loads((DATA / "bbr_single_kernel.json").read_text())


@pytest.fixture(scope="module", params=sorted(KERNEL))
def single(request, tmp_path_factory):
    from traceflow.experiments.bbr_timeline import facts, simulate_long_flow

    run = KERNEL[request.param]
    tl = simulate_long_flow(run["setup"], tmp_path_factory.mktemp(request.param))
    return request.param, run["kernel"], facts(tl, run["setup"])


def test_single_flow_like_the_kernel(single):
    name, kern, simd = single
    small = "small" in name
    # the rate: both fill the bottleneck
    assert simd["throughput_bps"] == pytest.approx(kern["throughput_bps"], rel=0.03)
    # Startup (2.89 x) ends and Drain begins at the same time, give or take a round or two
    assert abs(simd["startup_exit_s"] - kern["startup_exit_s"]) <= 0.25
    # ProbeRTT: the first after ~10 s, then every 10 s + its 0.2 s + a round or two
    assert abs(simd["probe_rtt_s"][0] - kern["probe_rtt_s"][0]) <= 0.6
    for f in (kern, simd):
        gaps = np.diff(f["probe_rtt_s"])
        assert 10.1 <= gaps.min() and gaps.mean() <= 11.5
    # losses: BBR v1 ignores them below ~20 %, so a small buffer keeps dropping a few percent
    if small:
        assert 0.5 <= simd["retx_share"] / kern["retx_share"] <= 2.0
        # steady inflight: pacing at bw, cwnd 2 BDP never reached (the buffer is < 1 BDP)
        assert simd["inflight_bdp"] == pytest.approx(kern["inflight_bdp"], rel=0.2)
    else:
        assert simd["retx_share"] < 0.005 and kern["retx_share"] < 0.005
        # known gap (docs/bbr.md): the kernel's inflight climbs to its 2 BDP cwnd (a standing
        # queue: the testbed's user-space relay bunches ACKs, which BBR v1 reads as more
        # bandwidth); the simulator's smooth ACK clock keeps it near 1-2 BDP
        assert 1.0 <= simd["inflight_bdp"] <= kern["inflight_bdp"]


# ---- the real kernel: devbbr through the expert replay path ----

def _devbbr(tmp_path, span, model_bins=True):
    """The issue's tolerances: trace mode all five (median transfer times at testbed_replay's
    stricter 20 %), model mode utilization 10 %, loss 25 % and (``model_bins``) per-bin medians
    25 %."""
    from conftest import shared_path
    from traceflow.experiments.testbed_replay import CRITERIA, criteria_rows, format_rows, validate

    result = validate(shared_path("testbed", "devbbr"), tmp_path, span_s=span)
    tolerances = {"trace": CRITERIA["trace"],
                  "model": {"utilization": 0.10, "loss_rate": 0.25, "fct": 0.25}}
    for mode, tol in tolerances.items():
        rows = criteria_rows(result[mode], mode)
        print(f"\ndevbbr {mode} (first {span} s)\n{format_rows(rows)}")
        judged = [r for r in rows if r["tolerance"] is not None
                  and (model_bins or mode == "trace" or not r["criterion"].startswith("fct"))]
        assert judged
        for r in judged:
            assert r["error"] <= tol[r["criterion"].split(" ")[0]], (mode, r)


def test_devbbr_slice_meets_the_criteria(tmp_path):
    # model mode's per-bin medians on 120 s are sampling noise: the 52 transfers of 16-64 kB gave
    # errors 0.44 / 0.13 / 0.01 with seeds 1-3 (2026-11-29); the full run judges them
    _devbbr(tmp_path, 120.0, model_bins=False)


@pytest.mark.slow
def test_devbbr_full_run_meets_the_criteria(tmp_path):
    _devbbr(tmp_path, None)

"""TCP-MT experiments (traceflow.experiments.tcpmt, replays/tcpmt_*.toml): set-up, calibration,
the claim tests, and quick end-to-end runs. The paper's conclusions at full length are in
test_tcpmt_paper.py (slow)."""
import importlib
import tomllib
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from traceflow.experiments import tcpmt
from traceflow.experiments.tcpmt import batch, calibration, claims, setup

sim = pytest.importorskip("traceflow.sim")

REPLAYS = Path(__file__).resolve().parents[2] / "replays"
FILES = sorted(p for p in REPLAYS.glob("tcpmt_*.toml") if p.stem != "tcpmt_base")


def spec_of(name):
    return tomllib.loads((REPLAYS / f"tcpmt_{name}.toml").read_text())


def test_every_paper_experiment_has_a_replay():
    names = {p.stem.removeprefix("tcpmt_") for p in FILES}
    assert names == {"fig1", "fig6", "fig7", "fig8", "fig9", "fig10", "fig11", "fig12",
                     "table2", "table3"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_replay_files_are_valid_experiments(path):
    spec = tomllib.loads(path.read_text())
    exp = spec["experiment"]
    assert exp["reproduces"].startswith("Park & Tuan 2000, ")
    assert exp["title"] and exp["quick_duration"] <= exp["duration"]
    assert exp["base"] == "tcpmt_base.toml" and exp["calibration_duration"] == 10000.0
    module, fn = exp["runner"].split(":")
    assert callable(getattr(importlib.import_module(module), fn))
    base = setup.scenario_base(spec)
    assert "experiment" not in base
    sim.load_scenario(base)  # the merged base scenario validates
    bg = setup.Background(alpha=1.35, k=300.0, idle=0.7)
    sc = setup.variant(base, duration=10, seed=2, background=bg, cc="vegas", hook=setup.hook(spec),
                       rtt=0.3, count=exp.get("ns", [1])[-1])
    loaded = sim.load_scenario(sc)
    measured = [g for g in loaded.traffic if g.kind == "infinite"]
    assert measured and all(g.tcp["cc"] == "vegas" and g.tcp["hook"]["kind"] == "ssc" for g in measured)
    assert measured[0].extra_delay == pytest.approx((0.3 - 0.03) / 2)
    files = [g for g in loaded.traffic if g.kind == "files"]
    assert len(files) == 1 and files[0].count == 32 and files[0].idle == 0.7
    assert (files[0].size.alpha, files[0].size.k, files[0].size.normalize) == (1.35, 300.0, "none")


def test_base_scenario_is_the_derived_one():
    """The settings replays/tcpmt_base.toml derives (Fig. 5 and ns-2's 1999 defaults).
    ../shared/papers/park-tuan-2000-multiple-time-scale-tcp.txt:231: "The link bandwidths were set
    at 10 Mbps and the latency on each link was set to 5 ms. The maximum segment size was fixed at
    1 kB." and "(i.e., 32 connections) act as background traffic"; :231 "We use the LBNL Network
    Simulator, ns (version 2)": ns-2's defaults of 1999 where the paper is silent (Queue limit_
    50, no SYN, initial window 1, no limited transmit, tcpTick_ 0.1, precisionReduce_ false).
    Before issue 18 traceflow's own choices (unlimited receiver window, limited transmit, min RTO
    0.2 s with a 10 ms tick) left plain Reno 1.45 Mb/s of the 10 Mb/s link (utilization 0.63); the
    ns-2 referee of this set-up is tests/sim/test_tcpmt_ns2.py."""
    base = sim.load_scenario(setup.scenario_base(spec_of("fig6")))
    assert base.simulation.mss == 1000
    links = (base.topology.bottleneck, base.topology.access)
    assert all(s.rate == 10e6 and s.delay == 0.005 for s in links)
    assert base.topology.bottleneck.queue.params.limit == 49   # ns-2's limit_ 50
    t = base.tcp
    assert (t.rwnd, t.init_cwnd, t.handshake, t.limited_transmit, t.tick, t.ns2_rto,
            t.precision_reduce) == (64, 1, False, False, 0.1, True, False)
    assert sum(g.count for g in base.traffic if g.kind == "files") == 32
    assert setup.base_rtt(setup.scenario_base(spec_of("fig6"))) == pytest.approx(0.03)
    t3 = setup.scenario_base(spec_of("table3"))
    assert t3["topology"]["bottleneck"]["rate"] == 20e6 and t3["tcp"]["rwnd"] == 64


def test_variant_sets_rtt_count_and_background_only():
    base = setup.scenario_base(spec_of("table3"))
    sc = setup.variant(base, duration=2, seed=1, count=3, rtt=0.2, hook=setup.OFF)
    res = sim.run(sc)
    flows = pl.from_arrow(res.flows).filter(pl.col("kind") == "infinite")
    assert flows.height == 3 and flows["src"].to_list() == ["l32", "l33", "l34"]
    np.testing.assert_allclose(flows["base_rtt"].to_numpy(), 0.2)
    only_bg = setup.variant(base, duration=2, seed=1, measured=False)
    assert [g["kind"] for g in only_bg["traffic"]] == ["files"]
    assert base == setup.scenario_base(spec_of("table3"))  # the base is not modified


def test_background_is_one_sample_path_for_any_run_length():
    """A calibrated background (explicit k, no renormalization) gives a shorter run the same first
    transfers as a longer one: the calibration does not depend on the run length. (Each client
    presamples duration / idle sizes, more than it requests in a long run; a 20-s run may exhaust
    them near its end, so the comparison stops at 10 s.)"""
    base = setup.scenario_base(spec_of("fig6"))
    bg = setup.Background(alpha=1.05, k=110.0, idle=0.2)
    short, long_ = (sim.run(setup.variant(base, duration=d, seed=3, background=bg, measured=False))
                    for d in (20.0, 60.0))
    a, b = (pl.from_arrow(r.transfers).filter(pl.col("start").cast(pl.Int64) < 10 * 10**9)
            .sort("start", "flow_id") for r in (short, long_))
    assert a.height > 100
    assert a["size"].to_list() == b["size"].to_list()


def test_calibration_hits_the_target_load():
    base = setup.scenario_base(spec_of("fig6"))
    cal = calibration.calibrate(base, [(1.05, 3e6)], seed=1, duration=200.0, ex=batch.executor(workers=1))
    got = cal[(1.05, 3e6)]
    assert got.converged and abs(got.bps / 3e6 - 1) <= 0.03
    sc = setup.variant(base, duration=200.0, seed=1, background=got, measured=False)
    assert batch.simulate(sc)["summary"]["background_bps"] == pytest.approx(got.bps)


@pytest.mark.parametrize("y, expected", [
    ([1, 2, 3, 4, 3, 2, 1], "unimodal"), ([1, 2, 3, 4], "increasing"), ([4, 3, 2, 1], "decreasing"),
    ([5, 5.01, 4.99, 5], "flat"), ([1, 3, 1, 3], "irregular"), ([1, 2, 2.005, 3], "increasing"),
    ([3, 2, 4, 1], "irregular"), ([1, 3, 2, 3.5], "irregular")])
def test_shape_classification(y, expected):
    assert claims.shape(y) == expected


def test_shape_rows_follow_the_paper_sentence():
    x = list(range(1, 9))
    rows = claims.shape_rows("t", x, [1, 2, 3, 4, 3.5, 3, 2, 1], "unimodal", 4)
    assert [r["agree"] for r in rows] == [True, True]
    rows = claims.shape_rows("t", x, [1, 2, 3, 3.5, 4, 3, 2, 1], "unimodal", 4)
    assert [r["agree"] for r in rows] == [True, False]     # unimodal, but the peak is at 5
    rows = claims.shape_rows("t", x, list(range(8)), "unimodal", 4)
    assert rows[0]["ours"] == "increasing" and rows[0]["agree"] is False
    assert claims.ratio_row("r", 0.3, 0.1, 2.0)["agree"] is True
    assert claims.ratio_row("r", 0.3, -0.1, 2.0)["agree"] is True    # any gain is twice a loss
    assert claims.ratio_row("r", -0.1, -0.3, 2.0)["agree"] is False  # but a loss is not a gain
    assert claims.order_row("o", {"a": 1.0, "b": 2.0}, ["a", "b"])["agree"] is True
    assert claims.shown_row("n", 25.4, 20.0, "x")["agree"] is None


def test_tracking_is_minus_one_for_perfect_complement():
    rng = np.random.default_rng(4)
    bg = rng.uniform(0, 1e6, 400)
    series = {"m": 1.25e6 - bg, "b": bg}
    assert claims.tracking(series, 2.0, "m", "b") == pytest.approx(-1.0)
    series = {"m": rng.uniform(0, 1e6, 4000), "b": rng.uniform(0, 1e6, 4000)}
    assert abs(claims.tracking(series, 2.0, "m", "b")) < 0.1


def test_window_bits_counts_whole_blocks_only():
    from traceflow.experiments.tcpmt.tables import window_bits

    # connection started at t0 = 20 s, blocks of 2 s end at 22, 24, ...
    trace = {"t": (20 + 2 * np.arange(1, 101)) * 10**9, "gamma": np.arange(1, 101, dtype=float)}
    assert window_bits(trace, 20.0, 0.0, 10.0, 2.0) == 1 + 2 + 3 + 4 + 5
    assert window_bits(trace, 20.0, 30.0, 4.0, 2.0) == 16 + 17


def _quick(spec, **exp):
    spec["experiment"].update({"quick_duration": 60.0, "quick_calibration_duration": 60.0, **exp})
    return spec


def test_fig12_quick_end_to_end(tmp_path):
    spec = _quick(spec_of("fig12"), A_values=[1, 4])
    res = tcpmt.fig12(spec, tmp_path, quick=True, workers=1)
    assert res["reproduces"] == "Park & Tuan 2000, Fig. 12"
    for name in res["figures"]:
        assert (tmp_path / name).stat().st_size > 1000
    df = pl.read_parquet(tmp_path / res["tables"]["throughput"])
    assert df["config"].to_list() == ["static", "static", "dynamic", "tcp"]
    assert (df["throughput_bps"] > 0).all() and (df["link_utilization"] <= 1).all()
    assert {"quantity", "paper", "ours", "agree", "note"} <= set(res["comparison"][0])
    assert all(r["agree"] in (True, False, None) for r in res["comparison"])


def test_fig9_quick_reports_the_ablation_and_the_control(tmp_path):
    """The CA-only ablation row exists because of
    ../shared/papers/park-tuan-2000-multiple-time-scale-tcp.txt:192: "The dominant performance
    gain, however, is affected by congestion avoidance" (asserted at full length in
    test_tcpmt_paper.py: Table II's CA-only row)."""
    spec = _quick(spec_of("fig9"), flavors=["reno"], rtts=[0.03, 0.2], seeds=[1])
    res = tcpmt.fig9(spec, tmp_path, quick=True, workers=1)
    runs = pl.read_parquet(tmp_path / res["tables"]["runs"])
    assert sorted(set(runs["mode"])) == ["ca", "constxi", "tcp", "tcpmt"]
    xi = {m: runs.filter(pl.col("mode") == m).sort("rtt")["mean_xi"].to_numpy() for m in ("tcpmt", "constxi")}
    np.testing.assert_allclose(xi["constxi"], xi["tcpmt"])   # the control runs at TCP-MT's mean slope
    gain = pl.read_parquet(tmp_path / res["tables"]["gain"])
    np.testing.assert_allclose(gain["gain_ca"], gain["throughput_bps_ca"] / gain["throughput_bps_tcp"] - 1)
    assert any("CA-only" in r["quantity"] for r in res["comparison"])


def test_fig1_quick_end_to_end(tmp_path):
    spec = _quick(spec_of("fig1"), quick_duration=100.0)
    res = tcpmt.fig1(spec, tmp_path, quick=True, workers=1)
    probs = pl.read_parquet(tmp_path / res["tables"]["condprob"])
    assert probs.height == 2 * 2 * 64
    rows = probs.filter((pl.col("alpha") == 1.05) & (pl.col("scale_s") == 1))
    assert rows["count"].sum() == 99  # 100 one-second blocks, 99 transitions


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fig6", "fig7", "fig8", "fig10", "fig11", "table2", "table3"])
def test_quick_runners_complete(tmp_path, name):
    res = getattr(tcpmt, name)(spec_of(name), tmp_path, quick=True)
    assert res["figures"] and res["comparison"]
    for f in [*res["figures"], *res["tables"].values()]:
        assert (tmp_path / f).exists()

"""Quick runs of the router-discipline paper experiments (burstiness, CAPM, classification):
the runner contract of ``traceflow reproduce`` and the qualitative results that must hold."""
import copy
import json
import tomllib
from importlib.resources import files

import numpy as np
import pytest

from traceflow.cli.reproduce import run_experiment
from traceflow.experiments import capm, classification

EXPERIMENTS = ["burst_fig2_4", "burst_bg20", "burst_bg40", "burst_fig13", "capm_signature",
               "capm_orthogonality", "capm_utilization", "capm_fairness", "class_fig1",
               "class_long_load", "class_short_load", "class_rtt_ratio"]


def _spec(name):
    return tomllib.loads(files("traceflow.replays").joinpath(f"{name}.toml").read_text())


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_replay_files_parse_into_scenarios(name):
    from traceflow.sim.scenario import load_scenario

    spec = _spec(name)
    exp = spec["experiment"]
    assert exp["runner"].startswith("traceflow.experiments.")
    assert {"title", "reproduces", "duration" if "duration" in exp else "periods"} <= set(exp)
    load_scenario({k: v for k, v in spec.items() if k != "experiment"})


def _check_contract(summary, out):
    assert summary["figures"] and summary["tables"]
    for name in list(summary["figures"]) + list(summary["tables"].values()):
        assert (out / name).is_file()
    assert (out / "summary.json").is_file() and (out / "index.html").is_file()
    json.loads((out / "summary.json").read_text())
    for row in summary["comparison"]:
        assert set(row) == {"quantity", "paper", "ours", "agree", "note"}


def test_six_dt_fairer_than_mix_dt_at_high_short_load(tmp_path):
    # The quick run (one seed, 40 s) gives SIX-DT 0.791 vs MIX-DT 0.537 since links free in
    # ns-2's order (sim/link.pxi _poke); it gave 0.642 vs 0.694 before, a strict xfail. One
    # seed's noise either way (the seeds' sd is 0.10 at full length); full length, seeds 1-12,
    # before that change: SIX-DT 0.851 vs MIX-DT 0.606, ns-2 on the same flows 0.863 vs 0.587
    # (test_class_schemes_ns2.py).
    out = tmp_path / "short"
    summary = run_experiment("class_short_load", out, quick=True, workers=2)
    _check_contract(summary, out)
    row = next(r for r in summary["comparison"] if r["quantity"].startswith("SIX-DT vs MIX-DT"))
    assert row["agree"] is None and "quick run, not decided" in row["note"]
    six, mix = (float(x) for x in row["ours"].split(" vs "))
    assert six > mix + 0.1


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="issue 45: on ns-2 of 2003's timers (the replay's era "
                   "set-up) K moves +10.3 % (R1) and +11.6 % (R2) with the other router on; the "
                   "pre-era replay (2c21fed) gives -38 % / +18 % on today's simulator build, so "
                   "the +6..10 % measured earlier no longer holds on either (claim 10 fails too)")
def test_capm_k_unaffected_by_the_other_router():
    # Lemma 1 needs chips long against the aggregate's response time and a small total drop
    # rate: with T_c = 4 s and A = 10 drops/s each router's K moves < 10 % when the other
    # router's amplitude goes from 0 to A (measured +6..10 %: the other router's mean drop rate
    # shifts the operating point; the paper's T_c = 2 s leaks more, see the experiment).
    # Slow: one test (code period) has ~10 % noise, so three runs per setting are needed.
    spec = copy.deepcopy(_spec("capm_orthogonality"))
    spec["experiment"].update(chip=4.0, quick_amplitudes=[10.0], quick_periods=2,
                              quick_replications=3)
    df = capm.orthogonality_runs(spec, quick=True, ex=capm._ex("local", 2))
    k = capm.k_estimates(df)
    for router, alone in (("R1", "R1 only"), ("R2", "R2 only")):
        assert k[(router, alone)] > 0
        assert abs(k[(router, "both")] / k[(router, alone)] - 1) < 0.10
    # and the silent router's filter sees almost nothing of the other's signature
    r2_only = df.filter(df["setting"] == "R2 only")["y1"].mean()
    assert abs(r2_only) < 0.1 * k[("R1", "R1 only")] * 10


def test_reno_model_tracks_simulation(tmp_path):
    out = tmp_path / "fig13"
    summary = run_experiment("burst_fig13", out, quick=True, workers=2)
    _check_contract(summary, out)
    import polars as pl
    df = pl.read_parquet(out / summary["tables"]["model"])
    # uncongested clients: both the model and the simulation sit at the Poisson c.o.v.
    light = df.filter(pl.col("clients") <= 20)
    np.testing.assert_allclose(light["model_cov"], light["poisson_cov"], rtol=0.1)
    np.testing.assert_allclose(light["simulated_cov"], light["poisson_cov"], rtol=0.15)
    # heavy congestion: both far above Poisson (TCP-induced burstiness)
    heavy = df.filter(pl.col("clients") >= 60)
    assert (heavy["simulated_cov"] > 1.5 * heavy["poisson_cov"]).all()
    assert (heavy["model_cov"] > 1.5 * heavy["poisson_cov"]).all()


def test_flows_table_of_the_classification_runs():
    t = classification.flows_table(duration=100.0, seed=3, rtt_ratio=3.0, rtt_mid=0.1,
                                   long_per_class=3, short_rate=2.0, mss=960)
    assert t["long"].sum() == 9
    short = ~t["long"]
    assert abs(short.sum() - 200) < 3 * np.sqrt(200)
    sizes = t["size"][short] / 960
    assert sizes.min() >= 10 and sizes.max() <= 40
    means = classification.rtt_means(3.0, 0.1)
    ratio = t["rtt"] / means[t["rtt_class"]]
    assert ratio.min() >= 0.9 and ratio.max() <= 1.1
    lo, hi = classification.rtt_bounds(3.0, 0.1)
    assert np.all((t["rtt"] < lo) == (t["rtt_class"] == 0))
    assert np.all((t["rtt"] >= hi) == (t["rtt_class"] == 2))


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in EXPERIMENTS if n not in ("class_short_load", "burst_fig13")])
def test_quick_reproductions(name, tmp_path):
    out = tmp_path / name
    _check_contract(run_experiment(name, out, quick=True, workers=2), out)


@pytest.mark.parametrize("name", ["selfsim_fig4", "selfsim_fig5"])
def test_selfsim_replays_use_the_papers_network_and_agents(name):
    from traceflow.experiments import selfsim
    from traceflow.sim.scenario import load_scenario

    spec = _spec(name)
    sc = load_scenario(selfsim.scenario(spec, alpha=1.35, buffer_bytes=10000, seed=2,
                                        duration=100.0))
    files = sc.traffic[0]
    assert files.pad_last and files.idle_after == "last_ack"
    assert files.size.alpha == 1.35 and files.size.mean == 4096
    assert sc.topology.bottleneck.queue.params.limit_bytes == 10000
    assert sc.topology.right == 32 and sc.topology.bottleneck.rate == 1.5e6


@pytest.mark.slow
def test_selfsim_quick_reproduction(tmp_path):
    out = tmp_path / "fig4"
    _check_contract(run_experiment("selfsim_fig4", out, quick=True, workers=2), out)

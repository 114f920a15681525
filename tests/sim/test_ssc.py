"""TCP-MT's SSC module attached to the simulator's TCP flavors (sim/ssc.pxi, sim/ssc.py)."""
import json

import numpy as np
import polars as pl
import pytest

from traceflow.errors import ScenarioError

sim = pytest.importorskip("traceflow.sim")
ssc = pytest.importorskip("traceflow.sim.ssc")

FLAVORS = ["tahoe", "reno", "newreno", "vegas", "rate"]


def scenario(cc="reno", hook=None, duration=60.0, extra_delay=0.05, seed=3):
    """8 Pareto file clients and one infinite TCP source on a 10 Mb/s, 50-packet bottleneck."""
    tcp = {"cc": cc}
    if hook is not None:
        tcp["hook"] = hook
    return {
        "simulation": {"duration": duration, "seed": seed, "queue_sample": 0.0},
        "topology": {"kind": "dumbbell", "left": 9, "right": 2,
                     "bottleneck": {"rate": 10e6, "delay": 0.005,
                                    "queue": {"kind": "droptail", "limit": 50}},
                     "access": {"rate": 10e6, "delay": 0.005}},
        "traffic": [
            {"kind": "files", "src": "l[0-7]", "dst": "r0", "count": 8, "idle": 0.5,
             "size": {"dist": "pareto", "alpha": 1.05, "mean": 100e3, "normalize": "presample"}},
            {"kind": "infinite", "src": "l8", "dst": "r1", "extra_delay": extra_delay, "tcp": tcp},
        ],
    }


def run(sc):
    ssc.collect()
    res = sim.run(sc)
    return res, ssc.collect()


def same(a, b):
    """Same run: summary (but event count: the hook timer adds events), per-flow and per-transfer
    tables."""
    drop = ("events",)
    # JSON text compares NaN (empty statistics) equal to NaN, as polars equality does in tables
    sa = json.dumps({k: v for k, v in a.summary.items() if k not in drop}, sort_keys=True)
    sb = json.dumps({k: v for k, v in b.summary.items() if k not in drop}, sort_keys=True)
    return (sa == sb and pl.from_arrow(a.flows).equals(pl.from_arrow(b.flows))
            and pl.from_arrow(a.transfers).equals(pl.from_arrow(b.transfers)))


@pytest.mark.parametrize("cc", FLAVORS)
def test_slope_a_reproduces_the_plain_flavor_bit_for_bit(cc):
    plain, _ = run(scenario(cc))
    off, hooks_off = run(scenario(cc, {"kind": "ssc", "mode": "off"}))
    fixed, hooks_fixed = run(scenario(cc, {"kind": "ssc", "metacontrol": False, "A": 1.0,
                                           "couple": "ca"}))
    assert same(off, plain)
    assert same(fixed, plain)
    # the module was there and observing: one trace block per T_L = 2 s
    (trace,) = [h.trace() for h in hooks_fixed.values()]
    assert trace["t"].size == 29 and np.all(trace["xi"] == 1.0) and np.all(trace["A"] == 1.0)
    assert set(np.unique(trace["L1"])) <= set(range(1, 9)) and trace["L1"].min() >= 1
    (trace_off,) = [h.trace() for h in hooks_off.values()]
    np.testing.assert_array_equal(trace_off["gamma"], trace["gamma"])
    # reliable throughput in the trace matches the simulator's own goodput counter (in-order bytes)
    flows = plain.flows.to_pydict()
    good = flows["goodput_bytes"][flows["kind"].index("infinite")] * 8
    assert trace["gamma"].sum() <= good < trace["gamma"].sum() + 2 * 8e6  # last partial block


@pytest.mark.parametrize("cc", ["reno", "vegas", "rate"])
def test_ssc_sets_xi_by_the_inverse_linear_schedule(cc):
    res, hooks = run(scenario(cc, {"kind": "ssc", "metacontrol": False, "A": 4.0}, duration=120.0))
    (hook,) = hooks.values()
    tr = hook.trace()
    h, a, A = 8, 1.0, 4.0
    np.testing.assert_allclose(tr["xi"], (A - a) / (h - 1) * (h - tr["L2hat"]) + a)
    assert tr["xi"].min() >= a and tr["xi"].max() <= A and tr["xi"].max() > a
    assert np.all((tr["L2hat"] >= 1) & (tr["L2hat"] <= h))
    plain, _ = run(scenario(cc, duration=120.0))
    assert not same(res, plain)


def test_metacontrol_trace_and_floor():
    _, hooks = run(scenario("reno", {"kind": "ssc", "nu": 0.25}, duration=200.0))
    tr = next(iter(hooks.values())).trace()
    assert tr["A"][0] == pytest.approx(1.25)  # A(0) = a, first move upward by nu
    assert tr["A"].min() >= 1.0 and np.ptp(tr["A"]) > 0
    steps = np.abs(np.diff(tr["A"]))
    assert np.all((np.isclose(steps, 0.25)) | (steps < 0.25))  # never more than nu per block


def test_warmup_keeps_default_slope_then_enables():
    _, hooks = run(scenario("reno", {"kind": "ssc", "metacontrol": False, "A": 4.0, "warmup": 30.0},
                            duration=90.0))
    tr = next(iter(hooks.values())).trace()
    t = tr["t"] / 1e9
    assert np.all(tr["xi"][t < 30.0] == 1.0)
    assert tr["xi"][t >= 30.0].max() > 1.0


def test_a_priori_table_is_used_and_not_updated():
    _, hooks = run(scenario("reno", {"kind": "ssc", "metacontrol": False, "A": 4.0}, duration=60.0))
    prior = ssc.export_prior(next(iter(hooks.values())))
    hook = {"kind": "ssc", "metacontrol": False, "A": 4.0, "learn": False, "table": prior["condprob"],
            "norm": "fixed", "edges": prior["edges"]}
    _, hooks2 = run(scenario("reno", hook, duration=60.0, seed=9))
    after = ssc.export_prior(next(iter(hooks2.values())))
    assert after == prior  # same table, same (fixed) edges


def test_a_priori_table_from_traceflow_levels(tmp_path):
    """Case I from the CLI: `traceflow levels --reverse -o` on a connection's bytes per T_L block;
    the module uses that table and those edges (converted to bits) as they are."""
    import subprocess
    import sys

    _, hooks = run(scenario("reno", {"kind": "ssc", "mode": "off"}, duration=120.0))
    x_bits = next(iter(hooks.values())).trace()["x"]
    pl.DataFrame({"bytes": x_bits / 8}).write_parquet(tmp_path / "blocks.parquet")
    for flag, name in (["--reverse"], "prior.json"), ([], "unreversed.json"):
        subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "levels",
                        str(tmp_path / "blocks.parquet"), "--column", "bytes", *flag,
                        "-o", str(tmp_path / name)], check=True, capture_output=True)
    doc = json.loads((tmp_path / "prior.json").read_text())
    hook = {"kind": "ssc", "metacontrol": False, "A": 4.0, "learn": False,
            "table_file": str(tmp_path / "prior.json")}
    _, hooks2 = run(scenario("reno", hook, duration=60.0, seed=9))
    used = ssc.export_prior(next(iter(hooks2.values())))
    assert used["condprob"] == doc["condprob"]
    np.testing.assert_allclose(used["edges"], 8 * np.asarray(doc["edges"]))
    with pytest.raises(ScenarioError, match="not reversed"):
        sim.run(scenario("reno", dict(hook, table_file=str(tmp_path / "unreversed.json"))))


def test_slow_start_coupling_changes_only_timeouts_path():
    base, hooks = run(scenario("reno", {"kind": "ssc", "mode": "off"}, duration=120.0))
    ss, _ = run(scenario("reno", {"kind": "ssc", "metacontrol": False, "A": 4.0, "couple": "ss"},
                         duration=120.0))
    flows = base.flows.to_pydict()
    assert flows["timeouts"][flows["kind"].index("infinite")] > 0
    assert not same(ss, base)


@pytest.mark.parametrize("cc", ["reno", "newreno"])
def test_slow_start_coupling_remembers_the_window_in_force(cc):
    """../shared/papers/park-tuan-2000-multiple-time-scale-tcp.txt:192: "Whenever a timeout
    occurs, we make an association between the size of the congestion window cwnd and the current
    traffic level L1". Timeouts during fast recovery must remember the window in force (the cut
    window), not cwnd inflated by duplicate ACKs (W/2 + 3 + dupacks): the flavor's own timeout
    response halves that same window (ssthresh = max(floor(window / 2), 2)). Before issue 18 the
    hook recorded the inflated window."""
    _, hooks = run(scenario(cc, {"kind": "ssc", "metacontrol": False, "A": 4.0, "couple": "ca"},
                            duration=300.0))
    to = next(iter(hooks.values())).timeouts()
    assert to["t"].size > 50
    np.testing.assert_array_equal(to["ssthresh_flavor"], np.maximum(np.floor(to["window"] / 2), 2))
    # ca coupling leaves ssthresh to the flavor
    np.testing.assert_array_equal(to["ssthresh"], to["ssthresh_flavor"])


@pytest.mark.parametrize("hook, message", [
    ({"kind": "ssc", "speed": 2}, "unknown key"),
    ({"kind": "ssc", "norm": "fixed"}, "hi > lo"),
    ({"kind": "ssc", "edges": [1, 2, 3, 4, 5, 6, 7]}, "norm = \"fixed\""),
    ({"kind": "ssc", "norm": "fixed", "edges": [1, 2]}, "7 ascending"),
    ({"kind": "ssc", "table": [[1, 2], [3, 4]]}, "must be 8 x 9"),
    ({"kind": "ssc", "schedule": "cubic"}, "must be one of"),
    ({"kind": "ssc", "metacontrol": False, "A": 0.5}, "must be >= a"),
])
def test_bad_ssc_parameters(hook, message):
    from traceflow.sim.scenario import HookSpec

    with pytest.raises(ScenarioError, match=message):
        HookSpec.parse(hook, "traffic[1].tcp.hook")


def test_ssc_from_toml_text():
    text = """
[simulation]
duration = 20.0
[topology]
kind = "dumbbell"
[[traffic]]
kind = "infinite"
tcp = {cc = "vegas", hook = {kind = "ssc", period = 1.0, levels = 4, schedule = "nonlinear"}}
"""
    _, hooks = run(text)
    tr = next(iter(hooks.values())).trace()
    assert tr["t"].size == 19
    np.testing.assert_allclose(tr["xi"], 4 / tr["L2hat"])

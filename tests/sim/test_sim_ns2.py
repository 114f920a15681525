"""The simulator against ns-2 on the same dumbbell scenarios (issue: ns-2 oracle).

Scenarios: replays/dumbbell*.toml (10 flows, 10 Mb/s / 20 ms bottleneck with a 100-packet queue,
100 Mb/s / 5 ms access links, 60 s) mirrored by tests/sim/ns2/dumbbell.tcl. Bottleneck throughput must
agree within 3 % and the loss rate within 25 % (relative), averaged over three seeds. A second set
gives one flow TCP-MT's larger slope xi (ns-2's increase_num_), where several losses per window and
timeouts dominate.
"""
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import traceflow.sim as sim

sys.path.insert(0, str(Path(__file__).with_name("ns2")))
from ns2 import available, run_ns2  # noqa: E402

REPLAYS = Path(__file__).resolve().parents[2] / "replays"
# case -> (ns-2 arguments, our replay file); each replay states the ns-2 settings it mirrors
CASES = {
    "newreno-droptail": ({}, "dumbbell.toml"),
    "reno-droptail": ({"flavor": "Reno"}, "dumbbell_reno.toml"),
    "vegas-droptail": ({"flavor": "Vegas"}, "dumbbell_vegas.toml"),
    "newreno-red": ({"queue": "RED"}, "dumbbell_red.toml"),
}
SEEDS = (1, 2, 3)

pytestmark = pytest.mark.skipif(not available(), reason="needs ns-2 ('ns' on PATH: apt-get install ns2)")


@pytest.mark.parametrize("case", sorted(CASES))
def test_dumbbell_matches_ns2(case):
    ns_args, replay = CASES[case]
    ns = [run_ns2(seed=seed, **ns_args) for seed in SEEDS]
    ours = [sim.run(sim.load_scenario(REPLAYS / replay, seed=seed)).summary for seed in SEEDS]
    ns_thr = np.mean([r["throughput_bps"] for r in ns])
    our_thr = np.mean([r["throughput_bps"] for r in ours])
    assert abs(our_thr - ns_thr) <= 0.03 * ns_thr, (our_thr, ns_thr)
    ns_loss = np.mean([r["loss_rate"] for r in ns])
    our_loss = np.mean([r["loss_rate"] for r in ours])
    assert abs(our_loss - ns_loss) <= 0.25 * ns_loss, (our_loss, ns_loss)


def _dumbbell(flavor, duration):
    """replays/dumbbell_reno.toml as a dict, with the given flavor and length (s)."""
    raw = tomllib.loads((REPLAYS / "dumbbell_reno.toml").read_text())
    raw["simulation"]["duration"] = duration
    raw["tcp"]["cc"] = flavor.lower()
    return raw


@pytest.mark.parametrize("flavor", ["Reno", "NewReno"])
@pytest.mark.parametrize("xi", [1.0, 2.0, 4.0])
def test_single_aggressive_flow_matches_ns2(flavor, xi):
    """One flow alone on the Reno dumbbell (300 s): without competitors both runs are deterministic,
    so the loss recovery under several drops per window is compared without sampling noise.
    Measured: goodput within 0.7 %, timeouts within 1 (Reno xi = 4: 75 vs 76)."""
    raw = _dumbbell(flavor, 300.0)
    raw["topology"]["left"] = raw["topology"]["right"] = 1
    raw["traffic"] = [dict(raw["traffic"][0], start_spread=0.0, tcp={"xi": xi})]
    flows = sim.run(sim.load_scenario(raw, seed=1)).flows.to_pydict()
    ns = run_ns2(flavor=flavor, xi0=xi, duration=300, flows=1, start_spread=0, seed=1)
    assert flows["goodput_bytes"][0] == pytest.approx(ns["flow0_goodput_bytes"], rel=0.02)
    assert abs(flows["timeouts"][0] - ns["flow0_timeouts"]) <= 3


def _aggressive_flow_share(flavor, xi, seed, duration=300.0):
    """Flow 0's share of the goodput and its timeouts when its slope is xi, others at 1."""
    raw = _dumbbell(flavor, duration)
    group = raw["traffic"][0]
    raw["traffic"] = [dict(group, src="l0", dst="r0", start_spread=0.1, tcp={"xi": xi}),
                      dict(group, src="l[1-9]", dst="r[1-9]")]
    flows = sim.run(sim.load_scenario(raw, seed=seed)).flows.to_pydict()
    i = flows["src"].index("l0")
    return flows["goodput_bytes"][i] / sum(flows["goodput_bytes"]), flows["timeouts"][i]


# (flavor, xi, relative tolerance of the share, of the timeout count)
AGGRESSIVE = [("NewReno", 1.0, 0.1, 0.1), ("NewReno", 4.0, 0.3, 0.1),
              ("Reno", 1.0, 0.1, 0.1), ("Reno", 2.0, 0.3, 0.3), ("Reno", 4.0, 0.4, 0.1)]


@pytest.mark.parametrize("flavor, xi, share_tol, timeout_tol", AGGRESSIVE)
def test_aggressive_flow_matches_ns2(flavor, xi, share_tol, timeout_tol):
    """TCP-MT's aggressiveness xi (cwnd += xi / cwnd) against ns-2's increase_num_: one of ten
    flows on the Reno dumbbell climbs xi times faster. Past xi ~ 2 it overshoots the 100-packet
    buffer by several packets a window and lives on timeouts, in ns-2 and here. Measured (300 s,
    mean of 8 seeds), share ours vs ns-2: NewReno 0.099/0.096 (xi 1), 0.139/0.115 (xi 4);
    Reno 0.098/0.097 (xi 1), 0.045/0.059 (xi 2, 214 vs 172 timeouts), 0.061/0.047 (xi 4).
    Alone on the link the same flow matches ns-2 closely (test above); the residual appears only
    among competing flows and is not explained (ns-2's deterministic start times i/10 s do not
    close it)."""
    ns = [run_ns2(seed=seed, flavor=flavor, xi0=xi, duration=300) for seed in SEEDS]
    ns_share = np.mean([r["flow0_goodput_bytes"] * 8 / r["throughput_bps"] / 300 for r in ns])
    ns_timeouts = np.mean([r["flow0_timeouts"] for r in ns])
    our_share, our_timeouts = np.mean([_aggressive_flow_share(flavor, xi, s) for s in SEEDS], axis=0)
    assert abs(our_share - ns_share) <= share_tol * ns_share, (our_share, ns_share)
    assert abs(our_timeouts - ns_timeouts) <= max(5.0, timeout_tol * ns_timeouts), (
        our_timeouts, ns_timeouts)
    if flavor == "Reno" and xi > 1:  # aggressiveness is penalized: less than a fair share
        assert our_share < 0.75 * 0.1 and ns_share < 0.75 * 0.1


@pytest.mark.parametrize("flavor", ["Reno", "NewReno"])
def test_twenty_flows_loss_matches_ns2(flavor):
    """Twenty flows on the Reno dumbbell (60 s, seeds 1-3): loss within 3 % and throughput within
    0.5 % of ns-2's. ns-2's slowdown() (tcp/tcp.cc, with precisionReduce_ true, the default since
    2006) sets ``halfwin = windowd() / 2``, ``ssthresh_ = (int) halfwin`` and ``cwnd_ = halfwin``:
    after fast recovery the window is W/2 unrounded, not the integer ssthresh. Measured loss
    ours / ns-2: Reno 0.02291 / 0.02299, NewReno 0.02262 / 0.02292; with cwnd = floor(W/2) after
    recovery (before the fix) 0.02186 and 0.02179, 4.9 % low."""
    raw = _dumbbell(flavor, 60.0)
    raw["topology"]["left"] = raw["topology"]["right"] = 20
    ns = [run_ns2(seed=seed, flavor=flavor, flows=20) for seed in SEEDS]
    ours = [sim.run(sim.load_scenario(raw, seed=seed)).summary for seed in SEEDS]
    ns_loss, our_loss = (np.mean([r["loss_rate"] for r in runs]) for runs in (ns, ours))
    assert our_loss == pytest.approx(ns_loss, rel=0.03)
    ns_thr, our_thr = (np.mean([r["throughput_bps"] for r in runs]) for runs in (ns, ours))
    assert our_thr == pytest.approx(ns_thr, rel=0.005)

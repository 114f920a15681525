"""The simulator against ns-2 on the same dumbbell scenarios (issue: ns-2 oracle).

Scenarios: replays/dumbbell*.toml (10 flows, 10 Mb/s / 20 ms bottleneck with a 100-packet queue,
100 Mb/s / 5 ms access links, 60 s) mirrored by tests/ns2/dumbbell.tcl. Bottleneck throughput must
agree within 3 % and the loss rate within 25 % (relative), averaged over three seeds.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

import traceflow.sim as sim

sys.path.insert(0, str(Path(__file__).with_name("ns2")))
from ns2 import available, run_ns2  # noqa: E402

REPLAYS = Path(__file__).resolve().parents[1] / "replays"
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

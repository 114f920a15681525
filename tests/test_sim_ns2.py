"""The simulator against ns-2 on the same dumbbell scenarios (issue: ns-2 oracle).

Scenario: replays/dumbbell.toml (10 flows, 10 Mb/s / 20 ms bottleneck with a 100-packet queue,
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

REPLAY = Path(__file__).resolve().parents[1] / "replays" / "dumbbell.toml"
RED = ('topology.bottleneck.queue={kind="red", limit=100, min_th=20, max_th=80, w_q=0.002, '
       'max_p=0.1}')
CASES = {
    "newreno-droptail": ({}, []),
    "reno-droptail": ({"flavor": "Reno"}, ['tcp.cc="reno"']),
    "vegas-droptail": ({"flavor": "Vegas"}, ['tcp.cc="vegas"']),
    "newreno-red": ({"queue": "RED"}, [RED]),
}
SEEDS = (1, 2, 3)

pytestmark = pytest.mark.skipif(not available(), reason="needs ns-2 ('ns' on PATH: apt-get install ns2)")


@pytest.mark.parametrize("case", sorted(CASES))
def test_dumbbell_matches_ns2(case):
    ns_args, overrides = CASES[case]
    ns = [run_ns2(seed=seed, **ns_args) for seed in SEEDS]
    ours = [sim.run(sim.load_scenario(REPLAY, overrides, seed=seed)).summary for seed in SEEDS]
    ns_thr = np.mean([r["throughput_bps"] for r in ns])
    our_thr = np.mean([r["throughput_bps"] for r in ours])
    assert abs(our_thr - ns_thr) <= 0.03 * ns_thr, (our_thr, ns_thr)
    ns_loss = np.mean([r["loss_rate"] for r in ns])
    our_loss = np.mean([r["loss_rate"] for r in ours])
    assert abs(our_loss - ns_loss) <= 0.25 * ns_loss, (our_loss, ns_loss)

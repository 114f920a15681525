"""RED in byte mode against ns-2.35 (bytes_ and queue_in_bytes_ true) on replays/dumbbell_red.toml.

Byte mode follows red.cc: no early drop only into an empty queue (its "qlen > 1" counts bytes),
the count in bytes / mean_pktsize, the byte scaling applied after the wait adjustment.
Measured (seeds 1-3): loss 2.103 % vs ns-2 2.135 %, throughput 9.70 vs 9.74 Mb/s.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

import traceflow.sim as sim

sys.path.insert(0, str(Path(__file__).with_name("ns2")))
from ns2 import available, run_ns2  # noqa: E402

REPLAY = Path(__file__).resolve().parents[2] / "replays" / "dumbbell_red.toml"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not available(), reason="needs ns-2 ('ns' on PATH: apt-get install ns2)")]


def test_red_byte_mode_matches_ns2():
    seeds = (1, 2, 3)
    ns = [run_ns2(seed=s, queue="RED", red_bytes="true") for s in seeds]
    ours = [sim.run(sim.load_scenario(REPLAY, ['topology.bottleneck.queue.mode="bytes"'],
                                      seed=s)).summary for s in seeds]
    ns_loss, our_loss = (np.mean([r["loss_rate"] for r in x]) for x in (ns, ours))
    ns_thr, our_thr = (np.mean([r["throughput_bps"] for r in x]) for x in (ns, ours))
    assert our_loss == pytest.approx(ns_loss, rel=0.05)
    assert our_thr == pytest.approx(ns_thr, rel=0.01)

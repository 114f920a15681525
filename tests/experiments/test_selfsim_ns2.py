"""The self-similarity paper's baseline (replays/selfsim_fig4.toml's network and workload
semantics) against ns-2 (tests/sim/ns2/selfsim.tcl) fed the same file sizes per client: packet
loss, link utilisation and the V-T Hurst estimate of the downstream bytes per 10 ms, 10,000 s.

Measured (seed 1, before ns-2's unrounded fast-recovery window): alpha = 1.05: loss 4.38 % vs
ns-2 4.48 %, utilisation 0.780 vs 0.778, H 0.913 vs 0.912; alpha = 1.95: loss 7.77 % vs 8.10 %,
utilisation 0.835 vs 0.838, H 0.658 vs 0.676; after it, alpha = 1.95: loss 7.73 % vs 8.09 %,
utilisation 0.834 vs 0.837, H 0.645 vs 0.685 (seeds 2, 3: 0.555 / 0.579 vs 0.594 / 0.590).
With same-nanosecond link arrivals shuffled (sim/engine.pxi, issue 18; FIFO again since ns-2's
header-less first segment is mirrored, and this 10,000-s test was not rerun after either change),
alpha = 1.95: loss 7.84 % vs 8.11 %, utilisation 0.837 vs 0.838, H 0.665 vs 0.670 (seeds 2-3 not
rerun). A 2000-s check with the header-less first segment, shuffled or FIFO arrivals alike:
alpha = 1.95 loss 8.09 vs 8.10 %, utilisation 0.837 vs 0.841, H 0.665 vs 0.642; alpha = 1.05 loss
6.11 vs 6.27 %. Our loss runs 2-4 % below ns-2's here, with short transfers, unlike the
long-lived dumbbells (tests/sim/test_sim_ns2.py, within 1.3 %).
"""
import sys
import tomllib
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from traceflow import sim
from traceflow.experiments import selfsim
from traceflow.stats.hurst import variance_time

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sim" / "ns2"))
from ns2 import available, run_ns2, write_sizes  # noqa: E402

REPLAY = Path(__file__).resolve().parents[2] / "replays" / "selfsim_fig4.toml"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not available(), reason="needs ns-2 ('ns' on PATH: apt-get install ns2)")]


def compare(duration, seed=1, alpha=1.05, tmp=None):
    """(ours, ns-2) dicts of loss, utilization, H_vt on the same per-client size sequences."""
    spec = tomllib.loads(REPLAY.read_text())
    sc = selfsim.scenario(spec, alpha=alpha, buffer_bytes=spec["experiment"]["buffer_bytes"],
                          seed=seed, duration=duration)
    res = sim.run(sc)
    x = selfsim.downstream_bytes(res)
    ours = {"loss": res.summary["loss_rate"], "utilization": res.summary["link_utilization"],
            "H_vt": variance_time(x, m_min=10).H}
    tr = pl.from_arrow(res.transfers).sort("flow_id", "conn")
    write_sizes(tmp, [tr.filter(pl.col("flow_id") == i)["size"].to_list()
                      for i in range(sc["topology"]["right"])], np.random.default_rng(seed))
    out = run_ns2("selfsim.tcl", duration=duration, seed=seed, sizes_dir=tmp,
                  series=tmp / "series.txt", buffer=sc["topology"]["bottleneck"]["queue"]["limit_bytes"],
                  idle=sc["traffic"][0]["idle"])
    xs = np.loadtxt(tmp / "series.txt")
    ns = {"loss": out["loss_rate"], "utilization": out["utilization"],
          "H_vt": variance_time(xs, m_min=10).H}
    return ours, ns


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """alpha -> (ours, ns-2), seed 1, 10,000 s."""
    return {alpha: compare(10000.0, alpha=alpha, tmp=tmp_path_factory.mktemp(f"a{alpha}"))
            for alpha in (1.05, 1.95)}


@pytest.mark.parametrize("alpha,loss_rel", [(1.05, 0.03), (1.95, 0.05)])
def test_baseline_matches_ns2(baseline, alpha, loss_rel):
    ours, ns = baseline[alpha]
    assert ours["loss"] == pytest.approx(ns["loss"], rel=loss_rel), (ours, ns)
    assert ours["utilization"] == pytest.approx(ns["utilization"], abs=0.01), (ours, ns)


@pytest.mark.parametrize("alpha", [1.05, 1.95])
def test_baseline_hurst_matches_ns2(baseline, alpha):
    ours, ns = baseline[alpha]
    assert ours["H_vt"] == pytest.approx(ns["H_vt"], abs=0.03), (ours, ns)

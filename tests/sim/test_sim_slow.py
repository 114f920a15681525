"""Long simulator runs (tox -e slow): the self-similarity paper's baseline."""
from pathlib import Path

import pyarrow.compute as pc
import pytest

import traceflow.sim as sim
from traceflow.stats.hurst import variance_time

BASELINE = Path(__file__).resolve().parents[2] / "replays" / "selfsim_baseline.toml"


def _hurst(res):
    se = res.series.filter(pc.equal(res.series["link"], "g1->g2"))
    return variance_time(se["bytes"].to_numpy().astype(float), m_min=10).H


@pytest.mark.slow
def test_heavy_tailed_files_make_the_bottleneck_traffic_self_similar():
    # Park, Kim & Crovella: H rises towards (3 - alpha)/2 with heavy-tailed sizes, ~1/2 with
    # exponential sizes of the same mean; TCP Reno, 1.5 Mb/s, 6 kB buffer, 10,000 s.
    pareto = sim.run(BASELINE)
    expo = sim.run(BASELINE, overrides=["traffic.0.size.dist=\"exponential\"",
                                        "traffic.0.size.normalize=\"presample\""])
    assert abs(pareto.transfers["size"].to_numpy().mean() / 4096 - 1) < 0.01
    assert _hurst(pareto) > 0.85
    assert _hurst(expo) < 0.6
    for res in (pareto, expo):
        s = res.summary
        assert 0.01 < s["loss_rate"] < 0.1 and 0.6 < s["link_utilization"] < 0.95
        assert 0.9 < s["reliable_throughput"] <= 1.0

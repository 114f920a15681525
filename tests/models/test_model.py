"""The fitted model: JSON round trip, schema checks, semi-parametric sampling."""
import json
import subprocess
import sys

import numpy as np
import pytest

from traceflow.errors import InputFormatError
from traceflow.models.model import (SCHEMA_VERSION, Arrivals, Hosts, InterArrival, Link, Model, RTTModel,
                             Span, Tail, distribution_from_sample)


def _model(seed=0):
    rng = np.random.default_rng(seed)
    sizes = (1000 * (1 - rng.random(20000)) ** (-1 / 1.3)).round()
    tail = Tail(alpha=1.3, xmin=1000.0, n_tail=20000, ks=0.01)
    return Model(
        span=Span(start_ns=0, end_ns=10**9, duration_s=1.0, packets=10, bytes=1000, inputs=["x.pcap"]),
        link=Link(capacity_bps=1.5e6, mean_rate_bps=1e6, utilization=2 / 3, method="peak-rate",
                  peak_rate_bps={"10ms": 2e6}),
        arrivals=Arrivals(n_flows=5, rate_per_s=5.0,
                          interarrival=InterArrival("exponential", {"scale": 0.2}, 0.05, 0.2, 1.0)),
        sizes=distribution_from_sample(sizes, "bytes", tail),
        lifetimes=None, shares=None,
        rtt=RTTModel(column="rtt_handshake", distribution=distribution_from_sample([0.01, 0.02, 0.03], "s")),
        hosts=Hosts(mss=1000, segment_size=988, initial_window=10.0, initial_window_flows=7,
                    initial_window_observable=True, receiver_window=65536, min_rto_s=0.2,
                    rto_samples=3, delayed_ack=False, segments_per_ack=1.0, vantage="sender"),
        hurst={"vt": 0.8, "whittle": float("nan")},
    )


def test_round_trip(tmp_path):
    m = _model()
    p = tmp_path / "model.json"
    m.save(p)
    doc = json.loads(p.read_text())
    assert doc["schema_version"] == SCHEMA_VERSION
    assert doc["hurst"]["whittle"] is None  # NaN is written as null
    back = Model.load(p)
    assert back.to_dict() == m.to_dict()
    assert isinstance(back.hosts, Hosts) and back.hosts.initial_window == 10.0
    assert back.arrivals.interarrival.params == {"scale": 0.2}


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(schema_version=SCHEMA_VERSION + 1), "newer"),
    (lambda d: d.pop("schema_version"), "schema_version"),
    (lambda d: d["link"].pop("capacity_bps"), "link.capacity_bps"),
    (lambda d: d["link"].update(capacity_bps="fast"), "expected a number"),
    (lambda d: d["hosts"].update(mss=1000.5), "hosts.mss"),
    (lambda d: d["span"].update(colour="red"), "colour"),
    (lambda d: d.update(sizes=[1, 2]), "sizes"),
])
def test_invalid_models_raise(tmp_path, mutate, message):
    d = _model().to_dict()
    mutate(d)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(d))
    with pytest.raises(InputFormatError, match=message):
        Model.load(p)


def test_not_json(tmp_path):
    p = tmp_path / "x.json"
    p.write_bytes(b"\x89PNG\r\n")
    with pytest.raises(InputFormatError):
        Model.load(p)
    p.write_text("{not json")
    with pytest.raises(InputFormatError, match="invalid JSON"):
        Model.load(p)


def test_sampling_keeps_tail_and_body():
    m = _model()
    rng = np.random.default_rng(1)
    x = m.sizes.sample(rng, 200_000)
    assert x.min() >= 1000 - 1e-9
    # Pareto(1.3, 1000): P[X > 10 xmin] = 10**-1.3
    assert abs((x > 10_000).mean() - 10 ** -1.3) < 0.003
    # MLE on the draws recovers alpha
    alpha = x.size / np.log(x / 1000).sum()
    assert abs(alpha - 1.3) < 0.02


def test_body_plus_tail_mixture():
    rng = np.random.default_rng(2)
    body = rng.uniform(100, 500, 9000)
    tail_vals = 1000 * (1 - rng.random(1000)) ** (-1 / 1.5)
    x = np.concatenate([body, tail_vals])
    d = distribution_from_sample(x, "bytes", Tail(alpha=1.5, xmin=1000, n_tail=1000, ks=0.0))
    y = d.sample(np.random.default_rng(3), 100_000)
    assert abs((y >= 1000).mean() - 0.1) < 0.005
    assert abs(np.median(y) - np.median(x)) / np.median(x) < 0.03
    assert y[y < 1000].min() >= 100 - 1e-9 and y[y < 1000].max() <= 500 + 1e-9


def test_cli_rejects_newer_model(tmp_path):
    d = _model().to_dict()
    d["schema_version"] = 99
    p = tmp_path / "m.json"
    p.write_text(json.dumps(d))
    r = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "replay", str(p), "-o",
                        str(tmp_path / "run")], capture_output=True, text=True)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "newer" in r.stderr
    assert not (tmp_path / "run").exists()

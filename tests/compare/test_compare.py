"""Predicted vs measured: metrics on known inputs, tolerances, CLI."""
import json
import math
import subprocess
import sys

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from conftest import shared_path
from traceflow import compare as C
from traceflow.errors import TraceflowError

SPAN_NS = 120 * 10**9


def _side(seed, *, scale=1.0, rate=1e6, n=3000, alpha=1.3, rtt=0.05, retx=0.02, capacity=2e6):
    rng = np.random.default_rng(seed)
    series = rng.poisson(rate / 8 * 0.01 / 1000 * scale, 60_000) * 1000.0
    sizes = np.round(1000 * (1 - rng.random(n)) ** (-1 / alpha))
    return C.Analytics(source=f"s{seed}", kind="test", duration_s=600.0,
                       data_bytes=int(series.sum()), data_segments=100_000,
                       retransmissions=int(retx * 100_000), series=series, sizes=sizes,
                       fct=0.1 + sizes / 1e5, rtt=rng.lognormal(math.log(rtt), 0.3, n),
                       capacity_bps=capacity)


def test_identical_sides_have_zero_error():
    a = _side(1)
    r = C.compare(a, a)
    assert set(r["metrics"]) == set(C.DEFAULT_TOLERANCES)
    for name, m in r["metrics"].items():
        assert m["error"] == pytest.approx(0, abs=1e-12), name
        assert m["pass"], name
    assert r["pass"] and r["failed"] == []


def test_errors_track_known_differences():
    m, p = _side(1), _side(2, scale=1.3, alpha=1.8, rtt=0.1, retx=0.1)
    r = C.compare(m, p)["metrics"]
    assert r["throughput"]["error"] == pytest.approx(0.3, abs=0.02)
    assert r["utilization"]["measured"] == pytest.approx(m.throughput_bps / 2e6)
    assert r["utilization"]["error"] == pytest.approx(0.3, abs=0.02)
    assert r["retransmission_rate"]["error"] == pytest.approx(0.08, abs=1e-9)
    assert r["loss_rate"]["error"] == pytest.approx(4.0)          # relative: 0.10 vs 0.02
    assert r["loss_rate"]["source"] == {"measured": "estimate: retransmissions",
                                        "predicted": "estimate: retransmissions"}
    assert r["size_ks"]["error"] > 0.1 and not r["size_ks"]["pass"]
    assert r["rtt_ks"]["error"] > 0.5
    # Poisson counts on both sides: Hurst near 0.5 on both, small errors
    assert abs(r["hurst_vt"]["measured"] - 0.5) < 0.08 and r["hurst_vt"]["pass"]
    assert r["fct"]["bins"] == C.size_bin_labels() == ["<2k", "2k-8k", "8k-16k", "16k-64k",
                                                        "64k-1M", ">=1M"]
    assert len(r["fct"]["measured"]) == 6


def test_tolerances_decide_pass():
    m, p = _side(1), _side(3, scale=1.1)
    loose = C.compare(m, p, {"throughput": 0.2})["metrics"]["throughput"]
    strict = C.compare(m, p, {"throughput": 0.05})["metrics"]["throughput"]
    assert loose["pass"] and not strict["pass"] and strict["tolerance"] == 0.05
    assert C.parse_tolerances(["utilization=0.1", "levels=0.5"]) == {"utilization": 0.1, "levels": 0.5}
    for bad in ["nosuch=1", "utilization", "utilization=abc", "utilization=-1"]:
        with pytest.raises(TraceflowError):
            C.parse_tolerances([bad])


def test_fct_bins_median_p90_counts():
    sizes = np.array([500, 1999, 2000, 7999, 8000, 15999, 16000, 63999, 64000, 999_999, 1e6, 5e6])
    fct = np.arange(sizes.size, dtype=float)
    med, p90, counts = C.fct_by_bin(sizes, fct)
    assert counts == [2, 2, 2, 2, 2, 2]               # [lo, hi) bins
    assert med == [0.5, 2.5, 4.5, 6.5, 8.5, 10.5]
    assert p90[0] == pytest.approx(0.9)


def test_fct_tolerance_is_per_bin():
    """A 2x miss in one judged bin fails however good the others are; small bins are not judged."""
    rng = np.random.default_rng(4)
    sizes = np.concatenate([np.full(200, 1000.0), np.full(200, 5000.0), np.full(10, 30000.0)])
    fct = rng.uniform(0.9, 1.1, sizes.size)
    m, p = _side(1), _side(2)
    m.sizes, m.fct, p.sizes = sizes, fct, sizes
    p.fct = np.where(sizes == 5000, 2 * fct, fct)
    p.fct[sizes == 30000] *= 3                        # 10 transfers: reported, not judged
    f = C.compare(m, p)["metrics"]["fct"]
    assert f["judged"] == [True, True, False, False, False, False]
    assert f["error_median"][0] == pytest.approx(0) and f["error_median"][1] == pytest.approx(1)
    assert f["error"] == pytest.approx(1) and not f["pass"]
    assert f["bin_pass"][:3] == [True, False, None]
    p.fct = fct * 1.1
    assert C.compare(m, p)["metrics"]["fct"]["pass"]
    # transfer times measured differently on the two sides never pass
    p.fct_measure = C.FCT_DURATION
    assert not C.compare(m, p)["metrics"]["fct"]["pass"]


def test_dispersion_of_poisson_and_levels_distance():
    rng = np.random.default_rng(0)
    x = rng.poisson(5, 2**16).astype(float)
    scales, idc = C.dispersion_curve(x)
    assert scales[0] == pytest.approx(0.01) and scales[-1] <= 100
    # Poisson: variance = mean at every scale (checked where >= 256 blocks keep the noise small)
    assert np.allclose(idc[:9], 1, atol=0.2) and np.all(np.isfinite(idc))
    t = C.level_table(x)
    assert C.level_distance(t, t) == 0
    noise = C.level_distance(t, C.level_table(rng.poisson(5, 2**16).astype(float)))
    assert 0 < noise < 0.22  # sampling noise of two independent 655-block tables
    # strongly LRD traffic (fGn, H = 0.95) concentrates on the diagonal: a larger distance
    from traceflow.stats.fgn import fgn

    lrd = C.level_distance(t, C.level_table(fgn(2**16, 0.95, rng=np.random.default_rng(1)) + 10))
    assert lrd > noise + 0.05


@pytest.fixture(scope="module")
def testbed_dir(tmp_path_factory):
    """The first 120 s of both testbed captures as packets tables."""
    from traceflow.pcap.reader import read_packets

    out = tmp_path_factory.mktemp("tb")
    for side in ("client", "server"):
        df = pl.from_arrow(read_packets(shared_path("testbed", "alpha1.35", f"{side}_side.pcap.gz")))
        t0 = df["ts"].cast(pl.Int64).min()
        df.filter(pl.col("ts").cast(pl.Int64) < t0 + SPAN_NS).write_parquet(out / f"{side}.parquet")
    return out


def test_testbed_queue_input_vs_output(testbed_dir):
    """Before the queue (server side) vs after it (client side): same flows, the drops show."""
    r = C.compare_paths(testbed_dir / "client.parquet", testbed_dir / "server.parquet",
                        capacity_bps=1.48e6)
    m = r["metrics"]
    assert m["size_ks"]["error"] < 0.01            # the same transfers on both sides
    # the server side also carries the packets the queue dropped: more bytes, more segments
    assert m["throughput"]["predicted"] > m["throughput"]["measured"]
    params = json.loads(shared_path("testbed", "alpha1.35", "params.json").read_text())
    # retransmissions seen before the queue ≈ the qdisc's drop fraction (35781 of 255807)
    assert abs(m["retransmission_rate"]["predicted"] - 35781 / (220026 + 35781)) < 0.04
    assert "dropped" in params["qdisc_stats"]
    assert all(m[k]["error"] is not None for k in m)


def test_cli_compare(testbed_dir, tmp_path):
    from traceflow.cli.main import cli

    out = tmp_path / "cmp.json"
    r = CliRunner().invoke(cli, ["compare", str(testbed_dir / "client.parquet"),
                                 str(testbed_dir / "client.parquet"), "-o", str(out),
                                 "--tol", "utilization=0.01", "--capacity", "1.48e6"])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["pass"] and doc["metrics"]["utilization"]["tolerance"] == 0.01
    assert "utilization" in r.output and "overall: pass" in r.output
    assert "estimate: retransmissions" in r.output        # no --before: loss labelled an estimate


def test_cli_compare_before_makes_loss_exact(testbed_dir, tmp_path):
    """With the capture before the queue, the measured loss is the fraction of the data
    direction's packets seen before the queue and missing after it (the qdisc's drop fraction,
    35781 of 255807 over the whole 900 s run), not the retransmission estimate."""
    from traceflow.cli.main import cli

    out = tmp_path / "cmp.json"
    r = CliRunner().invoke(cli, ["compare", str(testbed_dir / "client.parquet"),
                                 str(testbed_dir / "client.parquet"), "-o", str(out),
                                 "--before", str(testbed_dir / "server.parquet"),
                                 "--capacity", "1.48e6"])
    assert r.exit_code == 0, r.output
    loss = json.loads(out.read_text())["metrics"]["loss_rate"]
    assert loss["source"]["measured"] == "before/after"
    assert abs(loss["measured"] - 35781 / 255807) < 0.02
    assert "measured from before/after" in r.output and "fct: transfer time" in r.output


def test_cli_compare_errors(tmp_path):
    bad = tmp_path / "empty_dir"
    bad.mkdir()
    for args in (["compare", str(bad), str(bad)],
                 ["compare", str(tmp_path), str(tmp_path), "--tol", "bogus=1"]):
        r = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", *args],
                           capture_output=True, text=True)
        assert r.returncode == 2, r.stderr
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1

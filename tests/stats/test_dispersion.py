"""Index of dispersion across scales, c.o.v. per RTT, tracking ability (traceflow.stats.dispersion)."""
import json

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from conftest import shared_path
from traceflow.cli.main import cli
from traceflow.stats.dispersion import DEFAULT_SCALES, cov, cov_per_interval, dispersion_curve, tracking
from traceflow.errors import TraceflowError
from traceflow.stats.fgn import fgn

MS = 1_000_000


def series_frame(counts, bin_ns=10 * MS, t0=0):
    t = t0 + bin_ns * np.arange(len(counts), dtype=np.int64)
    return pl.DataFrame({"t": t, "bytes": np.asarray(counts) * 1000, "packets": counts}).with_columns(
        pl.col("t").cast(pl.Datetime("ns")))


def test_default_scales_span_10ms_to_100s():
    assert DEFAULT_SCALES[0] == "10ms" and DEFAULT_SCALES[-1] == "100s"
    assert {"10ms", "100ms", "1s", "10s", "100s"} <= set(DEFAULT_SCALES)


def test_poisson_counts_have_unit_dispersion_at_every_scale():
    counts = np.random.default_rng(0).poisson(5.0, 200_000)  # 2000 s of 10 ms bins
    c = dispersion_curve(counts, 10 * MS)
    assert c.scales_s[0] == 0.01 and c.scales_s[-1] == 100.0
    # var/mean of a sum of m Poisson bins is 1; sampling error grows at coarse scales (few blocks)
    for ratio, blocks in zip(c.ratio, c.blocks):
        assert abs(ratio - 1) < 4 * np.sqrt(2 / (blocks - 1)) + 0.01
    assert abs(c.slope) < 0.1
    assert np.allclose(c.mean, 5.0 * c.scales_s / 0.01, rtol=0.01)


def test_lrd_counts_dispersion_grows_like_t_to_2h_minus_1():
    H = 0.8
    counts = np.random.default_rng(1).poisson(np.clip(50 + 15 * fgn(1 << 17, H, rng=1), 0, None))
    c = dispersion_curve(counts, 10 * MS, ["100ms", "1s", "10s"])
    assert np.all(np.diff(c.ratio) > 0)
    assert abs(c.slope - (2 * H - 1)) < 0.15


def test_scales_skipped_with_reasons():
    c = dispersion_curve(np.ones(1000), 10 * MS, ["15ms", "100ms", "10s"])
    assert [s["scale"] for s in c.skipped] == ["15ms", "10s"]
    assert c.scales_ns.tolist() == [100 * MS] and c.ratio[0] == 0.0


def test_cov_per_rtt_matches_poisson_formula():
    lam_per_bin = 4.0  # 400 packets/s in 10 ms bins
    counts = np.random.default_rng(2).poisson(lam_per_bin, 100_000)
    for rtt, k in (("100ms", 10), ("200ms", 20)):
        r = cov_per_interval(counts, 10 * MS, rtt)
        assert r["intervals"] == counts.size // k
        assert abs(r["cov"] - 1 / np.sqrt(lam_per_bin * k)) < 0.01
        assert np.isclose(r["poisson_cov"], 1 / np.sqrt(r["mean"]))
    assert cov([2, 2, 2]) == 0.0 and np.isnan(cov([0, 0]))
    with pytest.raises(TraceflowError):
        cov_per_interval(counts, 10 * MS, "15ms")


def test_tracking_correlation():
    rng = np.random.default_rng(3)
    background = rng.poisson(100, 5000).astype(float)
    own = 200 - background + rng.normal(0, 1, background.size)  # tracks the available bandwidth
    assert tracking(own, background)["r"] < -0.99
    assert abs(tracking(rng.normal(size=5000), background)["r"]) < 0.05
    # frames are aligned on t: only the common bins count
    a = series_frame(background.astype(np.int64))
    b = series_frame((200 - background).astype(np.int64)[100:], t0=100 * 10 * MS)
    r = tracking(a, b, column="packets")
    assert r["n"] == 4900 and r["r"] == pytest.approx(-1.0)
    r10 = tracking(a.head(4000), series_frame((200 - background).astype(np.int64)[:4000]), factor=10)
    assert r10["n"] == 400 and r10["r"] == pytest.approx(-1.0)
    with pytest.raises(TraceflowError):
        tracking(np.ones(3), np.ones(4))


def test_cli_dispersion_json(tmp_path):
    counts = np.random.default_rng(4).poisson(3.0, 120_000)
    path = tmp_path / "series.parquet"
    series_frame(counts).write_parquet(path)
    other = tmp_path / "other.parquet"
    series_frame(counts[::-1].copy()).write_parquet(other)
    res = CliRunner().invoke(cli, ["dispersion", str(path), "--rtt", "100ms", "--with", str(other), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    d = out["dispersion"]
    assert d["scales"][0] == "10ms" and d["scales"][-1] == "100s" and d["blocks"][-1] == 12  # 1200 s
    assert all(abs(r - 1) < 0.5 for r in d["ratio"])
    assert out["cov"][0]["interval"] == "100ms" and abs(out["cov"][0]["cov"] - 1 / np.sqrt(30)) < 0.01
    assert abs(out["tracking"]["r"]) < 0.05 and out["tracking"]["n"] == counts.size
    res = CliRunner().invoke(cli, ["dispersion", str(path), "--column", "bytes", "--scales", "1s,10s"])
    assert res.exit_code == 0 and "var/mean" in res.output


def test_cli_plain_column_needs_bin(tmp_path):
    path = tmp_path / "x.csv"
    pl.DataFrame({"n": np.random.default_rng(5).poisson(2, 5000)}).write_csv(path)
    res = CliRunner().invoke(cli, ["dispersion", str(path), "--column", "n", "--bin", "10ms", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["dispersion"]["scales"][0] == "10ms"
    res = CliRunner().invoke(cli, ["dispersion", str(path), "--column", "n"])
    assert res.exit_code != 0


def test_testbed_is_bursty_over_scales():
    path = shared_path("testbed", "alpha1.35", "server_side.pcap.gz")
    res = CliRunner().invoke(cli, ["dispersion", str(path), "--filter", "payload_len > 0", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)["dispersion"]
    # heavy-tailed transfers over TCP: var/mean grows across 10 ms … 10 s (self-similar burstiness)
    assert d["ratio"][0] > 1 and d["slope"] > 0.1
    assert d["ratio"][d["scales"].index("10s")] > 5 * d["ratio"][0]

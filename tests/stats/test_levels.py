"""Conditional traffic levels (traceflow.stats.levels, ``traceflow levels``)."""
import json
import subprocess
import sys

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from conftest import shared_path

from traceflow.cli.main import cli
from traceflow.errors import TraceflowError
from traceflow.stats.levels import (analyze_levels, condprob_table, conditional_mean,
                              conditional_probabilities, level_map, predictability)


def fgn(n, hurst, rng):
    from traceflow.stats.fgn import fgn as exact_fgn  # Davies-Harte, exact

    return exact_fgn(n, hurst, rng=rng)


def test_condprob_counts_by_hand():
    table = condprob_table([1, 2, 2, 3, 1], h=3)
    expected = np.array([[0, 1, 0, 1],
                         [0, 1, 1, 2],
                         [1, 0, 0, 1]])
    np.testing.assert_array_equal(table, expected)
    assert table.shape == (3, 4)
    p = conditional_probabilities(table)
    np.testing.assert_allclose(p[1], [0, 0.5, 0.5])
    np.testing.assert_allclose(conditional_mean(table), [2.0, 2.5, 1.0])


def test_condprob_unobserved_rows_are_nan():
    table = condprob_table([1, 1, 1], h=4)
    assert table[0, 0] == 2 and table[0, 4] == 2 and table[1:].sum() == 0
    cm = conditional_mean(table)
    assert cm[0] == 1.0 and np.isnan(cm[1:]).all()


def test_condprob_matches_loop_counts():
    rng = np.random.default_rng(3)
    lv = rng.integers(1, 9, size=5000)
    table = condprob_table(lv, 8)
    ref = np.zeros((8, 9), dtype=int)
    for a, b in zip(lv[:-1], lv[1:]):  # the online update, one pair at a time
        ref[a - 1, b - 1] += 1
        ref[a - 1, 8] += 1
    np.testing.assert_array_equal(table, ref)


def test_level_maps():
    x = np.arange(800.0)
    lv, edges = level_map(x, 8, method="quantile")
    np.testing.assert_array_equal(np.bincount(lv)[1:], [100] * 8)
    lin, edges = level_map([0.0, 1.0, 4.99, 5.0, 10.0], 2, method="linear")
    np.testing.assert_array_equal(lin, [1, 1, 1, 2, 2])
    assert edges.tolist() == [5.0]
    rev, _ = level_map([0.0, 10.0], 8, method="linear", reverse=True)
    assert rev.tolist() == [8, 1]  # high throughput = low contention level
    fixed, _ = level_map([-1.0, 50.0, 200.0], 4, method="linear", lo=0, hi=100)
    assert fixed.tolist() == [1, 3, 4]
    # ties (half the blocks empty) stay on the lowest level instead of jumping to the median's
    tied, _ = level_map(np.r_[np.zeros(400), np.arange(1.0, 401.0)], 8)
    assert set(tied[:400]) == {1} and np.bincount(tied[400:])[5:].tolist() == [100, 100, 100, 100]
    with pytest.raises(TraceflowError):
        level_map(x, 8, method="cubic")
    with pytest.raises(TraceflowError):
        level_map([1.0, np.nan], 8)


def test_lrd_input_has_diagonal_mass():
    rng = np.random.default_rng(11)
    x = fgn(2**14, 0.9, rng)
    res = analyze_levels(x, 8)
    s = res.summary
    assert s["diagonal_mass"] > 2.0 * s["diagonal_mass_independent"]
    assert s["mutual_information"] > 0.3
    assert s["chi2_pvalue"] < 1e-10
    # Low now -> low next (Fig. 1, top row): E[L2|L1] increases with L1 and spans the range.
    assert np.all(np.diff(res.cond_mean) > 0)
    assert res.cond_mean[0] < 3.0 and res.cond_mean[-1] > 6.0
    assert res.prob[0, :3].sum() > 0.6 and res.prob[7, 5:].sum() > 0.6


def test_white_noise_conditional_equals_marginal():
    rng = np.random.default_rng(12)
    res = analyze_levels(rng.standard_normal(2**14), 8)
    s = res.summary
    assert abs(s["diagonal_mass"] - s["diagonal_mass_independent"]) < 0.015
    assert s["tv_distance"] < 0.06
    assert s["mutual_information"] < 0.01
    assert s["chi2_pvalue"] > 1e-3
    assert np.nanmax(np.abs(res.cond_mean - 4.5)) < 0.25
    assert abs(s["r2"]) < 0.01


def test_predictability_is_invariant_to_monotone_transform():
    rng = np.random.default_rng(5)
    x = fgn(4096, 0.8, rng)
    a = analyze_levels(x, 8).summary
    b = analyze_levels(np.exp(x) * 1e6, 8).summary  # e.g. a positive byte count
    assert a == b


def _series(tmp_path, rng, n=20000):
    x = fgn(n, 0.9, rng)
    bytes_ = np.round(1e5 * np.exp(0.5 * x)).astype(np.int64)
    t = (np.arange(n, dtype=np.int64) * 10**7).astype("datetime64[ns]")  # 10 ms bins
    df = pl.DataFrame({"t": t, "bytes": bytes_, "packets": bytes_ // 1000})
    path = tmp_path / "series.parquet"
    df.write_parquet(path)
    return path, df


def test_cli_series_json(tmp_path):
    path, df = _series(tmp_path, np.random.default_rng(21))
    out = tmp_path / "table.json"
    res = CliRunner().invoke(cli, ["levels", str(path), "--scale", "1s", "--levels", "8", "--json",
                                   "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)  # stderr warns: 199 transitions are too few for 8 x 8 cells
    assert "199 transitions fill 8x8" in res.stderr
    assert doc["quality"]["flags"][0]["code"] == "too_few_points"
    assert doc["blocks"] == 200 and doc["h"] == 8 and doc["scale_s"] == 1.0
    table = np.array(doc["condprob"])
    assert table.shape == (8, 9) and table[:, :8].sum() == 199
    np.testing.assert_array_equal(table[:, 8], table[:, :8].sum(axis=1))
    # the same numbers straight from the library on the same 1 s block sums
    x = df["bytes"].to_numpy().reshape(200, 100).sum(axis=1)
    np.testing.assert_array_equal(table, condprob_table(level_map(x, 8)[0], 8))
    assert json.loads(out.read_text())["condprob"] == doc["condprob"]


def test_cli_csv_column_without_time(tmp_path):
    rng = np.random.default_rng(22)
    x = fgn(4000, 0.9, rng)
    path = tmp_path / "x.csv"
    pl.DataFrame({"rate": x}).write_csv(path)
    res = CliRunner().invoke(cli, ["levels", str(path), "--column", "rate", "--bin", "10ms",
                                   "--scale", "100ms", "--map", "linear", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["blocks"] == 400 and doc["map"] == "linear"
    text = CliRunner().invoke(cli, ["levels", str(path), "--column", "rate", "--reverse"])
    assert text.exit_code == 0 and "Pr{L2|L1}" in text.output and "(reversed)" in text.output


@pytest.mark.parametrize("args, message", [
    (["--column", "nope"], "no column 'nope'"),
    (["--scale", "-2s"], "bad duration"),
    (["--scale", "15ms"], "not a multiple"),
])
def test_cli_errors(tmp_path, args, message):
    path, _ = _series(tmp_path, np.random.default_rng(23), n=500)
    proc = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "levels", str(path), *args],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_on_testbed_capture_shows_lrd_structure():
    # real Linux TCP, 32 clients with Pareto(1.35) file sizes, 900 s through a 1.5 Mb/s bottleneck
    path = shared_path("testbed", "alpha1.35", "client_side.pcap.gz")
    res = CliRunner().invoke(cli, ["levels", str(path), "--scale", "1s", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert 895 <= doc["blocks"] <= 905
    s = doc["predictability"]
    assert s["diagonal_mass"] > 1.5 * s["diagonal_mass_independent"]
    assert s["chi2_pvalue"] < 1e-6
    cm = doc["cond_mean"]
    assert cm[-1] - cm[0] > 2.0  # high now -> high next


def test_predictability_empty_table():
    s = predictability(np.zeros((8, 9), dtype=int))
    assert s["pairs"] == 0 and np.isnan(s["mutual_information"])

"""Heavy-tail fits on samples with known parameters (traceflow.stats.tails, ``traceflow tail``)."""
import json
import subprocess
import sys
import warnings

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from conftest import shared_path
from traceflow.cli.main import cli
from traceflow.errors import TraceflowError
from traceflow.stats.tails import (analyze, bootstrap_gof, ccdf_data, chi_square_fit, fit_pareto, hill,
                             likelihood_ratios)

ALPHAS = (1.05, 1.35, 1.65, 1.95)


def pareto(alpha, n, xmin=1.0, seed=0):
    return xmin * (1 + np.random.default_rng(seed).pareto(alpha, n))


def powerlaw_fit(x, **kw):
    powerlaw = pytest.importorskip("powerlaw")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return powerlaw.Fit(x, verbose=False, **kw)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_mle_recovers_alpha(alpha):
    x = pareto(alpha, 100_000, xmin=3.0, seed=int(alpha * 100))
    fit = fit_pareto(x)
    assert abs(fit.alpha - alpha) <= 0.03
    assert fit.n == x.size and fit.n_tail >= 1000 and 0 < fit.ks < 0.02
    # beta: whole-population location; for a pure Pareto it is ≈ the true scale 3
    assert abs(fit.beta - 3.0) < 0.1
    # the same α as powerlaw's formula at our xmin (powerlaw reports the density exponent α+1)
    ref = powerlaw_fit(x, xmin=fit.xmin)
    assert abs((ref.power_law.alpha - 1) - fit.alpha) < 1e-6


@pytest.mark.parametrize("alpha", [1.05, 1.95])
def test_xmin_search_agrees_with_powerlaw(alpha):
    x = pareto(alpha, 5_000, seed=3)
    fit = fit_pareto(x, min_tail=1)
    ref = powerlaw_fit(x)
    assert abs((ref.power_law.alpha - 1) - fit.alpha) <= 0.01
    assert abs(ref.power_law.D - fit.ks) < 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("alpha", ALPHAS)
def test_xmin_search_agrees_with_powerlaw_full(alpha):
    x = pareto(alpha, 100_000, seed=42)
    fit = fit_pareto(x, min_tail=1)
    ref = powerlaw_fit(x)
    assert abs((ref.power_law.alpha - 1) - fit.alpha) <= 0.01


def test_xmin_found_above_a_non_pareto_body():
    rng = np.random.default_rng(5)
    body = rng.uniform(1, 100, 20_000)
    tail = pareto(1.5, 5_000, xmin=100.0, seed=6)
    fit = fit_pareto(np.r_[body, tail])
    assert 80 <= fit.xmin <= 200 and abs(fit.alpha - 1.5) < 0.1


@pytest.mark.parametrize("discrete", [False, True])
def test_ks_search_in_pieces_equals_the_search_in_one(discrete):
    """The KS distances of the xmin search, computed in pieces of candidates and of group ends
    (bounded memory), are the same numbers as over the whole (candidate x group end) grid."""
    from traceflow.stats.tails import _search_xmin

    x = np.sort(pareto(1.3, 20_000, seed=4))
    x = np.floor(x * 10 + 0.5) if discrete else x
    shift = 0.5 if discrete else 0.0
    first = np.flatnonzero(np.r_[True, x[1:] != x[:-1]])[:-50]
    cand = first[::200]
    whole = _search_xmin(x, shift, cand, chunk_elems=cand.size * x.size)
    for pieces in (500, 3 * x.size, 7919):
        parts = _search_xmin(x, shift, cand, chunk_elems=pieces)
        assert np.array_equal(parts[0], whole[0]) and np.array_equal(parts[1], whole[1])


def test_discrete_counts_use_continuity_correction():
    # integer lifetimes from a discretized Pareto (α = 1.3, x ≥ 50 for the tail)
    y = pareto(1.3, 50_000, xmin=49.5, seed=9)
    x = np.floor(y + 0.5)
    fit = fit_pareto(x, xmin=50)
    assert fit.discrete and abs(fit.alpha - 1.3) < 0.03
    naive = fit_pareto(x, xmin=50, discrete=False)
    assert abs(naive.alpha - 1.3) > abs(fit.alpha - 1.3)


def test_hill_matches_mle_at_same_k():
    x = pareto(1.65, 20_000, seed=1)
    fit = fit_pareto(x, xmin=np.sort(x)[-2001])  # tail of the 2001 largest
    h = hill(x, k=2000)
    # Hill at k uses the k+1-th largest as threshold: α_Hill = k/Σ ln(x_i/x_(k+1))
    assert abs(h.alpha - 1.65) < 0.1 and abs(h.alpha - fit.alpha) < 0.01
    assert h.ks.size == h.alphas.size > 100


def test_chi_square_recovers_paper_parameters():
    # whole population: a Pareto with location β = 3 rounded to integers (lifetimes in packets,
    # as in Table 2), fitted above the threshold 50
    beta, alpha = 3.0, 1.7
    y = beta * (1 + np.random.default_rng(4).pareto(alpha, 400_000))
    x = np.floor(y + 0.5)
    chi = chi_square_fit(x, 50)
    # se(α) ≈ α/√n_tail ≈ 0.03 here; β moves ≈ 5× as much as α (it carries the tail mass)
    assert abs(chi.alpha - alpha) < 0.1 and abs(chi.beta - beta) < 0.5
    assert np.isclose(x.size * (chi.beta / 49.5) ** chi.alpha, np.sum(x >= 50), rtol=0.05)
    assert chi.p_value > 0.01 and chi.dof >= 5
    assert chi.n == x.size and chi.n_tail == int(np.sum(x >= 50))
    assert np.isclose(chi.plot["observed"].sum(), chi.n_tail)
    # an exponential tail is rejected
    e = np.floor(np.random.default_rng(4).exponential(40, 400_000)) + 1
    assert chi_square_fit(e, 50).p_value < 1e-6


def test_likelihood_ratios_pick_the_right_family():
    x = pareto(1.4, 20_000, seed=2)
    fit = fit_pareto(x, xmin=1.0)
    lr = likelihood_ratios(x, fit)
    assert lr["exponential"]["R"] > 0 and lr["exponential"]["p"] < 1e-6
    assert lr["lognormal"]["p"] > 0.05 or lr["lognormal"]["R"] > 0  # nested limit: not rejected
    e = np.random.default_rng(2).exponential(10.0, 20_000) + 5
    fe = fit_pareto(e, xmin=5.0)
    lre = likelihood_ratios(e, fe)
    assert lre["exponential"]["R"] < 0 and lre["exponential"]["p"] < 1e-6
    ln = np.random.default_rng(3).lognormal(2.0, 0.5, 20_000)
    fl = fit_pareto(ln, xmin=np.quantile(ln, 0.5))
    lrl = likelihood_ratios(ln, fl)
    assert lrl["lognormal"]["R"] < 0 and lrl["lognormal"]["p"] < 0.01


def test_bootstrap_is_seeded_and_discriminates():
    x = pareto(1.5, 2000, seed=8)
    fit = fit_pareto(x)
    a = bootstrap_gof(x, fit, 40, seed=1)
    assert a == bootstrap_gof(x, fit, 40, seed=1)
    assert a["p"] > 0.1
    ln = np.random.default_rng(1).lognormal(0, 1.0, 2000)
    fl = fit_pareto(ln, xmin=np.quantile(ln, 0.2))
    assert bootstrap_gof(ln, fl, 40, seed=1, search=False)["p"] < 0.1


def test_ccdf_data():
    x = pareto(1.2, 50_000, seed=0)
    fit = fit_pareto(x)
    c = fit.ccdf
    assert c["p"][0] == 1.0 and np.all(np.diff(c["p"]) < 0) and len(c["x"]) <= 2000
    assert np.isclose(c["fit_p"][0], fit.n_tail / fit.n)
    assert set(ccdf_data(x)) == {"x", "p"}


def test_testbed_ground_truth_sizes():
    path = shared_path("testbed", "alpha1.35", "transfers.csv.gz")
    sizes = pl.read_csv(path).get_column("size").to_numpy()
    rep = analyze(sizes)
    assert abs(rep.pareto.alpha - 1.35) <= 0.1
    assert rep.lr["exponential"]["favours"] == "pareto"


def test_testbed_measured_flows():
    path = shared_path("testbed", "alpha1.35", "server_side.pcap.gz")
    from traceflow.flows import load_flows

    flows = load_flows(path)
    sizes = flows.filter(pl.col("app_bytes_s2c") > 0).get_column("app_bytes_s2c").to_numpy()
    truth = pl.read_csv(shared_path("testbed", "alpha1.35", "transfers.csv.gz")).height
    assert abs(sizes.size - truth) < 0.05 * truth
    assert abs(fit_pareto(sizes).alpha - 1.35) <= 0.1


def test_cli_json_on_flows_table_with_duration(tmp_path):
    pk = np.floor(pareto(1.35, 5000, xmin=9.5, seed=5) + 0.5).astype(np.int64)
    dur_ns = (pareto(1.6, 5000, xmin=0.01, seed=6) * 1e9).astype(np.int64)
    df = pl.DataFrame({"flow_id": np.arange(5000), "packets": pk, "bytes": pk * 1000,
                       "duration": dur_ns}).with_columns(pl.col("duration").cast(pl.Duration("ns")))
    path = tmp_path / "flows.parquet"
    df.write_parquet(path)
    res = CliRunner().invoke(cli, ["tail", str(path), "--column", "duration", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert {"alpha", "beta", "xmin", "n_tail", "ks", "hill", "lr"} <= set(out)
    assert abs(out["alpha"] - 1.6) < 0.1 and out["discrete"] is False and out["xmin"] < 1.0
    res = CliRunner().invoke(cli, ["tail", str(path), "--column", "packets", "--threshold", "50",
                                   "--bootstrap", "5", "--json"])
    out = json.loads(res.output)
    assert out["xmin"] == 50 and out["chi2"]["threshold"] == 50 and out["bootstrap"]["reps"] == 5
    assert abs(out["alpha"] - 1.35) < 0.15 and out["discrete"] is True
    res = CliRunner().invoke(cli, ["tail", str(path), "--column", "bytes"])
    assert res.exit_code == 0 and "Pareto MLE" in res.output and "vs exponential" in res.output


def test_cli_errors_one_line(tmp_path):
    path = tmp_path / "x.csv"
    pl.DataFrame({"size": [1.0, 2.0, 3.0], "name": ["a", "b", "c"]}).write_csv(path)
    for args in (["--column", "size"], ["--column", "name"], ["--column", "missing"]):
        r = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "tail", str(path), *args],
                           capture_output=True, text=True)
        assert r.returncode == 2, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_too_few_values():
    with pytest.raises(TraceflowError):
        fit_pareto([1.0, 2.0, 3.0])

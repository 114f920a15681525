"""The Davies–Harte fGn generator: exact autocovariance, determinism (traceflow.stats.fgn)."""
import numpy as np
import pytest

from traceflow.errors import TraceflowError
from traceflow.stats.fgn import circulant_eigenvalues, fbm, fgn, fgn_autocovariance


def test_autocovariance_formula():
    assert np.allclose(fgn_autocovariance(0.5, np.arange(5)), [1, 0, 0, 0, 0])
    g = fgn_autocovariance(0.8, np.arange(1, 2000))
    # γ(k) ~ H(2H−1) k^{2H−2} for large k
    assert np.isclose(g[-1], 0.8 * 0.6 * 1999 ** (-0.4), rtol=1e-3)
    assert np.all(g > 0) and np.all(fgn_autocovariance(0.3, np.arange(1, 50)) < 0)


@pytest.mark.parametrize("H", [0.2, 0.5, 0.7, 0.9, 0.97])
def test_embedding_eigenvalues_nonnegative(H):
    lam = circulant_eigenvalues(1 << 12, H)
    assert lam.min() >= 0 and np.isclose(lam.mean(), 1.0)  # mean eigenvalue = γ(0)


@pytest.mark.parametrize("H", [0.3, 0.5, 0.75, 0.9])
def test_sample_covariance_matches_theory(H):
    # 8000 replicates of n = 24: the empirical covariance matrix vs Toeplitz(γ); the standard
    # error of each entry is ≤ √(2/8000) ≈ 0.016, so 0.06 is a > 3.5-sigma bound on the max.
    rng = np.random.default_rng(11)
    X = np.stack([fgn(24, H, rng=rng) for _ in range(8000)])
    C = X.T @ X / X.shape[0]
    lags = np.subtract.outer(np.arange(24), np.arange(24))
    assert np.abs(C - fgn_autocovariance(H, lags)).max() < 0.06
    assert abs(X.mean()) < 0.03


def test_long_sample_autocovariance():
    x = fgn(1 << 18, 0.8, rng=3)
    xc = x - x.mean()
    emp = np.array([np.dot(xc[: xc.size - k], xc[k:]) / xc.size for k in range(1, 6)])
    # sample-mean bias of fGn is ≈ −n^{2H−2}; at n = 2^18 that is 0.007
    assert np.allclose(emp, fgn_autocovariance(0.8, np.arange(1, 6)) - (1 << 18) ** -0.4, atol=0.02)


def test_deterministic_and_scaled():
    a = fgn(1000, 0.7, rng=5)
    assert np.array_equal(a, fgn(1000, 0.7, rng=5))
    assert not np.array_equal(a, fgn(1000, 0.7, rng=6))
    b = fgn(1000, 0.7, sigma=3.0, mean=10.0, rng=5)
    assert np.allclose(b, 10 + 3 * a)
    assert np.allclose(fbm(1000, 0.7, rng=5), np.cumsum(a))


def test_bad_parameters():
    with pytest.raises(TraceflowError):
        fgn(10, 1.0)
    with pytest.raises(TraceflowError):
        fgn(0, 0.5)

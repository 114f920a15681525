"""Exact fractional Gaussian noise by circulant embedding (Davies & Harte 1987).

The autocovariance of fGn with Hurst exponent H and variance σ² is
``γ(k) = σ²/2 (|k+1|^{2H} − 2|k|^{2H} + |k−1|^{2H})``. Embedding the n×n Toeplitz covariance into a
2n-circulant whose eigenvalues (one FFT) are non-negative for every H in (0, 1) gives samples with
exactly that covariance in O(n log n).
"""
from __future__ import annotations

import numpy as np

from traceflow.errors import TraceflowError


def fgn_autocovariance(H: float, lags, sigma: float = 1.0) -> np.ndarray:
    """Theoretical autocovariance γ(k) of fGn at integer ``lags``."""
    k = np.abs(np.asarray(lags, dtype=np.float64))
    h2 = 2.0 * H
    return 0.5 * sigma ** 2 * (np.abs(k + 1) ** h2 - 2 * k ** h2 + np.abs(k - 1) ** h2)


def circulant_eigenvalues(n: int, H: float) -> np.ndarray:
    """Eigenvalues of the 2n circulant embedding of fGn's covariance (all ≥ 0 for 0 < H < 1)."""
    gamma = fgn_autocovariance(H, np.arange(n + 1))
    row = np.concatenate([gamma, gamma[-2:0:-1]])  # γ0 … γn, γ(n−1) … γ1 : length 2n
    lam = np.fft.fft(row).real
    # round-off makes a few eigenvalues ~ −1e−16 near H → 1
    return np.clip(lam, 0.0, None)


def fgn(n: int, H: float, *, sigma: float = 1.0, mean: float = 0.0, rng=None) -> np.ndarray:
    """``n`` samples of fGn(H) with standard deviation ``sigma`` plus ``mean``.

    ``rng`` is a :class:`numpy.random.Generator` or a seed (deterministic for a given seed).
    """
    if not 0.0 < H < 1.0:
        raise TraceflowError(f"Hurst exponent must be in (0, 1), got {H}")
    n = int(n)
    if n < 1:
        raise TraceflowError(f"n must be ≥ 1, got {n}")
    rng = np.random.default_rng(rng)
    m = 2 * n
    lam = circulant_eigenvalues(n, H)
    z = rng.standard_normal(m) + 1j * rng.standard_normal(m)
    # Re(FFT(√(λ/m)·z)) is Gaussian with circulant covariance C; its first n values have
    # covariance Toeplitz(γ0..γ(n−1)) exactly.
    x = np.fft.fft(np.sqrt(lam / m) * z).real[:n]
    return mean + sigma * x


def fbm(n: int, H: float, *, sigma: float = 1.0, rng=None) -> np.ndarray:
    """Fractional Brownian motion B_H(1..n) (cumulative sum of fGn), B_H(0) = 0 not included."""
    return np.cumsum(fgn(n, H, sigma=sigma, rng=rng))

"""Responsiveness of TCP aggregates: APM and CAPM (Kalantari & Shayman, sections III–V).

Rates are packets per second on a piecewise-constant series (one value per bin of ``bin_s``
seconds starting at ``t0_s``); times are seconds relative to the same origin as the series.

* :func:`eta` — APM degradation ``η(D) = ∫_0^{t_r} (λ(0⁻) − λ(t)) dt`` (eq. 1), with ``λ(0⁻)``
  a short-term average before the drop, as the paper recommends.
* :func:`signature` / :func:`dc_removed` — normalised drop signature ``s_i(t)`` with rectangular
  chips (eqs. 3, 6) and its DC-free part ``s_iᵃ(t)`` (eq. 9).
* :func:`matched_filter` — ``y_i = −∫_0^T s_iᵃ(t) λ(t) dt`` (eq. 13), integrated exactly for a
  piecewise-constant rate (no sampling of the signature).
* :func:`response_coefficient` — ``K_i = E[y_i] / A_i`` (eq. 14).
* :func:`fair_drop_probabilities` — drop probabilities per aggregate from eqs. (15)–(17), for
  equal absolute rate decrease or equal percentage decrease.
"""
import numpy as np

from traceflow.errors import TraceflowError


def _code(code):
    c = np.asarray(code, dtype=np.float64).ravel()
    if c.size == 0 or not np.all((c == 0) | (c == 1)):
        raise TraceflowError("a CAPM code is a non-empty sequence of 0/1 chips")
    return c


def walsh_codes(n_routers, spreading):
    """Binary codes whose DC-removed signatures are mutually orthogonal (eq. 8).

    Rows 1.. of the Sylvester–Hadamard matrix of order ``spreading`` (a power of two) mapped
    ±1 → 1/0: each row is balanced, so its DC-removed version is ±½ and rows stay orthogonal.
    """
    from scipy.linalg import hadamard

    if spreading < 2 or spreading & (spreading - 1):
        raise TraceflowError(f"spreading factor must be a power of two >= 2, got {spreading}")
    if not 1 <= n_routers < spreading:
        raise TraceflowError(f"at most {spreading - 1} orthogonal codes for spreading factor {spreading}")
    h = hadamard(spreading)
    return [((h[i] + 1) // 2).astype(np.int8) for i in range(1, n_routers + 1)]


def signature(code, chip_s, t):
    """Normalised drop signature ``s(t)`` at times ``t`` (s): chip ``j`` holds on ``[j·T_c, (j+1)·T_c)``.

    Zero outside ``[0, N·T_c)``.
    """
    c = _code(code)
    t = np.asarray(t, dtype=np.float64)
    j = np.floor(t / chip_s).astype(np.int64)
    inside = (j >= 0) & (j < c.size)
    return np.where(inside, c[np.clip(j, 0, c.size - 1)], 0.0)


def dc_removed(code):
    """Chip values of ``s(t)`` minus its mean over ``[0, T]`` (eq. 9)."""
    c = _code(code)
    return c - c.mean()


def cross_correlation(code_i, code_j, chip_s=1.0):
    """``∫_0^T s_iᵃ(t) s_jᵃ(t) dt`` (eq. 8); zero for orthogonal codes."""
    a, b = dc_removed(code_i), dc_removed(code_j)
    if a.size != b.size:
        raise TraceflowError("codes of different spreading factors")
    return float(np.dot(a, b) * chip_s)


def _bin_edges(n_bins, bin_s, t0_s):
    return t0_s + bin_s * np.arange(n_bins + 1, dtype=np.float64)


def _piecewise_integral(chip_values, chip_s, start_s, edges):
    """∫ over each bin [edges[k], edges[k+1]) of the chip function starting at ``start_s``."""
    n = chip_values.size
    chip_edges = start_s + chip_s * np.arange(n + 1)
    cum = np.concatenate([[0.0], np.cumsum(chip_values * chip_s)])
    # the cumulative integral is piecewise linear in t: interpolate it at the bin edges
    f = np.interp(edges, chip_edges, cum, left=0.0, right=cum[-1])
    return np.diff(f)


def matched_filter(rate, bin_s, code, chip_s, start_s, *, t0_s=0.0):
    """Matched-filter output ``y = −∫ s^a(t − start) λ(t) dt`` over one code period (eq. 13).

    ``rate``: packets/s per bin; ``bin_s``: bin width (s); ``start_s``: time the code starts;
    ``t0_s``: time of the first bin's start.  The code period must lie inside the series.
    """
    rate = np.asarray(rate, dtype=np.float64)
    edges = _bin_edges(rate.size, bin_s, t0_s)
    period = _code(code).size * chip_s
    if start_s < edges[0] - 1e-9 or start_s + period > edges[-1] + 1e-9:
        raise TraceflowError(
            f"code period [{start_s}, {start_s + period}] s is not inside the rate series "
            f"[{edges[0]}, {edges[-1]}] s")
    weights = _piecewise_integral(dc_removed(code), chip_s, start_s, edges)
    return float(-np.dot(weights, rate))


def matched_filter_periods(rate, bin_s, code, chip_s, start_s, *, t0_s=0.0):
    """Matched-filter outputs for every complete code period from ``start_s`` on (one per test)."""
    rate = np.asarray(rate, dtype=np.float64)
    period = _code(code).size * chip_s
    end = t0_s + rate.size * bin_s
    n = int(np.floor((end - start_s) / period + 1e-9))
    return np.array([matched_filter(rate, bin_s, code, chip_s, start_s + k * period, t0_s=t0_s)
                     for k in range(max(n, 0))])


def response_coefficient(y, amplitude):
    """``K = E[y] / A`` (eq. 14) from matched-filter outputs ``y`` of tests with amplitude ``A`` (drops/s)."""
    y = np.asarray(y, dtype=np.float64)
    if y.size == 0:
        raise TraceflowError("no matched-filter outputs (is the run shorter than one code period?)")
    if amplitude <= 0:
        raise TraceflowError("the perturbation amplitude must be positive")
    return float(y.mean() / amplitude)


def eta(rate, bin_s, drop_s, recovery_s, *, baseline_s=1.0, t0_s=0.0):
    """APM degradation ``η(D) = ∫_0^{t_r} (λ(0⁻) − λ(t)) dt`` in packets (eq. 1).

    ``λ(0⁻)`` is the mean rate over ``[drop − baseline, drop)``; the integral runs over
    ``[drop, drop + recovery]`` on the piecewise-constant rate.
    """
    rate = np.asarray(rate, dtype=np.float64)
    edges = _bin_edges(rate.size, bin_s, t0_s)
    if drop_s - baseline_s < edges[0] - 1e-9 or drop_s + recovery_s > edges[-1] + 1e-9:
        raise TraceflowError("APM window is not inside the rate series")
    before = _piecewise_integral(np.ones(1), baseline_s, drop_s - baseline_s, edges)
    lam0 = float(np.dot(before, rate) / baseline_s)
    after = _piecewise_integral(np.ones(1), recovery_s, drop_s, edges)
    return float(lam0 * recovery_s - np.dot(after, rate))


def fair_drop_probabilities(k, rate, total_p, *, mode="absolute"):
    """Per-aggregate drop probabilities ``p_i`` with ``Σ p_i λ_i / λ = p`` (eq. 17).

    ``mode="absolute"``: equal absolute rate decrease, ``K_i λ_i p_i`` equal for all ``i``
    (eqs. 15–16).  ``mode="percentage"``: equal relative decrease, ``K_i p_i`` equal.
    ``k``: response coefficients; ``rate``: arrival rates λ_i (pkt/s); ``total_p``: p(t).
    Raises when a probability would exceed 1 (the target cannot be met fairly).
    """
    k = np.asarray(k, dtype=np.float64)
    lam = np.asarray(rate, dtype=np.float64)
    if k.shape != lam.shape or k.size == 0:
        raise TraceflowError("need one response coefficient per aggregate rate")
    if np.any(k <= 0) or np.any(lam <= 0):
        raise TraceflowError("response coefficients and rates must be positive")
    if not 0 <= total_p <= 1:
        raise TraceflowError(f"total drop probability must be in [0, 1], got {total_p}")
    if mode == "absolute":
        inv = 1.0 / (k * lam)            # p_i = c / (K_i λ_i)
    elif mode == "percentage":
        inv = 1.0 / k                    # p_i = c / K_i
    else:
        raise TraceflowError(f"unknown fairness mode {mode!r} (absolute, percentage)")
    c = total_p * lam.sum() / np.dot(inv, lam)
    p = c * inv
    if np.any(p > 1 + 1e-12):
        raise TraceflowError(f"fair drop probabilities exceed 1: {p.tolist()}")
    return p

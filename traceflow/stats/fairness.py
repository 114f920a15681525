"""Fairness measures for bandwidth shares.

``jain`` is the index of Chiu and Jain used by the lifetime/RTT classification paper
(Wu & Nikolaidis 2002, section 3); ``maxmin_share`` is the max-min fair allocation that
FairShare (its Appendix) recomputes from the measured demands; ``throughput_ratio`` is the
larger-over-smaller ratio of its Figure 1.
"""
import numpy as np

from traceflow.errors import TraceflowError


def jain(x):
    """Jain's fairness index ``(Σx)² / (N Σx²)`` of non-negative allocations ``x``.

    1 when all are equal, 1/N when one flow takes everything.  An all-zero vector counts as fair
    (nobody is favoured); an empty one is an error.
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    if x.size == 0:
        raise TraceflowError("jain: no allocations given")
    if np.any(x < 0) or not np.all(np.isfinite(x)):
        raise TraceflowError("jain: allocations must be finite and non-negative")
    sq = float(np.sum(x * x))
    if sq == 0.0:
        return 1.0
    return float(np.sum(x) ** 2 / (x.size * sq))


def maxmin_share(demand, capacity):
    """Max-min fair shares of ``capacity`` among flows with the given ``demand`` (same units).

    Progressive filling: every flow gets ``min(demand, level)`` where the water level is chosen so
    that the shares sum to ``capacity`` (or every demand is met).  Unused allocation of a flow
    with low demand is thereby redistributed to the others, as FairShare's ``maxmin`` requires.
    """
    d = np.asarray(demand, dtype=np.float64).ravel()
    if np.any(d < 0) or capacity < 0:
        raise TraceflowError("maxmin_share: demands and capacity must be non-negative")
    if d.size == 0:
        return d
    if d.sum() <= capacity:
        return d.copy()
    order = np.sort(d)
    remaining, left = float(capacity), d.size
    level = 0.0
    for v in order:
        fair = remaining / left
        if v >= fair:
            level = fair
            break
        remaining -= v
        left -= 1
    return np.minimum(d, level)


def throughput_ratio(a, b):
    """Ratio of the larger to the smaller of two throughputs (inf when the smaller is 0)."""
    lo, hi = sorted((float(a), float(b)))
    return np.inf if lo <= 0 else hi / lo


def share_error(achieved, weights):
    """Largest relative deviation of achieved bandwidth shares from the weight proportions."""
    achieved = np.asarray(achieved, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    target = weights / weights.sum()
    got = achieved / achieved.sum()
    return float(np.max(np.abs(got - target) / target))

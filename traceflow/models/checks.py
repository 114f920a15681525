"""What a fitted model can be trusted for: refusal of a model that cannot be filled, the capacity
estimate's warnings, and the quality flags of each estimate (:mod:`traceflow.stats.quality`).

Computed from the :class:`~traceflow.models.model.Model` itself, so ``fit``, ``replay`` and the
report judge a model the same way whether it was just fitted or loaded from JSON.
"""
from __future__ import annotations

import math

from traceflow.errors import TraceflowError
from traceflow.models.fit import MIN_TAIL
from traceflow.stats.hurst import disagreement
from traceflow.stats.quality import Quality, hurst_quality, levels_quality, tail_quality

#: complete TCP transfers a replayable model needs: with fewer, the size distribution is a handful
#: of points and the inter-arrival fit (which needs 10 gaps) is impossible
MIN_TRANSFERS = 10
#: peak rates at 10 ms / 100 ms / 1 s further apart than this factor: no bin saw the link full
CAPACITY_SPREAD = 4.0


def require_replayable(model, name=None):
    """Raise a one-line :class:`TraceflowError` when ``model`` lacks something a replay needs
    (flow arrivals, enough complete transfers for a size distribution, a link rate)."""
    missing = []
    n_transfers = model.sizes.n if model.sizes is not None else 0
    if n_transfers < MIN_TRANSFERS:
        missing.append(f"{n_transfers} complete TCP transfer{'s' * (n_transfers != 1)} (SYN to "
                       f"FIN/RST; a size distribution needs {MIN_TRANSFERS})")
    if model.arrivals.n_flows < 2:
        missing.append(f"{model.arrivals.n_flows} TCP connection start"
                       f"{'s' * (model.arrivals.n_flows != 1)} (an arrival process needs 2)")
    if not (math.isfinite(model.link.capacity_bps) and model.link.capacity_bps > 0):
        missing.append("no data packets to estimate the link capacity from")
    if missing:
        raise TraceflowError("cannot fit a replayable model: " + "; ".join(missing), path=name)


def capacity_warnings(link):
    """Warnings about an estimated capacity: the peak rates at 10 ms / 100 ms / 1 s disagree by more
    than :data:`CAPACITY_SPREAD` times, so no bin width saw the link saturated and the estimate is
    a guess (a lower bound at its own scale). Empty for a given capacity."""
    peaks = {k: v for k, v in (link.peak_rate_bps or {}).items() if v and v > 0}
    if link.method.startswith("given") or len(peaks) < 2:
        return []
    spread = max(peaks.values()) / min(peaks.values())
    if spread <= CAPACITY_SPREAD:
        return []
    from traceflow import units

    listed = " / ".join(f"{units.rate(v)} ({k})" for k, v in peaks.items())
    return [f"capacity {units.rate(link.capacity_bps)} is a guess: the peak rates {listed} "
            f"differ {spread:.0f}x, so no bin saw the link saturated; give --capacity RATE "
            "(e.g. --capacity 10Mbit) if you know the bottleneck"]


def model_quality(model):
    """``{estimate: Quality}`` for the model's capacity, size and lifetime tails, Hurst estimates
    and level table (only the estimates the model has)."""
    out = {}
    cap = Quality()
    for message in capacity_warnings(model.link):
        cap.add("guess", message)
    out["capacity"] = cap
    for name, dist in (("size_tail", model.sizes), ("lifetime_tail", model.lifetimes)):
        if dist is not None and dist.tail is not None:
            out[name] = tail_quality(dist.tail.n_tail, dist.tail.ks)
        elif dist is not None:
            what = "transfer sizes" if name == "size_tail" else "lifetimes"
            out[name] = Quality().add(
                "not_fitted", f"no Pareto tail fitted to the {dist.n} {what} (fewer than "
                              f"{2 * MIN_TAIL} positive values, or none fits): the replay draws "
                              "only from the measured values, never beyond the largest")
    n = int(round(model.span.duration_s / model.series_bin_s)) if model.series_bin_s else 0
    for method, H in (model.hurst or {}).items():
        out[f"hurst_{method}"] = hurst_quality(H, n, method)
    spread = disagreement(model.hurst or {})
    if spread:
        out["hurst"] = Quality().add("disagree", spread)
    if model.levels is not None:
        table = model.levels.condprob
        transitions = int(sum(sum(row[:-1]) for row in table))
        # a level no block falls on has no transition from or to it
        empty = sum(1 for k in range(model.levels.h)
                    if not sum(table[k]) and not sum(row[k] for row in table))
        out["levels"] = levels_quality(transitions, model.levels.h,
                                       empty=empty if model.levels.mapping == "quantile" else 0)
    return out

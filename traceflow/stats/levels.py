"""Conditional traffic levels: the level map L onto [1, h], the CondProb table, Pr{L2|L1}, E[L2|L1].

Park & Tuan (2000), sec. 2.2 and 3.3. A series X_i (traffic per block of T seconds) is mapped by a
monotone map L: R+ -> {1, ..., h} to levels x_i = L(X_i). Consecutive pairs (L1, L2) = (x_i, x_{i+1})
are counted in the h x (h+1) table ``CondProb``:

- ``CondProb[l][l']`` (columns 1..h) = number of transitions from level l to level l';
- ``CondProb[l][h+1]`` (the last column) = h_l, the number of blocks at level l that have been
  followed by a block, i.e. the row sum of the first h columns. Pr{L2 = l' | L1 = l} = CondProb[l][l'] / h_l.

This is exactly the table the online SSC module keeps (``sim/ssc.pxi``), so an offline table can be
handed to a short connection as its a-priori table (the paper's Case I).

Maps (``method``):

- ``"quantile"`` (default for analysis): edges at the k/h empirical quantiles of X, so the marginal of
  L is (close to) uniform; robust to the heavy-tailed marginals of network traffic. A value equal to
  an edge takes the lower level, so tied values (e.g. the empty blocks of a bursty link) share the
  lowest level they reach instead of being pushed up.
- ``"linear"``: h equal-width bins between ``lo`` and ``hi`` (default the sample min and max):
  L = 1 + floor(h (X - lo) / (hi - lo)), clipped to [1, h] -- the map the online SSC module uses
  (with running or fixed bounds).

``reverse=True`` gives the paper's reversed meaning used by TCP-MT (sec. 3.3): when X is a
connection's *own* throughput, high X means much available bandwidth, i.e. *low* contention, so the
contention level is h + 1 - L(X) (level 1 = least contended). For aggregate link traffic (Fig. 1)
the map is used unreversed (level 1 = low traffic).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from traceflow.errors import TraceflowError

__all__ = ["level_map", "condprob_table", "conditional_probabilities",
           "conditional_mean", "predictability", "LevelAnalysis", "analyze_levels"]


def level_map(x, h=8, *, method="quantile", reverse=False, lo=None, hi=None):
    """Map values ``x`` to integer levels 1..h (int64 array); see the module doc for the maps.

    Returns ``(levels, edges)`` where ``edges`` are the h - 1 inner bin boundaries in units of x.
    """
    x = np.asarray(x, dtype=np.float64)
    if h < 2:
        raise TraceflowError(f"the number of levels must be >= 2, got {h}")
    if x.size == 0:
        raise TraceflowError("no data to map onto levels")
    if not np.all(np.isfinite(x)):
        raise TraceflowError("values must be finite to map onto levels")
    if method == "quantile":
        edges = np.quantile(x, np.arange(1, h) / h)
    elif method == "linear":
        lo = float(x.min()) if lo is None else float(lo)
        hi = float(x.max()) if hi is None else float(hi)
        if hi <= lo:
            hi = lo + 1.0  # constant series: every value lands on level 1
        edges = lo + (hi - lo) * np.arange(1, h) / h
    else:
        raise TraceflowError(f"unknown level map {method!r} (use quantile or linear)")
    # linear: floor (a value on an edge goes up, the maximum lands on level h); quantile: ties go down
    side = "right" if method == "linear" else "left"
    levels = 1 + np.searchsorted(edges, x, side=side).astype(np.int64)
    if reverse:
        levels = h + 1 - levels
    return levels, edges


def condprob_table(levels, h=8):
    """The paper's h x (h+1) CondProb count table from a level sequence (int64 counts).

    Row l-1 holds L1 = l; column l'-1 the count of transitions l -> l'; column h the row total h_l.
    """
    lv = np.asarray(levels, dtype=np.int64)
    if lv.size and (lv.min() < 1 or lv.max() > h):
        raise TraceflowError(f"levels must lie in [1, {h}]")
    table = np.zeros((h, h + 1), dtype=np.int64)
    if lv.size > 1:
        pairs = (lv[:-1] - 1) * h + (lv[1:] - 1)
        table[:, :h] = np.bincount(pairs, minlength=h * h).reshape(h, h)
    table[:, h] = table[:, :h].sum(axis=1)
    return table


def conditional_probabilities(table):
    """Pr{L2 = l' | L1 = l} as an h x h float array; rows with no observations are NaN."""
    table = np.asarray(table, dtype=np.float64)
    h = table.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        return table[:, :h] / table[:, h:h + 1]


def conditional_mean(table):
    """E[L2 | L1 = l] for l = 1..h (NaN where level l was never followed by a block)."""
    p = conditional_probabilities(table)
    return p @ np.arange(1, p.shape[0] + 1, dtype=np.float64)


def _entropy(p):
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


def predictability(table):
    """How much L1 tells about L2, from a CondProb table.

    Keys: ``mutual_information`` I(L1; L2) in bits (plug-in), ``mi_normalized`` = I / H(L2),
    ``tv_distance`` = sum_l Pr{L1=l} * TV(Pr{L2|L1=l}, Pr{L2}) (0 = conditioning changes nothing),
    ``diagonal_mass`` = Pr{L2 = L1} and ``diagonal_mass_independent`` = sum_l Pr{L1=l} Pr{L2=l}
    (what independence would give), ``r2`` = 1 - E[(L2 - E[L2|L1])^2] / Var(L2) (variance explained
    by the conditional-mean predictor), ``chi2_pvalue`` of the test of independence (scipy) and
    ``pairs`` (number of transitions counted).
    """
    table = np.asarray(table, dtype=np.float64)
    h = table.shape[0]
    counts = table[:, :h]
    n = counts.sum()
    out = {"pairs": int(n)}
    if n == 0:
        return out | {k: float("nan") for k in ("mutual_information", "mi_normalized", "tv_distance",
                                                "diagonal_mass", "diagonal_mass_independent", "r2",
                                                "chi2_pvalue")}
    joint = counts / n
    p1, p2 = joint.sum(axis=1), joint.sum(axis=0)
    mi = _entropy(p1) + _entropy(p2) - _entropy(joint.ravel())
    h2 = _entropy(p2)
    cond = conditional_probabilities(table)
    rows = p1 > 0
    tv = float((p1[rows] * 0.5 * np.abs(cond[rows] - p2).sum(axis=1)).sum())
    lv = np.arange(1, h + 1, dtype=np.float64)
    mean2 = float((p2 * lv).sum())
    var2 = float((p2 * (lv - mean2) ** 2).sum())
    cmean = conditional_mean(table)
    resid = float((joint * (lv[None, :] - np.nan_to_num(cmean)[:, None]) ** 2).sum())
    # chi-square on the observed rows/columns only (all-zero rows or columns are undefined).
    sub = counts[rows][:, p2 > 0]
    pval = float(stats.chi2_contingency(sub)[1]) if min(sub.shape) > 1 else float("nan")
    return out | {
        "mutual_information": max(mi, 0.0),
        "mi_normalized": max(mi, 0.0) / h2 if h2 > 0 else float("nan"),
        "tv_distance": tv,
        "diagonal_mass": float(np.trace(joint)),
        "diagonal_mass_independent": float((p1 * p2).sum()),
        "r2": 1.0 - resid / var2 if var2 > 0 else float("nan"),
        "chi2_pvalue": pval,
    }


@dataclass
class LevelAnalysis:
    """Result of :func:`analyze_levels`. ``x`` is the block series (units of the input per block)."""

    h: int
    method: str
    reverse: bool
    scale_s: float | None
    x: np.ndarray
    levels: np.ndarray
    edges: np.ndarray
    table: np.ndarray
    prob: np.ndarray = field(init=False)
    cond_mean: np.ndarray = field(init=False)
    marginal: np.ndarray = field(init=False)
    summary: dict = field(init=False)

    def __post_init__(self):
        self.prob = conditional_probabilities(self.table)
        self.cond_mean = conditional_mean(self.table)
        self.marginal = np.bincount(self.levels - 1, minlength=self.h) / max(self.levels.size, 1)
        self.summary = predictability(self.table)

    def quality(self):
        """:func:`traceflow.stats.quality.levels_quality` of the table: too few transitions
        for its h x h cells."""
        from traceflow.stats.quality import levels_quality

        empty = int((self.marginal == 0).sum()) if self.method == "quantile" else 0
        return levels_quality(int(self.table[:, :-1].sum()), self.h,
                              "use fewer --levels or a shorter --scale", empty=empty)

    def to_dict(self):
        """JSON-ready summary (lists; NaN stays NaN for the CLI's JSON cleaner)."""
        return {
            "h": self.h, "map": self.method, "reversed": self.reverse, "scale_s": self.scale_s,
            "blocks": int(self.x.size), "edges": self.edges.tolist(),
            "condprob": self.table.tolist(), "prob": self.prob.tolist(),
            "cond_mean": self.cond_mean.tolist(), "marginal": self.marginal.tolist(),
            "predictability": self.summary, "quality": self.quality().to_dict(),
        }


def analyze_levels(x, h=8, *, method="quantile", reverse=False, scale_s=None, lo=None, hi=None):
    """Level map, CondProb table, Pr{L2|L1}, E[L2|L1] and predictability of a block series ``x``."""
    x = np.asarray(x, dtype=np.float64)
    if x.size < 2:
        raise TraceflowError(f"need at least 2 blocks for conditional levels, got {x.size}")
    levels, edges = level_map(x, h, method=method, reverse=reverse, lo=lo, hi=hi)
    return LevelAnalysis(h=h, method=method, reverse=reverse, scale_s=scale_s, x=x, levels=levels,
                         edges=edges, table=condprob_table(levels, h))

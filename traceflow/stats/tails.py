"""Heavy-tail fits: Pareto MLE with xmin by minimum KS distance, Hill, the lifetime paper's
chi-square fit, likelihood ratios against lognormal and exponential, bootstrap goodness of fit.

Conventions
-----------
α is the tail (CCDF) exponent of the papers: P(X > x) = (xmin/x)^α for x ≥ xmin. (The ``powerlaw``
package reports the density exponent, which is α + 1.)

β is the lifetime paper's location parameter (Wu & Nikolaidis, footnote 4 and Table 2): the Pareto
P(X ≤ x) = 1 − (β/x)^α of the *whole* population whose tail above the threshold matches the data,
so P(X > xmin) = n_tail/n = (β/xmin)^α, i.e. β = xmin·(n_tail/n)^{1/α}.

Discrete data (all values integers, e.g. packet counts, byte counts) are fitted with the
continuous formulas on the continuity-corrected values x − ½ (Clauset, Shalizi & Newman 2009,
eq. 3.7: α̂ = n / Σ ln((x_i − ½)/(xmin − ½))), for the MLE, the KS distance, the likelihood ratios
and the bootstrap (whose synthetic samples are then rounded back to integers): the model is "X is
a continuous Pareto rounded to the nearest integer", and β is that continuous Pareto's location.
Reported xmin and thresholds are in the original units. ``discrete=None`` detects integer data.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special, stats

from traceflow.errors import TraceflowError


def _clean(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    return x[x > 0]


def _is_discrete(x) -> bool:
    return bool(x.size) and bool(np.all(x == np.round(x)))


# ---------------------------------------------------------------------------------------------
@dataclass
class ParetoFit:
    """Pareto tail fit above ``xmin``.

    ``ks_curve`` maps candidate xmins to (α, KS distance) — the xmin-search plot; ``ccdf`` holds
    log-log plot data: ``x``, ``p`` (empirical P(X ≥ x)) and ``fit_x``, ``fit_p`` (the fitted tail
    scaled by n_tail/n), thinned to ≤ 2000 points.
    """

    alpha: float
    xmin: float
    n: int
    n_tail: int
    ks: float
    discrete: bool
    alpha_se: float
    ks_curve: dict = field(default_factory=dict, repr=False)
    ccdf: dict = field(default_factory=dict, repr=False)

    @property
    def beta(self) -> float:
        """The lifetime paper's location parameter β = xmin·(n_tail/n)^{1/α} (discrete: (xmin − ½)·…,
        the location of the continuous Pareto whose rounded values the data follow)."""
        s = 0.5 if self.discrete else 0.0
        return (self.xmin - s) * (self.n_tail / self.n) ** (1.0 / self.alpha)

    def summary(self) -> dict:
        return {"alpha": self.alpha, "beta": self.beta, "xmin": self.xmin, "n": self.n,
                "n_tail": self.n_tail, "ks": self.ks, "alpha_se": self.alpha_se,
                "discrete": self.discrete}


def _search_xmin(x: np.ndarray, shift: float, cand: np.ndarray, ymin=None, chunk_elems=1 << 16):
    """α and KS distance for candidate start indices ``cand`` into sorted ``x`` (vectorized).

    With y = x − shift: α_i = n_i / (Σ_{j≥i} ln y_j − n_i ln y_i) from reverse cumulative sums of
    logs (``ymin`` overrides y_i for a single fixed threshold). The KS distance compares the
    empirical CDF with the fitted one at the ends of each group of equal values — just below the
    group with F(y), at its top with F(y + 2·shift) (for rounded data: P(X ≤ x) = F_cont(x + ½)) —
    for many candidates at once on a 2-D (candidate × group end) grid, chunked to bound memory.
    Only group ends are evaluated (the empirical CDF is flat inside a group), so a candidate costs
    O(distinct values in its tail), not O(values): sizes and capture-repeated lifetimes have few.
    """
    n = x.size
    logs = np.log(x - shift)
    logs_hi = np.log(x + shift) if shift else logs
    is_first = np.r_[True, x[1:] != x[:-1]]
    is_last = np.r_[x[1:] != x[:-1], True]
    tail_sum = np.concatenate([np.cumsum(logs[::-1])[::-1], [0.0]])
    n_t = (n - cand).astype(np.float64)
    log_min = logs[cand] if ymin is None else np.full(cand.size, np.log(ymin))
    alpha = n_t / (tail_sum[cand] - n_t * log_min)
    ks = np.empty(cand.size)
    ends = np.flatnonzero(is_first | is_last)     # the points where the KS distance can peak
    first_e, last_e = is_first[ends], is_last[ends]
    logs_e, logs_hi_e = logs[ends], logs_hi[ends]
    start = np.searchsorted(ends, cand)           # a candidate's first group end
    per = max(1, chunk_elems // max(1, ends.size - int(start.min())))
    for s in range(0, cand.size, per):  # chunks of candidates, each fully vectorized
        c, e0 = cand[s: s + per], start[s: s + per]
        nt = (n - c)[:, None].astype(np.float64)
        a = alpha[s: s + per, None]
        lm = log_min[s: s + per, None]
        width = ends.size - int(e0.min())
        step = max(1, chunk_elems // c.size)   # and of group ends (a long tail of distinct
        best = np.zeros(c.size)                # values: ~40 MB of temporaries in one piece)
        for j in range(0, width, step):
            k = e0[:, None] + np.arange(j, min(j + step, width))[None, :]
            valid = k < ends.size
            k = np.minimum(k, ends.size - 1)
            r = ends[k] - c[:, None]              # rank of the group end in the tail
            f_lo = 1.0 - np.exp(-a * (logs_e[k] - lm))
            f_hi = 1.0 - np.exp(-a * (logs_hi_e[k] - lm)) if shift else f_lo  # continuous: same
            d_lo = np.abs(r / nt - f_lo)
            d_hi = np.abs((r + 1) / nt - f_hi)
            d = np.maximum(np.where(valid & first_e[k], d_lo, 0.0),
                           np.where(valid & last_e[k], d_hi, 0.0))
            np.maximum(best, d.max(axis=1), out=best)
        ks[s: s + per] = best
    return alpha, ks


def fit_pareto(x, *, xmin=None, discrete=None, min_tail=50, max_candidates=400) -> ParetoFit:
    """Pareto MLE above ``xmin``; when ``xmin`` is None it minimizes the KS distance.

    The search covers every distinct value leaving ≥ ``min_tail`` points in the tail: a grid of
    ``max_candidates`` rank quantiles first, then every distinct value between the grid neighbours
    of the best one, so the result equals the exhaustive search unless the KS curve has several
    separated near-equal minima.

    Parameters
    ----------
    x : array_like of float
        The sample (e.g. sizes in bytes, durations in s); non-finite and non-positive values are
        dropped.
    xmin : float, optional
        Where the tail starts (the unit of ``x``); None: chosen by KS distance.
    discrete : bool, optional
        Fit integer data with the continuity correction x − ½ (module docstring); None: detect
        integer data.
    min_tail : int, default 50
        Fewest points a candidate ``xmin`` must leave in the tail.
    max_candidates : int, default 400
        Size of the first grid of candidate ``xmin``.

    Returns
    -------
    ParetoFit
        ``alpha`` (dimensionless), ``xmin`` (unit of ``x``), ``n``, ``n_tail``, ``ks``, the KS curve
        and CCDF plot data.

    Raises
    ------
    TraceflowError
        Too few positive values for a tail fit.

    Examples
    --------
    >>> import numpy as np
    >>> from traceflow.stats.tails import fit_pareto
    >>> fit = fit_pareto(np.random.default_rng(1).pareto(1.2, 5000) + 1)
    >>> round(fit.alpha, 1)
    """
    x = _clean(x)
    discrete = _is_discrete(x) if discrete is None else bool(discrete)
    if x.size < max(10, min_tail if xmin is None else 2):
        raise TraceflowError(f"need at least {max(10, min_tail)} positive values for a tail fit, got {x.size}")
    x.sort()
    shift = 0.5 if discrete else 0.0
    if discrete and x[0] - shift <= 0:
        raise TraceflowError("discrete tail fit needs values ≥ 1")
    n = x.size
    first = np.flatnonzero(np.r_[True, x[1:] != x[:-1]])  # first index of each distinct value
    if xmin is not None:
        # a given threshold is the xmin itself (α = n_t / Σ ln(y/(t − s))), not the first value above
        t = float(xmin)
        if t - shift <= 0:
            raise TraceflowError(f"threshold must be > {shift:g}, got {xmin}")
        i = int(np.searchsorted(x, t, side="left"))
        if n - i < 2:
            raise TraceflowError(f"fewer than 2 values ≥ threshold {xmin}")
        a_arr, ks_arr = _search_xmin(x, shift, np.array([i]), ymin=t - shift)
        a, ks, nt = float(a_arr[0]), float(ks_arr[0]), n - i
        fit = ParetoFit(alpha=float(a), xmin=t, n=int(n), n_tail=int(nt), ks=ks, discrete=discrete,
                        alpha_se=float(a / np.sqrt(nt)),
                        ks_curve={"xmin": np.array([t]), "alpha": np.array([a]), "ks": np.array([ks])})
        fit.ccdf = ccdf_data(x, fit)
        return fit
    first = first[n - first >= max(2, min_tail)]
    if first.size == 0:
        raise TraceflowError(f"fewer than {min_tail} values in any tail")
    if first.size > max_candidates:
        grid = first[np.unique(np.linspace(0, first.size - 1, max_candidates).astype(int))]
        a_g, k_g = _search_xmin(x, shift, grid)
        b = int(np.nanargmin(k_g))
        lo = grid[max(b - 1, 0)]
        hi = grid[min(b + 1, grid.size - 1)]
        fine = first[(first >= lo) & (first <= hi)]
        a_f, k_f = _search_xmin(x, shift, fine)
        cand = np.concatenate([grid, fine])
        alpha, ks = np.concatenate([a_g, a_f]), np.concatenate([k_g, k_f])
        order = np.argsort(cand, kind="stable")
        cand, alpha, ks = cand[order], alpha[order], ks[order]
        keep = np.r_[True, cand[1:] != cand[:-1]]
        cand, alpha, ks = cand[keep], alpha[keep], ks[keep]
    else:
        cand = first
        alpha, ks = _search_xmin(x, shift, cand)
    best = int(np.nanargmin(ks))
    i = int(cand[best])
    a = float(alpha[best])
    n_tail = n - i
    fit = ParetoFit(alpha=a, xmin=float(x[i]), n=int(n), n_tail=int(n_tail), ks=float(ks[best]),
                    discrete=discrete, alpha_se=a / np.sqrt(n_tail),
                    ks_curve={"xmin": x[cand], "alpha": alpha, "ks": ks})
    fit.ccdf = ccdf_data(x, fit)
    return fit


def ccdf_data(x, fit: ParetoFit | None = None, max_points=2000) -> dict:
    """Log-log CCDF plot data: ``x`` distinct positive values, ``p`` = P(X ≥ x) (thinned to
    ``max_points`` unless None); with a fit also
    ``fit_x``, ``fit_p`` = (n_tail/n)·((x − s)/(xmin − s))^−α on x ≥ xmin (s = ½ if discrete)."""
    x = np.sort(_clean(x))
    n = x.size
    first = np.flatnonzero(np.r_[True, x[1:] != x[:-1]]) if n else np.zeros(0, dtype=np.intp)
    vals, p = x[first], (n - first) / n
    if max_points is not None and vals.size > max_points:  # thin evenly in log x, keep extremes
        pick = np.unique(np.searchsorted(vals, np.geomspace(vals[0], vals[-1], max_points)))
        pick = pick[pick < vals.size]
        vals, p = vals[pick], p[pick]
    out = {"x": vals, "p": p}
    if fit is not None:
        s = 0.5 if fit.discrete else 0.0
        fx = np.geomspace(fit.xmin, x[-1], 200)
        out["fit_x"] = fx
        out["fit_p"] = fit.n_tail / fit.n * ((fx - s) / (fit.xmin - s)) ** (-fit.alpha)
    return out


# ---------------------------------------------------------------------------------------------
@dataclass
class HillResult:
    """Hill estimates α_k over the k largest values (plot: ``k``, ``alpha``) and the value at
    ``k`` (by default the tail size of the Pareto fit)."""

    k: int
    alpha: float
    se: float
    ks: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    alphas: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))

    def summary(self) -> dict:
        return {"k": self.k, "alpha": self.alpha, "se": self.se}


def hill(x, k=None, *, max_points=2000) -> HillResult:
    """Hill estimator α_k = [ (1/k) Σ_{i≤k} ln x_(i) − ln x_(k+1) ]^{-1} for all k (cumsum)."""
    x = np.sort(_clean(x))[::-1]
    n = x.size
    if n < 3:
        raise TraceflowError("need at least 3 positive values for the Hill estimator")
    logs = np.log(x)
    kk = np.arange(1, n)
    h = np.cumsum(logs)[:-1] / kk - logs[1:]
    with np.errstate(divide="ignore"):
        alphas = np.where(h > 0, 1.0 / np.where(h > 0, h, 1.0), np.inf)
    if k is None:
        k = max(1, n // 10)
    k = int(min(max(k, 1), n - 1))
    a = float(alphas[k - 1])
    pick = np.unique(np.round(np.geomspace(1, n - 1, min(max_points, n - 1))).astype(int)) - 1
    return HillResult(k, a, a / np.sqrt(k), kk[pick], alphas[pick])


# ---------------------------------------------------------------------------------------------
@dataclass
class ChiSquareFit:
    """The lifetime paper's fit: unconditional Pareto (α, β) fitted by minimum Pearson χ² to the
    frequencies of values ≥ ``threshold`` over all ``n`` observations.

    plot: ``edges`` (bin edges, last bin open), ``observed``, ``expected`` counts.
    """

    alpha: float
    beta: float
    threshold: float
    n: int
    n_tail: int
    chi2: float
    dof: int
    p_value: float
    plot: dict = field(default_factory=dict, repr=False)

    def summary(self) -> dict:
        return {"alpha": self.alpha, "beta": self.beta, "threshold": self.threshold,
                "n_tail": self.n_tail, "chi2": self.chi2, "dof": self.dof, "p_value": self.p_value}


def chi_square_fit(x, threshold, *, bins=None, min_expected=5, discrete=None) -> ChiSquareFit:
    """Fit P(X ≤ x) = 1 − (β/x)^α to the values ≥ ``threshold`` by minimum Pearson χ².

    As in Wu & Nikolaidis (Table 2): the frequencies are over *all* observations (short flows
    included), so β is the location of the whole-population Pareto whose tail matches. Bins are
    log-spaced from the threshold (``bins`` edges; default ~2·n_tail^{0.4}), merged until every
    bin expects ≥ ``min_expected`` under the starting fit; the last bin is open [e, ∞).
    dof = bins − 2 (α and β estimated).
    """
    x = _clean(x)
    n = x.size
    discrete = _is_discrete(x) if discrete is None else bool(discrete)
    s = 0.5 if discrete else 0.0
    t = float(threshold)
    tail = np.sort(x[x >= t])
    if tail.size < 10:
        raise TraceflowError(f"need at least 10 values ≥ threshold {threshold} for the chi-square fit")
    a0 = tail.size / np.sum(np.log((tail - s) / (t - s)))
    nb = int(bins) if bins else max(4, int(2 * tail.size ** 0.4))
    edges = np.geomspace(t, tail[-1] * (1 + 1e-9), nb + 1)[:-1]
    if discrete:
        edges = np.unique(np.ceil(edges))  # integer bin edges: bin [e_i, e_{i+1}) holds integers
    # merge bins expecting < min_expected under the MLE start, walking in from the far tail
    sf0 = ((edges - s) / (t - s)) ** -a0
    exp0 = tail.size * (sf0 - np.r_[sf0[1:], 0.0])
    starts, acc = [], 0.0
    for i in range(edges.size - 1, -1, -1):  # ≤ ~100 bins
        acc += exp0[i]
        if acc >= min_expected:
            starts.append(i)
            acc = 0.0
    if not starts:
        raise TraceflowError("too few values above the threshold for a chi-square fit")
    starts[-1] = 0  # a short remainder next to the threshold joins its neighbour
    edges = edges[starts[::-1]]
    observed = np.diff(np.r_[np.searchsorted(tail, edges, side="left"), tail.size]).astype(np.float64)
    if edges.size < 3:
        raise TraceflowError("too few values above the threshold for a chi-square fit with ≥ 3 bins")
    ue = edges - s

    def expected(params):
        a, logb = params
        b = np.exp(logb)
        sf = (b / ue) ** a
        return n * (sf - np.r_[sf[1:], 0.0])

    def chi2(params):
        e = expected(params)
        if params[0] <= 0 or np.any(e <= 0):
            return np.inf
        return float(np.sum((observed - e) ** 2 / e))

    b0 = (t - s) * (tail.size / n) ** (1 / a0)
    res = optimize.minimize(chi2, [a0, np.log(b0)], method="Nelder-Mead",
                            options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 4000})
    a, logb = res.x
    dof = int(edges.size - 2)
    stat = float(res.fun)
    return ChiSquareFit(float(a), float(np.exp(logb)), t, int(n), int(tail.size), stat, dof,
                        float(stats.chi2.sf(stat, dof)) if dof > 0 else float("nan"),
                        {"edges": edges, "observed": observed, "expected": expected(res.x)})


# ---------------------------------------------------------------------------------------------
def _loglik_pareto(y, ymin, alpha):
    return np.log(alpha / ymin) - (alpha + 1) * np.log(y / ymin)


def _loglik_exponential(y, ymin):
    lam = 1.0 / max(np.mean(y - ymin), 1e-300)
    return np.log(lam) - lam * (y - ymin), {"lambda": float(lam)}


def _loglik_lognormal(y, ymin):
    """Tail-conditional lognormal MLE (numerical) on y ≥ ymin."""
    ly = np.log(y)
    lmin = np.log(ymin)

    def nll(p):
        mu, logsig = p
        sig = np.exp(logsig)
        z = (ly - mu) / sig
        tail = special.log_ndtr(-(lmin - mu) / sig)
        return -np.sum(-0.5 * z * z - np.log(sig) - ly - 0.5 * np.log(2 * np.pi) - tail)

    start = [ly.mean(), np.log(max(ly.std(), 1e-3))]
    res = optimize.minimize(nll, start, method="Nelder-Mead",
                            options={"xatol": 1e-7, "fatol": 1e-9, "maxiter": 4000})
    mu, sig = res.x[0], float(np.exp(res.x[1]))
    z = (ly - mu) / sig
    ll = (-0.5 * z * z - np.log(sig) - ly - 0.5 * np.log(2 * np.pi)
          - special.log_ndtr(-(lmin - mu) / sig))
    return ll, {"mu": float(mu), "sigma": sig}


def likelihood_ratios(x, fit: ParetoFit) -> dict:
    """Vuong-normalized log-likelihood ratios of the Pareto tail against tail-conditional
    lognormal and exponential fits on the same x ≥ xmin.

    For each alternative: ``R`` = Σ (ℓ_pareto − ℓ_alt) (> 0 favours Pareto), ``normalized`` =
    R / (√n σ) with σ the standard deviation of the pointwise differences, ``p`` = two-sided
    p-value erfc(|normalized|/√2) that the sign of R is due to chance (Clauset et al. 2009, §5),
    and ``favours``: "pareto" or the alternative by the sign of R, "inconclusive" when ``p`` >
    :data:`~traceflow.stats.quality.LR_P` (0.1; Clauset et al. trust the sign only below it).
    """
    from traceflow.stats.quality import LR_P

    x = _clean(x)
    s = 0.5 if fit.discrete else 0.0
    y = x[x >= fit.xmin] - s
    ymin = fit.xmin - s
    lp = _loglik_pareto(y, ymin, fit.alpha)
    out = {}
    for name, fn in (("lognormal", _loglik_lognormal), ("exponential", _loglik_exponential)):
        la, params = fn(y, ymin)
        d = lp - la
        R = float(d.sum())
        sd = float(d.std())
        norm = R / (np.sqrt(d.size) * sd) if sd > 0 else 0.0
        p = float(special.erfc(abs(norm) / np.sqrt(2)))
        favours = "inconclusive" if p > LR_P else "pareto" if R > 0 else name
        out[name] = {"R": R, "normalized": norm, "p": p, "favours": favours, **params}
    return out


# ---------------------------------------------------------------------------------------------
def bootstrap_gof(x, fit: ParetoFit, reps: int, *, seed=0, search=True, min_tail=50) -> dict:
    """Clauset et al. semi-parametric bootstrap p-value for the Pareto hypothesis.

    Each replicate draws n values: with probability n_tail/n from the fitted Pareto tail, else
    resampled from the values below xmin; it is refitted the same way (xmin search when
    ``search``), and p = fraction of replicates whose KS distance ≥ the observed one. p < 0.1
    rejects the power law. Seeded: the same ``seed`` gives the same p.
    """
    x = np.sort(_clean(x))
    rng = np.random.default_rng(seed)
    body = x[x < fit.xmin]
    s = 0.5 if fit.discrete else 0.0
    ks = np.empty(int(reps))
    for r in range(int(reps)):  # each replicate is itself a vectorized fit
        n_tail = max(2, rng.binomial(fit.n, fit.n_tail / fit.n)) if body.size else fit.n
        u = rng.random(n_tail)
        tail = (fit.xmin - s) * u ** (-1.0 / fit.alpha) + s
        if fit.discrete:
            tail = np.floor(tail + 0.5)
        sample = np.concatenate([tail, rng.choice(body, fit.n - n_tail) if body.size else []])
        refit = fit_pareto(sample, xmin=None if search else fit.xmin, discrete=fit.discrete,
                           min_tail=min_tail)
        ks[r] = refit.ks
    return {"reps": int(reps), "seed": seed, "p": float(np.mean(ks >= fit.ks))}


# ---------------------------------------------------------------------------------------------
@dataclass
class TailReport:
    """Everything ``traceflow tail`` reports for one column."""

    pareto: ParetoFit
    hill: HillResult
    chi2: ChiSquareFit | None
    lr: dict
    bootstrap: dict | None = None
    dropped: int = 0

    def quality(self):
        """:func:`traceflow.stats.quality.tail_quality` of the Pareto fit: too few tail points,
        rejected by its KS or bootstrap test, an alternative preferred."""
        from traceflow.stats.quality import tail_quality

        return tail_quality(self.pareto.n_tail, self.pareto.ks,
                            bootstrap_p=(self.bootstrap or {}).get("p"), lr=self.lr)

    def summary(self) -> dict:
        out = self.pareto.summary()
        out["hill"] = self.hill.summary()
        out["chi2"] = self.chi2.summary() if self.chi2 else None
        out["lr"] = self.lr
        if self.bootstrap is not None:
            out["bootstrap"] = self.bootstrap
        out["dropped_nonpositive"] = self.dropped
        out["quality"] = self.quality().to_dict()
        return out


def analyze(x, *, threshold=None, bootstrap=0, seed=0, discrete=None, min_tail=50) -> TailReport:
    """Pareto fit (xmin by KS, or ``threshold``), Hill at k = n_tail, chi-square at the threshold
    (or at xmin), likelihood ratios, and an optional bootstrap p-value with ``bootstrap`` reps."""
    raw = np.asarray(x, dtype=np.float64).ravel()
    clean = _clean(raw)
    dropped = int(raw.size - clean.size)
    fit = fit_pareto(clean, xmin=threshold, discrete=discrete, min_tail=min_tail)
    h = hill(clean, k=fit.n_tail)
    try:
        chi = chi_square_fit(clean, threshold if threshold is not None else fit.xmin,
                             discrete=fit.discrete)
    except TraceflowError:
        chi = None  # too few tail values for ≥ 3 bins: the other fits still stand
    lr = likelihood_ratios(clean, fit)
    boot = (bootstrap_gof(clean, fit, bootstrap, seed=seed, search=threshold is None,
                          min_tail=min_tail) if bootstrap else None)
    return TailReport(fit, h, chi, lr, boot, dropped)

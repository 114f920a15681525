"""Hurst-exponent estimators for a 1-D series (counts or bytes per bin, or any stationary signal).

Every estimator is deterministic, vectorized NumPy, and returns a :class:`HurstResult` with the
estimate ``H``, a confidence interval ``ci`` where the method has one, the ``scales`` it fitted
over, and ``plot`` arrays for the method's diagnostic plot (keys listed per function; ``x``/``y``
are always the plotted points and ``fit_x``/``fit_y`` the fitted line, in the plot's own axes).

Methods (``METHODS``):

``vt``           variance-time (aggregated variance), with the sample-mean bias correction exact for fGn
``rs``           rescaled range (R/S), pox plot, Anis–Lloyd–Peters small-sample correction
``wavelet``      Abry–Veitch logscale diagram, Daubechies wavelet, weighted regression, 95 % CI
``whittle``      Robinson's local (semiparametric) Whittle on the lowest n^0.65 frequencies, 95 % CI
``whittle_fgn``  Whittle maximum likelihood for exact fGn over all frequencies (Paxson's spectral
                 density), 95 % CI — efficient on fGn, but biased on real traffic whose high
                 frequencies are not fGn-like, hence not a default method
``dfa``          detrended fluctuation analysis (linear detrending, DFA-1)
``periodogram``  log-periodogram (GPH) regression on the lowest n^0.6 Fourier frequencies

``estimate(x, methods)`` runs several (default: all but ``whittle_fgn``) and flags disagreement
(a hint of non-stationarity).

The spectral methods (``whittle``, ``whittle_fgn``, ``periodogram``) read the periodogram of a
series of up to :data:`EXACT_FFT_POINTS` points whole; a longer one's leading part of the
longest length with no prime factor above 97 (8 points fewer of a 16x dev10m capture's 486,188
bins, 32 of 64x's 1,944,752), reported as ``points``. The FFT of a length with a large prime
factor (486,188 = 4 x 121,547) takes Bluestein's detour through over twice its length: NumPy's
took 70 MB for a moment at 486,188 points and 280 MB at 1,944,752, against 12 and 45 MB at the
lengths read (its FFT does a length whose prime factors are at most its square root directly).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pywt
from scipy import optimize, special

from traceflow.errors import TraceflowError

METHODS = ("vt", "rs", "wavelet", "whittle", "whittle_fgn", "dfa", "periodogram")
DEFAULT_METHODS = ("vt", "rs", "wavelet", "whittle", "dfa", "periodogram")
#: estimators disagreeing by more than this (max − min H) raise the non-stationarity warning
DISAGREEMENT_MARGIN = 0.15
_Z95 = 1.959963984540054
#: series up to this many points (21.8 min of 10 ms bins): the spectral methods' periodogram is
#: of every point (the FFT's working memory stays under ~20 MB whatever the length's factors)
EXACT_FFT_POINTS = 1 << 17
#: points of the block walks R/S holds at a time (512 KB)
_WALK_POINTS = 1 << 16
#: the primes a longer series' spectral part may have as factors (see the module docstring)
_FFT_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73,
               79, 83, 89, 97)


@dataclass
class HurstResult:
    """One estimate. ``scales`` are in samples (block sizes, box sizes, 2^octave) or, for the
    spectral methods, the Fourier frequencies used (radians per sample)."""

    method: str
    H: float
    ci: tuple[float, float] | None = None
    scales: np.ndarray = field(default_factory=lambda: np.zeros(0))
    plot: dict = field(default_factory=dict, repr=False)
    extra: dict = field(default_factory=dict)

    def summary(self) -> dict:
        """JSON-ready: H, ci, scale range, extras (no plot arrays)."""
        out = {"H": self.H}
        if self.ci is not None:
            out["ci"] = [self.ci[0], self.ci[1]]
        if len(self.scales):
            out["scale_range"] = [float(np.min(self.scales)), float(np.max(self.scales))]
        out.update(self.extra)
        return out


def _prepare(x, min_n=64) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64).ravel()
    if x.size < min_n:
        raise TraceflowError(f"need at least {min_n} samples for a Hurst estimate, got {x.size}")
    if not np.all(np.isfinite(x)):
        raise TraceflowError("series contains NaN or infinite values")
    if np.ptp(x) == 0:
        raise TraceflowError("series is constant: the Hurst exponent is undefined")
    return x


def _log_scales(lo: int, hi: int, count: int) -> np.ndarray:
    return np.unique(np.round(np.geomspace(lo, hi, count)).astype(np.int64))


def _running_sum(v):
    """``[0, v0, v0 + v1, ...]`` (n + 1 values), the cumulative sum written in place: no
    temporary of the series' size (1.44 M points, a 16x alpha1.35 capture's 10 ms series, are
    11.5 MB each)."""
    out = np.empty(v.size + 1)
    out[0] = 0.0
    np.cumsum(v, out=out[1:])
    return out


def _line(xs, ys, w=None):
    """Least-squares slope, intercept (optionally weighted)."""
    slope, intercept = np.polyfit(xs, ys, 1, w=None if w is None else np.sqrt(w))
    return float(slope), float(intercept)


# ---------------------------------------------------------------------------------------------
def variance_time(x, *, m_min=1, min_blocks=10, points=24) -> HurstResult:
    """Aggregated variance: Var(X^(m)) ~ m^{2H−2}.

    The sample variance of k = n/m block means is biased low by the factor
    k/(k−1)·(1 − k^{2H−2}) (exact for fGn); the fit includes that factor, so large blocks do not
    drag H down. ``extra["H_uncorrected"]`` is the plain log-log slope estimate; the corrected
    fit is bounded to H < 1 and ``extra["at_bound"]`` says when it hit that bound (H ≥ 1 data).
    plot: ``x`` = log10 m, ``y`` = log10 Var(X^(m)), ``fit_y`` the corrected model.
    """
    x = _prepare(x)
    n = x.size
    ms = _log_scales(m_min, n // min_blocks, points)
    cs = _running_sum(x - x.mean())
    var = np.empty(ms.size)
    for i, m in enumerate(ms):  # one O(n) pass per scale (≈ 24 scales), not per sample
        k = n // m
        means = (cs[m: k * m + 1: m] - cs[0: (k - 1) * m + 1: m]) / m
        var[i] = means.var(ddof=1)
    keep = var > 0
    ms, var = ms[keep], var[keep]
    k = (n // ms).astype(np.float64)
    lx, ly = np.log10(ms), np.log10(var)
    raw_slope, _ = _line(lx, ly)

    def model(H):
        return (2 * H - 2) * lx + np.log10(k / (k - 1) * (1 - k ** (2 * H - 2)))

    def sse(H):
        r = ly - model(H)
        return np.sum((r - r.mean()) ** 2)

    H = optimize.minimize_scalar(sse, bounds=(0.01, 0.999), method="bounded",
                                 options={"xatol": 1e-6}).x
    c = np.mean(ly - model(H))
    return HurstResult("vt", float(H), None, ms,
                       {"x": lx, "y": ly, "fit_x": lx, "fit_y": model(H) + c},
                       {"H_uncorrected": 1 + raw_slope / 2, "slope": 2 * H - 2,
                        # the corrected model needs H < 1: at the bound the series is not stationary
                        "at_bound": bool(H > 0.998)})


# ---------------------------------------------------------------------------------------------
def _expected_rs(d: np.ndarray) -> np.ndarray:
    """Anis–Lloyd–Peters expected R/S of d i.i.d. Gaussian values."""
    out = np.empty(d.size)
    for i, n in enumerate(d):  # per scale, the sum itself is vectorized
        r = np.arange(1, n)
        s = np.sum(np.sqrt((n - r) / r))
        if n <= 340:
            lead = np.exp(special.gammaln((n - 1) / 2) - special.gammaln(n / 2)) / np.sqrt(np.pi)
        else:
            lead = 1 / np.sqrt(n * np.pi / 2)
        out[i] = (n - 0.5) / n * lead * s
    return out


def rescaled_range(x, *, d_min=16, min_blocks=4, points=20, pox_blocks=32,
                   corrected=True) -> HurstResult:
    """R/S over non-overlapping blocks of size d: E[R/S](d) ~ d^H.

    With ``corrected`` (default) H = 0.5 + slope of log(R/S) − log E_iid(R/S) (Anis–Lloyd–Peters),
    which removes the small-d upward bias of the classic estimate; ``extra["H_uncorrected"]`` is
    the classic slope. plot: ``x`` = log10 d, ``y`` = log10 mean R/S, ``pox_x``/``pox_y`` the R/S of
    up to ``pox_blocks`` evenly spaced blocks per d (the pox plot), ``expected_y`` = log10 E_iid.
    """
    x = _prepare(x)
    n = x.size
    ds = _log_scales(d_min, n // min_blocks, points)
    mean_rs = np.empty(ds.size)
    pox_x, pox_y = [], []
    xc = x - x.mean()  # global centring keeps the running sums small (precision)
    cs = _running_sum(xc)
    cs2 = _running_sum(np.multiply(xc, xc, out=xc))
    del xc
    for i, d in enumerate(ds):
        # per block: walk_j = Σ_{t≤j} x_t − j·mean, from the global running sums (no per-row
        # cumsum), a few thousand blocks' walks at a time (all at once: two temporaries of the
        # series' size, and R/S took 66 MB above a 1.44 M-point series)
        k = n // d
        start = cs[0: k * d: d]
        means = (cs[d: k * d + 1: d] - start) / d
        steps = np.arange(1, d + 1)[None, :]
        R = np.empty(k)
        rows = max(1, _WALK_POINTS // d)
        for r0 in range(0, k, rows):
            r1 = min(k, r0 + rows)
            walk = cs[1 + r0 * d: r1 * d + 1].reshape(r1 - r0, d) - start[r0:r1, None]
            walk -= steps * means[r0:r1, None]
            R[r0:r1] = np.maximum(walk.max(axis=1), 0) - np.minimum(walk.min(axis=1), 0)
        S = np.sqrt(np.maximum((cs2[d: k * d + 1: d] - cs2[0: k * d: d]) / d - means ** 2, 0))
        # R/S is undefined on a constant block (an idle stretch of a link: all zeros). Its S from
        # the running sums is rounding noise, not 0, and would put R/S near 1e-8: test the
        # block's values themselves instead.
        ok = np.ptp(x[: k * d].reshape(k, d), axis=1) > 0
        rs = R[ok] / S[ok]
        mean_rs[i] = rs.mean() if rs.size else np.nan
        pick = np.unique(np.linspace(0, rs.size - 1, min(pox_blocks, rs.size)).astype(int)) if rs.size else []
        shown = rs[pick]
        pox_x.append(np.full(shown.size, np.log10(d)))
        pox_y.append(np.log10(shown))
    keep = np.isfinite(mean_rs) & (mean_rs > 0)
    ds, mean_rs = ds[keep], mean_rs[keep]
    lx, ly = np.log10(ds), np.log10(mean_rs)
    raw_slope, raw_icpt = _line(lx, ly)
    expected = np.log10(_expected_rs(ds))
    if corrected:
        slope, icpt = _line(lx, ly - expected)
        H = 0.5 + slope
        fit_y = expected + slope * lx + icpt
    else:
        H, fit_y = raw_slope, raw_slope * lx + raw_icpt
    return HurstResult("rs", float(H), None, ds,
                       {"x": lx, "y": ly, "fit_x": lx, "fit_y": fit_y, "expected_y": expected,
                        "pox_x": np.concatenate(pox_x), "pox_y": np.concatenate(pox_y)},
                       {"H_uncorrected": raw_slope, "corrected": bool(corrected)})


# ---------------------------------------------------------------------------------------------
def daubechies(N: int) -> np.ndarray:
    """Daubechies low-pass (scaling) filter with ``N`` vanishing moments (length 2N, sum √2),
    minimum phase, in convolution order: PyWavelets' ``dbN`` reconstruction low-pass."""
    if not 1 <= N <= 10:
        raise TraceflowError(f"wavelet vanishing moments must be 1..10, got {N}")
    return np.asarray(pywt.Wavelet(f"db{N}").rec_lo)


def wavelet_details(x, N=3, levels=None) -> list[np.ndarray]:
    """Detail coefficients d_j (j = 1 … J) of the DWT of x (fast pyramid, boundary-free).

    Uses 'valid' filtering only, so no coefficient is touched by the series ends; initialization
    takes the samples as the approximation at octave 0 (standard for sampled counts).
    """
    h = daubechies(N)
    L = h.size
    g = h[::-1] * (-1.0) ** np.arange(L)  # quadrature mirror high-pass: N vanishing moments
    a = np.asarray(x, dtype=np.float64)
    out = []
    while a.size >= L + 2 * 4 and (levels is None or len(out) < levels):
        # a copy: the slice alone would keep the whole filtered series (twice the coefficients)
        out.append(np.correlate(a, g, "valid")[::2].copy())
        a = np.correlate(a, h, "valid")[::2]
    return out


def wavelet(x, *, N=3, j1=3, j2=None, min_coeffs=8) -> HurstResult:
    """Abry–Veitch wavelet estimator: log2 E[d_j²] ~ (2H−1) j, weighted over octaves j1 … j2.

    y_j = log2(mean d_j²) − g(n_j) with the bias g(n_j) = ψ(n_j/2)/ln 2 − log2(n_j/2) and variance
    ζ(2, n_j/2)/ln²2 (Gaussian, independent coefficients); the CI is 95 % from the weighted fit.
    ``j2`` defaults to the coarsest octave with ≥ ``min_coeffs`` coefficients.
    plot: ``x`` = octave j, ``y`` = y_j, ``yerr`` = 1.96·sd(y_j), ``fit_x``/``fit_y``.
    """
    x = _prepare(x, min_n=128)
    details = wavelet_details(x, N)
    nj = np.array([d.size for d in details])
    mu = np.array([np.mean(d * d) for d in details])
    octaves = np.arange(1, nj.size + 1)
    valid = (nj >= min_coeffs) & (mu > 0)
    octaves, nj, mu = octaves[valid], nj[valid], mu[valid]
    ln2 = np.log(2.0)
    half = nj / 2.0
    y = np.log2(mu) - (special.digamma(half) / ln2 - np.log2(half))
    var = special.zeta(2, half) / ln2 ** 2
    top = int(octaves.max()) if j2 is None else int(j2)
    lo = min(int(j1), max(1, top - 2))  # short series: still fit at least 3 octaves
    sel = (octaves >= lo) & (octaves <= top)
    if sel.sum() < 2:
        raise TraceflowError("series too short for the wavelet estimator (fewer than 2 octaves)")
    j, yj, w = octaves[sel].astype(np.float64), y[sel], 1.0 / var[sel]
    S, Sx, Sxx = w.sum(), (w * j).sum(), (w * j * j).sum()
    det = S * Sxx - Sx ** 2
    slope = float(((w * j * yj).sum() * S - Sx * (w * yj).sum()) / det)
    icpt = float((Sxx * (w * yj).sum() - Sx * (w * j * yj).sum()) / det)
    se_H = np.sqrt(S / det) / 2
    H = (slope + 1) / 2
    return HurstResult("wavelet", H, (H - _Z95 * se_H, H + _Z95 * se_H), 2.0 ** j,
                       {"x": octaves.astype(np.float64), "y": y, "yerr": _Z95 * np.sqrt(var),
                        "fit_x": j, "fit_y": slope * j + icpt},
                       {"octaves": [int(j[0]), int(j[-1])], "vanishing_moments": int(N),
                        "se": float(se_H)})


# ---------------------------------------------------------------------------------------------
def _spectral_part(x):
    """The points of ``x`` (prepared) the spectral methods read (see the module docstring)."""
    n = x.size
    if n <= EXACT_FFT_POINTS:
        return x
    while True:                 # smooth lengths are dense: a few dozen steps at most
        rest = n
        for p in _FFT_PRIMES:
            while rest % p == 0:
                rest //= p
        if rest == 1:
            return x[:n]
        n -= 1


def periodogram_ordinates(x, m=None):
    """Fourier frequencies λ_j = 2πj/n (j = 1 … ⌊(n−1)/2⌋, or only the lowest ``m`` of them) and
    I(λ_j) = |Σ x e^{−iλt}|²/(2πn). The local estimators read n^0.6-n^0.65 of the n/2
    ordinates: only those are computed (the peak memory stays the FFT's own: local Whittle
    on a 1.44 M-point series, 44 MB above it either way)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    m = (n - 1) // 2 if m is None else min(m, (n - 1) // 2)
    f = np.fft.rfft(x - x.mean())[1: m + 1]
    lam = 2 * np.pi * np.arange(1, m + 1) / n
    return lam, (f.real ** 2 + f.imag ** 2) / (2 * np.pi * n)


def _lowest_ordinates(x, bandwidth):
    """``(m, λ, I)``: the :func:`periodogram_ordinates` of the lowest m = n^``bandwidth`` (at
    least 8) Fourier frequencies of ``x``, as the local estimators read them."""
    m = max(8, min((x.size - 1) // 2, int(x.size ** bandwidth)))
    return (m, *periodogram_ordinates(x, m))


def _fgn_spectrum_shape(lam, H):
    """fGn spectral density up to the scale factor (Paxson 1997 approximation of the sum)."""
    d, dp = -2 * H - 1, -2 * H

    def total(terms):
        # added in place, term by term in the formula's order: a few arrays of lam's size at a
        # time, not the ~20 the expression held (52 MB on the 16x dev10m series' 243k ordinates)
        out = None
        for k, sign, power in terms:
            term = np.power(2 * np.pi * k + sign * lam, power)
            out = term if out is None else np.add(out, term, out=out)
        return out

    B = total([(1, 1, d), (1, -1, d), (2, 1, d), (2, -1, d), (3, 1, d), (3, -1, d)])
    tail = total([(3, 1, dp), (3, -1, dp), (4, 1, dp), (4, -1, dp)])
    B += np.divide(tail, 8 * np.pi * H, out=tail)
    shape = np.subtract(1, np.cos(lam))
    shape *= 2 * np.sin(np.pi * H) * special.gamma(2 * H + 1)
    B += np.power(lam, d)
    return np.multiply(shape, B, out=shape)


def whittle_fgn(x) -> HurstResult:
    """Whittle estimator for fGn over all Fourier frequencies, scale profiled out.

    Minimizes log(mean I/f_H) + mean log f_H; 95 % CI from the asymptotic variance
    2 / (n · Var_λ ∂log f_H/∂H). plot: ``x`` = log10 λ, ``y`` = log10 I, ``fit_y`` = log10 of the
    fitted spectral density.
    """
    x = _spectral_part(_prepare(x))
    lam, I = periodogram_ordinates(x)

    def objective(H):
        f = _fgn_spectrum_shape(lam, H)
        return np.log(np.mean(I / f)) + np.mean(np.log(f))

    H = float(optimize.minimize_scalar(objective, bounds=(0.01, 0.99), method="bounded",
                                       options={"xatol": 1e-6}).x)
    eps = 1e-4
    g = (np.log(_fgn_spectrum_shape(lam, min(H + eps, 0.999)))
         - np.log(_fgn_spectrum_shape(lam, max(H - eps, 0.001)))) / (2 * eps)
    se = float(np.sqrt(2.0 / (x.size * g.var())))
    f = _fgn_spectrum_shape(lam, H)
    scale = np.mean(I / f)
    stride = max(1, lam.size // 4096)  # plot data thinned to ≤ ~4096 points
    return HurstResult("whittle_fgn", H, (H - _Z95 * se, H + _Z95 * se), lam[[0, -1]],
                       {"x": np.log10(lam[::stride]), "y": np.log10(I[::stride]),
                        "fit_x": np.log10(lam[::stride]), "fit_y": np.log10(scale * f[::stride])},
                       {"se": se, "frequencies": int(lam.size), "points": int(x.size)})


def local_whittle(x, *, bandwidth=0.65) -> HurstResult:
    """Robinson's local Whittle on the lowest m = n^bandwidth frequencies; se = 1/(2√m)."""
    x = _spectral_part(_prepare(x))
    m, lam, I = _lowest_ordinates(x, bandwidth)
    mlog = np.mean(np.log(lam))

    def R(H):
        return np.log(np.mean(lam ** (2 * H - 1) * I)) - (2 * H - 1) * mlog

    H = float(optimize.minimize_scalar(R, bounds=(0.01, 1.49), method="bounded",
                                       options={"xatol": 1e-6}).x)
    se = 1 / (2 * np.sqrt(m))
    G = np.mean(lam ** (2 * H - 1) * I)
    return HurstResult("whittle", H, (H - _Z95 * se, H + _Z95 * se), lam[[0, -1]],
                       {"x": np.log10(lam), "y": np.log10(I), "fit_x": np.log10(lam),
                        "fit_y": np.log10(G * lam ** (1 - 2 * H))},
                       {"se": float(se), "frequencies": int(m), "points": int(x.size)})


def periodogram(x, *, bandwidth=0.6) -> HurstResult:
    """Log-periodogram (GPH) regression: log I(λ) = c − d·log(4 sin²(λ/2)), H = d + 1/2,
    over the lowest m = n^bandwidth frequencies. plot: ``x`` = log10 λ, ``y`` = log10 I."""
    x = _spectral_part(_prepare(x))
    m, lam, I = _lowest_ordinates(x, bandwidth)
    keep = I > 0
    lam, I = lam[keep], I[keep]
    reg = -np.log(4 * np.sin(lam / 2) ** 2)
    d, c = _line(reg, np.log(I))
    se = np.pi / np.sqrt(24 * m)
    H = d + 0.5
    return HurstResult("periodogram", float(H), (H - _Z95 * se, H + _Z95 * se), lam[[0, -1]],
                       {"x": np.log10(lam), "y": np.log10(I), "fit_x": np.log10(lam),
                        "fit_y": (c + d * reg) / np.log(10)},
                       {"se": float(se), "frequencies": int(m), "points": int(x.size)})


# ---------------------------------------------------------------------------------------------
def dfa(x, *, s_min=16, min_boxes=4, points=20) -> HurstResult:
    """Detrended fluctuation analysis (DFA-1): F(s) ~ s^H for a stationary noise.

    Profile Y = cumsum(x − mean); per non-overlapping box of s samples, the residual variance
    after a least-squares line (closed form, all boxes at once); F(s) = √mean residual variance.
    plot: ``x`` = log10 s, ``y`` = log10 F(s).
    """
    x = _prepare(x)
    n = x.size
    y = np.cumsum(x - x.mean())
    ss = _log_scales(s_min, n // min_boxes, points)
    F = np.empty(ss.size)
    for i, s in enumerate(ss):
        k = n // s
        boxes = y[: k * s].reshape(k, s)
        t = np.arange(s, dtype=np.float64) - (s - 1) / 2  # centred time: slope = Σ t·y / Σ t²
        yc = boxes - boxes.mean(axis=1, keepdims=True)
        b = yc @ t / (t @ t)
        resid_var = (yc * yc).mean(axis=1) - b * b * (t @ t) / s
        F[i] = np.sqrt(np.mean(resid_var))
    lx, ly = np.log10(ss), np.log10(F)
    slope, icpt = _line(lx, ly)
    return HurstResult("dfa", slope, None, ss,
                       {"x": lx, "y": ly, "fit_x": lx, "fit_y": slope * lx + icpt}, {})


_FUNCS = {"vt": variance_time, "rs": rescaled_range, "wavelet": wavelet, "whittle": local_whittle,
          "whittle_fgn": whittle_fgn, "dfa": dfa, "periodogram": periodogram}


@dataclass
class HurstReport:
    """Several estimates of one series and the disagreement check."""

    n: int
    results: dict
    spread: float
    warning: str | None

    def quality(self):
        """:func:`traceflow.stats.quality.hurst_report_quality`: H outside (0, 1), too few
        samples, methods disagreeing."""
        from traceflow.stats.quality import hurst_report_quality

        return hurst_report_quality(self)

    def summary(self) -> dict:
        out = {"n": self.n, "methods": {k: r.summary() for k, r in self.results.items()},
               "spread": self.spread, "margin": DISAGREEMENT_MARGIN}
        if self.warning:
            out["warning"] = self.warning
        out["quality"] = self.quality().to_dict()
        return out


def parse_methods(spec) -> tuple[str, ...]:
    if spec is None:
        return DEFAULT_METHODS
    names = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    if names == ["all"]:
        return METHODS
    bad = [s for s in names if s not in _FUNCS]
    if bad or not names:
        raise TraceflowError(f"unknown Hurst method(s) {', '.join(bad) or '(none)'}; "
                             f"choose from {', '.join(METHODS)}")
    return tuple(dict.fromkeys(names))


def estimate(x, methods=None, *, margin=DISAGREEMENT_MARGIN) -> HurstReport:
    """Run ``methods`` on ``x`` and flag disagreement.

    The warning fires when max H − min H exceeds ``margin``: on a stationary LRD series these
    estimators agree within ~0.1, so a wider spread points at trends, level shifts or H ≥ 1.

    Parameters
    ----------
    x : array_like of float
        The series (e.g. bytes per bin), at least 64 finite, not all equal values.
    methods : str or sequence of str, optional
        Estimator names (``"vt,rs"``, a list, or ``"all"``); default: all but ``whittle_fgn``.
    margin : float, default 0.15
        Largest spread of H (dimensionless) before the disagreement warning.

    Returns
    -------
    HurstReport
        ``n`` samples, ``results`` (method -> :class:`HurstResult`, H dimensionless), ``spread``
        (max H − min H) and ``warning`` (None when they agree).

    Raises
    ------
    TraceflowError
        Fewer than 64 samples, NaN or infinite values, a constant series, or an unknown method.

    Examples
    --------
    >>> import numpy as np
    >>> from traceflow.stats.hurst import estimate
    >>> report = estimate(np.random.default_rng(1).normal(size=4096), "vt,wavelet")
    >>> {m: round(r.H, 2) for m, r in report.results.items()}
    """
    x = _prepare(x)
    results = {name: _FUNCS[name](x) for name in parse_methods(methods)}
    hs = np.array([r.H for r in results.values()])
    spread = float(hs.max() - hs.min()) if hs.size > 1 else 0.0
    warning = disagreement({r.method: r.H for r in results.values()}, margin)
    return HurstReport(int(x.size), results, spread, warning)


def disagreement(estimates, margin=DISAGREEMENT_MARGIN):
    """The warning :func:`estimate` gives when the finite ``estimates`` ({method: H}) spread by
    more than ``margin``, else None (``fit`` checks a model's estimates with it too)."""
    finite = {m: h for m, h in estimates.items() if h is not None and np.isfinite(h)}
    if len(finite) < 2:
        return None
    lo, hi = min(finite, key=finite.get), max(finite, key=finite.get)
    spread = finite[hi] - finite[lo]
    if spread <= margin:
        return None
    return (f"Hurst estimators disagree by {spread:.2f} > {margin:.2f} ({lo} {finite[lo]:.2f} "
            f"vs {hi} {finite[hi]:.2f}): the series may be non-stationary")

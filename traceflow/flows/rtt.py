"""Passive RTT analytics on the flow table: distribution, spectrum and RTT classes.

After Wu & Nikolaidis (2002), section 2.2: a connection's RTT is estimated from its first packets
(``rtt_min3`` of :mod:`traceflow.flows`, the minimum of SYN → SYN/ACK, final ACK → first data and
first data → second data); the "RTT spectrum" (their Figure 4) is the histogram of
log10(RTT / 10 µs) over connections. Flows are then grouped into a handful of RTT classes; the
paper leaves the number of classes open — :func:`fit_rtt_classes` chooses it from the data with a
Gaussian mixture on log10(RTT) and the BIC. All RTTs are in seconds.
"""
from dataclasses import asdict, dataclass, field

import numpy as np
import polars as pl

from traceflow.errors import InputFormatError
from traceflow.flows.lifetimes import ccdf

SPECTRUM_UNIT = 1e-5  # seconds: the paper's x axis is log10(RTT / 10^-5)
RTT_COLUMNS = ("rtt_min3", "rtt_handshake", "rtt_syn", "rtt_ack", "rtt_data1", "rtt_data2")
DEFAULT_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def rtt_values(flows, column="rtt_min3"):
    """Positive, finite RTT samples (seconds) of ``column`` as a float64 NumPy array.

    Zero intervals (e.g. an ACK immediately followed by the client's request, both captured at the
    client) have no logarithm and are dropped.
    """
    if column not in flows.columns:
        raise InputFormatError(f"flows table has no column {column!r} (choose from "
                               f"{', '.join(c for c in RTT_COLUMNS if c in flows.columns)})")
    x = flows.get_column(column).drop_nulls().cast(pl.Float64).to_numpy()
    return x[np.isfinite(x) & (x > 0)]


def rtt_spectrum(rtts, *, bins=40, value_range=None):
    """Histogram of log10(RTT / 10 µs) — the paper's Figure 4.

    ``rtts`` in seconds (non-positive values ignored); ``bins`` equal-width bins over
    ``value_range`` = (lo, hi) in log10 units (default: the data range). Returns a DataFrame with
    ``left``, ``right`` (bin edges, log10 units), ``rtt_left``/``rtt_right`` (seconds), ``count``
    and ``frequency`` (count / number of samples).
    """
    x = np.asarray(rtts, dtype=float)
    x = np.log10(x[np.isfinite(x) & (x > 0)] / SPECTRUM_UNIT)
    if x.size == 0:
        counts, edges = np.zeros(bins, dtype=np.int64), np.linspace(0.0, 1.0, bins + 1)
    else:
        counts, edges = np.histogram(x, bins=bins, range=value_range)
    return pl.DataFrame({
        "left": edges[:-1], "right": edges[1:],
        "rtt_left": SPECTRUM_UNIT * 10.0 ** edges[:-1],
        "rtt_right": SPECTRUM_UNIT * 10.0 ** edges[1:],
        "count": counts.astype(np.int64),
        "frequency": counts / x.size if x.size else np.zeros(bins),
    })


def rtt_ccdf(rtts):
    """CCDF of RTT samples (seconds): DataFrame ``x``, ``ccdf`` = P(RTT >= x)."""
    return ccdf(rtts)


def rtt_quantiles(rtts, quantiles=DEFAULT_QUANTILES):
    """``{"n", "mean", "p5", ...}`` of RTT samples in seconds (empty samples: ``{"n": 0}``)."""
    x = np.asarray(rtts, dtype=float)
    if x.size == 0:
        return {"n": 0}
    out = {"n": int(x.size), "mean": float(x.mean())}
    out.update({f"p{q * 100:g}": float(np.quantile(x, q)) for q in quantiles})
    return out


@dataclass
class RTTClasses:
    """RTT classes as intervals of RTT: class i holds boundaries[i-1] <= RTT < boundaries[i].

    ``boundaries``: ascending, seconds (k-1 of them for k classes). ``counts``, ``medians``
    (seconds): per class, over the samples classified. ``method``: "fixed" or "gmm-bic";
    for "gmm-bic", ``n_components`` chosen and ``bic`` per candidate number of components.
    """
    boundaries: list
    counts: list
    medians: list
    method: str
    n_components: int = 0
    bic: dict = field(default_factory=dict)

    @property
    def n_classes(self):
        return len(self.boundaries) + 1

    def classify(self, rtts):
        """Class index (0 = shortest RTTs) of each RTT in seconds; -1 for missing/invalid."""
        return classify(rtts, self.boundaries)

    def to_dict(self):
        return {**asdict(self), "n_classes": self.n_classes}


def classify(rtts, boundaries):
    """Class index of each RTT (seconds) given ascending ``boundaries``; -1 for NaN/None/<=0."""
    x = np.asarray(rtts, dtype=float)
    out = np.searchsorted(np.asarray(boundaries, dtype=float), x, side="right").astype(np.int64)
    out[~(np.isfinite(x) & (x > 0))] = -1
    return out


def _describe(rtts, boundaries, method, **extra):
    x = np.asarray(rtts, dtype=float)
    labels = classify(x, boundaries)
    counts, medians = [], []
    for k in range(len(boundaries) + 1):
        members = x[labels == k]
        counts.append(int(members.size))
        medians.append(float(np.median(members)) if members.size else float("nan"))
    return RTTClasses([float(b) for b in boundaries], counts, medians, method, **extra)


def fixed_rtt_classes(rtts, boundaries):
    """Classes from user-given boundaries (seconds, any order)."""
    b = sorted(float(v) for v in boundaries)
    if any(v <= 0 for v in b) or len(set(b)) != len(b):
        raise InputFormatError(f"RTT class boundaries must be distinct and > 0, got {boundaries}")
    return _describe(rtts, b, "fixed")


def fit_rtt_classes(rtts, *, max_classes=6, random_state=0, max_samples=20000, grid=2000):
    """Learn RTT classes: Gaussian mixtures on log10(RTT) with 1..``max_classes`` components,
    keep the one with the lowest BIC, and cut log10(RTT) between each pair of neighbouring
    components (by mean) where their weighted densities cross (searched on ``grid`` points), so
    k components give k classes.

    The mixtures are fitted on at most ``max_samples`` samples (a seeded random subset); counts
    and medians use all samples. Deterministic for a given ``random_state``. Needs at least 2
    samples; with few distinct values the candidate numbers of components are limited.
    """
    from sklearn.mixture import GaussianMixture

    x = np.asarray(rtts, dtype=float)
    x = x[np.isfinite(x) & (x > 0)]
    if x.size < 2:
        raise InputFormatError(f"need at least 2 RTT samples to learn classes, got {x.size}")
    z = np.log10(x).reshape(-1, 1)
    if z.shape[0] > max_samples:
        pick = np.random.default_rng(random_state).choice(z.shape[0], max_samples, replace=False)
        z = z[np.sort(pick)]
    k_max = max(1, min(int(max_classes), np.unique(z).size, z.shape[0] // 2 or 1))
    fits, bic = {}, {}
    for k in range(1, k_max + 1):
        gm = GaussianMixture(n_components=k, covariance_type="full", n_init=1,
                             random_state=random_state, reg_covar=1e-6).fit(z)
        fits[k], bic[k] = gm, float(gm.bic(z))
    best = min(bic, key=bic.get)
    gm = fits[best]
    order = np.argsort(gm.means_.ravel())
    mu = gm.means_.ravel()[order]
    sd = np.sqrt(gm.covariances_.reshape(-1)[order])
    logw = np.log(gm.weights_[order])
    cuts = []
    for i in range(best - 1):
        # Between two neighbouring components (by mean), cut where their weighted densities
        # are closest to equal: one boundary per pair, so k components give k classes.
        pts = np.linspace(mu[i], mu[i + 1], grid)
        left = logw[i] - np.log(sd[i]) - 0.5 * ((pts - mu[i]) / sd[i]) ** 2
        right = logw[i + 1] - np.log(sd[i + 1]) - 0.5 * ((pts - mu[i + 1]) / sd[i + 1]) ** 2
        cuts.append(10.0 ** pts[np.argmin(np.abs(left - right))])
    return _describe(x, cuts, "gmm-bic", n_components=int(best), bic=bic)


def rtt_summary(flows, *, column="rtt_min3", classes="auto", bins=40, max_classes=6,
                random_state=0):
    """JSON-ready RTT summary of a flow table (TCP flows with a positive sample in ``column``).

    ``classes``: "auto" (learned, :func:`fit_rtt_classes`), a list of boundaries in seconds
    (:func:`fixed_rtt_classes`) or None. Contains the quantiles, the spectrum and the classes.
    """
    x = rtt_values(flows, column)
    out = {"column": column, "flows": flows.height, "quantiles": rtt_quantiles(x),
           "spectrum": rtt_spectrum(x, bins=bins).to_dicts()}
    if classes is None or (classes == "auto" and x.size < 2):
        out["classes"] = None
    elif classes == "auto":
        out["classes"] = fit_rtt_classes(x, max_classes=max_classes,
                                         random_state=random_state).to_dict()
    else:
        out["classes"] = fixed_rtt_classes(x, classes).to_dict()
    return out

"""Burstiness across time scales: index of dispersion, c.o.v. per RTT, tracking ability.

* :func:`dispersion_curve` — variance/mean of the counts per interval at aggregation levels
  10 ms … 100 s (Park, Kim & Crovella 1997, Fig. 13: "variance/mean ratio … at five aggregation
  levels (10ms, 100ms, 1sec, 10sec, 100sec)"). For packet counts this is the index of dispersion
  for counts (IDC; 1 for a Poisson process at every scale, growing ~ T^{2H−1} for LRD traffic).
* :func:`cov` / :func:`cov_per_interval` — coefficient of variation, std/mean, of the number of
  packets arriving in each interval of one RTT (Feng & Tinnakornsrisuphap 2000).
* :func:`tracking` — Pearson correlation coefficient of two series over common bins (Park & Tuan
  2000, §5.2.3: a flow's throughput vs the background traffic; −1 is perfect tracking).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from traceflow.errors import TraceflowError
from traceflow.stats.series import aggregate, bin_width, block_sums, format_duration, parse_duration

#: 1-2-5 steps from 10 ms to 100 s (includes the paper's five levels)
DEFAULT_SCALES = ("10ms", "20ms", "50ms", "100ms", "200ms", "500ms", "1s", "2s", "5s", "10s",
                  "20s", "50s", "100s")


@dataclass
class DispersionCurve:
    """Variance/mean per aggregation level.

    ``scales_ns`` interval lengths (int ns), ``scales_s`` the same in seconds, ``ratio`` =
    variance/mean, ``mean``, ``variance`` of the counts per interval, ``blocks`` intervals used.
    Plot ``ratio`` against ``scales_s`` on log-log axes. ``slope`` is the log-log slope of the ratio
    (≈ 2H − 1 for LRD counts; NaN with fewer than 2 usable scales).
    """

    scales_ns: np.ndarray
    ratio: np.ndarray
    mean: np.ndarray
    variance: np.ndarray
    blocks: np.ndarray
    column: str
    slope: float = float("nan")
    skipped: list = field(default_factory=list)

    @property
    def scales_s(self) -> np.ndarray:
        return self.scales_ns / 1e9

    def summary(self) -> dict:
        return {"column": self.column,
                "scales": [format_duration(int(s)) for s in self.scales_ns],
                "scales_s": self.scales_s.tolist(), "ratio": self.ratio.tolist(),
                "mean": self.mean.tolist(), "variance": self.variance.tolist(),
                "blocks": self.blocks.tolist(), "slope": self.slope, "skipped": self.skipped}


def dispersion_curve(values, bin_ns, scales=DEFAULT_SCALES, *, min_blocks=10,
                     column="packets") -> DispersionCurve:
    """Variance/mean of ``values`` (counts per bin of ``bin_ns``) summed to each of ``scales``.

    A scale is skipped (and listed in ``skipped``) when it is not a multiple of the bin width or
    when fewer than ``min_blocks`` whole intervals fit in the series; the trailing partial
    interval is dropped.

    Parameters
    ----------
    values : array_like of float
        Counts per bin (packets or bytes).
    bin_ns : int
        The bins' width (ns).
    scales : sequence of str, default DEFAULT_SCALES
        Interval lengths ("10ms" ... ), each a multiple of ``bin_ns``.
    min_blocks : int, default 10
        Fewest whole intervals a scale needs.
    column : str, default "packets"
        What ``values`` count (kept in the result, for labels).

    Returns
    -------
    DispersionCurve
        ``scales_ns`` (ns) / ``scales_s`` (s), ``ratio`` = variance/mean (unit of ``values``),
        ``mean``, ``variance``, ``blocks`` per scale, ``skipped`` and the log-log ``slope``.

    Examples
    --------
    >>> import numpy as np
    >>> from traceflow.stats.dispersion import dispersion_curve
    >>> curve = dispersion_curve(np.random.default_rng(1).poisson(5, 100_000), 10_000_000)
    >>> curve.ratio  # about 1 at every scale for Poisson counts
    """
    x = np.asarray(values, dtype=np.float64)
    bin_ns = int(bin_ns)
    rows, skipped = [], []
    for spec in scales:  # a handful of scales, each an O(n) reshape
        ns = parse_duration(spec)
        if ns % bin_ns:
            skipped.append({"scale": format_duration(ns), "reason": "not a multiple of the bin"})
            continue
        agg = block_sums(x, ns // bin_ns)
        if agg.size < min_blocks:
            skipped.append({"scale": format_duration(ns), "reason": f"fewer than {min_blocks} intervals"})
            continue
        m, v = agg.mean(), agg.var(ddof=1)
        rows.append((ns, v / m if m > 0 else np.nan, m, v, agg.size))
    arr = np.array(rows, dtype=np.float64).reshape(-1, 5)
    curve = DispersionCurve(arr[:, 0].astype(np.int64), arr[:, 1], arr[:, 2], arr[:, 3],
                            arr[:, 4].astype(np.int64), column, skipped=skipped)
    ok = np.isfinite(curve.ratio) & (curve.ratio > 0)
    if ok.sum() >= 2:
        curve.slope = float(np.polyfit(np.log10(curve.scales_s[ok]), np.log10(curve.ratio[ok]), 1)[0])
    return curve


def cov(counts) -> float:
    """Coefficient of variation std/mean (population std; NaN when the mean is 0)."""
    c = np.asarray(counts, dtype=np.float64)
    m = c.mean() if c.size else 0.0
    return float(c.std() / m) if m > 0 else float("nan")


def cov_per_interval(values, bin_ns, interval) -> dict:
    """c.o.v. of the counts per ``interval`` (e.g. one RTT; a multiple of the bin width).

    Returns ``{"interval", "interval_s", "cov", "mean", "std", "intervals"}``. For a Poisson
    process of rate λ the c.o.v. is 1/√(λτ) — the burstiness paper's unmodulated baseline —
    also returned as ``poisson_cov`` for comparison.
    """
    ns = parse_duration(interval)
    if ns % int(bin_ns):
        raise TraceflowError(f"RTT {format_duration(ns)} is not a multiple of the bin "
                             f"{format_duration(int(bin_ns))}: re-bin the packets at the RTT")
    agg = block_sums(np.asarray(values, dtype=np.float64), ns // int(bin_ns))
    if agg.size < 2:
        raise TraceflowError(f"fewer than 2 intervals of {format_duration(ns)} in the series")
    m = agg.mean()
    return {"interval": format_duration(ns), "interval_s": ns / 1e9, "cov": cov(agg),
            "mean": float(m), "std": float(agg.std()), "intervals": int(agg.size),
            "poisson_cov": float(1 / np.sqrt(m)) if m > 0 else float("nan")}


def tracking(a, b, *, column="bytes", other_column=None, factor=1, align="auto") -> dict:
    """Pearson correlation of two series (the TCP-MT paper's tracking ability).

    ``a``/``b`` are series frames (``t``, ``bytes``, ``packets``) joined on ``t`` (only common
    bins count), or equal-length arrays. ``factor`` first aggregates both (coarser scale).
    ``align``: "absolute" joins the frames on clock time, "relative" on time since each one's
    first bin (a simulated pcap starts at 1970), "auto" absolute when their spans overlap, else
    relative. Returns ``{"r", "n"}``, plus ``"aligned"`` for frames; r = −1 is perfect tracking
    of a throughput against background load.
    """
    aligned = None
    if isinstance(a, pl.DataFrame) and isinstance(b, pl.DataFrame):
        if bin_width(a) != bin_width(b):
            raise TraceflowError("the two series have different bin widths")
        a, b = aggregate(a, factor), aggregate(b, factor)
        aligned = align
        if align == "auto":
            overlap = a["t"].min() <= b["t"].max() and b["t"].min() <= a["t"].max()
            aligned = "absolute" if overlap else "relative"
        if aligned == "relative":
            a, b = (f.with_columns(pl.col("t") - pl.col("t").min()) for f in (a, b))
        j = a.select("t", pl.col(column).alias("_a")).join(
            b.select("t", pl.col(other_column or column).alias("_b")), on="t", how="inner")
        x, y = j.get_column("_a").to_numpy(), j.get_column("_b").to_numpy()
    else:
        x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if x.shape != y.shape:
            raise TraceflowError(f"series lengths differ: {x.size} vs {y.size}")
        if factor > 1:
            x, y = block_sums(x, factor), block_sums(y, factor)
    if x.size < 3:
        raise TraceflowError("fewer than 3 common bins: the series do not overlap in time")
    out = {"r": float("nan") if np.ptp(x) == 0 or np.ptp(y) == 0
           else float(np.corrcoef(x, y)[0, 1]), "n": int(x.size)}
    return out if aligned is None else {**out, "aligned": aligned}

"""Report figures: one function per plot, taking analytics results, writing one PNG.

Every function draws on a fresh :class:`matplotlib.figure.Figure` (Agg canvas, no pyplot global
state, so they are safe in worker processes and threads), saves it to ``path`` atomically and
returns the path. PNGs carry no timestamp or software metadata, so the same inputs give the same
bytes. Axes state their units.
"""
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from traceflow.atomic import atomic_path

DPI = 100
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def save(fig, path):
    """Write ``fig`` as a PNG to ``path`` atomically (no metadata); returns the path."""
    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})
    return path


def _figure(width=6.4, height=4.2, ncols=1, nrows=1):
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes.ravel()


def ccdf_figure(ccdf, path, *, fit=None, label="x", title=None):
    """Log-log CCDF P(X ≥ x) with the Pareto tail fit.

    ``ccdf`` is :func:`traceflow.stats.tails.ccdf_data` output (``x``, ``p``, optionally ``fit_x``,
    ``fit_p``); ``fit`` the :class:`traceflow.stats.tails.ParetoFit` (its α and xmin go in the legend).
    """
    fig, (ax,) = _figure()
    ax.loglog(ccdf["x"], ccdf["p"], ".", ms=3, color=COLORS[0], label="empirical")
    if "fit_x" in ccdf:
        what = "Pareto fit" if fit is None else f"Pareto α={fit.alpha:.2f}, xmin={fit.xmin:.3g}"
        ax.loglog(ccdf["fit_x"], ccdf["fit_p"], "-", color=COLORS[1], label=what)
    if fit is not None:
        ax.axvline(fit.xmin, color="0.6", ls=":", lw=1)
    ax.set_xlabel(label)
    ax.set_ylabel("P(X ≥ x)")
    ax.set_title(title or f"CCDF of {label}")
    ax.legend(loc="lower left")
    ax.grid(True, which="both", alpha=0.3)
    return save(fig, path)


def hurst_figure(report, path, *, methods=("vt", "rs", "wavelet"), bin_s=None, title=None):
    """Diagnostic plots of a :class:`traceflow.stats.hurst.HurstReport`: variance-time, R/S (pox plot)
    and the wavelet logscale diagram, each with its fitted line and H in the title. With ``bin_s``
    (the series' bin width, s) the block-size axes are in seconds and the octaves name their
    time scale."""
    present = [m for m in methods if m in report.results]
    fig, axes = _figure(width=4.2 * max(len(present), 1), height=3.8, ncols=max(len(present), 1))
    # log10 of a block of m bins in seconds = log10 m + log10 bin_s: a shift of the x axis
    shift = np.log10(bin_s) if bin_s else 0.0
    for ax, method in zip(axes, present):
        result = report.results[method]
        plot = dict(result.plot)
        if bin_s and method in _BLOCK_AXES:
            for key in ("x", "fit_x", "pox_x"):
                if key in plot:
                    plot[key] = np.asarray(plot[key]) + shift
        if method == "rs" and "pox_x" in plot:
            ax.plot(plot["pox_x"], plot["pox_y"], ".", ms=2, color="0.7", label="blocks")
        if method == "wavelet" and "yerr" in plot:
            ax.errorbar(plot["x"], plot["y"], yerr=plot["yerr"], fmt="o", ms=3, color=COLORS[0],
                        label="y_j ± 95 %")
        else:
            ax.plot(plot["x"], plot["y"], "o", ms=3, color=COLORS[0], label="estimate")
        if "fit_y" in plot:
            ax.plot(plot.get("fit_x", plot["x"]), plot["fit_y"], "-", color=COLORS[1], label="fit")
        if method == "rs" and "expected_y" in plot:
            ax.plot(plot["x"], plot["expected_y"], "--", color=COLORS[2], label="E iid")
        ax.set_title(f"{_HURST_TITLES.get(method, method)}: H = {result.H:.3f}")
        xlabel, ylabel = _HURST_AXES.get(method, ("x", "y"))
        if bin_s and method in _BLOCK_AXES:
            xlabel = f"log10 {_BLOCK_AXES[method]} (s); bins of {_seconds(bin_s)}"
        elif bin_s and method == "wavelet":
            xlabel = f"octave j (time scale 2^j x {_seconds(bin_s)})"
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize="small")
    if title:
        fig.suptitle(title)
    return save(fig, path)


_HURST_TITLES = {"vt": "variance-time", "rs": "R/S", "wavelet": "wavelet (Abry–Veitch)",
                 "dfa": "DFA", "periodogram": "periodogram"}
#: methods whose x axis is log10 of a block size in bins, and what the block is
_BLOCK_AXES = {"vt": "block length m", "rs": "block length d", "dfa": "box length s"}
_HURST_AXES = {"vt": ("log10 m (block size, bins)", "log10 Var(X^(m))"),
               "rs": ("log10 d (block size, bins)", "log10 R/S"),
               "wavelet": ("octave j", "y_j = log2 mean d_j²"),
               "dfa": ("log10 s (box size, bins)", "log10 F(s)"),
               "periodogram": ("log10 frequency", "log10 I(λ)")}


def levels_figure(analysis, path, *, title=None):
    """Heat map of Pr{L2 | L1} with E[L2 | L1] overlaid, from a
    :class:`traceflow.stats.levels.LevelAnalysis`."""
    h = analysis.h
    fig, (ax,) = _figure(width=5.6, height=4.8)
    prob = np.nan_to_num(np.asarray(analysis.prob, dtype=float), nan=0.0)
    image = ax.imshow(prob.T, origin="lower", cmap="viridis", vmin=0, vmax=max(prob.max(), 1e-9),
                      extent=(0.5, h + 0.5, 0.5, h + 0.5), aspect="auto")
    fig.colorbar(image, ax=ax, label="Pr{L2 | L1}")
    ax.plot(np.arange(1, h + 1), analysis.cond_mean, "o-", color="white", ms=4,
            label="E[L2 | L1]")
    ax.plot([1, h], [1, h], ":", color="0.8", lw=1)
    ax.set_xlabel("L1 (level of block i)")
    ax.set_ylabel("L2 (level of block i+1)")
    scale = f", T = {analysis.scale_s:g} s" if analysis.scale_s else ""
    ax.set_title(title or f"Conditional levels (h = {h}{scale})")
    ax.legend(loc="upper left", fontsize="small")
    return save(fig, path)


def rtt_spectrum_figure(spectrum, path, *, boundaries=(), medians=(), title=None):
    """The RTT spectrum: bars of :func:`traceflow.flows.rtt.rtt_spectrum` (``left``/``right`` edges in
    log10(RTT / 10 µs), ``frequency``), with RTT class boundaries (seconds) as dashed lines and
    class medians (seconds) as ticks on top."""
    from traceflow.flows.rtt import SPECTRUM_UNIT

    fig, (ax,) = _figure()
    left, right = spectrum["left"].to_numpy(), spectrum["right"].to_numpy()
    ax.bar(left, spectrum["frequency"].to_numpy(), width=right - left, align="edge",
           color=COLORS[0], edgecolor="white", lw=0.5, label="flows")
    for i, b in enumerate(boundaries):
        ax.axvline(np.log10(b / SPECTRUM_UNIT), color=COLORS[1], ls="--", lw=1,
                   label="class boundary" if i == 0 else None)
    for m in medians:
        if np.isfinite(m):
            ax.annotate(f"{m * 1e3:.3g} ms", (np.log10(m / SPECTRUM_UNIT), 1), xycoords=(
                "data", "axes fraction"), ha="center", va="bottom", fontsize="small")
    # the paper's axis is log10(RTT / 10 µs); the ticks say the RTTs in ms
    lo, hi = left.min() if left.size else 0.0, right.max() if right.size else 1.0
    ms = [m * 10.0 ** d for d in range(-2, 6) for m in (1, 2, 5)]
    at = [(np.log10(v / (SPECTRUM_UNIT * 1e3)), v) for v in ms]
    at = [(x, v) for x, v in at if lo - 0.05 <= x <= hi + 0.05]
    ax.set_xticks([x for x, _ in at], [f"{v:g}" for _, v in at])
    ax.set_xlabel("RTT (ms, log scale; the paper's log10(RTT / 10 µs) = log10(RTT in ms) + 2)")
    ax.set_ylabel("fraction of flows")
    ax.set_title(title or "RTT spectrum", pad=14)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    return save(fig, path)


def rtt_time_figure(t_s, rtt_s, path, *, classes=(), title=None):
    """Path RTT over time: every passive sample (``t_s`` seconds since the start, ``rtt_s``
    seconds, drawn in ms on a log axis), with RTT class boundaries (seconds) as dashed lines."""
    fig, (ax,) = _figure(width=7.5, height=3.6)
    ax.scatter(t_s, np.asarray(rtt_s) * 1e3, s=1.5, color=COLORS[0], alpha=0.35, lw=0,
               rasterized=True, label="path RTT samples")
    for i, b in enumerate(classes):
        ax.axhline(b * 1e3, color=COLORS[1], ls="--", lw=1,
                   label="class boundary" if i == 0 else None)
    ax.set_yscale("log")
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel("path RTT (ms)")
    ax.set_title(title or "Path RTT over time")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper right", fontsize="small", markerscale=4)
    return save(fig, path)


def dispersion_figure(curve, path, *, title=None):
    """Log-log index of dispersion against time scale from a
    :class:`traceflow.stats.dispersion.DispersionCurve`, with the Poisson reference (ratio 1)."""
    fig, (ax,) = _figure()
    ok = np.isfinite(curve.ratio) & (curve.ratio > 0)
    ax.loglog(curve.scales_s[ok], curve.ratio[ok], "o-", ms=4, color=COLORS[0],
              label=f"{curve.column}: slope {curve.slope:.2f}")
    if curve.column == "packets":
        ax.axhline(1.0, color="0.5", ls="--", lw=1, label="Poisson")
    ax.set_xlabel("interval length (s)")
    ax.set_ylabel(f"variance / mean of {curve.column} per interval")
    ax.set_title(title or "Dispersion across time scales")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return save(fig, path)


def _rate_unit(peak, unit):
    """(divisor, label) showing rates up to ``peak`` (``unit``/s) in kilo, mega or giga
    ``unit``/s: tick labels then read 1.5 Mbit/s, not 1.5 under a 1e6 offset."""
    for divisor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if peak >= divisor:
            return divisor, f"{prefix}{unit}/s"
    return 1.0, f"{unit}/s"


def series_figure(values, bin_s, path, *, factors=(1, 10, 100), unit="bytes", title=None):
    """Link series (bytes per bin) at several time scales: one panel per aggregation factor
    (bin_s × factor), each showing the rate over time in ``unit`` ("bytes" or "bit") per second,
    with an SI prefix (:func:`_rate_unit`)."""
    per_byte = 8 if unit == "bit" else 1
    values = np.asarray(values, dtype=float)
    factors = [f for f in factors if values.size // f >= 2] or [1]
    fig, axes = _figure(width=7.5, height=1.9 * len(factors) + 0.6, nrows=len(factors))
    for ax, factor, color in zip(axes, factors, COLORS):
        k = values.size // factor
        blocks = values[: k * factor].reshape(k, factor).sum(axis=1)
        width = bin_s * factor
        t = np.arange(k) * width
        rate = per_byte * blocks / width
        divisor, label = _rate_unit(rate.max(initial=0), unit)
        ax.step(t, rate / divisor, where="post", color=color, lw=0.8)
        ax.set_ylabel(label)
        ax.set_title(f"bin {_seconds(width)}", fontsize="small", loc="right")
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("time since start (s)")
    fig.suptitle(title or "Link series at several time scales")
    return save(fig, path)


def _seconds(s):
    return f"{s * 1e3:g} ms" if s < 1 else f"{s:g} s"


def overlay_series_figure(series, bin_s, path, *, factor=100, title=None):
    """Several link series (``{label: bytes per bin}``) on one axis, aggregated ``factor`` bins,
    in bit/s with an SI prefix (:func:`_rate_unit`)."""
    fig, (ax,) = _figure(width=7.5, height=3.4)
    width = bin_s * factor
    rates = {}
    for label, values in series.items():
        values = np.asarray(values, dtype=float)
        k = values.size // factor
        rates[label] = 8 * values[: k * factor].reshape(k, factor).sum(axis=1) / width
    divisor, unit = _rate_unit(max((r.max(initial=0) for r in rates.values()), default=0), "bit")
    for (label, rate), color in zip(rates.items(), COLORS):
        ax.step(np.arange(rate.size) * width, rate / divisor, where="post", color=color, lw=0.9,
                label=label)
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel(unit)
    ax.set_title(title or f"Throughput in {_seconds(width)} bins")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return save(fig, path)


def bars_figure(categories, groups, path, *, xlabel="", ylabel="", title="", log=False):
    """Grouped bars: ``groups`` maps a label to one value per category (NaN or, with ``log``,
    a value ≤ 0 = no bar). ``log``: a log value axis, so one large category (a ≥ 1 MB transfer
    taking seconds) does not flatten those of milliseconds."""
    fig, (ax,) = _figure(width=7.5, height=3.8)
    x = np.arange(len(categories))
    width = 0.8 / max(len(groups), 1)
    for i, ((label, values), color) in enumerate(zip(groups.items(), COLORS)):
        values = np.asarray(values, dtype=float)
        values = np.where(values > 0, values, np.nan) if log else np.nan_to_num(values)
        ax.bar(x + (i - (len(groups) - 1) / 2) * width, values, width, color=color, label=label)
    if log:
        ax.set_yscale("log")
    ax.set_xticks(x, categories, rotation=30, ha="right", fontsize="small")
    return _finish(fig, ax, path, xlabel, ylabel, title, axis="y")


def curves_figure(curves, path, *, xlabel="", ylabel="", title="", loglog=False, marker="o"):
    """Several (x, y) curves on one axis: ``curves`` maps a label to ``(x, y)``."""
    fig, (ax,) = _figure()
    for (label, (x, y)), color in zip(curves.items(), COLORS):
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        ax.plot(x, y, marker=marker, ms=3, lw=1, color=color, label=label)
    if loglog:
        ax.set_xscale("log")
        ax.set_yscale("log")
    return _finish(fig, ax, path, xlabel, ylabel, title, which="both")


def _finish(fig, ax, path, xlabel, ylabel, title, **grid):
    """Label, grid and legend one axis, then save the figure."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3, **grid)
    ax.legend(loc="best", fontsize="small")
    return save(fig, path)

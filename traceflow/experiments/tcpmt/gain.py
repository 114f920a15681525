"""Figs. 8-10: tracking ability and performance gain vs RTT (Reno, Vegas, Rate) and vs the
background's alpha.

Modes per cell (same background sample path): ``tcp`` (plain flavor, SSC observing), ``tcpmt``
(the experiment's SSC module, coupled to congestion avoidance and slow start), ``ca`` (CA-only
ablation: the same module without the slow-start coupling; PT:192 says the dominant gain comes
from congestion avoidance) and ``constxi`` (not in the paper: plain TCP with its slope fixed at
TCP-MT's time-average xi, separating prediction from average extra aggressiveness).
"""
from __future__ import annotations

import copy

import numpy as np
import polars as pl

from traceflow.experiments.common import experiment as _exp, row, save_table
from traceflow.experiments.tcpmt import batch, calibration, claims, measures, output, setup

GAIN_NOISE = 0.02   # gain steps below 2 percentage points count as flat (run-to-run noise)
TRACK_NOISE = 0.02  # correlation steps below 0.02 count as flat


def _control(scenarios, runs, ex, label):
    """Plain TCP at each TCP-MT run's time-average slope (scenarios: the plain-TCP ones)."""
    xis = [measures.mean_xi(r) for r in runs]
    ctl = []
    for sc, x in zip(scenarios, xis):
        c = copy.deepcopy(sc)
        for g in c["traffic"]:
            if g.get("kind") == "infinite":
                g["tcp"]["xi"] = x
        ctl.append(c)
    return batch.run_all(ctl, ex, label), xis


def sweep(spec, quick, ex, label, axis, modes):
    """Runs over flavors x ``axis`` values ("rtt" or "alpha") x seeds x modes; a per-run frame and
    the per-(flavor, value, mode) means over the seeds (throughput in b/s, tracking)."""
    exp, base = _exp(spec), setup.scenario_base(spec)
    dur = batch.duration(spec, quick)
    flavors = list(exp.get("flavors", ["reno", "vegas", "rate"]))
    load = float(exp.get("background_bps", 5e6))
    period = float(setup.hook(spec).get("period", 2.0))
    seeds = batch.seeds(spec, base)
    cal_dur = calibration.calibration_duration(spec, quick)
    if axis == "rtt":
        values = [float(v) for v in exp.get("rtts", [0.03, 0.1, 0.2, 0.3, 0.45])]
        cal, one = calibration.one_background(spec, base, quick, ex)
        bg = {v: one for v in values}
    else:
        values = [float(a) for a in exp.get("alphas", [1.05, 1.35, 1.65, 1.95])]
        by_alpha = calibration.backgrounds(base, values, load, seed=seeds[0], duration=cal_dur, ex=ex)
        cal = {(a, load): b for a, b in by_alpha.items()}
        bg = by_alpha
    hooks = {"tcp": setup.OFF, "tcpmt": setup.hook(spec), "ca": setup.hook(spec, couple="ca")}
    cells, scenarios = [], []
    for fl in flavors:
        for v in values:
            for seed in seeds:
                for mode in (m for m in modes if m in hooks):
                    cells.append((fl, v, seed, mode))
                    scenarios.append(setup.variant(
                        base, duration=dur, seed=seed, background=bg[v], cc=fl, hook=hooks[mode],
                        rtt=v if axis == "rtt" else exp.get("rtt")))
    runs = batch.run_all(scenarios, ex, label)
    xis = [measures.mean_xi(r) if c[3] != "tcp" else float("nan") for c, r in zip(cells, runs)]
    if "constxi" in modes:
        pairs = [(i, j) for i, c in enumerate(cells) if c[3] == "tcp"
                 for j, d in enumerate(cells) if d[:3] == c[:3] and d[3] == "tcpmt"]
        ctl, ctl_xi = _control([scenarios[i] for i, _ in pairs], [runs[j] for _, j in pairs], ex,
                               f"{label} constant-xi control")
        cells += [(*cells[i][:3], "constxi") for i, _ in pairs]
        runs += ctl
        xis += ctl_xi
    rows = [{"flavor": fl, axis: v, "seed": seed, "mode": mode, "throughput_bps": measures.reliable(r),
             "mean_xi": x, "tracking": claims.tracking(r["series"], period, setup.MEASURED_LINK,
                                                       setup.BACKGROUND_LINK),
             **measures.per_run(r)}
            for (fl, v, seed, mode), r, x in zip(cells, runs, xis)]
    df = pl.DataFrame(rows)
    agg = (df.group_by("flavor", axis, "mode").agg(pl.col("throughput_bps").mean(), pl.col("tracking").mean())
           .pivot(on="mode", index=["flavor", axis], values=["throughput_bps", "tracking"])
           .sort("flavor", axis))
    for m in modes:
        if m != "tcp":
            agg = agg.with_columns((pl.col(f"throughput_bps_{m}") / pl.col("throughput_bps_tcp") - 1)
                                   .alias(f"gain_{m}"))
    if "constxi" in modes:
        agg = agg.with_columns((pl.col("throughput_bps_tcpmt") / pl.col("throughput_bps_constxi") - 1)
                               .alias("gain_vs_constxi"))
    info = (f"{dur:g} s per run, {len(seeds)} seed(s); background: {calibration.describe(cal)}; link "
            f"utilization per run {df['link_utilization'].min():.2f}-{df['link_utilization'].max():.2f}")
    return df, agg, flavors, values, info, cal


def _col(agg, fl, col):
    return agg.filter(pl.col("flavor") == fl)[col].to_numpy()


def _ablation_rows(agg, flavors, axis):
    """The CA-only ablation beside the full module; PT:192: the dominant gain is from CA."""
    out = []
    for fl in flavors:
        g, ca = _col(agg, fl, "gain_tcpmt"), _col(agg, fl, "gain_ca")
        m, mc = float(np.mean(g)), float(np.mean(ca))
        out.append(row(f"{fl}: mean gain, CA-only coupling vs CA + slow start", "CA dominant",
                       [mc, m], mc >= 0.5 * m if m > 0 else mc >= m,
                       "PT:192 'The dominant performance gain, however, is affected by congestion "
                       "avoidance': agree = CA-only gain at least half the full gain; by " + axis + " "
                       + ", ".join(f"{a:+.1%}/{b:+.1%}" for a, b in zip(ca, g))))
        if "gain_vs_constxi" in agg.columns:
            gc = _col(agg, fl, "gain_vs_constxi")
            out.append(claims.shown_row(f"{fl}: gain over plain TCP at TCP-MT's mean xi", None,
                                        [float(v) for v in gc], "not in the paper: the value of "
                                        "predicting the level beyond average extra aggressiveness"))
    return out


def _gain_result(spec, out_dir, names, fig, ax, frames, flavors, comp, text):
    """A gain figure's CA-only ablation rows, common axes and result: ``names`` = (experiment,
    figure file, swept axis), ``frames`` = (runs, gain, calibrated backgrounds) saved as
    ``{experiment}_runs/_gain/_background.parquet``."""
    name, png, axis = names
    df, agg, cal = frames
    comp = comp + _ablation_rows(agg, flavors, axis)
    ax.axhline(0, color="k", lw=0.5)
    ax.set(ylabel="performance gain (%)")
    ax.legend(fontsize=6)
    tables = {"runs": save_table(df, out_dir, f"{name}_runs.parquet"),
              "gain": save_table(agg, out_dir, f"{name}_gain.parquet"),
              "background": save_table(calibration.calibration_table(cal), out_dir,
                                       f"{name}_background.parquet")}
    return output.result(spec, [output.save(fig, out_dir, png)], tables, comp,
                         f"{text} Dashed: CA-only coupling.")


def fig9(spec, out_dir, *, quick=False, executor="local", workers=None, scheduler=None):
    """Fig. 9: performance gain of TCP-MT over its flavor vs RTT (Reno, Vegas, Rate)."""
    ex = batch.executor(executor, workers, scheduler)
    df, agg, flavors, rtts, info, cal = sweep(spec, quick, ex, "fig9", "rtt",
                                             _exp(spec).get("modes", ["tcp", "tcpmt", "ca", "constxi"]))
    paper = _exp(spec).get("paper", {})
    comp = []
    fig, axes = output.figure(figsize=(5.5, 3.8))
    ax = axes[0][0]
    for fl in flavors:
        x, g = _col(agg, fl, "rtt"), _col(agg, fl, "gain_tcpmt")
        line, = ax.plot(x * 1e3, g * 100, "o-", label=f"{fl} + SSC")
        if "gain_ca" in agg.columns:
            ax.plot(x * 1e3, _col(agg, fl, "gain_ca") * 100, "x--", color=line.get_color(),
                    label=f"{fl} + SSC (CA only)")
        comp += claims.shape_rows(f"{fl}: gain vs RTT", x, g, "increasing", source="PT:274 'performance "
                                  "gain amplifies as RTT is increased'", noise_abs=GAIN_NOISE)
    big = max(rtts)
    at = {fl: float(_col(agg, fl, "gain_tcpmt")[-1]) for fl in flavors}
    if "rate" in at and "rate_gain_450ms" in paper and abs(big - 0.45) < 1e-9:
        comp.append(claims.within_row("rate: gain at RTT = 450 ms", paper["rate_gain_450ms"],
                                      at["rate"], 0.10, "PT:274 'reaching up to 45% ... TCP Rate'"))
        comp.append(row("largest gain at RTT = 450 ms", "rate", max(at, key=at.get),
                        max(at, key=at.get) == "rate", ", ".join(f"{k} {v:+.1%}" for k, v in at.items())))
    if {"reno", "vegas", "rate"} <= set(flavors):
        mg = {fl: float(np.mean(_col(agg, fl, "gain_tcpmt"))) for fl in ("reno", "vegas", "rate")}
        comp.append(claims.order_row("mean gain over RTT", mg, ["reno", "vegas", "rate"],
                                     "PT:274 'a robust, even increasing, performance gain' from Reno to Vegas to Rate"))
        mt = {fl: float(np.mean(_col(agg, fl, "throughput_bps_tcp"))) for fl in ("reno", "vegas", "rate")}
        comp.append(claims.order_row("plain TCP throughput (mean over RTT)", mt, ["reno", "vegas", "rate"],
                                     "PT:274 'going from TCP Reno to Vegas to Rate (the better a feedback "
                                     "congestion control is able to utilize available bandwidth ...)'"))
    ax.set(xlabel="RTT (ms)", title="TCP-MT gain vs RTT")
    return _gain_result(spec, out_dir, ("fig9", "fig9_gain_rtt.png", "RTT"), fig, ax, (df, agg, cal),
                        flavors, comp, f"Gain vs RTT; {info}.")


def fig8(spec, out_dir, *, quick=False, executor="local", workers=None, scheduler=None):
    """Fig. 8: tracking ability (correlation with the background) vs RTT, without and with SSC."""
    ex = batch.executor(executor, workers, scheduler)
    df, agg, flavors, rtts, info, cal = sweep(spec, quick, ex, "fig8", "rtt", ["tcp", "tcpmt"])
    fig, axes = output.figure(1, 2, figsize=(10, 3.8), sharey=True)
    comp, means = [], {}
    for k, (mode, title) in enumerate((("tcp", "(a) TCP"), ("tcpmt", "(b) TCP-MT (SSC)"))):
        for fl in flavors:
            x, y = _col(agg, fl, "rtt"), _col(agg, fl, f"tracking_{mode}")
            axes[0][k].plot(x * 1e3, y, "o-", label=fl)
            means[(fl, mode)] = float(np.nanmean(y))
        axes[0][k].set(title=title, xlabel="RTT (ms)", ylabel="correlation with background")
        axes[0][k].legend()
    for fl in flavors:
        comp += claims.shape_rows(f"{fl}: tracking correlation vs RTT (no SSC)", _col(agg, fl, "rtt"),
                                  _col(agg, fl, "tracking_tcp"), "increasing", noise_abs=TRACK_NOISE,
                                  source="PT:259 'as round-trip time increases, tracking ability decreases'")
        d = means[(fl, "tcpmt")] - means[(fl, "tcp")]
        comp.append(row(f"{fl}: mean correlation with SSC minus without", "< 0 (toward -1)", d, d < 0,
                        "PT:259 'all curves have shifted downward toward -1'"))
    if {"reno", "vegas", "rate"} <= set(flavors):
        comp.append(claims.order_row("tracking (mean correlation, no SSC; most negative first)",
                                     {f: means[(f, "tcp")] for f in ("reno", "vegas", "rate")},
                                     ["rate", "vegas", "reno"],
                                     "PT:259 'TCP Rate exhibits the best tracking ability followed by Vegas and Reno'"))
    tables = {"runs": save_table(df, out_dir, "fig8_runs.parquet"),
              "tracking": save_table(agg, out_dir, "fig8_tracking.parquet")}
    return output.result(spec, [output.save(fig, out_dir, "fig8_tracking.png")], tables, comp,
                        f"Tracking = correlation of the measured connection's and the background's "
                        f"bytes per 2 s block at the bottleneck egress; {info}.")


def fig10(spec, out_dir, *, quick=False, executor="local", workers=None, scheduler=None):
    """Fig. 10: performance gain for alpha = 1.05 ... 1.95 background (same normalized load)."""
    ex = batch.executor(executor, workers, scheduler)
    df, agg, flavors, alphas, info, cal = sweep(spec, quick, ex, "fig10", "alpha",
                                                _exp(spec).get("modes", ["tcp", "tcpmt", "ca", "constxi"]))
    ratio_paper = _exp(spec).get("paper", {}).get("ratio_105_to_195", 2.0)
    fig, axes = output.figure(figsize=(5.5, 3.8))
    ax = axes[0][0]
    comp = []
    for fl in flavors:
        x, g = _col(agg, fl, "alpha"), _col(agg, fl, "gain_tcpmt")
        line, = ax.plot(x, g * 100, "o-", label=f"{fl} + SSC")
        if "gain_ca" in agg.columns:
            ax.plot(x, _col(agg, fl, "gain_ca") * 100, "x--", color=line.get_color(), label=f"{fl} (CA only)")
        comp.append(claims.ratio_row(f"{fl}: gain ratio alpha={x[0]:g} / alpha={x[-1]:g}", float(g[0]),
                                     float(g[-1]), ratio_paper, "PT:283 'performance gain increases by a "
                                     "factor of two or more for alpha = 1.05 ... compared with ... 1.95'"))
        comp += claims.shape_rows(f"{fl}: gain vs alpha", x, g, "decreasing", noise_abs=GAIN_NOISE,
                                  source="PT:283 'the more long-range dependent the network traffic, "
                                  "the more structure there is to exploit'")
        tp = _col(agg, fl, "throughput_bps_tcp")
        comp.append(row(f"{fl}: plain TCP throughput alpha={x[-1]:g} vs {x[0]:g}", "higher for 1.95",
                        [float(tp[-1]), float(tp[0])], tp[-1] > tp[0],
                        "PT:278-283 'the throughput level for the feedback congestion control ... is "
                        "higher for alpha = 1.95 traffic than alpha = 1.05'"))
    ax.set(xlabel="alpha (background file sizes)", title="TCP-MT gain vs alpha")
    return _gain_result(spec, out_dir, ("fig10", "fig10_gain_alpha.png", "alpha"), fig, ax,
                        (df, agg, cal), flavors, comp, f"Gain vs alpha at the base RTT; {info}.")

"""Figs. 6 and 7: reliable throughput vs the aggressiveness threshold theta (threshold schedule:
xi = A while L2hat <= theta, else a) at three background loads; Fig. 7 also the individual effect of
coupling SSC to congestion avoidance (ca), slow start (ss) and both, and TCP Rate beside TCP Reno.

Paper (PT:242-252): at 5 Mb/s "the curve is unimodal with peak at theta = 4"; at 2.5 Mb/s
("plentiful" resources) monotonically increasing, at 7.5 Mb/s ("scarce") monotonically decreasing;
with TCP Rate "both performance as well as curvature of the throughput curves have increased".
"""
from __future__ import annotations

import numpy as np
import polars as pl

from traceflow.experiments.common import experiment as _exp, row, save_table
from traceflow.experiments.tcpmt import batch, calibration, claims, measures, output, setup

SOURCE = "PT:242-252"


def _curves(spec, ex, quick, flavors):
    exp, base = _exp(spec), setup.scenario_base(spec)
    dur = batch.duration(spec, quick)
    loads = [float(v) for v in exp.get("loads", [5e6, 2.5e6, 7.5e6])]
    thetas = [int(v) for v in exp.get("thetas", range(1, 9))]
    couplings = list(exp.get("couplings", ["ca"]))
    alpha = float(exp.get("alpha", 1.05))
    seeds = batch.seeds(spec, base)
    cal = calibration.calibrate(base, [(alpha, load) for load in loads], seed=seeds[0],
                          duration=calibration.calibration_duration(spec, quick), ex=ex)
    cells, scenarios = [], []
    for fl in flavors:
        for load in loads:
            for seed in seeds:
                common = dict(duration=dur, seed=seed, background=cal[(alpha, load)], cc=fl)
                cells.append((fl, load, "tcp", 0, seed))
                scenarios.append(setup.variant(base, hook=setup.OFF, **common))
                for ci, couple in enumerate(couplings):
                    if (ci > 0 or fl != flavors[0]) and load != loads[0]:
                        continue  # couplings and other flavors: at the first load only
                    for th in thetas:
                        cells.append((fl, load, couple, th, seed))
                        scenarios.append(setup.variant(
                            base, hook=setup.hook(spec, theta=float(th), couple=couple), **common))
    runs = batch.run_all(scenarios, ex, "threshold curves")
    df = pl.DataFrame([{"flavor": fl, "background_target_bps": load, "coupling": c, "theta": th,
                        "seed": seed, "throughput_bps": measures.reliable(r), **measures.per_run(r)}
                       for (fl, load, c, th, seed), r in zip(cells, runs)])
    mean = (df.group_by("flavor", "background_target_bps", "coupling", "theta")
            .agg(pl.col("throughput_bps", "link_utilization").mean()))
    return df, mean, loads, thetas, couplings, cal, dur


def _curve(mean, fl, load, coupling):
    cur = mean.filter((pl.col("flavor") == fl) & (pl.col("background_target_bps") == load)
                      & (pl.col("coupling") == coupling)).sort("theta")
    return cur["theta"].to_numpy(), cur["throughput_bps"].to_numpy()


def _run(spec, out_dir, quick, ex, name):
    exp = _exp(spec)
    flavor = exp.get("flavor", "reno")
    flavors = [flavor] + [f for f in exp.get("compare_flavors", []) if f != flavor]
    df, mean, loads, thetas, couplings, cal, dur = _curves(spec, ex, quick, flavors)
    paper = exp.get("paper", {})
    comp = []
    fig, axes = output.figure(1, len(loads), figsize=(4.2 * len(loads), 3.4))
    for j, load in enumerate(loads):
        ax = axes[0][j]
        key = f"{load / 1e6:g}".replace(".", "_")
        for fl in flavors:
            for c in couplings:
                x, y = _curve(mean, fl, load, c)
                if not x.size:
                    continue
                ax.plot(x, y / 1e6, "o-", label=f"{fl} + SSC ({c})")
                if fl == flavor and c == couplings[0] and f"shape_{key}" in paper:
                    comp += claims.shape_rows(f"{fl}, {load / 1e6:g} Mb/s background: throughput(theta)",
                                              x, y, paper[f"shape_{key}"], paper.get(f"peak_theta_{key}"),
                                              SOURCE)
            tcp = mean.filter((pl.col("flavor") == fl) & (pl.col("background_target_bps") == load)
                              & (pl.col("coupling") == "tcp"))["throughput_bps"]
            ax.axhline(float(tcp[0]) / 1e6, ls="--", lw=0.8, label=f"{fl} (no SSC)")
        ax.set(title=f"background {load / 1e6:g} Mb/s", xlabel="threshold theta",
               ylabel="reliable throughput (Mb/s)")
        ax.legend(fontsize=6)
    comp += _coupling_rows(mean, flavor, loads[0], couplings)
    comp += _flavor_rows(mean, flavors, loads[0])
    util = df.group_by("background_target_bps").agg(pl.col("link_utilization").min().alias("lo"),
                                                     pl.col("link_utilization").max().alias("hi"))
    text = (f"{', '.join(flavors)} + SSC (threshold schedule, A = {setup.hook(spec).get('A')}), "
            f"{dur:g} s per run, {df['seed'].n_unique()} seed(s); utilization per run in the table ("
            + ", ".join(f"{r['background_target_bps'] / 1e6:g} Mb/s: {r['lo']:.2f}-{r['hi']:.2f}"
                        for r in util.sort("background_target_bps").iter_rows(named=True))
            + "). Background: " + calibration.describe(cal) + ".")
    tables = {"throughput": save_table(df, out_dir, f"{name}_throughput.parquet"),
              "background": save_table(calibration.calibration_table(cal), out_dir, f"{name}_background.parquet")}
    return output.result(spec, [output.save(fig, out_dir, f"{name}_threshold.png")], tables, comp, text)


def _coupling_rows(mean, flavor, load, couplings):
    """sec. 3.6.1 (PT:192): "The dominant performance gain, however, is affected by congestion
    avoidance": the best CA-only gain exceeds the best SS-only gain."""
    if not {"ca", "ss"} <= set(couplings):
        return []
    tcp = mean.filter((pl.col("flavor") == flavor) & (pl.col("background_target_bps") == load)
                      & (pl.col("coupling") == "tcp"))["throughput_bps"][0]
    best = {c: claims.gain(float(np.max(_curve(mean, flavor, load, c)[1])), tcp) for c in couplings}
    return [row(f"{flavor}, {load / 1e6:g} Mb/s: best gain with CA coupling vs SS coupling",
                "CA > SS", [best["ca"], best["ss"]], best["ca"] > best["ss"],
                "PT:192 'the dominant performance gain ... is affected by congestion avoidance'; "
                + ", ".join(f"{c} {g:+.1%}" for c, g in best.items()))]


def _flavor_rows(mean, flavors, load):
    """Fig. 7 vs Fig. 6 (PT:252): TCP Rate's curve lies higher and bends more than Reno's."""
    if len(flavors) < 2:
        return []
    a, b = flavors[0], flavors[1]
    ya, yb = _curve(mean, a, load, "ca")[1], _curve(mean, b, load, "ca")[1]
    if not (ya.size and yb.size):
        return []
    curv = {f: float((y.max() - min(y[0], y[-1])) / y.max()) for f, y in ((a, ya), (b, yb))}
    return [row(f"{load / 1e6:g} Mb/s: mean throughput over theta, {a} vs {b}", f"{a} > {b}",
                [float(ya.mean()), float(yb.mean())], ya.mean() > yb.mean(), "PT:252 'performance ... increased'"),
            row(f"{load / 1e6:g} Mb/s: curvature (peak above the lower end, relative), {a} vs {b}",
                f"{a} > {b}", [curv[a], curv[b]], curv[a] > curv[b], "PT:252 'curvature ... increased'")]


def fig6(spec, out_dir, *, quick=False, executor="local", workers=None, scheduler=None):
    """Fig. 6: TCP Reno + SSC, reliable throughput vs threshold theta at three background loads."""
    return _run(spec, out_dir, quick, batch.executor(executor, workers, scheduler), "fig6")


def fig7(spec, out_dir, *, quick=False, executor="local", workers=None, scheduler=None):
    """Fig. 7: as Fig. 6 with TCP Rate, the CA / SS / both couplings, and Reno beside it."""
    return _run(spec, out_dir, quick, batch.executor(executor, workers, scheduler), "fig7")

"""Fig. 1: conditional densities Pr{L2 | L1} of the aggregate (background) traffic at the bottleneck
for alpha = 1.05 and 1.95 at time scales of 1 s and 5 s, h = 8 levels (sec. 2.2).

Paper (PT:104, qualitative): for alpha = 1.05 the mass lies along the diagonal (the current
level predicts the next); for alpha = 1.95 Pr{L2 | L1} ~ Pr{L2} (no predictability at large time
scales).
"""
from __future__ import annotations

import numpy as np
import polars as pl

from traceflow.experiments.common import experiment as _exp, row, save_table
from traceflow.experiments.tcpmt import batch, calibration, output, setup


def fig1(spec, out_dir, *, quick=False, executor="local", workers=None, scheduler=None):
    """Pr{L2 | L1} of the background alone at the bottleneck, two alphas, two time scales."""
    from traceflow.stats.levels import analyze_levels

    ex = batch.executor(executor, workers, scheduler)
    exp, base = _exp(spec), setup.scenario_base(spec)
    alphas = [float(a) for a in exp.get("alphas", [1.05, 1.95])]
    scales = [int(s) for s in exp.get("scales", [1, 5])]
    load = float(exp.get("background_bps", 5e6))
    h = int(exp.get("levels", 8))
    method = exp.get("map", "quantile")
    link = exp.get("link", "g1->g2")
    seed = batch.seeds(spec, base)[0]
    bgs = calibration.backgrounds(base, alphas, load, seed=seed,
                            duration=calibration.calibration_duration(spec, quick), ex=ex)
    runs = batch.run_all([setup.variant(base, duration=batch.duration(spec, quick), seed=seed,
                                        background=bgs[a], measured=False) for a in alphas], ex, "fig1")
    probs, summ, res = [], [], {}
    fig, axes = output.figure(len(alphas), len(scales), figsize=(4.2 * len(scales), 3.6 * len(alphas)))
    for i, (a, run) in enumerate(zip(alphas, runs)):
        per_s = run["series"][link].astype(float)
        for j, T in enumerate(scales):
            n = per_s.size // T
            r = analyze_levels(per_s[:n * T].reshape(n, T).sum(axis=1), h, method=method, scale_s=T)
            res[(a, T)] = r
            for l1 in range(h):
                for l2 in range(h):
                    probs.append({"alpha": a, "scale_s": T, "L1": l1 + 1, "L2": l2 + 1,
                                  "count": int(r.table[l1, l2]), "prob": float(r.prob[l1, l2])})
            summ.append({"alpha": a, "scale_s": T, "blocks": int(r.x.size),
                         "background_bps": run["summary"]["background_bps"],
                         **{k: float(v) for k, v in r.summary.items()},
                         "cond_mean": [float(v) for v in r.cond_mean]})
            ax = axes[i][j]
            im = ax.imshow(np.nan_to_num(r.prob), origin="lower", extent=(0.5, h + .5, 0.5, h + .5),
                           vmin=0, vmax=max(0.3, float(np.nanmax(r.prob))), cmap="viridis")
            ax.set(title=f"alpha={a}, T={T} s", xlabel="L2", ylabel="L1")
            fig.colorbar(im, ax=ax, label="Pr{L2|L1}")
    comp = []
    lo_a, hi_a = min(alphas), max(alphas)
    for T in scales:
        a, b = res[(lo_a, T)].summary, res[(hi_a, T)].summary
        comp.append(row(f"T={T}s: mutual information I(L1;L2), alpha={lo_a} vs {hi_a} (bit)",
                        "alpha=1.05 predictable, 1.95 not", [a["mutual_information"], b["mutual_information"]],
                        a["mutual_information"] > b["mutual_information"],
                        "agree = alpha 1.05 carries more information about the next level"))
        comp.append(row(f"T={T}s: alpha={lo_a} diagonal mass Pr{{L2=L1}} vs independence",
                        "concentrated on the diagonal", [a["diagonal_mass"], a["diagonal_mass_independent"]],
                        a["diagonal_mass"] > 1.5 * a["diagonal_mass_independent"],
                        "agree = diagonal mass at least 1.5x what independence gives"))
        comp.append(row(f"T={T}s: alpha={hi_a} distance of Pr{{L2|L1}} from Pr{{L2}} (TV)",
                        "insensitive to conditioning", b["tv_distance"], b["tv_distance"] < a["tv_distance"],
                        f"agree = smaller than for alpha={lo_a} ({a['tv_distance']:.3f})"))
    tables = {"condprob": save_table(pl.DataFrame(probs), out_dir, "fig1_condprob.parquet"),
              "predictability": save_table(pl.DataFrame(summ), out_dir, "fig1_predictability.parquet")}
    text = (f"Background only ({calibration.describe({(a, load): bgs[a] for a in alphas})}), bottleneck bytes "
            f"per block, {method} map onto h={h} levels. " + "; ".join(
                f"alpha={s['alpha']} T={s['scale_s']}s: MI={s['mutual_information']:.3f} bit, "
                f"R2={s['r2']:.2f}" for s in summ))
    return output.result(spec, [output.save(fig, out_dir, "fig1_condprob.png")], tables, comp, text)

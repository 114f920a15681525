"""Figs. 11 and 12: the symmetric metacontrol of the maximum aggressiveness A (sec. 3.5, 5.6).

Paper (PT:308-310): for nu = 0.01, 0.05, 0.25 "the larger nu, the more pronounced the resulting
oscillation", and all three "settle to a common equilibrium A* ~ 6"; the static-A throughput curve
is unimodal with its optimum at A* = 6, the dynamic metacontrol "closely approximates the
performance of the optimal static maximum aggressiveness value", plain TCP Rate is the lower
reference.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from traceflow.experiments.common import experiment as _exp, row, save_table
from traceflow.experiments.tcpmt import batch, calibration, claims, measures, output, setup

NS = batch.NS


def _single(spec, quick, ex):
    exp, base = _exp(spec), setup.scenario_base(spec)
    cal, bg = calibration.one_background(spec, base, quick, ex)
    common = dict(duration=batch.duration(spec, quick), seed=batch.seeds(spec, base)[0],
                  background=bg, cc=exp.get("flavor", "rate"), rtt=exp.get("rtt"))
    return exp, base, cal, common


def fig11(spec, out_dir, *, quick=False, executor="local", workers=None, scheduler=None):
    """Fig. 11: evolution of A under the symmetric metacontrol for several adjustment factors nu."""
    ex = batch.executor(executor, workers, scheduler)
    exp, base, cal, common = _single(spec, quick, ex)
    nus = [float(v) for v in exp.get("nus", [0.01, 0.05, 0.25])]
    runs = batch.run_all([setup.variant(base, hook=setup.hook(spec, metacontrol=True, nu=nu), **common)
                          for nu in nus], ex, "fig11")
    a_star = float(exp.get("paper", {}).get("A_star", 6.0))
    tol = float(exp.get("A_tolerance", 1.5))
    frames, comp, settle = [], [], {}
    fig, axes = output.figure(len(nus), 1, figsize=(7, 2.3 * len(nus)), sharex=True)
    for k, (nu, r) in enumerate(zip(nus, runs)):
        tr = r["measured"][0]["trace"]
        t = tr["t"] / NS
        frames.append(pl.DataFrame({"nu": np.full(t.size, nu), "t_s": t, "A": tr["A"], "xi": tr["xi"],
                                    "L1": tr["L1"], "L2hat": tr["L2hat"], "x_bits": tr["x"],
                                    "gamma_bits": tr["gamma"]}))
        half = tr["A"][t >= t[-1] / 2] if t.size else np.array([np.nan])
        settle[nu] = (float(np.mean(half)), float(np.std(half)))
        axes[k][0].plot(t, tr["A"], lw=0.8)
        axes[k][0].axhline(a_star, ls=":", color="k", lw=0.6)
        axes[k][0].set(ylabel="A", title=f"nu = {nu}")
        comp.append(claims.within_row(f"nu={nu}: mean A over the second half", a_star, settle[nu][0],
                                      tol, f"PT:308 'settles to a common equilibrium A* ~ 6'; std "
                                      f"{settle[nu][1]:.2f}; throughput {measures.reliable(r) / 1e6:.3f} "
                                      f"Mb/s; utilization {r['summary']['link_utilization']:.3f}"))
    axes[-1][0].set_xlabel("time (s)")
    sds = [settle[nu][1] for nu in nus]
    comp.append(row("oscillation of A (std, second half) grows with nu", "increasing", sds,
                    bool(np.all(np.diff(sds) > 0)), "PT:308 'the larger nu, the more pronounced the "
                    "resulting oscillation'"))
    tables = {"trace": save_table(pl.concat(frames), out_dir, "fig11_trace.parquet")}
    return output.result(spec, [output.save(fig, out_dir, "fig11_metacontrol.png")], tables, comp,
                        f"{common['cc']} + SSC with metacontrol, {common['duration']:g} s; background "
                        f"{calibration.describe(cal)}.")


def fig12(spec, out_dir, *, quick=False, executor="local", workers=None, scheduler=None):
    """Fig. 12: throughput with static A = 1..10 vs the dynamic metacontrol vs plain TCP."""
    ex = batch.executor(executor, workers, scheduler)
    exp, base, cal, common = _single(spec, quick, ex)
    a_values = [float(v) for v in exp.get("A_values", range(1, 11))]
    nu = float(exp.get("nu", 0.05))
    labels = [("static", a) for a in a_values] + [("dynamic", float("nan")), ("tcp", float("nan"))]
    scen = [setup.variant(base, hook=setup.hook(spec, metacontrol=False, A=a), **common) for a in a_values]
    scen += [setup.variant(base, hook=setup.hook(spec, metacontrol=True, nu=nu), **common),
             setup.variant(base, hook=setup.OFF, **common)]
    runs = batch.run_all(scen, ex, "fig12")
    df = pl.DataFrame([{"config": c, "A": a, "throughput_bps": measures.reliable(r), **measures.per_run(r)}
                       for (c, a), r in zip(labels, runs)])
    static = df.filter(pl.col("config") == "static")
    y = static["throughput_bps"].to_numpy()
    best = float(y.max())
    dyn = float(df.filter(pl.col("config") == "dynamic")["throughput_bps"][0])
    tcp = float(df.filter(pl.col("config") == "tcp")["throughput_bps"][0])
    paper = exp.get("paper", {})
    comp = claims.shape_rows("static A: throughput(A)", a_values, y, "unimodal",
                             paper.get("best_static_A"), "PT:310 'The unimodal curve ... the optimal "
                             "static maximum aggressiveness value A* = 6'")
    comp += [row("dynamic metacontrol / best static A", ">= 0.95", dyn / best, dyn / best >= 0.95,
                 "PT:310 'closely approximates the performance of the optimal static' (within 5 %)"),
             row("plain TCP below the dynamic metacontrol", "below", tcp / dyn, tcp < dyn,
                 "PT:310 'The lower dashed line shows the throughput of TCP Rate'; ratio TCP / dynamic")]
    fig, axes = output.figure(figsize=(5.5, 3.8))
    ax = axes[0][0]
    ax.plot(a_values, y / 1e6, "o-", label="static A")
    ax.axhline(dyn / 1e6, ls="--", color="C1", label=f"dynamic (nu={nu})")
    ax.axhline(tcp / 1e6, ls=":", color="k", label=f"{common['cc']} (no SSC)")
    ax.set(xlabel="maximum aggressiveness A", ylabel="reliable throughput (Mb/s)")
    ax.legend()
    tables = {"throughput": save_table(df, out_dir, "fig12_throughput.parquet")}
    return output.result(spec, [output.save(fig, out_dir, "fig12_static_dynamic.png")], tables, comp,
                        f"{common['cc']}, {common['duration']:g} s per run; "
                        f"{output.run_note(df, cal)}.")

"""Sweeps over the values a paper leaves open (issue 45): does a stated quantity or a claim hold
for some plausible value, for all of them, or for none?

:func:`ks_sources` runs Kalantari & Shayman's fairness set-up (replays/capm_fairness.toml, no
perturbation) over the source models and buffers the paper does not give and measures what it
does give: the demands lambda_1, lambda_2 (KS:225, packets/s) and, with the sources doubled, the
DropTail loss at the bottleneck (KS:227). :func:`reached` says which grid points meet the stated
numbers within a relative tolerance. :func:`wn_buffer` runs Wu & Nikolaidis's classification
schemes (replays/class_short_load.toml) over the total buffer and the FairShare dropper, neither
of which sec. 4 gives, and :func:`wn_claim17` judges claim 17 on them.
"""
from __future__ import annotations

import copy
import itertools

import polars as pl

from traceflow.experiments import capm
from traceflow.experiments import classification as wn
from traceflow.experiments.common import experiment as _exp
from traceflow.scale.parallel import map_tasks

# KS:225 "lambda_1 ... is about 5234 pkt/sec, and lambda_2 = 4547 pkt/sec"; KS:227 "about 4% of
# incoming packets are dropped, and ... the arrival rate ... is reduced to about 12570"
KS_STATED = {"rate1": 5234.0, "rate2": 4547.0, "loss": 0.04}


def ks_sources(spec, *, persistent=(True, False), rwnd=(20, 40, 1000),
               limit=(25, 100, 500), periods=3, seed=1, executor="local", workers=None):
    """One row per grid point: ``persistent`` (one agent per source vs a new connection per on
    period), ``rwnd`` (segments), ``limit`` (bottleneck buffer, packets), ``scale`` (1: the
    paper's sources, 2: doubled); measured ``rate1``, ``rate2`` (packets/s of each aggregate at
    R1 after the warm-up), ``loss`` (fraction dropped at R1) and ``utilization``. The demands are
    measured at the paper's sources behind the largest buffer; the loss with doubled sources at
    every buffer. ``periods`` code periods of 32 s after the 10 s warm-up."""
    points = [(p, w, max(limit), 1) for p, w in itertools.product(persistent, rwnd)]
    points += [(p, w, b, 2) for p, w, b in itertools.product(persistent, rwnd, limit)]
    tasks = []
    for p, w, b, scale in points:
        s = copy.deepcopy(spec)
        s["experiment"]["persistent"] = p
        s["tcp"]["rwnd"] = w
        s["topology"]["bottleneck"]["queue"]["limit"] = b
        groups = capm._groups(_exp(s), "aggregates", scale=scale)
        tasks.append(capm.scenario(s, groups=groups, periods=periods, seed=seed))
    runs = map_tasks(capm.simulate, tasks, executor=executor, workers=workers,
                     label="ks-sources")
    return pl.DataFrame([{"persistent": p, "rwnd": w, "limit": b, "scale": scale,
                          "rate1": r["aggregate_rate"][0], "rate2": r["aggregate_rate"][1],
                          "loss": r["summary"]["loss_rate"],
                          "utilization": r["summary"]["link_utilization"]}
                         for (p, w, b, scale), r in zip(points, runs)])


def reached(df, tol=0.10, stated=KS_STATED):
    """The rows of :func:`ks_sources` that meet the stated numbers within ``tol`` (relative):
    ``("demands", rows)`` at the paper's sources (both lambdas) and ``("loss", rows)`` with the
    doubled sources (the loss at a link the paper says is full: utilization >= 0.95)."""
    near = lambda col, want: ((pl.col(col) - want).abs() <= tol * want)  # noqa: E731
    demands = df.filter((pl.col("scale") == 1) & near("rate1", stated["rate1"])
                        & near("rate2", stated["rate2"]))
    loss = df.filter((pl.col("scale") == 2) & near("loss", stated["loss"])
                     & (pl.col("utilization") >= 0.95))
    return {"demands": demands, "loss": loss}


def wn_buffer(spec, *, buffers=(24, 48, 96), schemes=("SIX-DT", "MIX-DT"), short_rates=(3.5,),
              seeds=range(1, 9), executor="local", workers=None):
    """Wu & Nikolaidis sec. 4 (replays/class_short_load.toml) gives no buffer: the long-lived
    Jain index of each scheme at each of ``short_rates`` (short flows/s) for each total buffer
    (packets, split 1/N over a scheme's classes as in Fig. 1's set-up), mean over ``seeds``.
    Rows: buffer, scheme, short_rate, jain_long, short_goodput_pps, loss. A scheme named
    ``"<scheme>+FS"`` puts the FairShare dropper in front of it (WN:105: a flow past the threshold is "qualified for control
    by the FairShare policy"; the sec. 4 runs do not say they apply it), with the long-lived
    flows' share of the link C_L = 1 - short_share and the scheme's 50-packet threshold."""
    tasks = []
    for b in buffers:
        s = copy.deepcopy(spec)
        exp = _exp(s)
        exp["buffer"] = int(b)
        for scheme in schemes:
            base, _, fs = scheme.partition("+")
            queue = wn.scheme_queue(exp, base, exp["rtt_ratio"])
            if fs == "FS":
                queue = {"kind": "fairshare", "inner": queue, "threshold": exp["threshold"],
                         "long_share": 1.0 - exp["short_share"]}
            for rate, seed in itertools.product(short_rates, seeds):
                tasks.append(wn._task(s, {"buffer": int(b), "scheme": scheme,
                                          "short_rate": float(rate)}, queue,
                                      duration=float(exp["duration"]), seed=seed,
                                      rtt_ratio=exp["rtt_ratio"], short_rate=rate,
                                      long_per_class=exp["long_per_class"]))
    rows = map_tasks(wn.simulate, tasks, executor=executor, workers=workers, label="wn-buffer")
    df = pl.DataFrame([{k: v for k, v in r.items() if not isinstance(v, list)} for r in rows])
    return (df.group_by("buffer", "scheme", "short_rate")
            .agg(pl.col("jain_long", "short_goodput_pps", "loss").mean())
            .sort("buffer", "scheme", "short_rate"))


def wn_claim17(df, six="SIX-DT+FS", lft="LFT-DT+FS", mix="MIX-DT"):
    """Claim 17's test (traceflow.report.claims; the thresholds of classification.short_load's
    rows) per buffer on :func:`wn_buffer`'s rows at the lowest and highest short rate: ``six`` >= 0.95 and above ``mix`` at the top rate, ``mix``
    falls by >= 0.05, ``lft`` moves by <= 0.05. Rows: buffer, six_top, mix_top, mix_trend,
    lft_trend, holds."""
    out = []
    for b in sorted(set(df["buffer"])):
        d = df.filter(pl.col("buffer") == b)

        def jain(scheme, which):
            x = d.filter(pl.col("scheme") == scheme).sort("short_rate")["jain_long"]
            return float(x[which])

        six_top, mix_top = jain(six, -1), jain(mix, -1)
        mix_trend, lft_trend = mix_top - jain(mix, 0), jain(lft, -1) - jain(lft, 0)
        out.append({"buffer": b, "six_top": six_top, "mix_top": mix_top, "mix_trend": mix_trend,
                    "lft_trend": lft_trend,
                    "holds": six_top >= 0.95 and six_top > mix_top and mix_trend <= -0.05
                    and abs(lft_trend) <= 0.05})
    return pl.DataFrame(out)

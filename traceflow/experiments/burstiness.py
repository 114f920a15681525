"""Feng & Tinnakornsrisuphap 2000, "The adverse impact of the TCP congestion-control mechanism in
heterogeneous computing systems": Figures 2–4 (c.o.v., throughput and loss vs number of Poisson
clients for UDP, Reno, Reno with delayed ACK, Vegas, Reno/RED, Vegas/RED), Figures 5–12 (clients
added to 20 or 40 Reno background clients; 50- and 1500-packet gateway buffers; RED1, RED2) and
Figure 13 (the stochastic Reno model of section 4 vs the simulated c.o.v.).

Network (Table 1): the star ``c0..c{M-1} -> gw -> srv``; client links 10 Mb/s, 25 ms; bottleneck
50 Mb/s, 25 ms; every client hands single 1500-byte packets to its transport at Poisson times
(mean gap 10 ms).  The c.o.v. is std/mean of the packets arriving at the gateway per round-trip
propagation delay τ = 2(τ_c + τ_s) = 100 ms (the series bin).  Runs go through
:func:`traceflow.scale.parallel.map_tasks` with :func:`simulate`.
"""
from __future__ import annotations

import copy

import numpy as np
import polars as pl
from scipy.stats import spearmanr

from traceflow.models.reno_cov import RenoCovParams, cov_curve, poisson_cov
from traceflow.experiments.common import experiment as _exp, base as _base, duration as _duration, save_table as _save_table, figure as _figure, save_fig as _save_fig, row as _row

GATEWAY = "gw->srv"


def _group(exp, name, count, first, cls):
    """A traffic group of ``count`` clients c{first}.. running protocol ``name``."""
    proto = exp["protocols"][name]
    g = {"kind": "poisson", "rate": float(exp["client_rate"]), "dst": "srv", "cls": cls,
         "src": [f"c{i}" for i in range(first, first + count)], "start_spread": 1.0}
    if proto.get("transport", "tcp") == "udp":
        g["transport"] = "udp"
        g["udp"] = {"rate": float(exp["client_link_bps"])}
    else:
        g["tcp"] = {k: v for k, v in proto.items() if k not in ("transport", "gateway")}
    return g


def scenario(spec, groups, gateway, *, duration, seed):
    """``groups``: list of (protocol name, client count); ``gateway``: queue table."""
    exp = _exp(spec)
    sc = _base(spec)
    sc["simulation"]["duration"] = duration
    sc["simulation"]["seed"] = int(seed)
    total = sum(n for _, n in groups)
    sc["topology"]["clients"] = total
    sc["topology"]["bottleneck"]["queue"] = gateway
    traffic, first = [], 0
    for cls, (name, n) in enumerate(groups):
        traffic.append(_group(exp, name, n, first, cls))
        first += n
    sc["traffic"] = traffic
    return sc


def simulate(task):
    """Run one scenario: c.o.v. per τ at the gateway, throughput, loss, per-group results."""
    from traceflow import sim

    res = sim.run(task["scenario"])
    sc = res.scenario
    bin_s = sc.simulation.series_bin
    link = res.series.column("link").to_numpy()
    arrivals = res.series.column("arrival_packets").to_numpy()[link == GATEWAY].astype(float)
    skip = int(round(task["warmup"] / bin_s))
    per_tau = arrivals[skip:]
    dur = sc.simulation.duration
    group = res.flows.column("group").to_numpy()
    sent = res.flows.column("sent_pkts").to_numpy()
    dropped = res.flows.column("drop_pkts").to_numpy()
    recv_bytes = res.flows.column("recv_bytes").to_numpy()
    groups = []
    for g in np.unique(group):
        m = group == g
        groups.append({"group": int(g), "throughput_mbps": float(recv_bytes[m].sum() * 8 / dur / 1e6),
                       "loss_pct": float(100 * dropped[m].sum() / max(sent[m].sum(), 1))})
    return {**task["key"],
            "cov": float(per_tau.std() / per_tau.mean()) if per_tau.mean() > 0 else float("nan"),
            "throughput_mbps": res.summary["throughput_bps"] / 1e6,
            "loss_pct": 100 * res.summary["loss_rate"], "groups": groups}


def _task(spec, key, groups, gateway, *, duration, seed):
    """One :func:`simulate` task: the scenario of ``groups`` behind ``gateway`` (``duration`` s,
    ``seed``), the experiment's warm-up, and ``key`` (with the seed) for the result row."""
    return {"scenario": scenario(spec, groups, gateway, duration=duration, seed=seed),
            "warmup": float(_exp(spec)["warmup"]), "key": {**key, "seed": int(seed)}}


def _simulate_all(spec, quick, runs, executor, workers, scheduler, label):
    """:func:`simulate` every (key, groups, gateway) of ``runs`` (see :func:`scenario`) for the
    experiment's duration with its seed; the results in the order of ``runs``."""
    from traceflow.scale.parallel import map_tasks

    exp = _exp(spec)
    tasks = [_task(spec, key, groups, gateway, duration=_duration(exp, quick), seed=exp["seed"])
             for key, groups, gateway in runs]
    return map_tasks(simulate, tasks, executor=executor, workers=workers, scheduler=scheduler,
                     label=label)


def _gateway(exp, name):
    return copy.deepcopy(exp["gateways"][name])


def model_params(spec):
    """The Table 1 parameters of the scenario as :class:`RenoCovParams`."""
    exp = _exp(spec)
    topo = spec["topology"]
    return RenoCovParams(client_delay_s=topo["access"]["delay"],
                         bottleneck_delay_s=topo["bottleneck"]["delay"],
                         bottleneck_bps=topo["bottleneck"]["rate"],
                         # Table 1's B: the waiting packets plus the one in transmission
                         buffer_packets=exp["gateways"]["fifo"]["limit"] + 1,
                         packet_bytes=spec["simulation"]["mss"] + spec["simulation"]["tcp_header"],
                         rate_pps=exp["client_rate"], max_window=spec["tcp"]["rwnd"],
                         duration_s=exp["duration"], warmup_s=exp["warmup"])


# ---- Figures 2-4 ------------------------------------------------------------------------------

def protocols(spec, out_dir, *, quick=False, executor="local", workers=None, scheduler=None):
    """Figs. 2–4: c.o.v., throughput and loss vs number of clients for each protocol/gateway."""
    exp = _exp(spec)
    clients = exp["quick_clients"] if quick else exp["clients"]
    variants = exp["quick_variants"] if quick else exp["variants"]
    runs = [({"variant": v, "clients": int(m)}, [(exp["variants_map"][v][0], int(m))],
             _gateway(exp, exp["variants_map"][v][1])) for v in variants for m in clients]
    rows = _simulate_all(spec, quick, runs, executor, workers, scheduler, "burst-protocols")
    df = pl.DataFrame([{k: v for k, v in r.items() if k != "groups"} for r in rows])
    df = df.with_columns(poisson_cov=pl.Series(poisson_cov(df["clients"].to_numpy(),
                                                           model_params(spec))))
    table = _save_table(df, out_dir, "burst_protocols.parquet")
    fig, axes = _figure(1, 3, figsize=(15, 4))
    for ax, col, label in ((axes[0], "cov", "c.o.v. per RTT"),
                           (axes[1], "throughput_mbps", "throughput (Mb/s)"),
                           (axes[2], "loss_pct", "packet loss (%)")):
        for v in variants:
            d = df.filter(pl.col("variant") == v).sort("clients")
            ax.plot(d["clients"], d[col], "o-", ms=3, label=v)
        if col == "cov":
            d = df.filter(pl.col("variant") == variants[0]).sort("clients")
            ax.plot(d["clients"], d["poisson_cov"], "k--", label="Poisson")
        ax.set_xlabel("number of clients M")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=7)
    figure = _save_fig(fig, out_dir, "burst_protocols.png")
    comparison = protocol_claims(df, variants, exp.get("paper", {}))
    return {"figures": [figure], "tables": {"protocols": table}, "comparison": comparison,
            "text": (f"Clients {list(clients)}; {_duration(exp, quick)} s per run, c.o.v. over "
                     f"τ = 0.1 s bins after {exp['warmup']} s. Capacity is reached at ~41 clients.")}


HEAVY = 41     # clients: Table 1's capacity, 50 Mb/s / 1.2 Mb/s per client
SRC = "feng-tinnakornsrisuphap-2000-tcp-burstiness.txt"
# "very close" (UDP vs Poisson, FT:119) and hence "noticeably" (TCP, FT:123): a 10 % relative c.o.v.
NOTICEABLE = 0.1


def protocol_claims(df, variants, paper):
    """Figs. 2-4 as the paper states them (sec. 3.2, lines 119-137), each a tolerance or ordering
    test on the c.o.v. relative to the clients' own Poisson traffic ("excess" = c.o.v. / Poisson -
    1), maximum over the client counts of each congestion regime."""
    def excess(v, lo, hi):
        d = df.filter((pl.col("variant") == v) & pl.col("clients").is_between(lo, hi))
        return float((d["cov"] / d["poisson_cov"]).max() - 1) if d.height else float("nan")

    def heavy(v, col):
        d = df.filter((pl.col("variant") == v) & (pl.col("clients") > HEAVY)).sort("clients")
        return d[col].to_numpy()

    out = []
    tcp = [v for v in variants if v != "UDP"]
    for v in tcp:
        # two-sided (issue 45): "up to 50% higher" bounds the largest excess by +0.5, and
        # "noticeably modulates" asks it to exceed the +-10 % the paper calls "very close" for UDP
        # (:119): the same sentence's own scale, not a level picked from our numbers
        e = excess(v, 10, 38)
        out.append(_row(f"{v}: c.o.v. above Poisson, moderate congestion (10-38 clients)",
                        "(+0.1, +0.5]", round(e, 3), NOTICEABLE < e <= 0.5,
                        f"{SRC}:123 'up to 50% higher than the aggregated Poisson and UDP c.o.v. "
                        "... noticeably modulates'; agree = largest excess above +0.1 (UDP's "
                        "'very close' bound) and at most +0.5"))
    heavy_min = paper.get("heavy_excess", {})
    for v in tcp:
        e = excess(v, HEAVY + 1, 10_000)
        if v in heavy_min:
            out.append(_row(f"{v}: c.o.v. above Poisson, heavy congestion (> {HEAVY} clients)",
                            f"> +{heavy_min[v]:g}", round(e, 3), e > heavy_min[v],
                            f"{SRC}:125 'over 140% and 200% larger' (Reno, Reno/RED)"))
        elif v == "Vegas":
            out.append(_row(f"{v}: c.o.v. above Poisson, heavy congestion (> {HEAVY} clients)",
                            "no sharp increase (< +0.5)", round(e, 3), e < 0.5,
                            f"{SRC}:125 'sharply increases for all TCP implementations except Vegas'"))
        else:
            # Vegas/RED included: the exception is plain Vegas, as RED makes every TCP worse in
            # c.o.v. (:137); ns-2 on the same set-up agrees (Vegas/RED +122 %)
            out.append(_row(f"{v}: c.o.v. above Poisson, heavy congestion (> {HEAVY} clients)",
                            "sharp increase (> +0.5)", round(e, 3), e > 0.5,
                            f"{SRC}:125 'sharply increases for all TCP implementations except Vegas'"))
    if "UDP" in variants:
        e = excess("UDP", 0, 10_000)
        out.append(_row("UDP: c.o.v. vs Poisson (largest relative difference)", "within 10 %",
                        round(e, 3), abs(e) < NOTICEABLE, f"{SRC}:119 'very close to that of the aggregated "
                        "Poisson process'"))
    if {"Reno", "Vegas"} <= set(variants):
        r, g = heavy("Reno", "cov"), heavy("Vegas", "cov")
        out.append(_row("heavy congestion: Vegas c.o.v. below Reno at every client count", "yes",
                        f"max Vegas/Reno {float(np.max(g / r)):.2f}", bool((g < r).all()),
                        f"{SRC}:125 (Vegas the exception to the sharp increase)"))
    for v in ("Reno", "Vegas"):
        red = f"{v}/RED"
        if {v, red} <= set(variants):
            checks = {"c.o.v.": (heavy(red, "cov") > heavy(v, "cov")).mean(),
                      "throughput": (heavy(red, "throughput_mbps") < heavy(v, "throughput_mbps")).mean(),
                      "loss": (heavy(red, "loss_pct") > heavy(v, "loss_pct")).mean()}
            for what, share in checks.items():
                out.append(_row(f"heavy congestion: {red} worse than {v} in {what}", "worse",
                                f"at {share:.0%} of the client counts", share >= 0.75,
                                f"{SRC}:137 'TCP implementations with RED perform worse than their "
                                "plain counterparts with respect to c.o.v., throughput, and packet "
                                "loss'; agree = at 75 % of the heavy-congestion points or more"))
    return out


# ---- Figures 5-12 -----------------------------------------------------------------------------

def background(spec, out_dir, *, quick=False, executor="local", workers=None, scheduler=None):
    """Figs. 5–12: throughput and loss of clients added to a Reno background, per gateway."""
    exp = _exp(spec)
    added = exp["quick_added"] if quick else exp["added"]
    bg = int(exp["background"])
    runs = [({"buffer": int(case["buffer"]), "gateway": case["gateway"], "protocol": proto,
              "added": int(n)}, [("Reno", bg), (proto, int(n))], _gateway(exp, case["gateway"]))
            for case in exp["cases"] for proto in case["protocols"] for n in added]
    rows = _simulate_all(spec, quick, runs, executor, workers, scheduler, "burst-background")
    df = pl.DataFrame([{**{k: v for k, v in r.items() if k != "groups"},
                        "added_throughput_mbps": r["groups"][1]["throughput_mbps"],
                        "added_loss_pct": r["groups"][1]["loss_pct"],
                        "background_loss_pct": r["groups"][0]["loss_pct"]} for r in rows])
    table = _save_table(df, out_dir, f"burst_background{bg}.parquet")
    figures = []
    for buf in sorted(set(df["buffer"].to_list())):
        fig, axes = _figure(1, 2, figsize=(10, 4))
        d_buf = df.filter(pl.col("buffer") == buf)
        for (proto, gw), d in d_buf.group_by(["protocol", "gateway"], maintain_order=True):
            d = d.sort("added")
            lab = f"{proto}/{gw}"
            axes[0].plot(d["added"], d["added_throughput_mbps"], "o-", ms=3, label=lab)
            axes[1].plot(d["added"], d["added_loss_pct"], "o-", ms=3, label=lab)
        axes[0].set_ylabel("throughput of added clients (Mb/s)")
        axes[1].set_ylabel("loss of added clients (%)")
        for ax in axes:
            ax.set_xlabel(f"added clients (background {bg} Reno, buffer {buf})")
        axes[0].legend(fontsize=7)
        figures.append(_save_fig(fig, out_dir, f"burst_background{bg}_buffer{buf}.png"))
    comparison = []
    for (buf, gw), d in df.group_by(["buffer", "gateway"], maintain_order=True):
        loss = {p: float(x["added_loss_pct"].mean()) for (p,), x in d.group_by(["protocol"])}
        if "Reno" in loss and "Vegas" in loss:
            # no loss at all (a 1500-packet FIFO holds every window of 20: ns-2 drops nothing
            # either) leaves nothing to compare
            lossless = loss["Vegas"] == loss["Reno"] == 0.0
            comparison.append(_row(f"added Vegas loss below added Reno (buffer {buf}, {gw})", "yes",
                                   f"{loss['Vegas']:.2f} % vs {loss['Reno']:.2f} %",
                                   None if lossless else loss["Vegas"] < loss["Reno"],
                                   "no loss in either: not compared" if lossless
                                   else "mean over the added-client counts"))
    return {"figures": figures, "tables": {f"background{bg}": table}, "comparison": comparison,
            "text": (f"{bg} Reno background clients plus {list(added)} added clients; gateways "
                     f"{[c['gateway'] for c in exp['cases']]}; {_duration(exp, quick)} s per run.")}


# ---- Figure 13 --------------------------------------------------------------------------------

def model_claims(df):
    """Fig. 13 as the paper states it (FT:202), from ``df`` with ``clients``, ``model_cov`` and
    ``simulated_cov``: the model follows the simulated trend (rank correlation > 0.7), overestimates
    it under heavy load (above it at every client count > 41) and matches it at light load
    (within 25 % below 38 clients): rows as :func:`protocol_claims` gives them."""
    ratio = df["model_cov"] / df["simulated_cov"]
    light = ratio.filter(df["clients"] < 38)
    heavy = ratio.filter(df["clients"] > HEAVY)
    # FT:202 "the trend of the c.o.v. in this model does closely follow that of TCP Reno" and,
    # in the same paragraph, "does overestimate ... in the heavily loaded case": the trend is the
    # c.o.v.'s rise and fall with the client count, so a rank correlation (Spearman) reads it; a
    # Pearson correlation would also weigh the heavy-load level the paper says the model misses
    r = (float(spearmanr(df["model_cov"], df["simulated_cov"]).statistic) if df.height > 2
         else float("nan"))
    return [
        _row("model follows the simulated trend (rank correlation)", "closely follows",
             round(r, 3), r > 0.7 if np.isfinite(r) else None,
             "agree = Spearman > 0.7 (the trend, FT:202; the level is the next row's)"),
        _row("model overestimates c.o.v. under heavy load (model / simulated)", "overestimates",
             round(float(heavy.mean()), 2) if heavy.len() else None,
             bool((heavy > 1).all()) if heavy.len() else None),
        _row("light load: model / simulated", "≈ 1",
             round(float(light.mean()), 2) if light.len() else None,
             bool((light - 1).abs().max() < 0.25) if light.len() else None),
    ]


def model(spec, out_dir, *, quick=False, executor="local", workers=None, scheduler=None):
    """Fig. 13: c.o.v. of the stochastic model (eqs. 1–4) vs simulated Reno traffic."""
    exp = _exp(spec)
    clients = exp["quick_clients"] if quick else exp["clients"]
    runs = [({"clients": int(m)}, [("Reno", int(m))], _gateway(exp, "fifo")) for m in clients]
    sims = _simulate_all(spec, quick, runs, executor, workers, scheduler, "burst-model")
    params = model_params(spec)
    curve = cov_curve(clients, params, replications=int(exp.get("model_replications", 8)),
                      seed=int(exp["seed"]))
    df = pl.DataFrame({"clients": curve["clients"], "model_cov": curve["model_cov"],
                       "simulated_cov": [r["cov"] for r in sims],
                       "poisson_cov": curve["poisson_cov"]})
    table = _save_table(df, out_dir, "burst_model.parquet")
    fig, ax = _figure(figsize=(6, 4))
    ax.plot(df["clients"], df["simulated_cov"], "o-", label="simulated Reno (measured)")
    ax.plot(df["clients"], df["model_cov"], "s--", label="stochastic model (predicted)")
    ax.plot(df["clients"], df["poisson_cov"], "k:", label="Poisson")
    ax.set_xlabel("number of clients M")
    ax.set_ylabel("c.o.v. per RTT")
    ax.legend(fontsize=8)
    figure = _save_fig(fig, out_dir, "burst_model.png")
    comparison = model_claims(df)
    return {"figures": [figure], "tables": {"model": table}, "comparison": comparison,
            "text": (f"Model: γ = {params.gamma:.1f} packets per τ = {params.tau} s, window ≤ "
                     f"{params.max_window}, starting at it with no backlog (the uncongested "
                     "steady state: the paper models 'the steady state', FT:190); "
                     f"{int(exp.get('model_replications', 8))} model "
                     f"replications; simulation {_duration(exp, quick)} s per point.")}

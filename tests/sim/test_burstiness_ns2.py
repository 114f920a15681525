"""Feng & Tinnakornsrisuphap 2000, Figs. 2-4 in ns-2 and in traceflow, side by side (issue 18: ns-2
as the referee).

replays/burst_fig2_4.toml (M clients hand single packets to UDP / TCP Reno / Reno with delayed
ACKs / Vegas at Poisson times; Table 1 network) against tests/sim/ns2/feng_star.tcl, 200 s as in
Table 1, seeds 1 and 2 (Vegas behind the FIFO: 1-10, see VARIANT_SEEDS). Both sides send
1500-byte packets (the oracle gives its Vegas agents packetSize_ pkt + 40: VegasTcpAgent::output
adds no header) with the paper's ns of 2000 (no limited transmit, ns-2 RTO ticks, 49 waiting
packets + 1 in transmission).

Measured before that set-up (Vegas at 1460 bytes on both sides, ns-2.35's defaults; the
tolerances below hold after it too: 8 passed), seed 1, c.o.v. ns-2 / ours: Reno 0.119 / 0.116 (41 clients), 0.130 / 0.123 (80);
Vegas 0.011-0.043 / 0.003-0.030 for 45-100 clients (bimodal near capacity in both); UDP within 3 %.
RED (seeds 1, 2, ns-2 / ours): Reno/RED c.o.v. 0.160 / 0.160, loss 1.44 / 1.42 % at 45 clients,
0.133 / 0.137 and 4.93 / 4.98 % at 100; Vegas/RED 0.089 / 0.090 and 1.87 / 1.85 % at 45. Before
the replays' RED took ns-2's wait_ (drops spaced at least 1/p_b arrivals apart) ours was burstier
(Reno/RED at 38 clients: loss 0.25-1.19 % vs ns-2's 0.02-0.04 %, c.o.v. +78 % over Poisson).
"""
import copy
import shutil
import subprocess
import tomllib
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from traceflow.experiments import burstiness

TCL = Path(__file__).with_name("ns2") / "feng_star.tcl"
REPLAY = Path(__file__).resolve().parents[2] / "replays" / "burst_fig2_4.toml"
SEEDS = (1, 2)
# Vegas behind the FIFO near capacity is bimodal per seed in both simulators (45 clients, c.o.v.
# 0.013-0.044, loss 0.05-0.6 %; a 1 ns per-client offset flips a seed's mode too), so two seeds
# cannot referee it: seeds 1-10, ns-2 / ours, 45 clients c.o.v. 0.0249 / 0.0228, loss 0.22 / 0.20 %; 60 clients
# 0.0188 / 0.0076, 0.32 / 0.37 %; 100 clients loss 3.16 / 4.28 %. On seeds 1, 2 alone ns-2 drew its
# low mode twice (0.018, 0.12 %) and ours, since Vegas keeps a resent segment timed (sim/cc.pxi,
# as ns-2), the high one for seed 2 (mean 0.035, 0.41 %; before that fix 0.027, 0.24 %)
VARIANT_SEEDS = {"Vegas": tuple(range(1, 11))}
CLIENTS = (10, 30, 45, 60, 100)
HEAVY = 41          # Table 1's capacity: 50 Mb/s / 1.2 Mb/s per client
# variant -> (ns-2 arguments, our protocol, our gateway)
VARIANTS = {"UDP": ({"transport": "UDP"}, "UDP", "fifo"),
            "Reno": ({"transport": "Reno"}, "Reno", "fifo"),
            "Reno+delack": ({"transport": "Reno", "delack": 1}, "Reno+delack", "fifo"),
            "Vegas": ({"transport": "Vegas"}, "Vegas", "fifo"),
            "Reno/RED": ({"transport": "Reno", "queue": "RED"}, "Reno", "red"),
            "Vegas/RED": ({"transport": "Vegas", "queue": "RED"}, "Vegas", "red")}

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("ns") is None,
                                 reason="needs ns-2 ('ns' on PATH: apt-get install ns2)")]


def ns2(clients, seed, **args):
    cmd = ["ns", str(TCL), f"clients={clients}", "duration=200", f"seed={seed}",
           *(f"{k}={v}" for k, v in args.items())]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600).stdout
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def ours(variant, clients, seed):
    spec = tomllib.loads(REPLAY.read_text())
    _, proto, gateway = VARIANTS[variant]
    exp = spec["experiment"]
    task = burstiness._task(spec, {"variant": variant, "clients": clients}, [(proto, clients)],
                            copy.deepcopy(exp["gateways"][gateway]), duration=200.0, seed=seed)
    r = burstiness.simulate(task)
    return {"cov": r["cov"], "throughput_mbps": r["throughput_mbps"], "loss_pct": r["loss_pct"]}


@pytest.fixture(scope="module")
def runs():
    """{(variant, clients): (ns-2 means, our means)} over the seeds."""
    out = {}
    for variant, (args, _, _) in VARIANTS.items():
        seeds = VARIANT_SEEDS.get(variant, SEEDS)
        for m in CLIENTS:
            ref = [ns2(m, s, **args) for s in seeds]
            got = [ours(variant, m, s) for s in seeds]
            out[(variant, m)] = tuple({k: float(np.mean([r[k] for r in rs]))
                                       for k in ("cov", "throughput_mbps", "loss_pct")}
                                      for rs in (ref, got))
    return out


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_cov_throughput_and_loss_match_ns2(runs, variant):
    for m in CLIENTS:
        ref, got = runs[(variant, m)]
        # c.o.v. within 20 % (+0.01 for Vegas' near-zero values past capacity)
        assert abs(got["cov"] - ref["cov"]) <= 0.2 * ref["cov"] + 0.01, (m, got, ref)
        assert got["throughput_mbps"] == pytest.approx(ref["throughput_mbps"], rel=0.025), (m, got, ref)
        assert abs(got["loss_pct"] - ref["loss_pct"]) <= 0.3 * ref["loss_pct"] + 0.3, (m, got, ref)


@pytest.mark.parametrize("who", [0, 1], ids=["ns-2", "traceflow"])
def test_paper_claims_hold(runs, who):
    """Figs. 2-4's sentences (burstiness.protocol_claims: Reno > 140 % and Reno/RED > 200 % above
    Poisson under heavy congestion, Vegas below Reno, UDP ~ Poisson, RED worse than plain) hold
    in ns-2 and in traceflow alike; the moderate excess in (+10 %, +50 %] fails in both."""
    spec = tomllib.loads(REPLAY.read_text())
    params = burstiness.model_params(spec)
    df = pl.DataFrame([{"variant": v, "clients": m, **runs[(v, m)][who]} for v, m in runs])
    df = df.with_columns(poisson_cov=pl.Series(burstiness.poisson_cov(df["clients"].to_numpy(), params)))
    rows = burstiness.protocol_claims(df, list(VARIANTS), spec["experiment"]["paper"])
    failed = [r["quantity"] for r in rows if r["agree"] is not True]
    # claim 4 judged two-sided (issue 45): at 10 and 30 clients nothing is lost and no TCP is
    # 'noticeably' (> +10 %) above Poisson, in either simulator; every other sentence holds
    assert failed == [f"{v}: c.o.v. above Poisson, moderate congestion (10-38 clients)"
                      for v in VARIANTS if v != "UDP"]


def test_fig13_model_meets_ns2_reno_as_it_meets_ours(tmp_path):
    """Fig. 13 (claim 8, FT:202): the stochastic model's c.o.v. against simulated Reno, with the
    simulated side from ns-2 on the same set-up (replays/burst_fig13.toml's clients, seed 1) and
    from traceflow (the experiment itself). Each of the experiment's rows (correlation > 0.7,
    overestimate under heavy load, light load within 25 %) gets the same verdict from both, and
    the correlations are within 0.1. Measured: model vs ns-2 0.629 (seed 2: 0.631), vs ours
    0.598 (seed 2: 0.618); model / simulated under heavy load 2.24 (ns-2) and 2.39 (ours), light
    load 0.99 and 1.00. So the claim's missing correlation is the model's, not a simulator's."""
    spec = tomllib.loads((REPLAY.parent / "burst_fig13.toml").read_text())
    res = burstiness.model(spec, tmp_path)
    df = pl.read_parquet(tmp_path / res["tables"]["model"])
    reference = df.with_columns(simulated_cov=pl.Series(
        [ns2(int(m), spec["experiment"]["seed"], transport="Reno")["cov"] for m in df["clients"]]))
    ours, ref = res["comparison"], burstiness.model_claims(reference)
    assert [r["agree"] for r in ours] == [r["agree"] for r in ref], (ours, ref)
    assert abs(ours[0]["ours"] - ref[0]["ours"]) <= 0.1, (ours, ref)

"""Running TCP-MT scenarios: one run to a small picklable record, many through the executor,
and the experiment's run lengths and seeds."""
from __future__ import annotations

import polars as pl

from traceflow.errors import ScenarioError
from traceflow.experiments.common import experiment as _exp
from traceflow.experiments.tcpmt.setup import BACKGROUND_LINK

NS = 1_000_000_000
SUMMARY_KEYS = ("duration_s", "seed", "events", "throughput_bps", "link_utilization",
                "loss_rate", "goodput_bps", "timeouts", "retransmits", "mean_transfer_size")


def simulate(scenario, sizes=False):
    """Run one scenario; a small picklable dict for the experiment code.

    ``summary``: headline metrics plus ``background_bps`` (the background's share of the
    bottleneck); ``measured``: per measured connection its flow id, ``throughput_bps`` (reliable
    throughput: unique payload delivered in order), ``timeouts``, ``retransmits``, ``trace`` (SSC
    per-block trace), ``timeout_windows`` (SSC's per-timeout record) and ``prior`` (its final
    CondProb table and level edges); ``series``: {link: bytes per second}. ``sizes``: also
    ``sizes``, the file sizes (bytes) each background client requested, in order (to replay the
    same files in another simulator).
    """
    from traceflow import sim
    from traceflow.sim import ssc

    ssc.collect()  # forget hooks of runs that failed before collecting
    res = sim.run(scenario)
    hooks = ssc.collect()
    dur = res.summary["duration_s"]
    flows = res.flows.to_pydict()
    measured = []
    for i, kind in enumerate(flows["kind"]):
        if kind != "infinite":
            continue
        fid = flows["flow_id"][i]
        h = hooks.get(fid)
        measured.append({"flow": fid, "throughput_bps": flows["goodput_bytes"][i] * 8 / dur,
                         "timeouts": flows["timeouts"][i], "retransmits": flows["retransmits"][i],
                         "trace": h.trace() if h is not None else None,
                         "timeout_windows": h.timeouts() if h is not None else None,
                         "prior": ssc.export_prior(h) if h is not None else None})
    series = {}
    if res.series.num_rows:
        bin_s = float(scenario.get("simulation", {}).get("series_bin", 0.01))
        factor = max(1, int(round(1.0 / bin_s)))
        tab = pl.from_arrow(res.series).select("link", "bytes")
        for (link,), part in tab.group_by("link", maintain_order=True):
            b = part.get_column("bytes").to_numpy()
            n = b.size // factor
            series[link] = b[:n * factor].reshape(n, factor).sum(axis=1)
    summary = {k: res.summary[k] for k in SUMMARY_KEYS}
    bg = series.get(BACKGROUND_LINK)
    summary["background_bps"] = float(bg.sum() * 8 / dur) if bg is not None else float("nan")
    out = {"summary": summary, "measured": measured, "series": series}
    if sizes:
        tr = pl.from_arrow(res.transfers).sort("flow_id", "conn")
        by_flow = {f: part["size"].to_list() for (f,), part in tr.group_by("flow_id")}
        out["sizes"] = [by_flow.get(f, []) for f, kind in zip(flows["flow_id"], flows["kind"])
                        if kind != "infinite"]
    return out


def run_all(scenarios, ex, label):
    """:func:`simulate` over ``scenarios`` through :func:`traceflow.scale.parallel.map_tasks`."""
    from traceflow.scale.parallel import map_tasks

    return map_tasks(simulate, scenarios, executor=ex.get("executor", "local"),
                     workers=ex.get("workers"), scheduler=ex.get("scheduler"), label=label)


def executor(executor="local", workers=None, scheduler=None):
    return {"executor": executor, "workers": workers, "scheduler": scheduler}


def seeds(spec, base):
    given = _exp(spec).get("seeds")
    return [int(s) for s in given] if given else [int(base.get("simulation", {}).get("seed", 1))]


def duration(spec, quick):
    """Seconds per run: ``duration`` or, in quick mode, ``quick_duration``."""
    key = "quick_duration" if quick else "duration"
    exp = _exp(spec)
    if key not in exp:
        raise ScenarioError(f"[experiment] lacks {key}")
    return float(exp[key])

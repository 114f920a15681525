"""Replay against real Linux TCP: fit → trace-mode and model-mode replay → every criterion.

The real-kernel testbed runs (``../shared/datasets/testbed/RUN`` or `traceflow testbed` output:
``client_side.pcap[.gz]`` after the bottleneck queue, ``server_side.pcap[.gz]`` before it,
``params.json`` with the shaper's rate and buffer) are the oracle. For one run (or its first ``span_s`` seconds) this fits a model to the
client-side capture with the end hosts read from the server side (the data senders' side), replays
the measured flows (trace mode) and flows sampled from the model (model mode) through
``replays/replay_testbed.toml`` with the run's rate and buffer, and compares each replay with the
client-side capture, measured loss exact from the two captures (:mod:`traceflow.flows.queue_loss`).

Criteria (issue 15, "Done when"): trace mode — utilization within 10 %, loss within 25 %, median
transfer time within 20 % in every size bin with at least 30 measured transfers, handshake-RTT KS
distance below 0.1, wavelet Hurst estimate within 0.05; model mode — utilization, loss and the
per-bin medians within 35 %.

    python -m traceflow.experiments.testbed_replay RUN_DIR [RUN_DIR ...] -o OUT [--span 120]
"""
from __future__ import annotations

import json
import math
from importlib.resources import files
from pathlib import Path

import polars as pl

from traceflow.values import parse_rate

#: criterion -> tolerance (relative errors, except the KS distance and the Hurst difference)
CRITERIA = {
    "trace": {"utilization": 0.10, "loss_rate": 0.25, "fct": 0.20, "rtt_ks": 0.10,
              "hurst_wavelet": 0.05},
    "model": {"utilization": 0.35, "loss_rate": 0.35, "fct": 0.35},
}
#: the one-capture defaults path (issue 43: ``traceflow fit CAPTURE``, then ``traceflow replay``
#: with nothing else), judged alike in both modes: the KS distance against the larger of 0.1 and
#: the 5 % critical value of the sample sizes
DEFAULTS_CRITERIA = {"utilization": 0.10, "loss_rate": 0.25, "fct": 0.25, "rtt_ks": 0.10,
                     "hurst_wavelet": 0.05}
#: the installed ``traceflow.replays`` package (a checkout's replays/ is not there when installed)
SCENARIO = Path(str(files("traceflow.replays").joinpath("replay_testbed.toml")))


def run_overrides(params):
    """``--set`` overrides for what differs between testbed runs (``params.json``): the shaper's
    rate (``replays/replay_testbed.toml`` holds how HTB counts it), the buffer (bfifo in bytes,
    pfifo in packets) and the senders' congestion control, which the trace does not reveal."""
    unit = "limit_bytes" if params.get("buffer_unit", "bytes") == "bytes" else "limit"
    return [f"topology.bottleneck.rate={parse_rate(params['rate'])!r}",
            f"topology.bottleneck.queue.{unit}={int(params['buffer'])}",
            f"tcp.cc={json.dumps(params.get('cc', 'cubic'))}"]


def read_run(run_dir, span_s=None):
    """``(params, client packets, server packets)`` of a testbed run, cut to its first ``span_s``
    seconds (both captures from the first packet of the client side)."""
    from traceflow.pcap.reader import read_packets

    run_dir = Path(run_dir)
    params = json.loads((run_dir / "params.json").read_text())
    client, server = (pl.from_arrow(read_packets(_capture(run_dir, side)))
                      for side in ("client_side", "server_side"))
    if span_s:
        t0 = int(client["ts"].cast(pl.Int64).min())
        end = t0 + int(span_s * 1e9)
        client, server = (df.filter(pl.col("ts").cast(pl.Int64) < end) for df in (client, server))
    return params, client, server


def _capture(run_dir, side):
    """``side``.pcap.gz (the shared runs) or ``side``.pcap (as `traceflow testbed` writes it)."""
    gz = run_dir / f"{side}.pcap.gz"
    return gz if gz.exists() else run_dir / f"{side}.pcap"


def validate(run_dir, out_dir, *, span_s=None, modes=("trace", "model"), seed=1, overrides=(),
             defaults=False):
    """Fit, replay in each mode and compare; returns ``{"fitted": Model, mode: comparison}``
    (comparisons as :func:`traceflow.compare.compare` returns them). ``defaults``: the
    one-capture path of a user who knows nothing of the network — the model fitted to the
    client-side capture alone and replayed without a scenario, overrides or seed (the bottleneck,
    the hosts and the congestion control from the model); else the expert path (end hosts from
    the server side, the run's rate, buffer and congestion control given)."""
    from traceflow import compare as C
    from traceflow.models.fit import fit
    from traceflow.flows import flows
    from traceflow.flows.handshake_queue import synack_queued
    from traceflow.flows.queue_loss import queue_loss
    from traceflow.replay import replay

    out_dir = Path(out_dir)
    params, client, server = read_run(run_dir, span_s)
    model = fit(client, hosts_from=None if defaults else server)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save(out_dir / "model.json")
    sets = (list(overrides) if defaults else run_overrides(params) + list(overrides))
    measured = C.analytics_from_packets(client, source=str(run_dir), kind="capture")
    measured.queue_loss = queue_loss(server, client)
    out = {"fitted": model}
    for mode in modes:
        source = (synack_queued(client, flows(client), model.link.capacity_bps)
                  if mode == "trace" else model)
        run = replay(source, out_dir / mode, model=model, scenario=None if defaults else SCENARIO,
                     overrides=sets, seed=None if defaults else seed, duration_s=span_s)
        predicted = C.load_side(out_dir / mode)
        measured.capacity_bps = predicted.capacity_bps = run.summary["bottleneck_rate_bps"]
        out[mode] = C.compare(measured, predicted)
    return out


def criteria_rows(result, mode, criteria=None):
    """The criteria of ``mode`` (or ``criteria``, a dict like :data:`CRITERIA`'s) for one
    comparison: one row per criterion (FCT: one per judged size bin, plus the bins too small to
    judge, unjudged), with measured, predicted, error, tolerance and pass."""
    from traceflow.compare import ks_tolerance

    rows = []
    for name, tol in (criteria or CRITERIA[mode]).items():
        m = result["metrics"][name]
        if name != "fct":
            if "critical_5pct" in m:     # a KS distance: what the sample sizes resolve
                tol = ks_tolerance(tol, m["critical_5pct"])
            rows.append({"criterion": name, "measured": _num(m["measured"]),
                         "predicted": _num(m["predicted"]), "error": m["error"],
                         "tolerance": tol, "pass": bool(math.isfinite(m["error"])
                                                         and m["error"] <= tol)})
            continue
        for i, label in enumerate(m["bins"]):
            judged = m["judged"][i]
            err = m["error_median"][i]
            rows.append({"criterion": f"fct {label} median (n {m['count_measured'][i]}/"
                                      f"{m['count_predicted'][i]})",
                         "measured": m["measured"][i], "predicted": m["predicted"][i],
                         "error": err, "tolerance": tol if judged else None,
                         "pass": bool(err <= tol) if judged else None,
                         "p90_measured": m["p90_measured"][i], "p90_predicted": m["p90_predicted"][i]})
    return rows


def _num(v):
    return v.get("median") if isinstance(v, dict) else v


def format_rows(rows):
    """A plain-text table of :func:`criteria_rows`."""
    lines = [f"{'criterion':<34}{'measured':>11}{'predicted':>11}{'error':>9}{'tol':>6}  pass"
             f"{'p90 meas':>10}{'p90 pred':>10}"]
    for r in rows:
        verdict = "-" if r["pass"] is None else ("yes" if r["pass"] else "NO")
        p90 = (f"{_f(r['p90_measured']):>10}{_f(r['p90_predicted']):>10}"
               if "p90_measured" in r else "")
        lines.append(f"{r['criterion']:<34}{_f(r['measured']):>11}{_f(r['predicted']):>11}"
                     f"{_f(r['error']):>9}{_f(r['tolerance']):>6}  {verdict:<4}{p90}")
    return "\n".join(lines)


def _f(v):
    if v is None:
        return "-"
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else "inf"
    return f"{v:.4g}"


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="testbed run directories")
    ap.add_argument("-o", "--out", required=True, help="output directory (one folder per run)")
    ap.add_argument("--span", type=float, default=None, help="seconds of each run (default all)")
    ap.add_argument("--mode", action="append", choices=["trace", "model"], help="default both")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    table = {}
    for run in a.runs:
        name = Path(run).name
        res = validate(run, Path(a.out) / name, span_s=a.span, modes=a.mode or ("trace", "model"),
                       seed=a.seed, overrides=a.overrides)
        for mode in a.mode or ("trace", "model"):
            rows = criteria_rows(res[mode], mode)
            table[f"{name}/{mode}"] = rows
            print(f"== {name} {mode} mode", flush=True)
            print(format_rows(rows), flush=True)
    from traceflow.jsonutil import jsonable

    (Path(a.out) / "criteria.json").write_text(json.dumps(jsonable(table), indent=1) + "\n")


if __name__ == "__main__":
    main()

"""``traceflow demo``: the main job end to end on the bundled sample.

ingest (pcap → packets.parquet) → flows (flows.parquet) → fit (model.json) → replay the model
through the simulator (run/) → compare predicted with measured (comparison.json) → report
(report/index.html). Every step writes the file its own command would write, so each can be
re-run or inspected alone.

The sample (``datasets/samples/testbed_cubic_rtt3.pcap.gz``, :data:`SAMPLE`) is a real Linux
capture made with the testbed (``datasets/samples/testbed_cubic_rtt3.json``: its parameters): 32
clients fetching heavy-tailed files over a 1.5 Mbit/s HTB shaper into a 12,000-byte DropTail
buffer, CUBIC, three RTT classes. The replay knows nothing of that: the network (rate, buffer,
burst), the end hosts (initial window, segment, options, congestion control) and the traffic all
come from the model fitted to the capture, as for a capture of your own.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

SAMPLE = "sample-testbed-cubic"
SAMPLE_FILE = "testbed_cubic_rtt3.pcap.gz"


def run_demo(out_dir, *, sample=None, seed=1, log=None):
    """Run the pipeline into ``out_dir``; returns a dict of the produced paths and headline numbers.

    ``sample``: a capture to use instead of the bundled one. ``log(message)`` reports progress."""
    import polars as pl

    from traceflow.atomic import write_text
    from traceflow.jsonutil import jsonable
    from traceflow.compare import compare_paths
    from traceflow.models.fit import fit
    from traceflow.flows import flows
    from traceflow.pcap.reader import read_packets
    from traceflow.replay import replay
    from traceflow.report.build import build_report

    log = log or (lambda msg: None)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if sample is None:
        from traceflow.datasets.registry import get

        sample = get(SAMPLE).file_path(SAMPLE_FILE)
    sample = Path(sample)
    t0 = time.perf_counter()

    def step(msg):
        log(f"[{time.perf_counter() - t0:5.1f} s] {msg}")

    step(f"ingest {sample.name}")
    packets = pl.from_arrow(read_packets(sample))
    packets_path = out / "packets.parquet"
    packets.write_parquet(packets_path)
    step(f"flows: {packets.height} packets")
    fl = flows(packets)
    fl.write_parquet(out / "flows.parquet")
    step(f"fit: {fl.height} flows")
    model = fit([packets])
    model.span.inputs = [sample.name]
    model_path = out / "model.json"
    model.save(model_path)
    net, hosts = model.network, model.hosts
    step(f"replay the model through the simulator ({model.span.duration_s:.0f} s simulated; "
         f"found in the capture: bottleneck {net.rate_bps / 1e6:.3f} Mbit/s, buffer "
         f"{net.buffer_bytes:,} B, initial window {hosts.initial_window:g}, "
         f"{hosts.congestion_control or 'congestion control unknown'})")
    run_dir = out / "run"
    result = replay(model_path, run_dir, seed=seed)
    step("compare predicted with measured")
    comparison = compare_paths(packets_path, run_dir)
    write_text(out / "comparison.json", json.dumps(jsonable(comparison), indent=2) + "\n")
    step("report")
    report = build_report([], out / "report", measured=packets_path, predicted=run_dir,
                          title="traceflow demo: predicted vs measured", progress=False)
    step("done")
    m = comparison["metrics"]
    return {
        "headline": headline(comparison),
        "packets": str(packets_path), "flows": str(out / "flows.parquet"), "model": str(model_path),
        "run": str(run_dir), "comparison": str(out / "comparison.json"), "report": report["index"],
        "utilization": {"measured": m["utilization"]["measured"],
                        "predicted": m["utilization"]["predicted"]},
        "alpha": model.sizes.tail.alpha if model.sizes and model.sizes.tail else None,
        "passed": [k for k, v in m.items() if v["pass"]],
        "failed": comparison["failed"],
        "simulated_s": result.summary["duration_s"],
        "wall_s": time.perf_counter() - t0,
    }


def headline(comparison):
    """The demo's one-line result: utilization on both sides, how many metrics agree, and for each
    one outside its tolerance what was measured and what the replay predicted. A replay of a
    fitted model is a prediction, not a copy of the trace: a metric outside a tolerance is a
    finding about the model, which the line states as such, not a failure of the demo."""
    from traceflow import units
    from traceflow.report.comparison import outside

    m = comparison["metrics"]
    u = m["utilization"]
    judged = [k for k, v in m.items() if v["pass"] is not None]
    line = (f"utilization measured {units.number(u['measured'])}, predicted "
            f"{units.number(u['predicted'])}; {len(judged) - len(comparison['failed'])} of "
            f"{len(judged)} metrics within tolerance")
    for name, v in m.items():
        if v.get("not_judged"):
            line += f" ({name} not judged: {v['not_judged']})"
    if comparison["failed"]:
        line += ("; the replay of the fitted model differs in " + "; ".join(outside(comparison))
                 + " (a prediction, not a copy of the trace: the report compares them)")
    return line

"""Simulation results: summary metrics, Arrow tables, and the run directory writer.

Run directory (written atomically). Every file is a function of the scenario and seed alone (the
same run gives the same bytes), except ``timing.json``:
  summary.json      headline metrics (see :func:`summarize`)
  flows.parquet     one row per flow: endpoints, class, base RTT, packets/bytes sent, received,
                    dropped (data and ACK directions), retransmits, timeouts, goodput, transfers
  transfers.parquet one row per transfer: size, start, end (null if unfinished), bytes sent,
                    retransmits, timeouts, loss probes, reliable throughput S/W, request
                    (bytes the client sent first, 0 if none) and response (null if none: when
                    the server had the whole request and started its response)
  series.parquet    per monitored link and bin: t (timestamp[ns]), bytes, packets (departures),
                    arrival_bytes, arrival_packets, drops
  queue.parquet     queue samples: t, link, packets, bytes, avg (RED EWMA / instantaneous)
  links.parquet     per directed link: counters and time-averaged queue
  hooks.parquet     per-flow sender-hook traces (only when a hook recorded one): flow_id, hook
                    (kind), t (timestamp[ns]) and the hook's columns, e.g. SSC's per-T_L block
                    x, gamma (bits), L1, L2hat, xi, A
  scenario.json     the scenario as run (after --set overrides and --seed)
  <a>-<b>.pcap      captures of links with pcap = true
  timing.json       how long the run took: wall_s (wall-clock seconds of the simulation), events
                    per second; the one file that differs between identical runs
"""
from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np

from traceflow.atomic import atomic_dir
from traceflow.jsonutil import dumps

NS = 1_000_000_000


class Result:
    """Outcome of one run: ``summary`` (dict), ``flows``/``transfers``/``series``/``queue``/
    ``links`` (pyarrow Tables), ``scenario`` (the Scenario), ``pcaps`` (paths), ``hooks``
    (pyarrow Table of the sender hooks' traces, or None when no hook recorded one), ``timing``
    (``wall_s``: wall-clock seconds; ``events_per_s``), kept out of ``summary`` so that the
    summary depends only on the scenario and seed."""

    def __init__(self, summary, flows, transfers, series, queue, links, scenario, pcaps,
                 hooks=None, timing=None):
        self.summary = summary
        self.flows = flows
        self.transfers = transfers
        self.series = series
        self.queue = queue
        self.links = links
        self.scenario = scenario
        self.pcaps = pcaps
        self.hooks = hooks
        self.timing = timing or {}

    def __repr__(self):
        s = self.summary
        return (f"Result(duration={s['duration_s']}s, throughput={s['throughput_bps']:.4g} b/s, "
                f"loss={s['loss_rate']:.4g}, flows={self.flows.num_rows}, "
                f"transfers={self.transfers.num_rows})")

    def write(self, run_dir):
        """Write the run directory atomically (replacing an existing one); returns its Path."""
        import pyarrow.parquet as pq

        run_dir = Path(run_dir)
        with atomic_dir(run_dir) as tmp:
            (tmp / "summary.json").write_text(dumps(self.summary))
            for name in ("flows", "transfers", "series", "queue", "links"):
                pq.write_table(getattr(self, name), tmp / f"{name}.parquet")
            if self.hooks is not None:
                pq.write_table(self.hooks, tmp / "hooks.parquet")
            (tmp / "scenario.json").write_text(dumps(self.scenario.raw))
            (tmp / "timing.json").write_text(dumps(self.timing))
            for p in self.pcaps:
                shutil.copyfile(p, tmp / Path(p).name)
        return run_dir


def _ratio(a, b):
    return float(a) / float(b) if b else float("nan")


# file-size bins of the self-similarity paper's Table 1 (bytes, inclusive upper edges)
SIZE_BINS = [(0, 700), (701, 1000), (1001, 2000), (2001, 4000), (4001, 8000), (8001, 16000),
             (16001, 64000), (64001, None)]


def _response_bins(sizes, durations):
    """Mean reliable transmission time (s) of completed transfers per file-size bin."""
    out = []
    for lo, hi in SIZE_BINS:
        m = (sizes >= lo) & ((sizes <= hi) if hi is not None else True)
        out.append({"min_bytes": lo, "max_bytes": hi, "transfers": int(m.sum()),
                    "mean_s": float(durations[m].mean()) if m.any() else float("nan")})
    return out


def hook_traces(hooks):
    """One table of the traces of ``hooks`` ((flow id, kind, hook) triples), or None.

    A hook contributes when it has ``trace()`` returning columns (a dict of equal-length arrays,
    as SSC's per-block trace); ``t`` (ns) becomes timestamp[ns]. Hooks of different kinds may
    have different columns: the missing ones are null.
    """
    import pyarrow as pa

    parts = []
    for flow, kind, hook in hooks:
        trace = getattr(hook, "trace", None)
        cols = trace() if trace is not None else None
        if not isinstance(cols, dict) or not cols:
            continue
        t = pa.table({k: np.asarray(v) for k, v in cols.items()})
        if t.num_rows == 0:
            continue
        if "t" in t.column_names:
            t = t.set_column(t.column_names.index("t"), "t",
                             t["t"].cast(pa.int64()).cast(pa.timestamp("ns")))
        n = t.num_rows
        t = t.add_column(0, "hook", pa.array([kind] * n, pa.string()))
        parts.append(t.add_column(0, "flow_id", pa.array(np.full(n, flow), pa.int32())))
    return pa.concat_tables(parts, promote_options="default") if parts else None


def summarize(built, wall_s, pcap_dir):
    """Collect tables and headline metrics from a finished :class:`runner.Built`."""
    # pyarrow is imported once the run is over, so that a simulation starts without paying for it
    import pyarrow as pa
    import pyarrow.compute as pc

    sim = built.sim
    sc = built.sc
    dur_ns = built.duration_ns
    dur = dur_ns / NS

    fs = sim.flow_stats()
    info = built.flows
    flows = pa.table({
        "flow_id": pa.array([f.flow for f in info], pa.int32()),
        "group": pa.array([f.group for f in info], pa.int32()),
        "kind": pa.array([f.kind for f in info], pa.string()),
        "transport": pa.array([f.transport for f in info], pa.string()),
        "src": pa.array([f.src for f in info], pa.string()),
        "dst": pa.array([f.dst for f in info], pa.string()),
        "cls": pa.array(fs["cls"], pa.int32()),
        "base_rtt": pa.array(fs["base_rtt"], pa.float64()),
        **{k: pa.array(v, pa.int64()) for k, v in fs.items() if k not in ("cls", "base_rtt")},
    })

    tr = sim.transfer_records()
    done = tr["end"] >= 0
    end = pa.array(np.where(done, tr["end"], 0), pa.int64()).cast(pa.timestamp("ns"))
    end = pc.if_else(pa.array(done), end, pa.scalar(None, pa.timestamp("ns")))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(tr["bytes_sent"] > 0, tr["size"] / tr["bytes_sent"], np.nan)
        dur_t = np.where(done, (tr["end"] - tr["start"]) / NS, np.nan)
    transfers = pa.table({
        "flow_id": pa.array(tr["flow"], pa.int32()),
        "conn": pa.array(tr["conn"], pa.int32()),
        "size": pa.array(tr["size"], pa.int64()),
        "start": pa.array(tr["start"], pa.int64()).cast(pa.timestamp("ns")),
        "end": end,
        "duration": pa.array(dur_t, pa.float64()),
        "bytes_sent": pa.array(tr["bytes_sent"], pa.int64()),
        "packets_sent": pa.array(tr["pkts_sent"], pa.int64()),
        "retransmits": pa.array(tr["retransmits"], pa.int64()),
        "timeouts": pa.array(tr["timeouts"], pa.int64()),
        "loss_probes": pa.array(tr["loss_probes"], pa.int64()),
        "reliable_throughput": pa.array(rel, pa.float64()),
        "request": pa.array(tr["request"], pa.int64()),
        "response": pc.if_else(pa.array(tr["response"] >= 0),
                               pa.array(tr["response"], pa.int64()).cast(pa.timestamp("ns")),
                               pa.scalar(None, pa.timestamp("ns"))),
    })

    parts = []
    for link in built.monitored:
        s = link.series()
        if s is None:
            continue
        bin_ns, cols = s
        n = min(len(cols["bytes"]), int(math.ceil(dur_ns / bin_ns)))
        parts.append(pa.table({
            "link": pa.array([link.name] * n, pa.string()),
            "t": pa.array(np.arange(n, dtype=np.int64) * bin_ns, pa.int64()).cast(pa.timestamp("ns")),
            **{k: pa.array(v[:n], pa.int64()) for k, v in cols.items()},
        }))
    series = pa.concat_tables(parts) if parts else pa.table({
        "link": pa.array([], pa.string()), "t": pa.array([], pa.timestamp("ns")),
        **{k: pa.array([], pa.int64()) for k in ("bytes", "packets", "arrival_bytes",
                                                 "arrival_packets", "drops")}})

    names = {l.id: l.name for l in built.links}
    if built.sampler is not None:
        q = built.sampler.samples()
        queue = pa.table({
            "t": pa.array(q["t"], pa.int64()).cast(pa.timestamp("ns")),
            "link": pa.array([names[i] for i in q["link"]], pa.string()),
            "packets": pa.array(q["packets"], pa.int64()),
            "bytes": pa.array(q["bytes"], pa.int64()),
            "avg": pa.array(q["avg"], pa.float64()),
        })
    else:
        queue = pa.table({"t": pa.array([], pa.timestamp("ns")), "link": pa.array([], pa.string()),
                          "packets": pa.array([], pa.int64()), "bytes": pa.array([], pa.int64()),
                          "avg": pa.array([], pa.float64())})

    lstats = [l.stats(dur_ns) for l in built.links]
    links = pa.Table.from_pylist(lstats)

    b = built.bottleneck.stats(dur_ns)
    data_sent = int(fs["sent_pkts"].sum())
    retx = int(fs["retransmits"].sum())
    done_sizes = tr["size"][done]
    done_sent = tr["bytes_sent"][done]
    ok = done_sent > 0
    limit_b = b["limit_bytes"] or (b["limit_pkts"] * (sc.simulation.mss + sc.simulation.tcp_header))
    summary = {
        "name": sc.name,
        "duration_s": dur,
        "seed": sc.simulation.seed,
        "events": int(sim.events),
        "bottleneck": b["name"],
        "bottleneck_rate_bps": b["rate_bps"],
        "packets_forwarded": b["departures"],
        "throughput_bps": b["departure_bytes"] * 8 / dur,
        "link_utilization": b["busy_s"] / dur,
        "goodput_bps": float(fs["goodput_bytes"].sum()) * 8 / dur,
        "loss_rate": _ratio(b["queue_drops"] + b["lost"], b["arrivals"]),
        "network_loss_rate": _ratio(fs["drop_pkts"].sum(), data_sent),
        "retransmission_rate": _ratio(retx, data_sent),
        "reliable_throughput": float(np.mean(done_sizes[ok] / done_sent[ok])) if ok.any() else float("nan"),
        "reliable_throughput_bytes": _ratio(done_sizes[ok].sum(), done_sent[ok].sum()),
        "mean_queue_pkts": b["mean_queue_pkts"],
        "mean_queue_bytes": b["mean_queue_bytes"],
        "buffer_occupancy": _ratio(b["mean_queue_bytes"], limit_b),
        "max_queue_pkts": b["max_queue_pkts"],
        "flows": len(info),
        "transfers": int(len(tr["size"])),
        "transfers_completed": int(done.sum()),
        "mean_transfer_size": float(np.mean(tr["size"][tr["size"] > 0])) if (tr["size"] > 0).any() else float("nan"),
        "mean_response_time_s": float(np.nanmean(dur_t)) if done.any() else float("nan"),
        "data_packets_sent": data_sent,
        "retransmits": retx,
        "timeouts": int(fs["timeouts"].sum()),
        "response_time_by_size": _response_bins(tr["size"][done], dur_t[done]),
    }
    pcaps = [w.path for w in built.pcaps]
    timing = {"wall_s": wall_s, "events_per_s": _ratio(sim.events, wall_s)}
    return Result(summary, flows, transfers, series, queue, links, sc, pcaps,
                  hook_traces(built.hooks), timing)

"""Replay measured or modelled flows closed-loop through the simulator.

Two modes, one mechanism — a trace-driven traffic group of the simulator (``kind = "trace"``):
every flow is a TCP connection from a left host to a right host of a dumbbell that opens at its
start time, transfers its size and closes, so congestion dynamics are simulated, not copied.

- **Trace-driven** (a flows table): the measured TCP flows as they were — start times, transfer
  sizes (application bytes of the larger direction) and per-flow RTT from the handshake
  (SYN → final ACK; flows without one get the median).
- **Model** (a :class:`~traceflow.models.model.Model`): flows sampled from the fitted arrival process,
  size distribution and RTT distribution. Sizes get the sample-path normalization of Park & Tuan
  (2000, sec. 4.3): heavy-tailed samples converge slowly to their mean, so of several draws the
  one nearest the fitted mean is kept and its Pareto tail rescaled to hit the mean — a change of
  the tail's location b with α fixed. As in the paper, what must match is the *measured*
  intensity (a huge flow that starts late delivers only part of its bytes inside the span): the
  tail is rescaled by the throughput shortfall and the run repeated (at most
  :data:`NORMALIZE_ROUNDS` runs) until the bottleneck throughput is within
  :data:`NORMALIZE_TOLERANCE` of the fitted mean rate. The tail index (hence the burstiness) and
  the body of the size distribution stay as fitted.

The bottleneck (capacity, buffer, discipline) and TCP flavor come from a scenario file
(``replays/replay_*.toml``) and ``--set`` overrides; the capacity defaults to the fitted estimate.
The end-host parameters the trace revealed (:mod:`traceflow.flows.hosts`: segment size, header bytes,
initial window, receiver window, minimum RTO, delayed ACKs) are applied on top of the built-in
defaults; a scenario or ``--set`` that names one of them wins. The bottleneck link is captured to
``g1-g2.pcap`` in the run directory, so the same analytics apply to the predicted traffic.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl

from traceflow.errors import InputFormatError, ScenarioError
from traceflow.models.model import Hosts, Model
from traceflow.values import apply_overrides, merge, read_toml

#: Built-in replay topology: many hosts on fast, nearly delay-free access links, so the
#: bottleneck and the per-flow RTTs of the trace shape the traffic.
HOSTS_PER_SIDE = 16
DEFAULT_DELAY_S = 1e-5
BOTTLENECK_PCAP = "g1-g2.pcap"
#: model mode: at most this many runs to bring the replay's throughput within the tolerance
#: (relative) of the fitted mean rate
NORMALIZE_ROUNDS = 4
NORMALIZE_TOLERANCE = 0.02


RTT_MODES = ("handshake", "floor")


def apply_rtt_mode(table, mode):
    """Per-flow RTTs as measured (``handshake``) or all set to their 5th percentile (``floor``).

    A handshake RTT includes the queueing its packets met; the simulator adds its own queueing on
    top, so replaying measured RTTs counts that queueing twice. ``floor`` keeps only the
    propagation part the capture shows (its low quantile), for paths of similar length."""
    if mode == "handshake":
        return table
    if mode != "floor":
        raise ScenarioError(f"unknown RTT mode {mode!r} (use {' or '.join(RTT_MODES)})")
    floor = table["rtt"].quantile(0.05) if table.height else 0.0
    return table.with_columns(rtt=pl.lit(float(floor or 0.0)))


def trace_table(flows, *, rtt_column="rtt_handshake"):
    """The replayable flows of a flows table: ``start`` (int ns), ``size`` (bytes), ``rtt`` (s).

    TCP flows with application bytes; the size is the larger direction's transfer. Missing RTTs
    get the median of the others (or 0 when none was measured)."""
    if not isinstance(flows, pl.DataFrame):
        flows = pl.from_arrow(flows)
    missing = {"proto", "start", "app_bytes_c2s", "app_bytes_s2c", rtt_column} - set(flows.columns)
    if missing:
        raise InputFormatError(f"not a flows table: missing {', '.join(sorted(missing))}")
    t = (flows.filter(pl.col("proto") == 6)
         .select(start=pl.col("start").cast(pl.Int64),
                 size=pl.max_horizontal("app_bytes_c2s", "app_bytes_s2c").cast(pl.Int64),
                 rtt=pl.col(rtt_column).cast(pl.Float64))
         .filter(pl.col("size") > 0).sort("start"))
    if t.height == 0:
        raise InputFormatError("no TCP flows with data to replay")
    med = t["rtt"].drop_nulls().median()
    return t.with_columns(pl.col("rtt").fill_null(med if med is not None else 0.0).fill_nan(
        med if med is not None else 0.0))


def normalize_sample_mean(sizes, target_mean, *, xmin=None):
    """Rescale sizes so their mean is ``target_mean`` (Park & Tuan 2000, sec. 4.3); integers >= 1.

    With ``xmin``, only the values at or above it (the Pareto tail) are rescaled — a change of the
    tail's location b with α fixed — and the body is kept as sampled; when the body alone already
    exceeds the target, or nothing is in the tail, every value is rescaled."""
    sizes = np.asarray(sizes, dtype=np.float64)
    if sizes.size == 0 or not target_mean > 0:
        return np.maximum(1, np.round(sizes)).astype(np.int64)
    out = sizes.copy()
    total = target_mean * sizes.size
    tail = sizes >= xmin if xmin is not None else np.ones(sizes.size, bool)
    rest = sizes[~tail].sum()
    if tail.any() and total > rest:
        out[tail] *= (total - rest) / sizes[tail].sum()
    else:
        out *= target_mean / sizes.mean()
    return np.maximum(1, np.round(out)).astype(np.int64)


def _draw_sizes(dist, rng, n, normalize, candidates=32):
    """Sizes for ``n`` flows. Normalized: of ``candidates`` independent draws, the one whose mean
    is nearest the fitted mean, then its tail rescaled to hit the mean exactly — so neither the
    body nor (much) the tail moves away from the fit."""
    if not normalize:
        return np.maximum(1, np.round(dist.sample(rng, n))).astype(np.int64)
    draws = [dist.sample(rng, n) for _ in range(candidates)]
    best = min(draws, key=lambda x: abs(np.log(x.mean() / dist.mean)))
    return normalize_sample_mean(best, dist.mean, xmin=dist.tail.xmin if dist.tail else None)


def sample_flows(model: Model, *, duration_s=None, seed=0, normalize=True):
    """Flows drawn from ``model``: arrivals over ``duration_s`` (default the fitted span), sizes
    (normalized to the fitted mean unless ``normalize=False``), RTTs. Returns the trace table."""
    from traceflow.models.fit import sample_interarrival

    rng = np.random.default_rng(seed)
    duration_s = float(duration_s or model.span.duration_s)
    if model.sizes is None:
        raise InputFormatError("model has no flow size distribution: nothing to sample")
    ia = model.arrivals.interarrival
    rate = model.arrivals.rate_per_s
    if not (rate and rate > 0):
        raise InputFormatError("model has no flow arrival rate")
    # Draw more gaps than the expected count, keep the arrivals inside the span.
    n_guess = int(rate * duration_s * 1.5 + 20)
    starts = np.empty(0)
    while starts.size == 0 or starts[-1] < duration_s:
        gaps = (sample_interarrival(ia, rng, n_guess) if ia is not None
                else rng.exponential(1.0 / rate, n_guess))
        base = starts[-1] if starts.size else 0.0
        starts = np.concatenate([starts, base + np.cumsum(gaps)])
    starts = starts[starts < duration_s]
    n = starts.size
    sizes = _draw_sizes(model.sizes, rng, n, normalize)
    dist = model.rtt.distribution
    rtt = dist.sample(rng, n) if dist is not None else np.zeros(n)
    return pl.DataFrame({"start": np.round(starts * 1e9).astype(np.int64), "size": sizes,
                         "rtt": np.maximum(rtt, 0.0)})


#: IP + TCP header bytes the simulator's pcap writer emits (no TCP options).
SIM_HEADER = 40


def host_settings(hosts: Hosts | None):
    """Scenario keys (``simulation.*``, ``tcp.*``) for the inferred end-host parameters.

    The simulator's pcap carries 40-byte IP + TCP headers without options, so a measured header
    with options (e.g. 52 bytes with timestamps) is folded into the segment: full data packets keep
    their measured wire size (what loads the link), at the price of ~1 % fewer segments per flow."""
    if hosts is None:
        return {}
    sim, tcp = {}, {}
    if hosts.segment_size:
        extra = max(0, (hosts.header_bytes or SIM_HEADER) - SIM_HEADER)
        sim["mss"] = int(hosts.segment_size) + extra
        sim["tcp_header"] = SIM_HEADER
    if hosts.initial_window:
        tcp["init_cwnd"] = float(hosts.initial_window)
    if hosts.receiver_window and hosts.segment_size:
        tcp["rwnd"] = max(1, int(hosts.receiver_window // sim["mss"]))
    if hosts.min_rto_s:
        tcp["min_rto"] = float(hosts.min_rto_s)
    if hosts.delayed_ack is not None:
        tcp["delayed_ack"] = bool(hosts.delayed_ack)
    out = {}
    if sim:
        out["simulation"] = sim
    if tcp:
        out["tcp"] = tcp
    return out


def read_scenario(path):
    """The raw dict of a replay scenario TOML file."""
    return read_toml(path)


def build_scenario(*, hosts=None, capacity_bps=None, duration_s, scenario=None, name="replay"):
    """The raw scenario dict of a replay: defaults < fitted hosts < ``scenario`` (dict or TOML
    path). The trace group is appended; its index is ``len(raw["traffic"]) - 1``."""
    raw = scenario if isinstance(scenario, dict) else (read_scenario(scenario) if scenario else {})
    given_rate = "rate" in raw.get("topology", {}).get("bottleneck", {})
    rate = float(capacity_bps) if capacity_bps and math.isfinite(capacity_bps) else None
    if not given_rate and rate is None:
        raise ScenarioError("no bottleneck capacity: give topology.bottleneck.rate (scenario or "
                            "--set) or a model with a capacity estimate")
    bneck = {"delay": DEFAULT_DELAY_S, "pcap": True}
    if rate is not None:
        bneck["rate"] = rate
    access_rate = max(100e6, 10 * (rate or raw["topology"]["bottleneck"]["rate"]))
    defaults = {
        "name": name,
        "simulation": {"duration": float(duration_s)},
        "topology": {"kind": "dumbbell", "left": HOSTS_PER_SIDE, "right": HOSTS_PER_SIDE,
                     "bottleneck": bneck,
                     "access": {"rate": access_rate, "delay": DEFAULT_DELAY_S}},
    }
    merged = merge(merge(defaults, host_settings(hosts)), raw)
    if merged["topology"].get("kind", "dumbbell") != "dumbbell":
        raise ScenarioError("topology.kind: replays use the dumbbell topology")
    merged["topology"]["bottleneck"]["pcap"] = True
    merged.setdefault("traffic", [])
    merged["traffic"] = list(merged["traffic"]) + [{"kind": "trace", "src": "l*", "dst": "r*"}]
    return merged


def load_source(path):
    """``("model", Model)`` for a model JSON, ``("flows", DataFrame)`` for a flows table."""
    path = Path(path)
    if not path.exists():
        raise InputFormatError("no such file", path=path)
    with open(path, "rb") as f:
        head = f.read(4)
    if head == b"PAR1":
        from traceflow.flows import input_kind

        if input_kind(path) != "flows":
            raise InputFormatError("expected a model JSON or a flows table", path=path)
        return "flows", pl.read_parquet(path)
    return "model", Model.load(path)


def replay(source, out_dir, *, scenario=None, overrides=(), model=None, duration_s=None, seed=None,
           normalize=True, rtt="handshake", progress=None):
    """Replay ``source`` (model JSON path, :class:`Model`, flows Parquet path or flows frame) and
    write the run directory ``out_dir``. ``model`` supplies hosts and capacity in trace-driven
    mode; ``seed`` (default: the scenario's) drives the sampling and the run; ``rtt`` is an
    :func:`apply_rtt_mode` mode. Returns the simulator :class:`~traceflow.sim.Result`."""
    from traceflow.sim import run

    if isinstance(source, (str, Path)):
        mode, obj = load_source(source)
    elif isinstance(source, Model):
        mode, obj = "model", source
    else:
        mode, obj = "flows", source if isinstance(source, pl.DataFrame) else pl.from_arrow(source)
    if isinstance(model, (str, Path)):
        model = Model.load(model)
    if mode == "model":
        model = obj
        table = sample_flows(model, duration_s=duration_s, seed=seed or 0, normalize=normalize)
        span = float(duration_s or model.span.duration_s)
    else:
        table = trace_table(obj)
        if duration_s:
            span = float(duration_s)
        elif model is not None:
            span = model.span.duration_s
        else:
            ends = obj.filter(pl.col("proto") == 6)["end"].cast(pl.Int64)
            span = (int(ends.max()) - int(table["start"].min())) / 1e9
            span = max(span, 1.0)
        table = table.filter(pl.col("start") - pl.col("start").min() < int(span * 1e9))
    table = apply_rtt_mode(table, rtt)
    hosts = model.hosts if model is not None else None
    cap = model.link.capacity_bps if model is not None else None
    raw = build_scenario(hosts=hosts, capacity_bps=cap, duration_s=span, scenario=scenario)
    raw = apply_overrides(raw, overrides)
    group = len(raw["traffic"]) - 1
    iterate = mode == "model" and normalize and model.link.mean_rate_bps > 0
    rounds, best, scale = [], None, 1.0
    for _ in range(NORMALIZE_ROUNDS if iterate else 1):
        sizes = (normalize_sample_mean(table["size"].to_numpy(), model.sizes.mean * scale,
                                       xmin=model.sizes.tail.xmin if model.sizes.tail else None)
                 if iterate else table["size"].to_numpy())
        run_table = table.with_columns(size=pl.Series(sizes))
        result = run(raw, seed=seed, flows={group: run_table.to_arrow()}, progress=progress)
        if not iterate:
            best = (result, run_table)
            break
        # Park & Tuan's normalization reaches the measured intensity by varying the tail's
        # location with α fixed: rescale the sizes by the intensity shortfall and run again.
        ratio = model.link.mean_rate_bps / result.summary["throughput_bps"]
        rounds.append({"scale": scale, "throughput_bps": result.summary["throughput_bps"]})
        if best is None or abs(math.log(ratio)) < best[2]:
            best = (result, run_table, abs(math.log(ratio)))
        if abs(ratio - 1) <= NORMALIZE_TOLERANCE:
            break
        scale *= ratio
    result, table = best[0], best[1]
    result.summary["replay"] = {
        "mode": "model" if mode == "model" else "trace",
        "flows": int(table.height),
        "offered_bytes": int(table["size"].sum()),
        "normalized": bool(iterate),
        "normalize_rounds": rounds,
        "target_throughput_bps": model.link.mean_rate_bps if iterate else None,
        "rtt": rtt,
        "hosts": None if hosts is None else {
            "segment_size": hosts.segment_size, "initial_window": hosts.initial_window,
            "initial_window_observable": hosts.initial_window_observable,
            "receiver_window": hosts.receiver_window, "min_rto_s": hosts.min_rto_s,
            "delayed_ack": hosts.delayed_ack},
        "pcap": BOTTLENECK_PCAP,
    }
    result.write(out_dir)
    return result

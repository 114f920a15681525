"""Replay measured or modelled flows closed-loop through the simulator.

Two modes, one mechanism — a trace-driven traffic group of the simulator (``kind = "trace"``):
every flow is a TCP connection between a host on each side of a dumbbell that opens at its start
time, carries the client's request and the server's response and closes, so congestion dynamics
are simulated, not copied.

- **Trace-driven** (a flows table): the measured TCP connections as they were — start times,
  request bytes (client → server), response bytes (server → client) and the propagation RTT of
  their path: the minimum RTT of the connection's host pair over the whole trace
  (:func:`traceflow.models.fit.path_rtt`), never the connection's own handshake RTT, which already holds
  the queueing the simulated bottleneck creates again.
- **Model** (a :class:`~traceflow.models.model.Model`): flows sampled from the fitted arrival process,
  size, request and path-RTT distributions. When the fit found closed-loop client sessions
  (:mod:`traceflow.models.sessions`), these drive the arrivals instead: each session's next
  connection opens a sampled think time after its previous transfer ended in the simulation, so
  congestion slows the arrivals as it slowed the real clients. Sizes get the sample-path
  normalization of Park & Tuan (2000, sec. 4.3): heavy-tailed samples converge slowly to their
  mean, so of several draws the one nearest the fitted mean is kept and its Pareto tail
  rescaled to hit the mean — a change of the tail's location b with α fixed. As in the paper,
  what must match is the *measured* intensity (a huge flow that starts late delivers only part
  of its bytes inside the span): the tail is rescaled by the throughput shortfall and the run
  repeated (at most :data:`NORMALIZE_ROUNDS` runs) until the bottleneck throughput is within
  :data:`NORMALIZE_TOLERANCE` of the fitted mean rate. The tail index (hence the burstiness) and
  the body of the size distribution stay as fitted.

The bottleneck is the one the model found in the capture (``model.network``,
:mod:`traceflow.models.network`: service rate, DropTail buffer, token-bucket burst, reverse path;
:func:`network_settings`); a scenario file (``replays/replay_*.toml``) or ``--set`` overrides any
value, and the settings the run used are recorded with their source and the model's quality flag
(:func:`used_settings`). A model without a network (fitted before it was recorded) gives the
capacity only. The end hosts are what the
trace revealed (:mod:`traceflow.flows.hosts`: segment size, header bytes with the options seen, initial
window, receiver window, minimum and initial RTO, delayed ACKs, SACK, timestamps), with the
``linux`` TCP profile when the handshakes show SACK (:func:`host_settings`); a scenario or
``--set`` that names a key wins. The bottleneck link is captured to ``g1-g2.pcap`` in the run
directory, so the same analytics apply to the predicted traffic.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl

from traceflow.errors import InputFormatError, ScenarioError, warn
from traceflow.models.model import Hosts, Model
from traceflow.values import apply_overrides, merge, read_toml

#: Built-in replay topology: many hosts on fast access links without propagation delay of their
#: own, so the bottleneck and the per-flow path RTTs of the trace shape the traffic.
HOSTS_PER_SIDE = 16
DEFAULT_DELAY_S = 0.0
BOTTLENECK_PCAP = "g1-g2.pcap"
#: model mode: at most this many runs to bring the replay's throughput within the tolerance
#: (relative) of the fitted mean rate
NORMALIZE_ROUNDS = 4
NORMALIZE_TOLERANCE = 0.02


#: per-flow RTTs of a trace replay: the path's propagation RTT (host-pair minimum), or each
#: flow's own handshake RTT (queueing included, so the simulator counts it twice: for comparison)
RTT_MODES = ("path", "handshake")


def trace_table(flows, *, rtt="path"):
    """The replayable connections of a flows table: ``start`` (int ns), ``size`` (response bytes,
    server → client), ``request`` (bytes, client → server), ``rtt`` (s: see :data:`RTT_MODES`) and,
    in path mode, ``server_share`` (the part of the RTT between the capture point and the server).

    TCP flows that carried application bytes; missing RTTs get the median of the others (0 when
    none was measured)."""
    from traceflow.models.fit import path_rtt

    if rtt not in RTT_MODES:
        raise ScenarioError(f"unknown RTT mode {rtt!r} (use {' or '.join(RTT_MODES)})")
    if not isinstance(flows, pl.DataFrame):
        flows = pl.from_arrow(flows)
    need = {"proto", "start", "app_bytes_c2s", "app_bytes_s2c", "rtt_handshake"}
    if rtt == "path":
        need |= {"client_addr", "server_addr"}
    missing = need - set(flows.columns)
    if missing:
        raise InputFormatError(f"not a flows table: missing {', '.join(sorted(missing))}")
    tcp = flows.filter(pl.col("proto") == 6)
    if rtt == "path":
        tcp = path_rtt(tcp)
    t = (tcp.select(start=pl.col("start").cast(pl.Int64),
                    size=pl.col("app_bytes_s2c").fill_null(0).cast(pl.Int64),
                    request=pl.col("app_bytes_c2s").fill_null(0).cast(pl.Int64),
                    rtt=pl.col("path_rtt" if rtt == "path" else "rtt_handshake").cast(pl.Float64),
                    *([pl.col("server_share")] if rtt == "path" else []))
         .filter((pl.col("size") + pl.col("request")) > 0).sort("start"))
    if t.height == 0:
        raise InputFormatError("no TCP flows with data to replay")
    med = t["rtt"].drop_nulls().drop_nans().median()
    fill = med if med is not None else 0.0
    return t.with_columns(pl.col("rtt").fill_nan(None).fill_null(fill))


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
    """Sizes for ``n`` flows. Normalized: of ``candidates`` stratified draws (one uniform in
    each of ``n`` equal probability strata, in random order, so every part of the distribution
    — each size bin, each stretch of the tail — gets its share of flows, not a binomial count),
    the one whose mean is nearest the fitted mean, then its tail rescaled to hit the mean
    exactly — so neither the body nor (much) the tail moves away from the fit."""
    if not normalize:
        return np.maximum(1, np.round(dist.sample(rng, n))).astype(np.int64)
    draws = [dist.ppf((rng.permutation(n) + rng.random(n)) / n) for _ in range(candidates)]
    best = min(draws, key=lambda x: abs(np.log(x.mean() / dist.mean)))
    return normalize_sample_mean(best, dist.mean, xmin=dist.tail.xmin if dist.tail else None)


def sample_flows(model: Model, *, duration_s=None, seed=0, normalize=True):
    """Flows drawn from ``model`` over ``duration_s``.

    With fitted :class:`~traceflow.models.model.Sessions`, closed-loop sessions
    (:func:`sample_sessions`), else open arrivals (:func:`sample_arrivals`). Requests (when the
    model has them) are drawn independently of the sizes.

    Parameters
    ----------
    model : Model
        The fitted model.
    duration_s : float, optional
        Length of the sample (s); default the fitted span.
    seed : int, default 0
        Seed of the random draws.
    normalize : bool, default True
        Sizes are normalized to the fitted mean unless False.

    Returns
    -------
    polars.DataFrame
        The trace table (as :func:`trace_table`: ``start`` int ns, ``size`` and ``request`` bytes,
        ``rtt`` s).

    Raises
    ------
    InputFormatError
        The model has no flow size distribution.

    Examples
    --------
    >>> from traceflow.models.model import Model
    >>> from traceflow.replay import sample_flows
    >>> table = sample_flows(Model.load("model.json"), duration_s=60, seed=1)
    """
    if model.sizes is None:
        raise InputFormatError("model has no flow size distribution: nothing to sample")
    rng = np.random.default_rng(seed)
    duration_s = float(duration_s or model.span.duration_s)
    if model.sessions is not None:
        return sample_sessions(model, rng, duration_s, normalize)
    return sample_arrivals(model, rng, duration_s, normalize)


def sample_arrivals(model: Model, rng, duration_s, normalize):
    """Open arrivals: start times from the fitted inter-arrival process, each flow with its
    own size, request and path RTT (``start`` in int ns)."""
    from traceflow.models.fit import sample_interarrival

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
    out = {"start": np.round(starts * 1e9).astype(np.int64), "size": sizes,
           "rtt": _path_rtts(model, rng, n)}
    return pl.DataFrame(out | _optional_columns(model, rng, n))


def sample_sessions(model: Model, rng, duration_s, normalize):
    """Closed-loop sessions (``model.sessions``): for each of the fitted sessions, exponential
    think times (the first before its first transfer, each later one after the previous transfer
    ended) as many as can start within ``duration_s`` even if every transfer took no time; each
    transfer with its own size and request, each session one path RTT. Columns ``session``,
    ``think`` (s), ``size``, ``rtt`` (s), ``request``."""
    ss = model.sessions
    if ss.think_dist != "exponential" or not ss.think_mean_s > 0 or ss.sessions < 1:
        raise InputFormatError(f"model sessions: unsupported think time {ss.think_dist!r} "
                               f"(mean {ss.think_mean_s} s, {ss.sessions} sessions)")
    thinks = []
    for _ in range(ss.sessions):
        gaps = np.empty(0)
        while gaps.sum() < duration_s:
            gaps = np.concatenate([gaps, rng.exponential(ss.think_mean_s,
                                                         int(duration_s / ss.think_mean_s) + 8)])
        thinks.append(gaps[: np.searchsorted(np.cumsum(gaps), duration_s)])
    session = np.repeat(np.arange(ss.sessions), [t.size for t in thinks])
    n = session.size
    out = {"session": session, "think": np.concatenate(thinks),
           "size": _draw_sizes(model.sizes, rng, n, normalize),
           "rtt": _path_rtts(model, rng, ss.sessions)[session]}
    return pl.DataFrame(out | _optional_columns(model, rng, n))


def _path_rtts(model, rng, n):
    """``n`` path propagation RTTs (s; a model fitted before they were recorded: handshake
    RTTs), one in each of ``n`` equal probability strata in random order: a few dozen sessions
    drawn independently from RTT classes would carry a binomial mix of them (rtt3dev's three
    classes over 47 sessions: each class's share off by up to a third), stratified they carry
    the fitted mix."""
    dist = model.rtt.propagation or model.rtt.distribution
    if dist is None:
        return np.zeros(n)
    return np.maximum(dist.ppf((rng.permutation(n) + rng.random(n)) / n), 0.0)


def _optional_columns(model, rng, n):
    """The optional columns of ``n`` transfers: ``server_share`` (the part of the path RTT on the
    server's side of the capture point) and ``request`` (bytes) when the model has them."""
    out = {}
    if model.rtt.server_share is not None:
        out["server_share"] = np.full(n, model.rtt.server_share)
    if model.requests is not None:
        out["request"] = np.maximum(0, np.round(model.requests.sample(rng, n))).astype(np.int64)
    return out


def _tcp_keys():
    import dataclasses

    from traceflow.sim.scenario import TcpConfig

    return {f.name for f in dataclasses.fields(TcpConfig)}


def _congestion_controls():
    from traceflow.sim.scenario_tcp import CONGESTION

    return set(CONGESTION)


def unknown_congestion_control(hosts: Hosts | None):
    """A warning when the model found a congestion control this simulator does not know (the
    replay keeps its profile's), else None."""
    cc = None if hosts is None else hosts.congestion_control
    if cc is None or cc in _congestion_controls():
        return None
    return (f"the capture's senders run {cc}, which this simulator does not know: the replay "
            "keeps its profile's congestion control")


def host_settings(hosts: Hosts | None):
    """Scenario keys (``simulation.*``, ``tcp.*``) for the inferred end-host parameters.

    Segments carry the measured payload (``simulation.mss``) under the measured header
    (``simulation.tcp_header``: IP + TCP with the options seen, e.g. 52 bytes with timestamps), so
    packets have their measured wire size. SACK in the handshakes selects the ``linux`` TCP profile
    (SACK, RACK-TLP, PRR, Linux's RTO and delayed ACKs); the RTO floor, initial RTO, initial and
    receiver windows, delayed ACKs, SACK and timestamps are set as seen, and the congestion
    control the capture shows (``hosts.congestion_control``) when the simulator knows it (none
    found: the profile's)."""
    if hosts is None:
        return {}
    keys = _tcp_keys()
    sim, tcp = {}, {}

    def put(value, *names):
        # the first scenario key this simulator knows (profile keys first, classic ones after)
        name = next((n for n in names if n in keys), None)
        if name is not None and value is not None:
            tcp[name] = value

    if hosts.segment_size:
        sim["mss"] = int(hosts.segment_size)
        sim["tcp_header"] = int(hosts.header_bytes or 40)
    if hosts.sack:
        put("linux", "profile")
    put(hosts.sack, "sack")
    put(hosts.timestamps, "timestamps")
    if hosts.initial_window:
        put(float(hosts.initial_window), "init_cwnd")
    if hosts.receiver_window and hosts.segment_size:
        put(max(1, int(hosts.receiver_window // hosts.segment_size)), "rwnd")
    if hosts.min_rto_s:
        put(float(hosts.min_rto_s), "rto_min", "min_rto")
    if hosts.initial_rto_s:
        put(float(hosts.initial_rto_s), "rto_init", "init_rto")
    if hosts.delayed_ack is False or (hosts.delayed_ack and not tcp.get("profile")):
        # the linux profile's own delayed ACKs (quick-ACK start, delack timer) stay when the
        # trace shows delayed ACKs; plain every-second-segment ACKs otherwise
        put(bool(hosts.delayed_ack), "delayed_ack")
    put(hosts.request_delay_s, "request_delay")
    put(hosts.response_delay_s, "response_delay")
    put(hosts.close_delay_s, "close_delay")
    if hosts.congestion_control in _congestion_controls():
        put(hosts.congestion_control, "cc")
    out = {}
    if sim:
        out["simulation"] = sim
    if tcp:
        out["tcp"] = tcp
    return out


def network_settings(network):
    """Scenario keys (``topology.bottleneck.*``) of the network a model inferred
    (:class:`~traceflow.models.model.Network`): its service rate (IP bytes, no link-layer
    overhead), DropTail buffer in bytes, token-bucket burst and reverse path."""
    if network is None:
        return {}
    bneck = {"rate": float(network.rate_bps), "burst": int(network.burst_bytes),
             "rate_rev": float(network.reverse_rate_bps) if network.reverse_rate_bps else "line",
             "queue": {"kind": "droptail", "limit": 0, "limit_bytes": int(network.buffer_bytes)}}
    return {"topology": {"bottleneck": bneck}}


#: what a replay prints of the settings it used: scenario key -> (label, model part, the
#: model's quality key, format)
SETTINGS = {
    "topology.bottleneck.rate": ("rate", "network", "rate", "rate"),
    "topology.bottleneck.queue.limit_bytes": ("buffer", "network", "buffer", "bytes"),
    "topology.bottleneck.burst": ("burst", "network", "burst", "bytes"),
    "topology.bottleneck.rate_rev": ("reverse path", "network", "reverse", "rate"),
    "tcp.cc": ("congestion control", "hosts", "congestion_control", "text"),
    "tcp.init_cwnd": ("initial window", "hosts", "initial_window", "segments"),
    "simulation.mss": ("segment", "hosts", "segment_size", "bytes"),
    "tcp.min_rto": ("min RTO", "hosts", "min_rto_s", "seconds"),
    "tcp.init_rto": ("initial RTO", "hosts", "initial_rto_s", "seconds"),
}


def used_settings(raw, model_keys, given_keys, model):
    """What a replay used, per :data:`SETTINGS` key, of the final scenario ``raw`` (TCP keys
    as the simulator resolves them, profile defaults included): ``{"key", "label", "value",
    "format", "source", "quality"}``. ``source``: ``scenario`` (the scenario file or --set named
    it), ``model`` (fitted; ``quality`` the model's flag) or ``default`` (the simulator's)."""
    from traceflow.sim import load_scenario
    from traceflow.values import get_dotted

    tcp = load_scenario(raw).tcp
    rows = []
    for key, (label, part, qkey, fmt) in SETTINGS.items():
        section, _, name = key.partition(".")
        value = (getattr(tcp, name, None) if section == "tcp" else get_dotted(raw, key))
        if value is None:
            continue
        quality = None
        if key in given_keys:
            source = "scenario"
        elif key in model_keys:
            source = "model"
            holder = getattr(model, part, None) if model is not None else None
            quality = (getattr(holder, "quality", None) or {}).get(qkey, "ok")
        else:
            source = "default"
        rows.append({"key": key, "label": label, "value": value, "format": fmt,
                     "source": source, "quality": quality})
    return rows


def _keys(tree, prefix=""):
    """The dotted keys of the leaves of a nested dict."""
    out = set()
    for k, v in tree.items():
        name = f"{prefix}{k}"
        out |= _keys(v, name + ".") if isinstance(v, dict) else {name}
    return out


def read_scenario(path):
    """The raw dict of a replay scenario TOML file."""
    return read_toml(path)


def build_scenario(*, hosts=None, capacity_bps=None, duration_s, scenario=None, name="replay",
                   network=None):
    """The raw scenario dict of a replay: defaults < fitted hosts < fitted ``network``
    (:func:`network_settings`) < ``scenario`` (dict or TOML path; a queue it names replaces the
    fitted one whole). The trace group is appended; its index is ``len(raw["traffic"]) - 1``."""
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
    merged = merge(merge(merge(defaults, host_settings(hosts)), network_settings(network)), raw,
                   replace=("queue",))
    if merged["topology"].get("kind", "dumbbell") != "dumbbell":
        raise ScenarioError("topology.kind: replays use the dumbbell topology")
    merged["topology"]["bottleneck"]["pcap"] = True
    merged.setdefault("traffic", [])
    merged["traffic"] = list(merged["traffic"]) + [{"kind": "trace", "src": "l*", "dst": "r*",
                                                    "rtt_measured": True}]
    return merged


def load_source(path):
    """``("model", Model)`` for a model JSON, ``("flows", DataFrame)`` for a flows table,
    ``("packets", DataFrame)`` for a capture or a packets table."""
    from traceflow.flows import input_kind, scan_packets

    path = Path(path)
    if not path.exists():
        raise InputFormatError("no such file", path=path)
    with open(path, "rb") as f:
        head = f.read(64).lstrip()
    if head.startswith(b"{"):
        return "model", Model.load(path)
    if input_kind(path) == "flows":
        return "flows", pl.read_parquet(path)
    return "packets", scan_packets(path).collect()


def replay(source, out_dir, *, scenario=None, overrides=(), model=None, duration_s=None, seed=None,
           normalize=True, rtt="path", progress=None):
    """Replay ``source`` through the simulator and write the run directory ``out_dir``.

    Parameters
    ----------
    source : str, pathlib.Path, Model, polars.DataFrame or pyarrow.Table
        A model JSON path, a :class:`Model`, a flows Parquet path or flows frame, a capture or
        packets Parquet path.
    out_dir : str or pathlib.Path
        The run directory to write.
    scenario : str, pathlib.Path or dict, optional
        A scenario file (TOML) or dict whose settings take precedence over the model's.
    overrides : sequence of str, default ()
        ``KEY=VALUE`` scenario overrides (as ``--set``).
    model : Model, str or pathlib.Path, optional
        Supplies hosts and capacity in trace-driven mode (and, for a capture, the capacity of the
        packet-pair test of :func:`traceflow.flows.handshake_queue.synack_queued`).
    duration_s : float, optional
        Length of the replay (s); default the model's span, or the trace's.
    seed : int, optional
        Drives the sampling and the run; default the scenario's.
    normalize : bool, default True
        Model mode: scale the sampled sizes until the replay carries the fitted mean rate.
    rtt : {"path", "handshake"}, default "path"
        The per-flow RTTs of a trace replay (:data:`RTT_MODES`).
    progress : callable, optional
        ``progress(now_s, duration_s)``, called periodically by the simulator.

    Returns
    -------
    traceflow.sim.Result
        The simulator result, also written to ``out_dir`` (its ``summary["replay"]`` says how the
        replay was made).

    Raises
    ------
    ScenarioError
        An unknown ``rtt`` mode, no bottleneck capacity (neither the scenario nor the model
        gives one), or an invalid scenario.
    InputFormatError
        A source path that does not exist or cannot be read, or a model without a size
        distribution.

    Examples
    --------
    >>> from traceflow.replay import replay
    >>> result = replay("model.json", "run/", duration_s=60, seed=1)
    >>> result.summary["throughput_bps"]
    """
    from traceflow.sim import run

    if isinstance(source, (str, Path)):
        mode, obj = load_source(source)
    elif isinstance(source, Model):
        mode, obj = "model", source
    else:
        mode, obj = "flows", source if isinstance(source, pl.DataFrame) else pl.from_arrow(source)
    if isinstance(model, (str, Path)):
        model = Model.load(model)
    if mode == "packets":
        from traceflow.flows import flows
        from traceflow.flows.handshake_queue import synack_queued

        mode, obj = "flows", synack_queued(obj, flows(obj),
                                           model.link.capacity_bps if model else None)
    if mode == "model":
        model = obj
        table = sample_flows(model, duration_s=duration_s, seed=seed or 0, normalize=normalize)
        span = float(duration_s or model.span.duration_s)
    else:
        table = trace_table(obj, rtt=rtt)
        if duration_s:
            span = float(duration_s)
        elif model is not None:
            span = model.span.duration_s
        else:
            ends = obj.filter(pl.col("proto") == 6)["end"].cast(pl.Int64)
            span = (int(ends.max()) - int(table["start"].min())) / 1e9
            span = max(span, 1.0)
        table = table.filter(pl.col("start") - pl.col("start").min() < int(span * 1e9))
    hosts = model.hosts if model is not None else None
    cap = model.link.capacity_bps if model is not None else None
    network = model.network if model is not None else None
    given = scenario if isinstance(scenario, dict) else (read_scenario(scenario) if scenario else {})
    raw = build_scenario(hosts=hosts, capacity_bps=cap, duration_s=span, scenario=given,
                         network=network)
    raw = apply_overrides(raw, overrides)
    settings = used_settings(raw, _keys(merge(host_settings(hosts), network_settings(network))),
                             _keys(given) | {o.split("=", 1)[0].strip() for o in overrides},
                             model)
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
        "sessions": (None if mode != "model" or model.sessions is None
                     else {"sessions": model.sessions.sessions,
                           "think_mean_s": model.sessions.think_mean_s}),
        "offered_bytes": int(table["size"].sum()),
        "normalized": bool(iterate),
        "normalize_rounds": rounds,
        "target_throughput_bps": model.link.mean_rate_bps if iterate else None,
        "rtt": rtt if mode != "model" else "model",
        "hosts": None if hosts is None else {
            "segment_size": hosts.segment_size, "header_bytes": hosts.header_bytes,
            "initial_window": hosts.initial_window,
            "initial_window_observable": hosts.initial_window_observable,
            "receiver_window": hosts.receiver_window, "min_rto_s": hosts.min_rto_s,
            "initial_rto_s": hosts.initial_rto_s, "delayed_ack": hosts.delayed_ack,
            "sack": hosts.sack, "timestamps": hosts.timestamps},
        "host_settings": host_settings(hosts),
        "settings": settings,
        "pcap": BOTTLENECK_PCAP,
    }
    warning = spurious_timeouts(result.summary)
    result.summary["replay"]["warnings"] = [warning] if warning else []
    unknown_cc = unknown_congestion_control(hosts)
    if unknown_cc:
        result.summary["replay"]["warnings"].append(unknown_cc)
        warn(unknown_cc, path=out_dir)
    result.write(out_dir)
    if warning:
        warn(warning, path=out_dir)
    return result


def spurious_timeouts(summary):
    """A warning when the run's senders timed out although the bottleneck lost nothing: the
    retransmission timer fired before an ACK could come back, so the replayed RTTs (queueing on a
    bottleneck slower than the trace's) or the minimum RTO do not fit the traffic; most often the
    capacity estimate is too low (``traceflow fit`` says when it is a guess; give --capacity)."""
    timeouts, loss = summary.get("timeouts") or 0, summary.get("loss_rate")
    if timeouts and not loss:
        return (f"{timeouts} retransmission timeouts with no loss at the bottleneck: timers fired "
                f"before ACKs returned (bottleneck {summary.get('bottleneck_rate_bps', 0) / 1e6:.3g} "
                "Mbit/s); check the capacity (--set topology.bottleneck.rate=RATE or fit "
                "--capacity) and the minimum RTO")
    return None

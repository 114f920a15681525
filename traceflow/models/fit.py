"""Fit a replayable traffic model (:class:`traceflow.models.model.Model`) to one or more captures.

``fit(inputs)`` reads the packets of every input (captures or packets Parquet; flows of different
inputs are never merged) once, batch by batch, keeping only what the fit needs of them
(:class:`traceflow.models.fitstream.PacketPass`: the flow table, the link series, the SYN/ACK
gaps and a few values per connection), so its memory does not grow with the capture's length
beyond the flow table; then it fits:

- the capture span and totals;
- the link: data-direction bytes per 10 ms, capacity estimate (:func:`estimate_capacity`), mean
  rate and utilization;
- the flow arrival process: rate of connection starts and the best inter-arrival fit among
  exponential, Weibull and lognormal (by KS distance);
- flow size (bytes of the transfer) and lifetime (s) distributions: empirical body quantiles plus a
  Pareto tail (MLE, xmin by minimum KS, :func:`traceflow.stats.tails.fit_pareto`);
- short/long shares of flows and bytes, long-lived = at least 50 packets (the lifetime paper's
  threshold, Wu & Nikolaidis sec. 3);
- RTT distribution and classes of the transfers' paths, as ``rtt`` and ``report`` show them
  (:func:`traceflow.flows.rtt.rtt_column`: the minimum path RTT, or the handshake RTT where fewer
  connections have one, lowered to its host pair's minimum; Gaussian mixture on log RTT, number
  of classes by BIC), and the distribution of the transfers' path propagation
  RTTs (:func:`path_rtt`: the minimum RTT of each host pair) that model-mode replays use;
- request sizes (client → server bytes of each download, when most transfers are downloads);
- closed-loop client sessions (:mod:`traceflow.models.sessions`: number of sessions and think
  time), when they describe the arrivals better than an open process;
- end-host parameters (:mod:`traceflow.flows.hosts`), optionally from another capture of the same traffic
  taken nearer the senders (``hosts_from``);
- Hurst estimates (:mod:`traceflow.stats.hurst`), dispersion curve (:mod:`traceflow.stats.dispersion`) and the
  conditional-level table (:mod:`traceflow.stats.levels`) of the link series — through the same
  functions :mod:`traceflow.compare` applies.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl

from traceflow import compare as cmp
from traceflow.errors import InputFormatError
from traceflow.models.network import infer_network, service_rate
from traceflow.models.model import (Arrivals, Dispersion, InterArrival, Levels, Link, Model, RTTClass,
                             RTTModel, Shares, Span, Tail, distribution_from_sample)

LEVEL_SCALE_S = 2.0   # the TCP-MT paper's block length for Fig. 1 style tables
MIN_TAIL = 50
LONG_LIVED_PACKETS = 50  # Wu & Nikolaidis: flows of >= 50 packets are long-lived
#: the flow columns the fit reads (the rest are dropped as flows are handed out; ports: the
#: order of flows out of time order), but ``duration``, derived after the pass
FLOW_COLUMNS = ["proto", "client_addr", "client_port", "server_addr", "server_port",
                "start", "end", "packets", "payload_bytes_c2s", "payload_bytes_s2c",
                "app_bytes_c2s", "app_bytes_s2c", "handshake", "close", "rtt_syn", "rtt_ack",
                "rtt_handshake", "rtt_min", "retransmissions", "syn_count", "synack_count"]
#: what synack_queued, path_rtt and transfers read of the flows (the table they pass on)
_TRANSFER_INPUT = ["proto", "client_addr", "server_addr", "start", "duration", "packets",
                   "app_bytes_c2s", "app_bytes_s2c", "handshake", "close", "rtt_syn", "rtt_ack",
                   "rtt_handshake"]


def _sources(inputs):
    """The inputs as :class:`~traceflow.models.fitstream.PacketPass` reads them: paths of
    captures / packets Parquet (a flows table is refused), or packets frames and Arrow tables."""
    from traceflow.flows import input_kind

    if isinstance(inputs, (str, Path, pl.DataFrame)):
        inputs = [inputs]
    if not inputs:
        raise InputFormatError("no input files")
    for path in inputs:
        if isinstance(path, (str, Path)) and input_kind(path) == "flows":
            raise InputFormatError("fit needs packets (a capture or packets table), not a flows table",
                                   path=path)
    return list(inputs)


def estimate_capacity(ts_ns, sizes, *, min_packets=100, bin_ns=cmp.BIN_NS, origin=None):
    """Line-rate estimate (bit/s), peak rates at 10 ms / 100 ms / 1 s, and the method (which bin
    the estimate is the peak of), from the packets at ``ts_ns`` (ns) of ``sizes`` (bytes) in
    bins counted from ``origin`` (ns; default: the first packet), from the one holding the first
    packet on (``fit`` counts them from the capture's first packet, the link series' bins).

    The peak of the bytes series is a lower bound on the capacity that reaches it whenever the link
    was saturated for a whole bin; at too fine a bin it is inflated by packet quantization. The
    estimate is the peak at the finest power-of-two multiple of ``bin_ns`` whose peak bin holds at
    least ``min_packets`` average-size packets. :func:`traceflow.models.checks.capacity_warnings`
    says when the peaks disagree so much that no bin saw the link saturated."""
    ts_ns = np.asarray(ts_ns, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.float64)
    if ts_ns.size == 0:
        return math.nan, {}, "no data packets"
    lo, hi = int(ts_ns.min()), int(ts_ns.max()) + 1
    if origin is not None:
        lo -= (lo - origin) % bin_ns
    return capacity_of_series(cmp._bin(ts_ns, sizes, lo, hi, bin_ns), float(sizes.mean()),
                              min_packets=min_packets, bin_ns=bin_ns)


def capacity_of_series(base, mean_pkt, *, min_packets=100, bin_ns=cmp.BIN_NS):
    """:func:`estimate_capacity` of data bytes already binned at ``bin_ns``, from the bin holding
    the first data packet on (``base``), whose packets average ``mean_pkt`` bytes."""
    from traceflow.stats.series import block_sums, format_duration

    peaks = {}
    for label, k in (("10ms", 1), ("100ms", 10), ("1s", 100)):
        if base.size >= k:
            b = block_sums(base, k)
            peaks[label] = float(8 * b.max() / (k * bin_ns / 1e9))
    k = 1
    while True:
        if base.size // k < 2:
            k = max(1, k // 2)
            break
        b = block_sums(base, k)
        if b.max() >= min_packets * mean_pkt:
            break
        k *= 2
    b = block_sums(base, k) if base.size >= k else base
    method = (f"peak rate in {format_duration(k * bin_ns)} bins (the finest whose peak bin holds "
              f"{min_packets} packets)")
    return float(8 * b.max() / (k * bin_ns / 1e9)), peaks, method


def fit_interarrival(gaps_s):
    """Best of exponential / Weibull / lognormal (location 0) for inter-arrival times by KS."""
    from scipy import stats

    x = np.asarray(gaps_s, dtype=float)
    x = x[np.isfinite(x) & (x > 0)]
    if x.size < 10:
        return None
    fits = {}
    # the KS statistic does not depend on the order: kstest sorts its sample (four times), which
    # is quick on a sorted one; only the statistic is read, so its p-value is the asymptotic one
    # (the exact one took 0.35 s for the Weibull of 417 k gaps, the statistic is the same)
    xs = np.sort(x)

    def ks(dist, args):
        return stats.kstest(xs, dist, args, method="asymp").statistic

    loc, scale = stats.expon.fit(x, floc=0)
    fits["exponential"] = ({"scale": scale}, ks("expon", (0, scale)))
    # the Weibull MLE as the Gumbel (minimum) MLE of log x, which scipy solves by root finding:
    # the same estimate as weibull_min.fit(x, floc=0) (the Jacobian does not depend on the
    # parameters) without its Nelder-Mead search (12 s for 1.7 M gaps, a 64x capture); gaps
    # (nearly) all equal put the root out of floating-point reach, and the search is used
    with np.errstate(all="ignore"):
        loc, inv_shape = stats.gumbel_l.fit(np.log(x))
        c, scale = 1.0 / inv_shape, np.exp(loc)
    if not (np.isfinite(c) and c > 0 and np.isfinite(scale) and scale > 0):
        c, _, scale = stats.weibull_min.fit(x, floc=0)
    fits["weibull"] = ({"shape": c, "scale": scale},
                       ks("weibull_min", (c, 0, scale)))
    s, _, scale = stats.lognorm.fit(x, floc=0)
    fits["lognormal"] = ({"sigma": s, "scale": scale}, ks("lognorm", (s, 0, scale)))
    best = min(fits, key=lambda k: fits[k][1])
    return InterArrival(dist=best, params={k: float(v) for k, v in fits[best][0].items()},
                        ks=float(fits[best][1]), mean_s=float(x.mean()),
                        cv=float(x.std() / x.mean()),
                        candidates={k: float(v[1]) for k, v in fits.items()})


def sample_interarrival(ia: InterArrival, rng, n):
    """``n`` inter-arrival times (s) from a fitted :class:`InterArrival`."""
    p = ia.params
    if ia.dist == "exponential":
        return rng.exponential(p["scale"], n)
    if ia.dist == "weibull":
        return p["scale"] * rng.weibull(p["shape"], n)
    if ia.dist == "lognormal":
        return rng.lognormal(math.log(p["scale"]), p["sigma"], n)
    raise InputFormatError(f"unknown inter-arrival distribution {ia.dist!r} in model")


def tail_of(x, *, min_tail=MIN_TAIL):
    """Pareto :class:`Tail` of sample ``x`` (None when too few positive values)."""
    from traceflow.errors import TraceflowError
    from traceflow.stats.tails import fit_pareto

    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x) & (x > 0)]
    if x.size < 2 * min_tail:
        return None
    try:
        f = fit_pareto(x, min_tail=min_tail)
    except TraceflowError:
        return None
    return Tail(alpha=float(f.alpha), xmin=float(f.xmin), n_tail=int(f.n_tail), ks=float(f.ks))


def rtt_classes(rtt_s, *, max_classes=4, seed=0):
    """RTT classes (:func:`traceflow.flows.rtt.fit_rtt_classes`: Gaussian mixture on log10 RTT, number
    of classes by BIC, cut where neighbouring components cross): per class its median RTT, its
    range (smallest and largest member) and its weight (fraction of flows)."""
    from traceflow.flows.rtt import classify, fit_rtt_classes

    x = np.asarray(rtt_s, dtype=float)
    x = x[np.isfinite(x) & (x > 0)]
    if x.size < 10:
        return []
    fitted = fit_rtt_classes(x, max_classes=max_classes, random_state=seed)
    label = classify(x, fitted.boundaries)
    out = []
    for k in range(len(fitted.boundaries) + 1):
        members = x[label == k]
        if members.size:
            out.append(RTTClass(center_s=float(np.median(members)), lo_s=float(members.min()),
                                hi_s=float(members.max()), weight=float(members.size / x.size)))
    return out


def _valid(col):
    x = pl.col(col).cast(pl.Float64)
    return pl.when(x.is_finite() & (x > 0)).then(x)


def _of_pair(stats, key):
    """Expressions giving each flow the columns of ``stats`` (one row per value of ``key``) of
    its ``key`` (null where ``stats`` has no row): looked up, where a join would copy every
    column of the flows."""
    return [pl.col(key).replace_strict(stats[key], stats[c], default=None).alias(c)
            for c in stats.columns if c != key]


def path_rtt(flows):
    """Per flow: the RTT of its path without queueing (s), from the handshakes of its host pair
    (client, server addresses) over the whole trace. Returns the flows with ``path_rtt``.

    A handshake's two legs (``rtt_syn``: capture → server → capture, ``rtt_ack``: capture → client
    → capture) differ: the leg that crosses the bottleneck queue spreads over the queueing delays,
    the other only over the hosts' processing jitter. Per pair, the *loaded* leg is the one whose
    90th percentile lies further above its minimum, and a handshake met no queue when its loaded
    leg is within the clean leg's jitter (95th percentile minus minimum) of its minimum. Such a
    handshake *is* the path's RTT at that moment and is kept as the flow's path RTT (with its
    processing jitter); a loaded flow gets the unqueued handshake of its pair nearest in time,
    never its own (whose queueing the simulated bottleneck creates again). Without any unqueued
    handshake: the pair's minimum, else the minimum over all pairs (null when none). Where the
    flows carry ``synack_queued`` (:func:`traceflow.flows.handshake_queue.synack_queued`, the
    packet-pair test) and the SYN/ACK's leg is the loaded one, a handshake whose SYN/ACK met an
    idle bottleneck is unqueued too unless its excess is an outlier among those of its pair
    (Tukey's fence): host and relay jitter larger than the clean leg's stays in the path RTT it
    belongs to, a transient delay of one handshake does not.

    Also ``server_share``: the part of the path RTT on the server's side of the capture point,
    min(``rtt_syn``) / (min(``rtt_syn``) + min(``rtt_ack``)) over the pair's handshakes (0.5 when a
    leg was never measured). A capture next to the clients sees ~1, next to the servers ~0; the
    replay puts the path delay on the same sides of its bottleneck capture (sim trace groups'
    ``server_share``), or request-to-response times seen at the capture point would differ by
    the misplaced part of the RTT."""
    from traceflow.flows.rtt import pair_key
    from traceflow.flows.scatter import scattered

    # The host pair as one integer (the addresses' category codes, nulls kept: 16x capture: 4.2 s
    # with windows over the strings). Its statistics come from group_by aggregations, one row
    # per pair, looked up per flow (_of_pair): windows over the pair took 0.36 GB above the
    # input on a 64x capture, these 0.22 GB. Computed on the columns it reads only, the two
    # results put beside the flows' own columns.
    pair = "_pair"
    syn, ack, hs = (pl.col(c) for c in ("_syn", "_ack", "_hs"))
    fl = flows.select(_pair=pair_key(),
                      _t=pl.col("start").cast(pl.Int64), _syn=_valid("rtt_syn"),
                      _ack=_valid("rtt_ack"), _hs=_valid("rtt_handshake"),
                      *[c for c in ("synack_queued",) if c in flows.columns]
                      ).with_row_index("_row")
    stats = fl.group_by(pair).agg(
        s90=syn.quantile(0.9), s95=syn.quantile(0.95), smin=syn.min(),
        a90=ack.quantile(0.9), a95=ack.quantile(0.95), amin=ack.min(), _hs_min=hs.min())
    s90, s95, smin, a90, a95, amin = (pl.col(c) for c in ("s90", "s95", "smin", "a90", "a95",
                                                          "amin"))
    syn_loaded = (s90 - smin).fill_null(0) >= (a90 - amin).fill_null(0)
    stats = stats.select(pair, "_hs_min", _syn_loaded=syn_loaded,
                         _jitter=pl.when(syn_loaded).then(a95 - amin).otherwise(s95 - smin),
                         _loaded_min=pl.when(syn_loaded).then(smin).otherwise(amin),
                         _share=(smin / (smin + amin)).fill_null(0.5))
    fl = fl.with_columns(_of_pair(stats, pair))
    del stats
    syn_loaded = pl.col("_syn_loaded")
    fl = fl.with_columns(_excess=pl.when(syn_loaded).then(syn).otherwise(ack)
                         - pl.col("_loaded_min"))
    excess = pl.col("_excess")
    unqueued = excess <= pl.col("_jitter").fill_null(0)
    if "synack_queued" in fl.columns:
        # a SYN/ACK that met an idle bottleneck: its excess is the path's own jitter unless it
        # is an outlier among those (Tukey's fence), a host's transient delay (SYN processing)
        # that the connection's later packets did not see
        idle = syn_loaded & ~pl.col("synack_queued")
        fence = (fl.lazy().filter(idle).group_by(pair)
                 .agg(_q1=excess.quantile(0.25), _q3=excess.quantile(0.75)).collect())
        fl = fl.with_columns(_of_pair(fence, pair))
        del fence
        q1, q3 = pl.col("_q1"), pl.col("_q3")
        unqueued = unqueued | (idle & (excess <= q3 + 1.5 * (q3 - q1))).fill_null(False)
    fl = fl.select("_row", pair, "_t", "_hs", "_hs_min", "_share",
                   _free=unqueued & hs.is_not_null())
    # stable sorts: equally near unqueued handshakes resolve the same way on every run
    free = (fl.filter(pl.col("_free")).select(pair, "_t", _near=hs)
            .sort("_t", maintain_order=True))
    near = (fl.filter(~pl.col("_free")).select("_row", pair, "_t").sort("_t", maintain_order=True)
            .join_asof(free, on="_t", by=pair, strategy="nearest", check_sortedness=False)
            .select("_row", "_near"))
    return flows.with_columns(
        fl.with_columns(scattered("_near", near["_row"], near["_near"], fl.height))
        .select(path_rtt=pl.when(pl.col("_free")).then(hs).otherwise(pl.col("_near"))
                .fill_null(pl.col("_hs_min")).fill_null(hs.min()),
                server_share="_share"))


def fit(inputs, *, hosts_from=None, capacity_bps=None, seed=0, filter=None, proto=None,
        log=None, workers=1):
    """Fit a :class:`~traceflow.models.model.Model` to captures or packets tables.

    Parameters
    ----------
    inputs : sequence of str, pathlib.Path or polars.DataFrame
        Paths of captures / packets tables, or packets frames.
    hosts_from : sequence of str or pathlib.Path, optional
        Inputs whose packets supply the end-host inference instead (a sender-side capture of the
        same traffic).
    capacity_bps : float, optional
        Overrides the capacity estimate (bit/s).
    seed : int, default 0
        Seed of the RTT class clustering.
    filter, proto : str, optional
        Select the packets of every input (:mod:`traceflow.selection`).
    log : callable, optional
        ``log(message)`` hears each stage as it starts.
    workers : int, default 1
        Above 1, the pass over the packets runs in that many processes, each keeping the
        connections of one hash partition (inputs must be paths; the model is the same).

    Returns
    -------
    Model
        The fitted model (``model.save(path)`` writes model.json).

    Raises
    ------
    TraceflowError
        A model that cannot be filled (too few complete transfers, no data) is refused
        (:func:`traceflow.models.checks.require_replayable`).
    InputFormatError
        The inputs hold no packets.

    Examples
    --------
    >>> from traceflow.models.fit import fit
    >>> model = fit(["trace.pcap.gz"])
    >>> model.save("model.json")
    """
    from traceflow.flows.handshake_queue import synack_queued
    from traceflow.flows.rtt import RttRows
    from traceflow.flows.table import DURATION
    from traceflow.models.checks import require_replayable
    from traceflow.models.fitstream import stream_inputs
    from traceflow.models.sessions import fit_sessions
    from traceflow.scale.memory import reserve_blas_buffer, trim_heap

    reserve_blas_buffer(mixtures=True)   # the RTT classes' k-means would hang, not fail
    # The later stages' modules (scipy.stats, ~1 s of imports) are imported when needed, after
    # the pass: imported on a thread during it, they held the GIL the pass's threads need and
    # their ~65 MB added to the end of the pass (dev10m 1x: 333-337 MB, 4.5-5.0 s, against
    # 267-269 MB, 4.2-4.5 s now; 16x: 434-439 MB against 420-434 MB, no slower)
    log = log or (lambda message: None)
    inputs = _sources(inputs)
    names = [Path(p).name if isinstance(p, (str, Path)) else "<table>" for p in inputs]
    log(f"one pass over {len(inputs)} input{'s' * (len(inputs) != 1)}: flows, link series, "
        f"end hosts" + (f" ({workers} workers)" if workers > 1 else ""))
    state, tables = stream_inputs(inputs, workers=workers, hosts=hosts_from is None,
                                  filter=filter, proto=proto, columns=FLOW_COLUMNS)
    fl = pl.concat(tables, how="diagonal_relaxed").with_columns(duration=DURATION)
    del tables
    if state.start is None:
        raise InputFormatError("inputs hold no packets", path=names[0])
    start, end = state.span()
    duration = (end - start) / 1e9
    span = Span(start_ns=start, end_ns=end, duration_s=duration, packets=state.packets,
                bytes=state.bytes, inputs=names)

    log("link capacity and load")
    est, peaks, method = (math.nan, {}, "no data packets") if state.data.count == 0 else \
        capacity_of_series(state.data.busy(), state.data.total / state.data.count)
    # the bottleneck's service rate from its back-to-back spacing where the capture shows it
    rate = service_rate(state.spacing, est, peaks)
    if capacity_bps:
        rate = (float(capacity_bps), "given (--capacity)", "ok")
    elif rate[2] == "ok":
        est, method = rate[0], f"back-to-back spacing: {rate[1]}"
    cap = float(capacity_bps) if capacity_bps else est
    mean_rate = 8 * state.data.total / duration if duration > 0 else math.nan
    link = Link(capacity_bps=cap, mean_rate_bps=mean_rate,
                utilization=mean_rate / cap if cap and cap > 0 else math.nan,
                method="given (--capacity)" if capacity_bps else method, peak_rate_bps=peaks)
    data_packets = state.data.count
    mean_packet = state.data.total / data_packets if data_packets else math.nan
    series = state.data.series(end)
    state.data = None       # its bins, now copied to series (O(duration): 16x alpha1.35, 11.5 MB)

    # What the fits read of the flow table, taken first and the table then let go: the fits'
    # modules (scipy.stats, scikit-learn: +80 MB) and working arrays add to the arrays below,
    # not to the table (O(flows); 16x capture: 40 MB, with what Polars made of it on the way)
    log("flow table: arrivals, sessions, transfers, RTTs")
    # Arrivals: every TCP connection whose SYN was seen (handshake complete or partial).
    tcp = (pl.col("proto") == 6) & (pl.col("handshake") != "none")
    starts = np.sort(fl.filter(tcp)["start"].cast(pl.Int64).to_numpy()) / 1e9
    sessions = fit_sessions(fl, start, end, state.exchanges_per_connection())
    tr = cmp.transfers(fl.select(_TRANSFER_INPUT))
    sizes, lifetimes = tr["size"].to_numpy(), tr["fct"].to_numpy()
    packets, request = tr["packets"].to_numpy(), tr["request"].to_numpy()
    del tr
    # the transfers' RTT: each connection's path RTT as rtt and report show it (the chosen
    # column's minimum over the host pair); path_rtt keeps the handshakes it needs
    # (one RttRows for both: the choice does not depend on the path unit; 64x capture: 80 MB)
    rows = RttRows.of(fl, per="pair")
    rtt_choice = rows.choice()
    pair_rtt = rows.connection_rtts(rtt_choice.column)
    del rows
    trim_heap()
    tr = cmp.transfers(path_rtt(synack_queued(None, fl.select(_TRANSFER_INPUT), cap,
                                              gaps=state.synacks.table()))
                       .with_columns(rtt_handshake=pair_rtt))
    rtt, propagation = (tr[c].drop_nulls().to_numpy() for c in ("rtt", "path_rtt"))
    server_share = tr["server_share"].median()
    log("network: bottleneck buffer, burst, side")
    network = infer_network(state.spacing, fl, rate, mean_packet=mean_packet,
                            data_packets=data_packets,
                            retransmissions=int(fl["retransmissions"].fill_null(0).sum()),
                            path_rtt_s=float(np.median(propagation)) if propagation.size else None,
                            min_rtt_s=float(propagation.min()) if propagation.size else None)
    state.spacing = None
    del fl, tr, pair_rtt
    state.synacks = None
    trim_heap()

    log("end hosts")
    # after the flows: the per-connection facts come back from the pass's spool (64x capture:
    # +150 MB) when the flows' tables are gone, and before the fits' modules are loaded
    if hosts_from is None:
        hosts = state.hosts.result()
    else:
        other, _ = stream_inputs(_sources(hosts_from), workers=workers, flows=False,
                                 filter=filter, proto=proto)
        hosts = other.hosts.result()
        other.spool.close()
    state.spool.close()
    trim_heap()

    log("Hurst, dispersion, conditional levels")
    hurst = cmp.hurst_estimates(series)
    scales, idc = cmp.dispersion_curve(series)
    levels = None
    table = cmp.level_table(series, scale_s=LEVEL_SCALE_S)
    if table is not None:
        from traceflow.stats.levels import conditional_mean

        levels = Levels(scale_s=LEVEL_SCALE_S, h=cmp.LEVELS_H, mapping="quantile",
                        condprob=table.tolist(),
                        expected=[None if not np.isfinite(v) else float(v) for v in conditional_mean(table)])
    # before the fits: the spectral estimators' FFT (three series' sizes) then adds to the
    # arrays the fits read alone, not to scikit-learn's mixtures too, and the series (O(the
    # capture's duration)) is gone when they run
    del series, table
    trim_heap()

    log("fits: arrivals, sizes, lifetimes, RTT classes")
    arrivals = Arrivals(n_flows=int(starts.size),
                        rate_per_s=starts.size / duration if duration > 0 else math.nan,
                        interarrival=fit_interarrival(np.diff(starts)))
    del starts
    size_tail = tail_of(sizes)
    sizes_d = distribution_from_sample(sizes, "bytes", size_tail)
    life_d = distribution_from_sample(lifetimes, "s", tail_of(lifetimes))
    shares = None
    if sizes.size:
        long = packets >= LONG_LIVED_PACKETS
        shares = Shares(by="packets", threshold=float(LONG_LIVED_PACKETS),
                        short_flows=float(1 - long.mean()),
                        long_flows=float(long.mean()),
                        short_bytes=float(sizes[~long].sum() / sizes.sum()),
                        long_bytes=float(sizes[long].sum() / sizes.sum()))
    # requests of downloads (the transfer flows server -> client); a trace of mostly uploads has
    # none, and its model replays one-way transfers
    down = request[request < sizes]
    requests = (distribution_from_sample(down, "bytes") if 2 * down.size > sizes.size else None)
    del sizes, lifetimes, packets, request, down
    rtt_model = RTTModel(column=rtt_choice.column, distribution=distribution_from_sample(rtt, "s"),
                         classes=rtt_classes(rtt, seed=seed),
                         propagation=distribution_from_sample(propagation, "s"),
                         server_share=server_share)

    model = Model(span=span, link=link, arrivals=arrivals, sizes=sizes_d, lifetimes=life_d,
                  shares=shares, rtt=rtt_model, hosts=hosts, hurst=hurst, requests=requests,
                  sessions=sessions, dispersion=Dispersion(scales_s=scales, idc=idc),
                  levels=levels, series_bin_s=cmp.BIN_NS / 1e9, network=network)
    require_replayable(model, inputs[0] if len(inputs) == 1 and isinstance(inputs[0], (str, Path))
                       else None)
    return model

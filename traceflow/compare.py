"""Predicted against measured: the same analytics on both sides, error measures, pass/fail.

A *side* is a capture (pcap/pcapng, compressed or not), a packets Parquet table, a run directory
written by ``traceflow simulate`` / ``traceflow replay`` (``summary.json`` + the bottleneck pcap), or
a directory of analytics outputs (``flows.parquet`` and ``series.parquet`` as written by
``traceflow flows`` / ``traceflow series``). Every side is reduced to the same :class:`Analytics`:
the link series of the data direction (bytes per 10 ms bin), the flow table and the transfers,
computed by the same code whether the traffic was measured or simulated.

Metrics (name → error measure; default tolerance in :data:`DEFAULT_TOLERANCES`):

``throughput``        data-direction IP bit rate over the span → relative error
``utilization``       throughput / capacity (one capacity for both sides) → relative error
``loss_rate``         fraction of the data direction's packets lost at the bottleneck → relative
                      error. Exact on a run (its queue's drop counter) and on a capture given
                      with the capture upstream of the queue (``before``:
                      :mod:`traceflow.flows.queue_loss`); otherwise an *estimate* (retransmitted /
                      data segments seen after the queue, which misses retransmissions whose
                      original was dropped before it), labelled so in ``source``
``retransmission_rate`` retransmitted / data segments (from the flows) → absolute error
``fct``               transfer time from the request to the last data byte
                      (:mod:`traceflow.flows.transfers`) per size bin (:data:`SIZE_BINS`): median, p90
                      and count per bin; the error is the largest relative error of the median
                      over the bins holding at least :data:`MIN_BIN_TRANSFERS` measured
                      transfers, so the tolerance applies to every such bin
``size_ks``           two-sample Kolmogorov–Smirnov distance of transfer sizes (scipy)
``rtt_ks``            KS distance of handshake RTTs (SYN → final ACK)
``hurst_<method>``    Hurst estimate of the 10 ms series (V-T, R/S, wavelet, Whittle) → absolute error
``dispersion``        index of dispersion (bytes) at 10 ms … 100 s → RMS of log10 ratios
``levels``            conditional-level tables (h = 8, quantile map, 1 s blocks) → total-variation
                      distance between the joint level-pair distributions
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from traceflow.errors import InputFormatError, TraceflowError

#: Transfer-size bins [lo, hi) in bytes: short transfers that end in slow start or in one
#: loss-recovery episode apart from the longer ones, up to bulk transfers beyond 1 MB.
SIZE_BINS = ((0, 2000), (2000, 8000), (8000, 16000), (16000, 64000), (64000, 1_000_000),
             (1_000_000, math.inf))
#: bins with fewer measured transfers are reported, not judged (their median is noise)
MIN_BIN_TRANSFERS = 30
#: what a side's transfer times measure: request → last data byte (from packets), or the flow
#: duration SYN → last packet (a flows table without packets)
FCT_REQUEST, FCT_DURATION = "request to last data byte", "flow duration"
BIN_NS = 10_000_000
HURST_METHODS = ("vt", "rs", "wavelet", "whittle")
LEVEL_SCALE_S = 1.0
LEVELS_H = 8

#: metric -> (error measure, default tolerance); a metric passes when its error <= tolerance.
#: the criteria a replay is held to (issue 43, "the criteria of compare": utilization 10 %, loss
#: 25 %, median transfer time per size bin with >= 30 transfers 25 %, handshake-RTT KS 0.1,
#: wavelet H 0.05), and the other metrics' tolerances
DEFAULT_TOLERANCES = {
    "throughput": ("relative", 0.15),
    "utilization": ("relative", 0.10),
    "loss_rate": ("relative", 0.25),
    "retransmission_rate": ("absolute", 0.05),
    "fct": ("relative_median_per_bin", 0.25),
    "size_ks": ("ks", 0.1),
    "rtt_ks": ("ks", 0.1),
    # the wavelet estimator is the reference one (Abry-Veitch, with a confidence interval)
    **{f"hurst_{m}": ("absolute", 0.05 if m == "wavelet" else 0.1) for m in HURST_METHODS},
    "dispersion": ("rms_log10", 0.3),
    "levels": ("total_variation", 0.3),
}


#: Cochran's rule: a conditional-level table is judged with at least this many transitions a cell
MIN_PER_CELL = 5


def size_bin_labels():
    def k(x):
        return f"{x / 1e6:g}M" if x >= 1e6 else f"{x / 1e3:g}k"
    return [f"<{k(hi)}" if lo == 0 else (f">={k(lo)}" if math.isinf(hi) else f"{k(lo)}-{k(hi)}")
            for lo, hi in SIZE_BINS]


@dataclass
class Analytics:
    """What a side reduces to. ``series``: bytes per 10 ms bin (data direction, float64);
    ``sizes``/``fct``/``rtt``: per-transfer size (bytes), transfer time (s; what it measures is
    ``fct_measure``) and handshake RTT (s) of complete TCP transfers; ``run_loss_rate``: the
    bottleneck's drop fraction of a run; ``queue_loss``: the exact loss measured between a
    capture before the queue and this one (:class:`traceflow.flows.queue_loss.QueueLoss`)."""
    source: str
    kind: str
    duration_s: float
    data_bytes: int
    data_segments: int
    retransmissions: int
    series: np.ndarray
    sizes: np.ndarray
    fct: np.ndarray
    rtt: np.ndarray
    capacity_bps: float | None = None
    run_loss_rate: float | None = None
    fct_measure: str = FCT_REQUEST
    queue_loss: object = None
    extra: dict = field(default_factory=dict)

    @property
    def throughput_bps(self):
        return 8.0 * self.data_bytes / self.duration_s if self.duration_s > 0 else math.nan

    @property
    def loss_rate(self):
        if self.run_loss_rate is not None:
            return self.run_loss_rate
        if self.queue_loss is not None:
            return self.queue_loss.rate
        return self.retransmission_rate

    @property
    def loss_source(self):
        if self.run_loss_rate is not None:
            return "drops"
        if self.queue_loss is not None:
            return "before/after"
        return "estimate: retransmissions"

    @property
    def retransmission_rate(self):
        return self.retransmissions / self.data_segments if self.data_segments else math.nan


# ------------------------------------------------------------------------------------ sides

def data_direction(packets, conns=None):
    """Packets sent by the data sender of their TCP connection (plus every non-TCP packet);
    ``conns``: the packets' :func:`traceflow.flows.hosts.connections`, when already at hand."""
    from traceflow.flows.hosts import connections

    df = packets if isinstance(packets, pl.DataFrame) else pl.from_arrow(packets)
    tcp = connections(df) if conns is None else conns
    keep = ["ts", "ip_len", "payload_len"]
    # no TCP packets: no connections, so no "sender" column either
    out = tcp.filter(pl.col("sender")).select(keep) if tcp.height else df.select(keep).head(0)
    other = df.filter(pl.col("proto") != 6).select(keep)
    return pl.concat([out, other]).sort("ts")


def analytics_from_packets(packets, *, source="", kind="packets", capacity_bps=None,
                           start_ns=None, end_ns=None):
    """:class:`Analytics` of a packets table (the same code for measured and simulated traffic).

    ``start_ns``/``end_ns`` restrict the span (a run's configured duration, say). Transfers are
    timed from the request to the last data byte (:func:`traceflow.flows.transfers.transfer_times`)."""
    from traceflow.flows import flows as build_flows
    from traceflow.flows.hosts import connections
    from traceflow.flows.transfers import transfer_times

    df = packets if isinstance(packets, pl.DataFrame) else pl.from_arrow(packets)
    if start_ns is not None or end_ns is not None:
        ts = pl.col("ts").cast(pl.Int64)
        df = df.filter((ts >= (start_ns or 0)) & (ts < (end_ns or np.iinfo(np.int64).max)))
    if df.height == 0:
        raise InputFormatError("no packets to analyse", path=source or None)
    conns = connections(df)
    data = data_direction(df, conns)
    t = df["ts"].cast(pl.Int64)
    lo = int(start_ns) if start_ns is not None else int(t.min())
    hi = int(end_ns) if end_ns is not None else int(t.max()) + 1
    series = _bin(data["ts"].cast(pl.Int64).to_numpy(), data["ip_len"].cast(pl.Int64).to_numpy(), lo, hi)
    a = analytics_from_flows(build_flows(df), series, duration_s=(hi - lo) / 1e9, source=source,
                             kind=kind, capacity_bps=capacity_bps)
    tr = transfer_times(conns=conns)
    a.sizes, a.fct = tr["size"].cast(pl.Float64).to_numpy(), tr["fct"].to_numpy()
    a.rtt, a.fct_measure = tr["rtt"].drop_nulls().to_numpy(), FCT_REQUEST
    return a


def _bin(ts, size, lo, hi, width=BIN_NS):
    n = max(1, -(-(hi - lo) // width))
    idx = np.clip((ts - lo) // width, 0, n - 1)
    return np.bincount(idx, weights=size, minlength=n).astype(np.float64)


def transfers(flows):
    """Complete TCP transfers of a flow table: size (bytes of the larger direction), completion
    time (s, the flow's duration), handshake RTT (s), packets (both directions), request (bytes,
    client → server) and ``path_rtt``, ``server_share`` when the table has them
    (:func:`traceflow.models.fit.path_rtt`);
    flows cut by the capture edges (no SYN or no FIN/RST) excluded."""
    complete = ((pl.col("proto") == 6) & (pl.col("handshake") == "complete")
                & pl.col("close").is_in(["FIN", "RST"]))
    size = pl.max_horizontal("app_bytes_c2s", "app_bytes_s2c")
    # lazily: the filter copies only the columns read (an eager filter copied every column:
    # fit's transfers of a 64x capture peaked 142 MB above their input, now 40 MB)
    return flows.lazy().filter(complete).select(
        size=size.cast(pl.Float64),
        fct=pl.col("duration").dt.total_nanoseconds().cast(pl.Float64) / 1e9,
        rtt=pl.col("rtt_handshake"), packets=pl.col("packets"),
        request=pl.col("app_bytes_c2s").cast(pl.Float64),
        *[c for c in ("path_rtt", "server_share") if c in flows.columns]
    ).filter(pl.col("size") > 0).collect()


def analytics_from_flows(flows, series, *, duration_s, source="", kind="analytics",
                         capacity_bps=None):
    """:class:`Analytics` from a flow table and a bytes-per-10-ms series (1-D array); transfer
    times are flow durations (a flows table has no request times)."""
    tr = transfers(flows)
    c2s = pl.col("app_bytes_c2s") > pl.col("app_bytes_s2c")
    seg = flows.select(
        data=pl.when(c2s).then(pl.col("packets_c2s")).otherwise(pl.col("packets_s2c")).sum(),
        retx=pl.col("retransmissions").sum())
    series = np.asarray(series, dtype=np.float64)
    return Analytics(
        source=source, kind=kind, duration_s=float(duration_s),
        data_bytes=int(series.sum()), data_segments=int(seg["data"][0] or 0),
        retransmissions=int(seg["retx"][0] or 0), series=series,
        sizes=tr["size"].to_numpy(), fct=tr["fct"].to_numpy(),
        rtt=tr["rtt"].drop_nulls().to_numpy(), capacity_bps=capacity_bps,
        fct_measure=FCT_DURATION)


def load_side(path, *, capacity_bps=None, before=None):
    """Reduce one side (capture, packets Parquet, run directory, analytics directory) to
    :class:`Analytics`.

    Parameters
    ----------
    path : str or pathlib.Path
        The side to read.
    capacity_bps : float, optional
        Bottleneck capacity (bit/s) of this side.
    before : str or pathlib.Path, optional
        A capture (or packets table) of the same traffic upstream of the bottleneck queue, for the
        exact loss of a capture side (:mod:`traceflow.flows.queue_loss`).

    Returns
    -------
    Analytics
        The side's transfers, RTTs, link series and loss.

    Raises
    ------
    TraceflowError
        ``path`` does not exist, or ``before`` is given for a directory.
    InputFormatError
        A directory that is neither a run (summary.json) nor analytics outputs, or an unreadable
        file.

    Examples
    --------
    >>> from traceflow.compare import load_side
    >>> side = load_side("trace.pcap.gz")
    """
    path = Path(path)
    if not path.exists():
        raise TraceflowError("no such file or directory", path=path)
    if path.is_dir():
        if before is not None:
            raise TraceflowError("--before applies to a capture or packets table, not a directory",
                                 path=path)
        if (path / "summary.json").exists():
            return _run_side(path, capacity_bps)
        if (path / "flows.parquet").exists() and (path / "series.parquet").exists():
            return _analytics_dir_side(path, capacity_bps)
        raise InputFormatError("directory is neither a run (summary.json) nor analytics outputs "
                               "(flows.parquet + series.parquet)", path=path)
    kind, packets = read_side_packets(path)
    a = analytics_from_packets(packets, source=str(path), kind=kind, capacity_bps=capacity_bps)
    if before is not None:
        from traceflow.flows.queue_loss import queue_loss

        a.queue_loss = queue_loss(read_side_packets(before)[1], packets)
    return a


def read_side_packets(path):
    """``(kind, packets frame)`` of a capture or packets Parquet table."""
    from traceflow.flows import input_kind

    path = Path(path)
    if not path.exists():
        raise TraceflowError("no such file", path=path)
    kind = input_kind(path)
    if kind == "flows":
        raise InputFormatError("a flows table alone has no link series: give a directory with "
                               "flows.parquet and series.parquet, a capture or a run", path=path)
    if kind == "packets":
        return "packets", pl.read_parquet(path)
    from traceflow.pcap.reader import read_packets

    return "capture", pl.from_arrow(read_packets(path))


def _run_side(path, capacity_bps):
    try:
        summary = json.loads((path / "summary.json").read_text())
    except json.JSONDecodeError as exc:
        raise InputFormatError(f"invalid summary.json: {exc.msg}", path=path / "summary.json") from None
    from traceflow.pcap.reader import read_packets

    # the run's own span (from 0 to its duration), so the throughput is the one summary.json
    # reports even when the first or last seconds carry no packet
    duration = summary.get("duration_s")
    end_ns = int(round(duration * 1e9)) if isinstance(duration, (int, float)) else None
    a = analytics_from_packets(read_packets(run_pcap(path, summary)), source=str(path), kind="run",
                               capacity_bps=capacity_bps or summary.get("bottleneck_rate_bps"),
                               start_ns=0 if end_ns else None, end_ns=end_ns)
    loss = summary.get("loss_rate")
    a.run_loss_rate = float(loss) if isinstance(loss, (int, float)) else None
    return a


def run_pcap(path, summary):
    """The bottleneck capture of a run directory (``<a>-<b>.pcap`` of the bottleneck a->b)."""
    name = (summary.get("replay") or {}).get("pcap")
    if not name and isinstance(summary.get("bottleneck"), str):
        name = summary["bottleneck"].replace("->", "-") + ".pcap"
    p = path / name if name else None
    if p is None or not p.exists():
        raise InputFormatError("run directory has no bottleneck pcap (run with "
                               "topology.bottleneck.pcap = true)", path=path)
    return p


def _analytics_dir_side(path, capacity_bps):
    from traceflow.stats.series import bin_width

    fl = pl.read_parquet(path / "flows.parquet")
    se = pl.read_parquet(path / "series.parquet")
    width = bin_width(se)
    if BIN_NS % width:
        raise InputFormatError(f"series bin {width} ns does not divide 10 ms", path=path / "series.parquet")
    x = se["bytes"].cast(pl.Float64).to_numpy()
    k = BIN_NS // width
    x = x[: x.size // k * k].reshape(-1, k).sum(axis=1)
    return analytics_from_flows(fl, x, duration_s=x.size * BIN_NS / 1e9, source=str(path),
                                kind="analytics", capacity_bps=capacity_bps)


# ------------------------------------------------------------------------------------ metrics

def fct_by_bin(sizes, fct):
    """Per size bin: ``(medians, p90s, counts)`` of the transfer times (s; NaN where empty)."""
    sizes, fct = np.asarray(sizes, dtype=float), np.asarray(fct, dtype=float)
    med, p90, counts = [], [], []
    for lo, hi in SIZE_BINS:
        x = fct[(sizes >= lo) & (sizes < hi) & np.isfinite(fct)]
        counts.append(int(x.size))
        med.append(float(np.median(x)) if x.size else math.nan)
        p90.append(float(np.quantile(x, 0.9)) if x.size else math.nan)
    return med, p90, counts


def fct_errors(measured, predicted, *, min_count=MIN_BIN_TRANSFERS):
    """Relative errors per bin of the medians and p90s of two :func:`fct_by_bin` results, and
    which bins are judged (at least ``min_count`` measured transfers). A judged bin the
    prediction left empty has an infinite error."""
    (mm, m9, mn), (pm, p9, _) = measured, predicted
    judged = [n >= min_count for n in mn]
    err_med = [_rel(a, b) if np.isfinite(a) else math.nan for a, b in zip(mm, pm)]
    err_med = [math.inf if j and not np.isfinite(e) else e for j, e in zip(judged, err_med)]
    err_p90 = [_rel(a, b) for a, b in zip(m9, p9)]
    return err_med, err_p90, judged


def dispersion_curve(series, bin_ns=BIN_NS):
    """Index of dispersion (variance / mean of bytes per interval) at 10 ms … 100 s, by
    :func:`traceflow.stats.dispersion.dispersion_curve`. Returns (scales_s, idc) as lists."""
    from traceflow.stats.dispersion import dispersion_curve as curve

    c = curve(np.asarray(series, dtype=np.float64), bin_ns, column="bytes")
    return c.scales_s.tolist(), c.ratio.tolist()


def hurst_estimates(series, methods=HURST_METHODS):
    from traceflow.stats.hurst import estimate

    x = np.asarray(series, dtype=np.float64)
    if x.size < 256 or not np.any(x):
        return {m: math.nan for m in methods}
    report = estimate(x, methods)
    return {m: float(r.H) for m, r in report.results.items()}


def level_table(series, scale_s=LEVEL_SCALE_S, h=LEVELS_H):
    """CondProb counts (h × (h+1)) of the series aggregated into ``scale_s`` blocks."""
    from traceflow.stats.levels import analyze_levels

    k = max(1, int(round(scale_s / (BIN_NS / 1e9))))
    x = np.asarray(series, dtype=np.float64)
    blocks = x[: x.size // k * k].reshape(-1, k).sum(axis=1)
    if blocks.size < 3:
        return None
    return analyze_levels(blocks, h, method="quantile", scale_s=scale_s).table


def level_distance(t1, t2):
    """Total-variation distance between the joint (L1, L2) distributions of two CondProb tables."""
    if t1 is None or t2 is None:
        return math.nan
    a = np.asarray(t1, dtype=np.float64)[:, :-1]
    b = np.asarray(t2, dtype=np.float64)[:, :-1]
    if a.sum() == 0 or b.sum() == 0:
        return math.nan
    return float(0.5 * np.abs(a / a.sum() - b / b.sum()).sum())


def _ks(a, b):
    """``(KS distance, p-value, n, m)`` of the finite values of ``a`` and ``b`` (n and m of
    them; nan, nan when one has none)."""
    from scipy import stats

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size == 0 or b.size == 0:
        return math.nan, math.nan, a.size, b.size
    r = stats.ks_2samp(a, b)
    return float(r.statistic), float(r.pvalue), a.size, b.size


#: the two-sample KS critical value at 5 % is KS_C05 * sqrt((n + m) / (n m)) (asymptotic;
#: Smirnov): the distance two samples of n and m values drawn from one distribution exceed 5 %
#: of the time
KS_C05 = 1.358


def ks_critical(n, m):
    """The 5 % two-sample KS critical value for samples of ``n`` and ``m`` values (nan if one is
    empty)."""
    return KS_C05 * math.sqrt((n + m) / (n * m)) if n and m else math.nan


def ks_tolerance(tolerance, critical):
    """The KS distance a comparison passes within: the larger of ``tolerance`` and the samples'
    5 % ``critical`` value (:func:`ks_critical`; nan: the tolerance)."""
    return max(tolerance, critical) if math.isfinite(critical) else tolerance


def _ks_metric(name, measured, predicted, tolerances):
    """A KS metric judged by what the samples can resolve: a distance passes when it is within
    the tolerance or within the 5 % critical value of samples this size (on 40 transfers a
    side the critical value is 0.30: no tolerance below it is a test)."""
    ks, pv, n, m = _ks(measured, predicted)
    crit = ks_critical(n, m)
    out = _metric(name, _summary(measured), _summary(predicted), ks, tolerances, pvalue=pv,
                  critical_5pct=crit, n_measured=int(n), n_predicted=int(m))
    out["tolerance_given"] = out["tolerance"]
    if math.isfinite(crit):
        out["tolerance"] = ks_tolerance(out["tolerance"], crit)
        out["pass"] = bool(ks <= out["tolerance"]) if math.isfinite(ks) else None
    out["criterion"] = "KS <= max(tolerance, the 5 % two-sample critical value)"
    return out


def _metric(name, measured, predicted, error, tolerances, **extra):
    """One metric's entry; ``pass`` is None ("n/a") when its error cannot be computed (a side
    lacks what it needs, e.g. no capacity for utilization), never a failure."""
    measure, default = DEFAULT_TOLERANCES[name]
    tol = tolerances.get(name, default)
    computable = error is not None and bool(np.isfinite(error))
    out = {"measured": measured, "predicted": predicted, "measure": measure,
           "error": error, "tolerance": tol, "pass": bool(error <= tol) if computable else None}
    out.update(extra)
    return out


def _rel(m, p):
    if not (np.isfinite(m) and np.isfinite(p)) or m == 0:
        return math.nan
    return abs(p - m) / abs(m)


def _abs(m, p):
    return abs(p - m) if np.isfinite(m) and np.isfinite(p) else math.nan


def parse_tolerances(items):
    """``["utilization=0.1", ...]`` → {metric: float}; unknown metrics or values are user errors."""
    out = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in DEFAULT_TOLERANCES:
            raise TraceflowError(f"bad --tol {item!r}: use METRIC=VALUE with METRIC one of "
                                 f"{', '.join(DEFAULT_TOLERANCES)}")
        try:
            out[name] = float(value)
        except ValueError:
            raise TraceflowError(f"bad --tol {item!r}: {value!r} is not a number") from None
        if not out[name] >= 0:
            raise TraceflowError(f"bad --tol {item!r}: tolerance must be >= 0")
    return out


def compare(measured: Analytics, predicted: Analytics, tolerances=None):
    """Every metric on both sides with its error and pass/fail.

    Parameters
    ----------
    measured, predicted : Analytics
        The two sides (:func:`load_side`).
    tolerances : dict of str to float, optional
        Metric -> tolerance, replacing the defaults of :data:`DEFAULT_TOLERANCES`.

    Returns
    -------
    dict
        A JSON-ready dict: ``measured`` and ``predicted`` (each side's source, kind, ``duration_s``
        s, ``capacity_bps`` bit/s, transfers, data segments), ``metrics`` (name -> ``measured``,
        ``predicted``, the error ``measure``, ``error``, ``tolerance`` and ``pass``: None, "n/a",
        when the error cannot be computed), and the verdict: ``failed``, ``not_computed`` and
        ``pass`` (:func:`verdict`).

    Examples
    --------
    >>> from traceflow.compare import compare, load_side
    >>> result = compare(load_side("trace.pcap.gz"), load_side("run/"))
    >>> result["pass"], result["failed"]
    """
    tolerances = tolerances or {}
    cap = measured.capacity_bps or predicted.capacity_bps
    metrics = {}
    tm, tp = measured.throughput_bps, predicted.throughput_bps
    metrics["throughput"] = _metric("throughput", tm, tp, _rel(tm, tp), tolerances, unit="bit/s")
    um = tm / cap if cap else math.nan
    up = tp / cap if cap else math.nan
    metrics["utilization"] = _metric("utilization", um, up, _rel(um, up), tolerances,
                                     capacity_bps=cap)
    lm, lp = measured.loss_rate, predicted.loss_rate
    metrics["loss_rate"] = _metric("loss_rate", lm, lp, _rel(lm, lp), tolerances,
                                   source={"measured": measured.loss_source,
                                           "predicted": predicted.loss_source})
    rm, rp = measured.retransmission_rate, predicted.retransmission_rate
    metrics["retransmission_rate"] = _metric("retransmission_rate", rm, rp, _abs(rm, rp), tolerances)

    fm, fp = fct_by_bin(measured.sizes, measured.fct), fct_by_bin(predicted.sizes, predicted.fct)
    err_med, err_p90, judged = fct_errors(fm, fp)
    worst = max((e for e, j in zip(err_med, judged) if j), default=math.nan)
    fct = _metric("fct", fm[0], fp[0], worst, tolerances, bins=size_bin_labels(),
                  p90_measured=fm[1], p90_predicted=fp[1], count_measured=fm[2],
                  count_predicted=fp[2], error_median=err_med, error_p90=err_p90, judged=judged,
                  transfer_time={"measured": measured.fct_measure,
                                 "predicted": predicted.fct_measure},
                  min_count=MIN_BIN_TRANSFERS, unit="s")
    if measured.fct_measure != predicted.fct_measure:
        fct["pass"] = False       # not like with like: never a pass
    fct["bin_pass"] = [bool(j and e <= fct["tolerance"]) if j else None
                       for e, j in zip(err_med, judged)]
    metrics["fct"] = fct

    for name, m, p in (("size_ks", measured.sizes, predicted.sizes),
                       ("rtt_ks", measured.rtt, predicted.rtt)):
        metrics[name] = _ks_metric(name, m, p, tolerances)

    hm, hp = hurst_estimates(measured.series), hurst_estimates(predicted.series)
    for m in HURST_METHODS:
        metrics[f"hurst_{m}"] = _metric(f"hurst_{m}", hm.get(m, math.nan), hp.get(m, math.nan),
                                        _abs(hm.get(m, math.nan), hp.get(m, math.nan)), tolerances)

    sm, dm = dispersion_curve(measured.series)
    sp, dp = dispersion_curve(predicted.series)
    n = min(len(dm), len(dp))
    a, b = np.asarray(dm[:n]), np.asarray(dp[:n])
    ok = (a > 0) & (b > 0)
    rms = float(np.sqrt(np.mean(np.log10(b[ok] / a[ok]) ** 2))) if ok.any() else math.nan
    metrics["dispersion"] = _metric("dispersion", dm, dp, rms, tolerances, scales_s=sm[:n])

    lt_m, lt_p = level_table(measured.series), level_table(predicted.series)
    levels = _metric(
        "levels", None if lt_m is None else lt_m.tolist(), None if lt_p is None else lt_p.tolist(),
        level_distance(lt_m, lt_p), tolerances, scale_s=LEVEL_SCALE_S, h=LEVELS_H)
    # a table of fewer than 5 transitions a cell on a side is noise (Cochran's rule, as fit's
    # quality check says): two 150 s captures' 74-transition tables differ by ~0.3 by chance
    cells = LEVELS_H * LEVELS_H
    counts = [0 if t is None else int(np.asarray(t)[:, :-1].sum()) for t in (lt_m, lt_p)]
    levels["transitions"] = counts
    if min(counts) < MIN_PER_CELL * cells:
        levels["pass"] = None
        levels["not_judged"] = (f"{min(counts)} transitions for {cells} cells, Cochran's rule "
                                f"needs {MIN_PER_CELL} a cell")
    metrics["levels"] = levels

    return verdict({"measured": _side_info(measured), "predicted": _side_info(predicted),
                    "metrics": metrics})


def verdict(result):
    """``result`` with its overall verdict: ``failed`` (metrics outside their tolerance),
    ``not_computed`` (n/a), and ``pass`` when nothing failed and something was judged."""
    metrics = result["metrics"]
    result["failed"] = [k for k, m in metrics.items() if m["pass"] is False]
    result["not_computed"] = [k for k, m in metrics.items() if m["pass"] is None]
    result["pass"] = not result["failed"] and len(result["not_computed"]) < len(metrics)
    return result


def _summary(x):
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {"n": 0}
    return {"n": int(x.size), "mean": float(x.mean()), "median": float(np.median(x)),
            "p90": float(np.quantile(x, 0.9))}


def _side_info(a: Analytics):
    return {"source": a.source, "kind": a.kind, "duration_s": a.duration_s,
            "capacity_bps": a.capacity_bps, "transfers": int(a.sizes.size),
            "data_segments": a.data_segments}


def compare_paths(measured, predicted, *, tolerances=None, capacity_bps=None, before=None):
    """Load both sides and compare them.

    Parameters
    ----------
    measured, predicted : str or pathlib.Path
        Each a capture, packets Parquet, run directory or analytics directory (:func:`load_side`).
    tolerances : dict of str to float, optional
        As :func:`compare`.
    capacity_bps : float, optional
        Bottleneck capacity (bit/s) for both sides; when None the capacity of a run side applies
        to both.
    before : str or pathlib.Path, optional
        The capture upstream of the bottleneck of the measured side (exact measured loss).

    Returns
    -------
    dict
        As :func:`compare`.

    Raises
    ------
    TraceflowError, InputFormatError
        A side that does not exist or cannot be read (:func:`load_side`).

    Examples
    --------
    >>> from traceflow.compare import compare_paths
    >>> result = compare_paths("trace.pcap.gz", "run/")
    """
    m = load_side(measured, capacity_bps=capacity_bps, before=before)
    p = load_side(predicted, capacity_bps=capacity_bps)
    if capacity_bps is None:
        cap = p.capacity_bps or m.capacity_bps
        m.capacity_bps = m.capacity_bps or cap
        p.capacity_bps = p.capacity_bps or cap
    return compare(m, p, tolerances)

"""Closed-loop client sessions: how many clients there are and how long they think.

A client *session* runs transfers one after another: it opens a connection, reads the whole
response, thinks, and only then opens the next one (the testbed's client loops; a browser or a
batch job alike). Its arrivals therefore thin out while its transfers are slow — under
congestion — where an open arrival process keeps piling new connections onto the queue.

Fit (the finite-source, "machine repairman" model): with ``K`` sessions whose think times are
exponential with mean ``θ``, a new connection starts at rate ``(K - N(t)) / θ`` while ``N(t)``
connections are open. Given the connection starts ``t_i`` and the open intervals (SYN to the
connection's last packet) over a span ``T``, the log-likelihood is

    ℓ(K, θ) = Σ_i log((K - N(t_i⁻)) / θ) - (K·T - ∫N dt) / θ,

maximised in ``θ`` by ``θ(K) = (K·T - ∫N dt) / n`` and in ``K`` (an integer above the most
connections ever open at an arrival) by the profile likelihood. An open (Poisson) arrival process
is the limit ``K → ∞``; the closed loop is kept only when it beats the Poisson fit by a
likelihood-ratio test (:data:`LR_CRITICAL`: χ² with one degree of freedom, p = 0.001), so a
trace of open arrivals keeps the renewal arrival model.

Whether transfers reuse a connection: the number of request/response exchanges per connection
(a run of payload from the connection's requester after a response began starts another one).
"""
from __future__ import annotations

import math

import numpy as np
import polars as pl

from traceflow.models.model import Sessions

#: χ²(1) quantile at p = 0.001: the closed loop must raise the log-likelihood by half of this
LR_CRITICAL = 10.83
#: the profile likelihood is searched up to this many times the most connections open at once
#: (beyond it the closed loop is indistinguishable from open arrivals)
MAX_SESSIONS_FACTOR = 50
SYN, ACK = 0x02, 0x10


def open_counts(starts_s, ends_s, t0_s, t1_s):
    """``(N before each start, ∫N dt)``: the connections open just before each start (array in
    the order of ``sorted(starts_s)``) and the area under N(t) over ``[t0_s, t1_s]`` (s)."""
    starts_s = np.asarray(starts_s, dtype=float)
    ends_s = np.minimum(np.maximum(np.asarray(ends_s, dtype=float), starts_s), t1_s)
    t = np.concatenate([starts_s, ends_s])
    step = np.concatenate([np.ones(starts_s.size), -np.ones(ends_s.size)])
    order = np.lexsort((step, t))              # at a tie an end comes before a start
    t, step = t[order], step[order]
    n_after = np.cumsum(step)
    n_before = n_after - step
    area = float(np.sum(n_after[:-1] * np.diff(t)) + n_after[-1] * (t1_s - t[-1]))
    return n_before[step > 0], area


def fit_closed_loop(starts_s, ends_s, t0_s, t1_s):
    """MLE of ``(K, θ, ℓ_closed - ℓ_open)`` for connections opened at ``starts_s`` and open until
    ``ends_s`` (s) during ``[t0_s, t1_s]``; ``None`` with fewer than 10 starts."""
    n = len(starts_s)
    span = t1_s - t0_s
    if n < 10 or not span > 0:
        return None
    busy, area = open_counts(starts_s, ends_s, t0_s, t1_s)
    lo = int(busy.max()) + 1
    k = np.arange(lo, lo * MAX_SESSIONS_FACTOR + 1, dtype=float)
    theta = (k * span - area) / n
    # Σ log(K - N_i) for every K at once: N_i takes few distinct values
    levels, counts = np.unique(busy, return_counts=True)
    ll = np.log(k[:, None] - levels[None, :]) @ counts - n * np.log(theta) - n
    best = int(np.argmax(ll))
    ll_open = n * math.log(n / span) - n
    return int(k[best]), float(theta[best]), float(ll[best] - ll_open), int(busy.max())


def exchanges_per_connection(packets):
    """Mean number of request/response exchanges per TCP connection that carried payload: a run
    of payload packets from the side that sent the first payload (the requester) starts an
    exchange. 1.0 when every connection carries a single request and its response. ``packets``
    in time order (as captured)."""
    lf = packets.lazy() if isinstance(packets, pl.DataFrame) else pl.from_arrow(packets).lazy()
    # endpoints as (address hash, port) integers: comparing them orders a connection's two
    # sides without building strings
    ha, hb = pl.col("src").hash(1), pl.col("dst").hash(1)
    fwd = (ha < hb) | ((ha == hb) & (pl.col("sport") < pl.col("dport")))
    syn = ((pl.col("tcp_flags") & SYN) != 0) & ((pl.col("tcp_flags") & ACK) == 0)
    key = ["_h0", "_p0", "_h1", "_p1"]
    df = (lf.filter((pl.col("proto") == 6) & ((pl.col("payload_len") > 0) | syn))
          .select("payload_len", syn=syn, fwd=fwd,
                  _h0=pl.when(fwd).then(ha).otherwise(hb),
                  _p0=pl.when(fwd).then(pl.col("sport")).otherwise(pl.col("dport")),
                  _h1=pl.when(fwd).then(hb).otherwise(ha),
                  _p1=pl.when(fwd).then(pl.col("dport")).otherwise(pl.col("sport")))
          # a SYN on a 4-tuple starts a new connection (ports are reused over a long trace)
          .with_columns(conn=pl.col("syn").cast(pl.Int32).cum_sum().over(key)))
    df = exchange_counts(df, [*key, "conn"]).select(pl.col("exchanges").mean()).collect()
    v = df.item() if df.height else None
    return float(v) if v is not None else math.nan


def exchange_counts(packets, by="conn"):
    """Per connection (grouped by ``by``) with payload, its ``exchanges`` (see
    :func:`exchanges_per_connection`): ``packets`` of whole connections in time order with
    ``fwd`` (the packet's direction) and ``payload_len``."""
    fwd = pl.col("fwd")
    return (packets.filter(pl.col("payload_len") > 0)
            .with_columns(requester=fwd.first().over(by), turn=fwd != fwd.shift(1).over(by))
            .group_by(by).agg(exchanges=((fwd == pl.col("requester"))
                                         & pl.col("turn").fill_null(True)).sum()))


def fit_sessions(flows, t0_ns, t1_ns, exchanges):
    """:class:`~traceflow.models.model.Sessions` of the TCP connections of ``flows`` (a flows
    table: ``start``, ``end``, ``client_addr``; connections whose SYN was seen) over the span
    ``[t0_ns, t1_ns)``; ``None`` when the arrivals are better described as open (Poisson) or
    there are too few connections. ``exchanges``: the mean request/response exchanges per
    connection (:func:`exchanges_per_connection`, or the mean of :func:`exchange_counts`)."""
    tcp = flows.filter((pl.col("proto") == 6) & (pl.col("handshake") != "none"))
    starts = tcp["start"].cast(pl.Int64).to_numpy() / 1e9
    ends = tcp["end"].cast(pl.Int64).to_numpy() / 1e9
    fitted = fit_closed_loop(starts, ends, t0_ns / 1e9, t1_ns / 1e9)
    if fitted is None or 2 * fitted[2] < LR_CRITICAL:
        return None
    k, theta, gain, most = fitted
    return Sessions(sessions=k, think_dist="exponential", think_mean_s=theta,
                    hosts=int(tcp["client_addr"].n_unique()), max_open=most,
                    log_likelihood_gain=gain,
                    exchanges_per_connection=exchanges)

"""Passive path RTT over whole TCP connections, from any vantage point.

A capture point V sees a connection between hosts A and B. Every round trip it can time is one
*half* of the path: V → A → V or V → B → V (the kernel :mod:`traceflow.flows.rttsample` times them
from TCP timestamps, as pping does, or from sequence numbers with Karn's rule, as tcptrace does,
with the handshake as the same rule). The path RTT A → B → A is the sum of the two halves, wherever
V sits: next to the sender (one half ≈ 0), next to the receiver, or mid-path.

Per connection (seconds):

- ``rtt_min`` = minimum of the A half + minimum of the B half: the propagation part of the path
  RTT (plus the least queueing the connection met), null unless both halves have a sample;
- ``rtt_median``, ``rtt_p90``: quantiles (linear interpolation) of the path samples, each half
  sample plus the nearest-in-time sample of the other half of the same connection;
- ``rtt_samples``: the number of path samples (0 when a half has none).

Times inside are int64 nanoseconds; the tables handed out use seconds.
"""
import numpy as np
import polars as pl

from traceflow.flows.rttsample import nearest_other

RTT_COLUMNS = {"rtt_samples": pl.Int64, "rtt_min": pl.Float64, "rtt_median": pl.Float64,
               "rtt_p90": pl.Float64}
SAMPLE_SCHEMA = {"ts": pl.Datetime("ns"), "connection": pl.Int64, "half": pl.String,
                 "rtt": pl.Float64, "path_rtt": pl.Float64, "frame": pl.Int64,
                 "opening_frame": pl.Int64}


def path_samples(samples):
    """Each half sample plus the nearest-in-time sample of the other half of its connection
    (the earlier one on a tie): ``samples`` with a ``path`` column (ns; null when the other half
    has no sample), in the input's order."""
    conn, ts = samples["conn"].to_numpy(), samples["ts"].to_numpy()
    order = np.lexsort((ts, conn))                     # stable: capture order on equal times
    other = np.empty(order.size, dtype=np.int64)
    other[order] = nearest_other(conn[order], ts[order], samples["side"].to_numpy()[order],
                                 samples["rtt"].to_numpy()[order])
    other = pl.Series(other)
    return samples.with_columns(path=pl.when(other >= 0).then(pl.col("rtt") + other))


#: each half's smallest sample (ns) of a group of samples (``side``, ``rtt``)
_HALF_MINIMA = [pl.col("rtt").filter(pl.col("side") == s).min().alias(f"min_{s}") for s in (0, 1)]


def connection_rtts(path):
    """The per-connection columns :data:`RTT_COLUMNS` (seconds), plus ``conn``, of the
    connections that have samples in :func:`path_samples` ``path``."""
    return rtt_columns(path.group_by("conn").agg(
        *_HALF_MINIMA, n=pl.len(),
        # times 1e-9 (as Polars divides over more than one group: see table.py's _rtts)
        rtt_median=pl.col("path").drop_nulls().quantile(0.5, "linear") * 1e-9,
        rtt_p90=pl.col("path").drop_nulls().quantile(0.9, "linear") * 1e-9))


def half_minima(samples):
    """Per connection of ``samples`` (``conn``, ``side``, ``rtt``): ``min_0``, ``min_1`` (ns)
    and the sample count ``n``, in no particular order. Minima of parts combine
    (:func:`combined_minima`), so the samples of open connections need not be kept when only
    ``rtt_min`` and ``rtt_samples`` are wanted."""
    return samples.group_by("conn").agg(*_HALF_MINIMA, n=pl.len().cast(pl.Int64))


def combined_minima(parts):
    """:func:`half_minima` of several parts of the same connections' samples, as one row per
    connection."""
    return parts.group_by("conn").agg(pl.col("min_0").min(), pl.col("min_1").min(),
                                      pl.col("n").sum())


def rtt_columns(halves):
    """:data:`RTT_COLUMNS` and ``conn`` from per-connection ``min_0``, ``min_1`` (ns), ``n`` and,
    if present, ``rtt_median`` and ``rtt_p90`` (seconds; else null)."""
    both = pl.col("min_0").is_not_null() & pl.col("min_1").is_not_null()
    # NumPy divides exactly (Polars multiplies long columns by the reciprocal)
    seconds = (halves["min_0"] + halves["min_1"]).fill_null(0).to_numpy() / 1e9
    return halves.select(
        "conn", rtt_samples=pl.when(both).then(pl.col("n")).otherwise(0).cast(pl.Int64),
        rtt_min=pl.when(both).then(pl.Series(seconds)),
        **{name: pl.col(name) if name in halves.columns else pl.lit(None, pl.Float64)
           for name in ("rtt_median", "rtt_p90")})


def labelled_samples(path, flows_of_conn):
    """The per-sample table :data:`SAMPLE_SCHEMA`: ``ts``, ``connection`` (flow id), ``half``
    ("client" or "server": the host the round trip went through), ``rtt`` (that half, seconds),
    ``path_rtt`` (plus the nearest-in-time sample of the other half; null without one),
    ``frame`` and ``opening_frame`` (1-based numbers of the packet that closed the sample and of
    the one it answered, in the input's packet order: Wireshark's frame numbers for a capture).

    ``path``: :func:`path_samples`; ``flows_of_conn``: DataFrame mapping ``conn`` to ``flow_id``
    and ``client_is_a`` (the pair's smaller endpoint, ``side`` 1, is the client)."""
    if path is None:
        return pl.DataFrame(schema=SAMPLE_SCHEMA)
    half_is_client = (pl.col("side") == 1) == pl.col("client_is_a")
    return (path.join(flows_of_conn, on="conn", how="left")
            .select(ts=pl.col("ts").cast(pl.Datetime("ns")), connection="flow_id",
                    half=pl.when(half_is_client).then(pl.lit("client")).otherwise(pl.lit("server")),
                    rtt=pl.col("rtt") / 1e9, path_rtt=pl.col("path") / 1e9, frame="frame",
                    opening_frame="opening_frame")
            .sort("ts", "connection", maintain_order=True).cast(SAMPLE_SCHEMA))

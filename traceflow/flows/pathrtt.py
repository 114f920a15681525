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

from traceflow.flows.rttsample import BATCH_COLUMNS, RttSampler, nearest_other

RTT_COLUMNS = {"rtt_samples": pl.Int64, "rtt_min": pl.Float64, "rtt_median": pl.Float64,
               "rtt_p90": pl.Float64}
SAMPLE_SCHEMA = {"ts": pl.Datetime("ns"), "connection": pl.Int64, "half": pl.String,
                 "rtt": pl.Float64, "path_rtt": pl.Float64, "frame": pl.Int64,
                 "opening_frame": pl.Int64}


def sample_packets(df, *, max_ns, timestamps=True):
    """Run the sampler over the packets ``df`` of the flows pass (capture order, with the
    splitter's ``conn``, ``fwd``, ``rel``, ``retrans``, the flows pass's ``is_tcp``, ``flags``,
    ``payload`` and ``frame``, the 1-based row number of the packet in its input). ``max_ns``:
    longest sample kept. Returns ``(samples, summary)``: the samples as a DataFrame
    (:meth:`~traceflow.flows.rttsample.RttSampler.feed`'s columns; ``frame`` and ``opening_frame``
    instead of the packet indices) and the per-connection minima and counts of
    :meth:`~traceflow.flows.rttsample.RttSampler.finish`."""
    batch = df.select(
        "conn", "fwd", ts=pl.col("ts").dt.epoch("ns"), is_tcp="is_tcp", flags="flags",
        rel="rel", seq=pl.col("seq").fill_null(0), ack=pl.col("ack").fill_null(0),
        payload="payload", retrans="retrans", has_ts=pl.col("tsval").is_not_null(),
        tsval=pl.col("tsval").fill_null(0), tsecr=pl.col("tsecr").fill_null(0),
    )
    sampler = RttSampler(max_ns, timestamps)
    samples = pl.DataFrame(sampler.feed({c: batch[c].to_numpy() for c in BATCH_COLUMNS}))
    frame = df["frame"].cast(pl.Int64)
    samples = samples.with_columns(frame=frame.gather(samples["packet"]),
                                   opening_frame=frame.gather(samples["opener"]))
    return samples.drop("packet", "opener"), sampler.finish()


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


def connection_rtts(path, summary, n_conns):
    """The per-connection columns :data:`RTT_COLUMNS` (seconds) for connections 0 ..
    ``n_conns - 1``, plus ``conn``, from the :func:`path_samples` and the summary of
    :func:`sample_packets`."""
    mins = np.full((n_conns, 2), -1, dtype=np.int64)
    counts = np.zeros((n_conns, 2), dtype=np.int64)
    seen = summary["min_rtt"].shape[0]
    mins[:seen], counts[:seen] = summary["min_rtt"], summary["count"]
    both = (mins >= 0).all(axis=1)
    table = pl.DataFrame({
        "conn": np.arange(n_conns, dtype=np.int64),
        "rtt_samples": np.where(both, counts.sum(axis=1), 0),
        "rtt_min": pl.Series(mins.sum(axis=1) / 1e9).scatter(np.flatnonzero(~both), None),
    })
    quantiles = path.drop_nulls("path").group_by("conn").agg(
        rtt_median=pl.col("path").quantile(0.5, "linear") / 1e9,
        rtt_p90=pl.col("path").quantile(0.9, "linear") / 1e9)
    return table.join(quantiles, on="conn", how="left").select("conn", *RTT_COLUMNS)


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

"""End-host behaviour inferred from a packets table: what the replay's simulated TCP should use.

For every TCP connection (a SYN starts a new one on a reused 4-tuple) the *data sender* is the
direction that carried more payload. From the sender's data and the receiver's ACKs we infer:

- **MSS**: the smaller MSS option of SYN / SYN-ACK (mode over connections); ``segment_size`` is the
  payload of a full segment actually sent (MSS minus TCP options such as timestamps).
- **Initial window**: the size of each connection's first flight, in segments: the new data the sender
  emitted before the first ACK of data could have reached it. That moment is, at the capture, the
  first data ACK plus half the capture→sender→capture round trip, read off the handshake leg that
  spans the sender (SYN→SYN/ACK when the server sends; its 5th percentile over connections, the
  propagation part). Only connections that sent more than their first
  flight count (a transfer that fits in the window says nothing about its size). At a capture near
  the *receiver*, behind the bottleneck, the first flight queues with the segments it releases and
  cannot be separated by time: the estimate is then a lower bound and ``initial_window_observable``
  is False (fit a sender-side capture with ``traceflow fit --hosts-from``).
- **Receiver window**: the receivers' largest advertised window, scaled by their SYN's wscale.
- **Minimum RTO**: retransmissions not triggered by ACKs (timeouts) follow the last ACK by at least
  the RTO; the 5th percentile of those gaps estimates the floor (Linux 200 ms, RFC 6298 1 s).
- **Delayed ACKs**: new data segments per ACK that advances the acknowledgment (≈1: every segment
  acknowledged; ≈2: delayed ACK).

Times are seconds (float) in the results; the packets table uses integer-ns timestamps.
"""
import numpy as np
import polars as pl
import pyarrow as pa

from traceflow.models.model import Hosts

_MOD = 1 << 32
SYN, ACK, RST = 0x02, 0x10, 0x04


def _frame(packets):
    if isinstance(packets, pl.LazyFrame):
        packets = packets.collect()
    elif isinstance(packets, (pa.Table, pa.RecordBatch)):
        packets = pl.from_arrow(packets)
    cols = ["ts", "src", "dst", "sport", "dport", "proto", "tcp_flags", "seq", "ack", "window",
            "payload_len", "ip_len", "mss", "wscale"]
    return packets.select(cols).filter(pl.col("proto") == 6).drop("proto")


def connections(packets):
    """TCP packets annotated with ``conn`` (connection id), ``fwd`` (sent by the client),
    ``sender`` (sent by the data sender), ``rel_seq`` / ``rel_ack`` (sequence space offsets
    relative to the data sender's ISN + 1, int64) and ``ts_s`` (seconds from the capture start)."""
    df = _frame(packets)
    if df.height == 0:
        return df
    a = pl.col("src").bin.encode("hex") + ":" + pl.col("sport").cast(pl.Utf8)
    b = pl.col("dst").bin.encode("hex") + ":" + pl.col("dport").cast(pl.Utf8)
    is_syn = ((pl.col("tcp_flags") & SYN) != 0) & ((pl.col("tcp_flags") & ACK) == 0)
    df = (df.with_columns(_a=a, _b=b)
          .with_columns(key=pl.min_horizontal("_a", "_b") + "|" + pl.max_horizontal("_a", "_b"),
                        syn=is_syn,
                        ts_s=(pl.col("ts").cast(pl.Int64) - pl.col("ts").cast(pl.Int64).min()) / 1e9)
          .sort("key", "ts", maintain_order=True))
    # A SYN with a new ISN starts a new connection on the same 4-tuple (port reuse); a
    # retransmitted SYN (same ISN) does not.
    prev_syn_seq = pl.when(pl.col("syn")).then(pl.col("seq")).forward_fill().shift(1).over("key")
    new_conn = pl.col("syn") & (prev_syn_seq.is_null() | (prev_syn_seq != pl.col("seq")))
    df = df.with_columns(epoch=new_conn.cast(pl.Int32).cum_sum().over("key"))
    df = df.with_columns(conn=pl.struct("key", "epoch").rank("dense").cast(pl.Int64))
    client = (pl.col("_a").filter(pl.col("syn")).first().over("conn")
              .fill_null(pl.col("_a").first().over("conn")))
    df = df.with_columns(fwd=pl.col("_a") == client)
    c2s = pl.col("payload_len").filter(pl.col("fwd")).sum().over("conn")
    s2c = pl.col("payload_len").filter(~pl.col("fwd")).sum().over("conn")
    df = df.with_columns(sender=pl.col("fwd") == (c2s > s2c))
    isn = (pl.col("seq").filter(pl.col("sender") & ((pl.col("tcp_flags") & SYN) != 0)).first()
           .over("conn"))
    first_data = pl.col("seq").filter(pl.col("sender") & (pl.col("payload_len") > 0)).first().over("conn")
    base = (isn.cast(pl.Int64) + 1).fill_null(first_data.cast(pl.Int64))
    df = df.with_columns(
        rel_seq=pl.when(pl.col("sender")).then((pl.col("seq").cast(pl.Int64) - base) % _MOD),
        rel_ack=pl.when(~pl.col("sender") & ((pl.col("tcp_flags") & ACK) != 0))
        .then((pl.col("ack").cast(pl.Int64) - base) % _MOD))
    return df.drop("_a", "_b", "epoch", "syn", "key")


def _handshake_legs(df):
    """Per connection: ``leg_syn`` = SYN → SYN/ACK and ``leg_ack`` = SYN/ACK → first ACK (s)."""
    flags = pl.col("tcp_flags")
    synack = ((flags & SYN) != 0) & ((flags & ACK) != 0)
    return df.group_by("conn").agg(
        t_syn=pl.col("ts_s").filter(((flags & SYN) != 0) & ((flags & ACK) == 0)).first(),
        t_synack=pl.col("ts_s").filter(synack).first(),
        t_ack=pl.col("ts_s").filter(pl.col("fwd") & ((flags & SYN) == 0) & ((flags & ACK) != 0)).first(),
        sender_is_server=~pl.col("fwd").filter(pl.col("sender")).first(),
    ).with_columns(leg_syn=pl.col("t_synack") - pl.col("t_syn"),
                   leg_ack=pl.col("t_ack") - pl.col("t_synack"))


def _mode(values):
    values = np.asarray(values)
    values = values[~np.isnan(values)] if values.dtype.kind == "f" else values
    if values.size == 0:
        return None
    uniq, counts = np.unique(values, return_counts=True)
    return uniq[np.argmax(counts)].item()


def infer_hosts(packets, *, min_flows=5):
    """Infer :class:`~traceflow.models.model.Hosts` from a packets table (Arrow table, Polars frame)."""
    df = connections(packets)
    empty = Hosts(mss=None, segment_size=None, initial_window=None, initial_window_flows=0,
                  initial_window_observable=False, receiver_window=None, min_rto_s=None,
                  rto_samples=0, delayed_ack=None, segments_per_ack=None, vantage="unknown")
    if df.height == 0:
        return empty
    flags = pl.col("tcp_flags")
    syns = df.filter((flags & SYN) != 0)

    # MSS: the smaller of the two options per connection.
    mss = _mode(syns.group_by("conn").agg(pl.col("mss").min()).drop_nulls()["mss"].to_numpy())
    data = df.filter(pl.col("sender") & (pl.col("payload_len") > 0))
    per_conn = data.group_by("conn").agg(
        max_payload=pl.col("payload_len").max(), n_data=pl.len(),
        header=(pl.col("ip_len") - pl.col("payload_len")).filter(
            pl.col("payload_len") == pl.col("payload_len").max()).first())
    full = per_conn.filter(pl.col("n_data") >= 3)
    seg = _mode(full["max_payload"].to_numpy()) if full.height else _mode(per_conn["max_payload"].to_numpy())
    header = _mode(full["header"].to_numpy()) if full.height else None

    legs = _handshake_legs(df)
    vantage = _vantage(legs)
    iw, iw_n = _initial_window(df, legs, seg)
    rwnd = _receiver_window(df)
    rto, rto_n = _min_rto(df)
    spa = _segments_per_ack(df)
    return Hosts(
        mss=None if mss is None else int(mss),
        segment_size=None if seg is None else int(seg),
        initial_window=iw if iw_n >= min_flows else None,
        initial_window_flows=iw_n,
        initial_window_observable=vantage == "sender",
        receiver_window=rwnd,
        min_rto_s=rto,
        rto_samples=rto_n,
        delayed_ack=None if spa is None else bool(spa >= 1.5),
        segments_per_ack=spa,
        vantage=vantage,
        header_bytes=None if header is None else int(header),
    )


def _sender_leg(legs):
    # The handshake leg that spans capture -> data sender -> capture.
    return (pl.when(pl.col("sender_is_server")).then(pl.col("leg_syn")).otherwise(pl.col("leg_ack")))


def _receiver_leg(legs):
    return (pl.when(pl.col("sender_is_server")).then(pl.col("leg_ack")).otherwise(pl.col("leg_syn")))


def _vantage(legs):
    """'sender' when the capture sits next to the data senders (their handshake leg is the short
    one), 'receiver' when next to the receivers, 'unknown' without handshakes."""
    v = legs.select(s=_sender_leg(legs), r=_receiver_leg(legs)).drop_nulls()
    if v.height == 0:
        return "unknown"
    s, r = float(v["s"].median()), float(v["r"].median())
    if s < r / 4:
        return "sender"
    if r < s / 4:
        return "receiver"
    return "unknown"


def _initial_window(df, legs, seg):
    """Median first-flight size (segments) over connections that sent beyond it, and their count."""
    if not seg:
        return None, 0
    t_ack1 = (df.filter(pl.col("rel_ack").is_not_null() & (pl.col("rel_ack") > 0)
                        & (pl.col("rel_ack") < _MOD // 2))
              .group_by("conn").agg(t_ack1=pl.col("ts_s").min()))
    # The propagation part of the capture -> sender -> capture leg: a low quantile over all
    # connections (a handshake that met a queue would push the boundary past the first flight).
    sl = legs.select(leg=_sender_leg(legs)).drop_nulls()["leg"]
    leg = max(float(sl.quantile(0.05)), 0.0) if sl.len() else 0.0
    data = df.filter(pl.col("sender") & (pl.col("payload_len") > 0)).select(
        "conn", "ts_s", end=pl.col("rel_seq") + pl.col("payload_len"))
    # Half the sender leg: at a sender-side capture the leg is the host's reaction time, so
    # segments released by the first ACK fall outside; at a receiver-side capture it is mid-gap.
    flights = (data.join(t_ack1, on="conn")
               .group_by("conn").agg(
                   flight=pl.col("end").filter(pl.col("ts_s") < pl.col("t_ack1") + 0.5 * leg)
                   .max(),
                   total=pl.col("end").max()))
    ok = flights.filter(pl.col("flight").is_not_null() & (pl.col("total") > pl.col("flight")))
    if ok.height == 0:
        return None, 0
    segments = np.ceil(ok["flight"].to_numpy() / seg)
    # A first flight ends when the window is used up or when the application had nothing more to
    # send yet; the latter are smaller. The window is the common size among the largest flights.
    top = np.quantile(segments, 0.99)
    iw = _mode(segments[segments >= top / 2])
    return float(iw), int(ok.height)


def _receiver_window(df):
    flags = pl.col("tcp_flags")
    scale = (pl.col("wscale").filter(~pl.col("sender") & ((flags & SYN) != 0)).first().over("conn")
             .fill_null(0).cast(pl.Int64))
    # Windows in SYN segments are never scaled (RFC 7323).
    w = df.with_columns(win=pl.when((flags & SYN) != 0).then(pl.col("window").cast(pl.Int64))
                        .otherwise(pl.col("window").cast(pl.Int64) * (2 ** scale)))
    per = w.filter(~pl.col("sender") & ((flags & RST) == 0)).group_by("conn").agg(pl.col("win").max())
    if per.height == 0:
        return None
    return int(per["win"].median())


def _min_rto(df):
    """5th percentile of the ACK→retransmission gaps of timeout retransmissions (s), sample count."""
    d = df.filter(pl.col("sender") & (pl.col("payload_len") > 0) | ~pl.col("sender")).sort("conn", "ts")
    d = d.with_columns(
        end=pl.when(pl.col("sender")).then(pl.col("rel_seq") + pl.col("payload_len")),
        last_rx=pl.when(~pl.col("sender")).then(pl.col("ts_s")).forward_fill().over("conn"))
    d = d.with_columns(prev_max=pl.col("end").forward_fill().cum_max().shift(1).over("conn"))
    retx = d.filter(pl.col("sender") & pl.col("prev_max").is_not_null()
                    & (pl.col("end") <= pl.col("prev_max")) & pl.col("last_rx").is_not_null())
    if retx.height == 0:
        return None, 0
    gaps = np.sort((retx["ts_s"] - retx["last_rx"]).to_numpy())
    timeouts = _upper_cluster(gaps)
    if timeouts.size == 0:
        return None, 0
    return float(np.quantile(timeouts, 0.05)), int(timeouts.size)


def _upper_cluster(gaps):
    """The timeout retransmissions among ACK→retransmission gaps (sorted, seconds).

    Fast retransmissions answer an ACK within about a round trip, tail-loss probes within a few
    round trips, timeouts only after RTO >= srtt + 4 rttvar: on a log scale the timeouts form the
    upper cluster: it starts after the last empty stretch (a factor of 2 or more between
    consecutive gaps) between the median and the 98th percentile; the top 2 % are back-offs."""
    if gaps.size < 10:
        return gaps[:0]
    logs = np.log10(np.maximum(gaps, 1e-7))
    lo, hi = gaps.size // 2, int(np.ceil(0.98 * gaps.size))
    if hi - lo < 2:
        return gaps[:0]
    splits = np.flatnonzero(np.diff(logs[lo:hi]) >= np.log10(2.0))
    if splits.size == 0:
        return gaps[:0]
    return gaps[lo + splits[-1] + 1:]


def _segments_per_ack(df):
    """New data segments per acknowledgment advance, pooled over connections."""
    new_data = (df.filter(pl.col("sender") & (pl.col("payload_len") > 0)).sort("conn", "ts")
                .with_columns(end=pl.col("rel_seq") + pl.col("payload_len"))
                .with_columns(prev=pl.col("end").cum_max().shift(1).over("conn").fill_null(0))
                .filter(pl.col("end") > pl.col("prev")))
    acks = (df.filter(pl.col("rel_ack").is_not_null() & (pl.col("payload_len") == 0)).sort("conn", "ts")
            .with_columns(prev=pl.col("rel_ack").shift(1).over("conn").fill_null(0))
            .filter((pl.col("rel_ack") > pl.col("prev")) & (pl.col("rel_ack") < _MOD // 2)))
    if acks.height == 0 or new_data.height == 0:
        return None
    return float(new_data.height / acks.height)

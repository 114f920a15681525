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
- **Options**: SACK-permitted and Timestamps when both SYN and SYN/ACK carry them in most
  connections; the receivers' window-scale shift.
- **Minimum RTO** from true timeouts only (:func:`_timeouts`): a retransmission of the first
  unacknowledged segment (go-back), not a tail-loss probe (the last segment sent while others are
  outstanding), after a silence of the receiver longer than the sender's smoothed RTT plus timer
  slack — RACK marks a segment lost at most a reordering window (<= SRTT, RFC 8985 sec. 6.2) after
  the ACK that reveals it, fast retransmit at once, so neither waits that long. The data sender's
  SRTT is rebuilt from the capture as RFC 6298 does (gain 1/8) from its RTT samples: the handshake
  leg that spans it, then data → ACK (Karn: segments sent once). A timeout fires RTO after the
  timer was armed, at the latest at the segment's previous transmission, so
  ``time since the previous transmission - SRTT >= RTO - SRTT = RTTVAR term >= rto_min``
  (Linux: RTO = SRTT + max(RTTVAR, rto_min)); its 5th percentile over first timeouts is the
  estimate (Linux: 200 ms plus up to a jiffy of rounding). Successive timeouts of one segment give
  the back-off factor (RFC 6298: 2); SYN and SYN/ACK retransmissions give the initial RTO (1 s).
  Seen from behind the bottleneck the RTT samples miss the sender's half of the path: there the
  estimate also holds the queueing delay.
- **Application delays** (medians, s): the client's think time from its handshake ACK to its
  request (its own two packets: any vantage point); at a sender-side vantage point, the server's
  time from the end of the request to its first response byte and from its last data byte to its
  FIN (behind the bottleneck the queue spreads the server's packets, so these are not claimed).
- **Delayed ACKs**: new data segments per ACK that advances the acknowledgment, counted after the
  first :data:`QUICKACK_SEGMENTS` of each connection (Linux acknowledges those one by one, in
  quick-ACK mode); ≈1: every segment acknowledged, ≈2: delayed ACKs (boundary at √2).

Times are seconds (float) in the results; the packets table uses integer-ns timestamps.
"""
import numpy as np
import polars as pl
import pyarrow as pa

from traceflow.models.model import Hosts

_MOD = 1 << 32
SYN, ACK, RST = 0x02, 0x10, 0x04
#: Linux quick-ACK mode: at most TCP_MAX_QUICKACKS = 16 segments acknowledged one by one at start
QUICKACK_SEGMENTS = 16
#: timer slack between RACK's reordering timer and a timeout: two jiffies at HZ = 250 (the common
#: distribution kernel setting; Linux timers are rounded up to jiffies)
TIMER_SLACK_S = 0.008
#: fraction of connections whose handshake must show an option for the hosts to use it
OPTION_SHARE = 0.5


def _frame(packets):
    if isinstance(packets, pl.LazyFrame):
        packets = packets.collect()
    elif isinstance(packets, (pa.Table, pa.RecordBatch)):
        packets = pl.from_arrow(packets)
    cols = ["ts", "src", "dst", "sport", "dport", "proto", "tcp_flags", "seq", "ack", "window",
            "payload_len", "ip_len", "mss", "wscale", "sack_ok", "tsval", "tsecr"]
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
    where = vantage(legs)
    iw, iw_n = _initial_window(df, legs, seg)
    rwnd = _receiver_window(df)
    timeouts = _timeouts(df, legs)
    rto, rto_n = _min_rto(timeouts)
    init_rto, init_rto_n = _initial_rto(df)
    spa = _segments_per_ack(df)
    sack, stamps, wscale = _options(df)
    delays = _app_delays(df, sender_side=where == "sender")
    return Hosts(
        mss=None if mss is None else int(mss),
        segment_size=None if seg is None else int(seg),
        initial_window=iw if iw_n >= min_flows else None,
        initial_window_flows=iw_n,
        initial_window_observable=where == "sender",
        receiver_window=rwnd,
        min_rto_s=rto,
        rto_samples=rto_n,
        delayed_ack=None if spa is None else bool(spa >= 2 ** 0.5),
        segments_per_ack=spa,
        vantage=where,
        header_bytes=None if header is None else int(header),
        rto_backoff=_backoff(timeouts),
        initial_rto_s=init_rto,
        initial_rto_samples=init_rto_n,
        sack=sack,
        timestamps=stamps,
        window_scale=wscale,
        **delays,
    )


def _sender_leg(legs):
    # The handshake leg that spans capture -> data sender -> capture.
    return (pl.when(pl.col("sender_is_server")).then(pl.col("leg_syn")).otherwise(pl.col("leg_ack")))


def _receiver_leg(legs):
    return (pl.when(pl.col("sender_is_server")).then(pl.col("leg_ack")).otherwise(pl.col("leg_syn")))


def vantage(legs):
    """'sender' when the capture sits next to the data senders (their handshake leg is the short
    one), 'receiver' when next to the receivers, 'unknown' without handshakes (or mid-path).

    ``legs``: one row per connection with ``leg_syn`` (SYN → SYN/ACK, s), ``leg_ack`` (SYN/ACK →
    first ACK, s) and ``sender_is_server`` (the server sent more payload)."""
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


def _options(df):
    """``(sack, timestamps, window_scale)``: SACK-permitted and Timestamps when both SYN and
    SYN/ACK carry them in at least :data:`OPTION_SHARE` of the connections with a handshake
    (None without one); the data receivers' most common window-scale shift."""
    flags = pl.col("tcp_flags")
    hs = df.filter((flags & SYN) != 0).group_by("conn").agg(
        both=pl.col("fwd").n_unique() == 2,
        sack=pl.col("sack_ok").fill_null(False).all(),
        ts=pl.col("tsval").is_not_null().all(),
        wscale=pl.col("wscale").filter(~pl.col("sender")).first()).filter(pl.col("both"))
    if hs.height == 0:
        return None, None, None
    wscale = _mode(hs["wscale"].drop_nulls().to_numpy())
    return (bool(hs["sack"].mean() >= OPTION_SHARE), bool(hs["ts"].mean() >= OPTION_SHARE),
            None if wscale is None else int(wscale))


def _app_delays(df, *, sender_side):
    """Medians (s) of the client's request delay and, at a sender-side vantage point, of the
    server's response and close delays (see the module docstring); None where unmeasured."""
    flags = pl.col("tcp_flags")
    client, server = pl.col("fwd"), ~pl.col("fwd")
    data = pl.col("payload_len") > 0
    per = df.group_by("conn").agg(
        ack=pl.col("ts_s").filter(client & ((flags & (SYN | ACK)) == ACK) & ~data).first(),
        request=pl.col("ts_s").filter(client & data).first(),
        request_end=pl.col("ts_s").filter(client & data).last(),
        response=pl.col("ts_s").filter(server & data).first(),
        last=pl.col("ts_s").filter(server & data).max(),
        fin=pl.col("ts_s").filter(server & ((flags & 0x01) != 0)).first())

    def median(expr):
        x = per.select(x=expr)["x"].drop_nulls()
        x = x.filter(x >= 0)
        return float(x.median()) if x.len() else None

    # a request that follows the handshake ACK (not one piggy-backed on it)
    out = {"request_delay_s": median(pl.when(pl.col("request") > pl.col("ack"))
                                     .then(pl.col("request") - pl.col("ack"))),
           "response_delay_s": None, "close_delay_s": None}
    if sender_side:
        out["response_delay_s"] = median(pl.when(pl.col("response") > pl.col("request_end"))
                                         .then(pl.col("response") - pl.col("request_end")))
        out["close_delay_s"] = median(pl.col("fin") - pl.col("last"))
    return out


def _srtt(d, legs):
    """The data sender's smoothed RTT after each of its RTT samples (``conn``, ``ts_s``,
    ``srtt``, s): RFC 6298's estimator (gain 1/8) over the handshake round trip SYN → SYN/ACK →
    ACK (the sender's first sample: its SYN/ACK or SYN answered) and then the data → ACK samples
    of segments sent once (Karn), ACK by ACK."""
    hand = legs.select("conn", ts_s=pl.when(pl.col("sender_is_server")).then(pl.col("t_ack"))
                       .otherwise(pl.col("t_synack")), m=pl.col("leg_syn") + pl.col("leg_ack"))
    sent_once = (d.filter(pl.col("sender") & (pl.col("copies") == 1))
                 .select("conn", una_prev=pl.col("rel_seq"), t_tx=pl.col("ts_s")))
    data = (d.filter(pl.col("adv")).select("conn", "ts_s", "una_prev")
            .join(sent_once, on=["conn", "una_prev"])
            .select("conn", "ts_s", m=pl.col("ts_s") - pl.col("t_tx")))
    samples = pl.concat([hand.drop_nulls(), data]).sort("conn", "ts_s")
    return samples.select("conn", "ts_s", srtt=pl.col("m").ewm_mean(alpha=1 / 8, adjust=False)
                          .over("conn"))


def _timeouts(df, legs):
    """The timeout retransmissions of the data senders (see the module docstring): ``conn``,
    ``ts``, ``rel_seq``, ``since_tx`` (s since the segment's previous transmission), ``srtt``
    (s), ``nth`` (1 for a segment's first timeout, 2 for the next, ...)."""
    flags = pl.col("tcp_flags")
    d = (df.filter(pl.col("sender") & (pl.col("payload_len") > 0) | ~pl.col("sender"))
         .sort("conn", "ts")
         .with_columns(end=pl.when(pl.col("sender")).then(pl.col("rel_seq") + pl.col("payload_len")),
                       ack=pl.when(~pl.col("sender") & ((flags & ACK) != 0)
                                   & (pl.col("rel_ack") < _MOD // 2)).then(pl.col("rel_ack"))))
    d = d.with_columns(
        una=pl.col("ack").forward_fill().cum_max().over("conn").fill_null(0),
        prev_max=pl.col("end").forward_fill().cum_max().shift(1).over("conn"),
        last_rx=pl.when(~pl.col("sender")).then(pl.col("ts_s")).forward_fill().shift(1).over("conn"),
        copies=pl.when(pl.col("sender")).then(pl.len().over("conn", "rel_seq", "sender")),
        prev_tx=pl.when(pl.col("sender")).then(pl.col("ts_s").shift(1).over("conn", "rel_seq", "sender")))
    d = d.with_columns(una_prev=pl.col("una").shift(1).over("conn").fill_null(0))
    d = d.with_columns(adv=pl.col("ack").is_not_null() & (pl.col("una") > pl.col("una_prev")))
    retx = (d.filter(pl.col("sender") & pl.col("prev_max").is_not_null()
                     & (pl.col("end") <= pl.col("prev_max")))
            .join_asof(_srtt(d, legs), on="ts_s", by="conn", strategy="backward",
                       check_sortedness=False)
            .filter(pl.col("srtt").is_not_null()))
    go_back = pl.col("rel_seq") == pl.col("una")
    probe = ((pl.col("end") == pl.col("prev_max"))
             & (pl.col("prev_max") - pl.col("una") > pl.col("payload_len")))
    silent = pl.col("ts_s") - pl.col("last_rx") > pl.col("srtt") + TIMER_SLACK_S
    return (retx.filter(go_back & ~probe & silent)
            .with_columns(since_tx=pl.col("ts_s") - pl.col("prev_tx"),
                          # a repeat timeout of the same segment, no ACK since its previous copy
                          nth=pl.int_range(1, pl.len() + 1).over("conn", "rel_seq"))
            .select("conn", "ts", "rel_seq", "since_tx", "srtt", "nth", "last_rx", "prev_tx"))


def _min_rto(timeouts):
    """The RTO floor (s): 5th percentile of ``since_tx - srtt`` over first timeouts; sample count."""
    first = timeouts.filter((pl.col("nth") == 1) & pl.col("since_tx").is_not_null())
    if first.height == 0:
        return None, 0
    x = (first["since_tx"] - first["srtt"]).to_numpy()
    return float(np.quantile(x, 0.05)), int(first.height)


def _backoff(timeouts):
    """Median ratio of successive timeout intervals of one segment (no ACK in between)."""
    t = (timeouts.sort("conn", "rel_seq", "ts")
         .with_columns(prev=pl.col("since_tx").shift(1).over("conn", "rel_seq"))
         .filter((pl.col("nth") > 1) & (pl.col("last_rx") < pl.col("prev_tx"))))
    if t.height == 0:
        return None
    return float((t["since_tx"] / t["prev"]).median())


def _initial_rto(df):
    """Median interval (s) between the first two copies of a SYN or SYN/ACK (same ISN), and the
    number of handshakes with a retransmission: the RTO before any RTT sample."""
    flags = pl.col("tcp_flags")
    syn = (df.filter((flags & SYN) != 0).sort("conn", "ts")
           .group_by("conn", "fwd", "seq").agg(gap=pl.col("ts_s").sort().slice(0, 2).diff().last()))
    gaps = syn["gap"].drop_nulls()
    if gaps.len() == 0:
        return None, 0
    return float(gaps.median()), int(gaps.len())


def _segments_per_ack(df):
    """New data segments per acknowledgment advance, pooled over connections, beyond the first
    :data:`QUICKACK_SEGMENTS` segments of each (all of them when no connection is that long)."""
    new_data = (df.filter(pl.col("sender") & (pl.col("payload_len") > 0)).sort("conn", "ts")
                .with_columns(end=pl.col("rel_seq") + pl.col("payload_len"))
                .with_columns(prev=pl.col("end").cum_max().shift(1).over("conn").fill_null(0))
                .filter(pl.col("end") > pl.col("prev"))
                .with_columns(k=pl.int_range(pl.len()).over("conn")))
    acks = (df.filter(pl.col("rel_ack").is_not_null() & (pl.col("payload_len") == 0)).sort("conn", "ts")
            .with_columns(prev=pl.col("rel_ack").shift(1).over("conn").fill_null(0))
            .filter((pl.col("rel_ack") > pl.col("prev")) & (pl.col("rel_ack") < _MOD // 2)))
    # the ACKs of the later segments: those above the end of the quick-ACK segments
    late = new_data.filter(pl.col("k") == QUICKACK_SEGMENTS - 1).select("conn", quick=pl.col("end"))
    late_data = new_data.filter(pl.col("k") >= QUICKACK_SEGMENTS)
    late_acks = acks.join(late, on="conn").filter(pl.col("rel_ack") > pl.col("quick"))
    if late_acks.height and late_data.height:
        return float(late_data.height / late_acks.height)
    if acks.height == 0 or new_data.height == 0:
        return None
    return float(new_data.height / acks.height)

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

Every inference reduces each connection to a few values first (:class:`HostFacts`), so a
capture can be streamed connection by connection (``traceflow fit``:
:class:`traceflow.models.fitstream.PacketPass`, with the flow splitter's connection ids);
:func:`infer_hosts` splits a whole packets table into connections itself.

Times are seconds (float) in the results; the packets table uses integer-ns timestamps.
"""
import dataclasses

import numpy as np
import polars as pl
import pyarrow as pa

from traceflow.flows import _hostreduce, congestion
from traceflow.models.model import Hosts
from traceflow.scale.spool import Spool

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
    df = df.with_columns(conn=pl.struct("key", "epoch").rank("dense").cast(pl.Int64),
                         _side=pl.col("_a") < pl.col("_b"))
    return _oriented(df.drop("_a", "_b", "epoch", "syn", "key"), "_side")


#: the packet columns the kernels (:mod:`traceflow.flows._hostreduce`) read, as int64 with null
#: as -1 (a missing payload length is 0)
_KERNEL_INTS = ("conn", "ts", "tcp_flags", "seq", "ack", "payload_len", "ip_len", "window", "mss",
                "wscale", "sack_ok")


def _columns(df):
    """The kernels' columns of ``df`` (numpy), and ``has_tsval``. Columns without nulls are read
    as they are and widened (Polars' cast and fill_null of every column took longer than the
    kernels)."""
    cols = {}
    for name in _KERNEL_INTS:
        col = df[name]
        if col.null_count():
            col = col.cast(pl.Int64).fill_null(0 if name == "payload_len" else -1)
        values = col.to_physical().to_numpy()
        cols[name] = values.astype(np.int64, copy=False)
    cols["has_tsval"] = df["tsval"].is_not_null().to_numpy().view(np.uint8)
    for name in ("tsval", "tsecr"):     # the congestion control's flight (-1: none)
        cols[name] = df[name].cast(pl.Int64).fill_null(-1).to_numpy()
    return cols


def _nullable(values):
    """An int64 kernel result with -1 for null as a Polars expression."""
    s = pl.lit(pl.Series(values))
    return pl.when(s >= 0).then(s)


def _oriented(df, side):
    """``df`` (connections contiguous, in time order) with ``fwd`` (sent by the client: the
    ``side``, a column telling a packet's direction, of the connection's first SYN without ACK,
    else of its first packet), ``sender``, ``rel_seq`` and ``rel_ack``
    (:func:`traceflow.flows._hostreduce.orient`); ``side`` dropped."""
    fwd, sender, rel_seq, rel_ack = _orient(_columns(df), df[side].cast(pl.UInt8).to_numpy())
    return df.drop(side).with_columns(fwd=fwd, sender=sender, rel_seq=_nullable(rel_seq),
                                      rel_ack=_nullable(rel_ack))


def _reduced(df):
    """:func:`traceflow.flows._hostreduce.reduce` of the annotated packets ``df``
    (:func:`connections`)."""
    return _reduce(_columns(df), df["ts_s"].to_numpy(), df["fwd"].cast(pl.UInt8).to_numpy(),
                   df["sender"].cast(pl.UInt8).to_numpy(), df["rel_seq"].fill_null(-1).to_numpy(),
                   df["rel_ack"].fill_null(-1).to_numpy())


def _orient(c, side):
    """:func:`traceflow.flows._hostreduce.orient` of the kernels' columns ``c`` (:func:`_columns`)
    with the packets' directions ``side`` (uint8, in the same order)."""
    return _hostreduce.orient(c["conn"], side, c["tcp_flags"], c["seq"], c["ack"], c["payload_len"])


def _reduce(c, ts_s, fwd, sender, rel_seq, rel_ack):
    r = _hostreduce.reduce(
        c["conn"], c["ts"], ts_s, c["tcp_flags"], c["seq"], fwd, sender, rel_seq, rel_ack,
        c["payload_len"], c["ip_len"], c["window"], c["mss"], c["wscale"], c["sack_ok"],
        c["has_tsval"], QUICKACK_SEGMENTS, TIMER_SLACK_S)
    r["cc"] = congestion.reduce_kernel(c, ts_s, sender, rel_seq, rel_ack, r)
    r["flight_ts"] = _echo_flights(c, sender, rel_seq, rel_ack)
    return r


def _echo_flights(c, sender, rel_seq, rel_ack):
    """Each connection's first flight as its timestamp echoes mark it (``flight`` and ``total``,
    bytes of the data sender's sequence space): the data segments that echo the same TSecr as the
    first one (the receiver's last segment before the data: its request or handshake ACK) left
    before any ACK of data reached the sender, whatever queue spread them out; the segments that
    echo the TSval of the receiver's first ACK of data are the ones that ACK released, and the
    first of them starts where the first flight ended — also when the queue dropped the flight's
    last segments (a 6000-byte buffer holds 5 of Linux's 10). The flight ends at the later of
    the two. Kept where that ACK carries a later TSval than the first echo (else the segments it
    released echo the same value: a millisecond clock at 10 Mbit/s) and the sender sent beyond
    the flight (a transfer that fits says nothing of the window). ``c``: the kernels' columns
    with ``tsval`` and ``tsecr`` (-1: none); empty without them."""
    empty = pl.DataFrame(schema={"flight": pl.Int64, "total": pl.Int64})
    if "tsecr" not in c:
        return empty
    df = pl.DataFrame({"conn": c["conn"], "snd": sender.astype(bool), "pay": c["payload_len"],
                       "seq": rel_seq, "ack": rel_ack, "tsval": c["tsval"], "tsecr": c["tsecr"]})
    data = pl.col("snd") & (pl.col("pay") > 0) & (pl.col("seq") >= 0) & (pl.col("tsecr") >= 0)
    acks = ~pl.col("snd") & (pl.col("ack") > 0) & (pl.col("tsval") >= 0)
    end = pl.col("seq") + pl.col("pay")
    per = (df.with_columns(e0=pl.col("tsecr").filter(data).first().over("conn"),
                           ta=pl.col("tsval").filter(acks).first().over("conn"))
           .group_by("conn").agg(
               e0=pl.col("e0").first(), ta=pl.col("ta").first(), total=end.filter(data).max(),
               first=end.filter(data & (pl.col("tsecr") == pl.col("e0"))).max(),
               released=pl.col("seq").filter(data & (pl.col("tsecr") == pl.col("ta"))).min()))
    later = (pl.col("ta") - pl.col("e0")) % (1 << 32)
    flight = pl.max_horizontal("first", "released")
    return (per.filter(pl.col("first").is_not_null() & pl.col("ta").is_not_null()
                       & (later > 0) & (later < (1 << 31)))
            .select(flight=flight, total="total").filter(pl.col("total") > pl.col("flight")))


def kernel_columns(columns, rows):
    """The kernels' columns (:data:`_KERNEL_INTS` as int64, ``has_tsval`` and ``a_side`` as
    uint8) of the ``rows`` (an index array) of ``columns``: numpy arrays by those names, in
    the kernels' form already (null as -1), any integer width."""
    out = {name: columns[name][rows].astype(np.int64) for name in _KERNEL_INTS}
    out["has_tsval"] = columns["has_tsval"][rows].view(np.uint8)
    out["a_side"] = columns["a_side"][rows].view(np.uint8)
    if "tsval" in columns:      # the congestion control's flight (-1: none)
        for name in ("tsval", "tsecr"):
            out[name] = np.where(out["has_tsval"] == 1, columns[name][rows].astype(np.int64), -1)
    return out


def reduce_packets(c, origin_ns):
    """:func:`reduce_connections` of whole connections numbered elsewhere (the flow splitter's
    ``conn``, one pass: :class:`traceflow.models.fitstream.PacketPass`), and the ``ts`` and
    ``ip_len`` (int64 arrays, a missing length 0) of the data senders' packets. ``c``: the
    :func:`kernel_columns` of their TCP packets, each connection's rows contiguous and in time
    order, ``a_side`` telling a packet sent by the pair's smaller endpoint; ``origin_ns``: the
    ``ts`` that ``ts_s`` counts from. No frame of the packets is built."""
    fwd, sender, rel_seq, rel_ack = _orient(c, c["a_side"])
    # as Polars computes it elsewhere: its division by a constant is a multiplication by its
    # inverse (rounded so)
    ts_s = (c["ts"] - origin_ns) * (1 / 1e9)
    parts = _parts(_reduce(c, ts_s, fwd.view(np.uint8), sender.view(np.uint8), rel_seq, rel_ack))
    return parts, c["ts"][sender], np.maximum(c["ip_len"][sender], 0)


def _nan_as_null(columns):
    """A DataFrame of NumPy ``columns`` (a dict), NaN as null, built column by column: given
    three float arrays or more, ``pl.DataFrame(..., nan_to_null=True)`` starts a thread pool per
    call (~120 of them in a 16x dev10m pass)."""
    return pl.DataFrame([pl.Series(name, values, nan_to_null=True)
                         for name, values in columns.items()])


def _legs(r):
    """Per connection of the kernel's facts ``r``: ``leg_syn`` = SYN → SYN/ACK and ``leg_ack``
    = SYN/ACK → first ACK (s), the times they span and ``sender_is_server``."""
    return _nan_as_null({"conn": r["conn"], "t_syn": r["t_syn"], "t_synack": r["t_synack"],
                         "t_ack": r["t_ack"]}).with_columns(
        sender_is_server=_nullable(r["sender_is_server"]).cast(pl.Boolean)).with_columns(
        leg_syn=pl.col("t_synack") - pl.col("t_syn"), leg_ack=pl.col("t_ack") - pl.col("t_synack"))


def _mode(values):
    values = np.asarray(values)
    values = values[~np.isnan(values)] if values.dtype.kind == "f" else values
    if values.size == 0:
        return None
    uniq, counts = np.unique(values, return_counts=True)
    return uniq[np.argmax(counts)].item()


#: the parts of :class:`HostFacts` kept as counts of their distinct rows
_COUNTED = ("mss", "per_conn", "rwnd", "options")
#: connections whose parts are gathered before the counted ones are counted and the others go
#: to the spool, a frame each (per merge of 4096: a group-by had a fixed cost that outweighed
#: it, and 16x made ~1000 frames, read back one by one in 0.46 s)
HOLD_ROWS = 1 << 14
#: the parts of :class:`HostFacts` with a row or more per connection, kept in its spool as
#: :func:`reduce_connections` gives them (and "legs", "flight": kept after a selection)
_AS_REDUCED = ("flight_conns", "request", "response", "close", "timeouts", "syn_gaps", "cc",
               "flight_ts")
#: the spooled parts that are Series
_SERIES = ("request", "response", "close", "syn_gaps")


def reduce_connections(df):
    """What :class:`HostFacts` keeps of the packets ``df`` of whole connections (a dict of its
    parts; None without packets), computed without the facts gathered so far, so connections
    can be reduced in several threads and merged in order (:meth:`HostFacts.merge`). Also
    ``exchanges``: the request/response exchanges of each connection with payload
    (:func:`traceflow.models.sessions.exchanges_per_connection`)."""
    return _parts(_reduced(df)) if df.height else None


def _parts(r):
    """:func:`reduce_connections` of the kernel's facts ``r`` (filtered in numpy: a few Polars
    calls per part cost more than the kernel)."""
    legs = _legs(r)
    sl = legs.select(leg=_sender_leg(legs)).drop_nulls()["leg"]
    p_conn, p_ts, p_top, p_ack1 = r["points"]
    conn = r["conn"].astype(np.uint32)   # connection ids in 32 bits (they only join two parts)
    data, flight, both = r["n_data"] >= 0, r["total"] >= 0, r["both"] == 1
    wscale = r["wscale"][both]
    return {
        # MSS: the smaller of the two options per connection
        "mss": pl.DataFrame({"mss": r["mss"][r["mss"] >= 0]}),
        # n_data: only whether a connection sent at least 3 data segments is read
        "per_conn": pl.DataFrame({name: r[name][data] for name in ("max_payload", "n_data",
                                                                    "header")}),
        "legs": legs.select("leg_syn", "leg_ack", "sender_is_server"),
        "leg_max": float(sl.max()) if sl.len() else None,
        "flight": pl.DataFrame({"conn": p_conn.astype(np.uint32), "ts_s": p_ts, "top": p_top,
                                "t_ack1": p_ack1}),
        "flight_conns": pl.DataFrame({"conn": conn[flight], "t_ack1": r["t_ack1"][flight],
                                      "total": r["total"][flight]}),
        # without the connection ids: what is kept per connection is only what the results read
        "rwnd": pl.DataFrame({"win": r["win"][r["win"] >= 0]}),
        "options": pl.DataFrame({"both": np.ones(wscale.size, bool), "sack": r["sack"][both] == 1,
                                 "ts": r["ts"][both] == 1,
                                 "wscale": pl.Series(wscale).set(pl.Series(wscale < 0), None)}),
        # the measured delays (s), not negative
        **{name: pl.Series(name, r[name][r[name] >= 0]) for name in ("request", "response",
                                                                       "close")},
        "timeouts": _timeouts(r),
        "syn_gaps": pl.Series("gap", r["syn_gaps"]),
        "spa": r["spa"],
        "cc": r["cc"],
        "flight_ts": r["flight_ts"],
        "exchanges": pl.Series("exchanges", r["exchanges"][r["exchanges"] >= 0]),
    }


class HostFacts:
    """End-host facts accumulated connection by connection: feed :meth:`add` the packets of
    whole connections (:func:`connections` output; every connection in one
    call), any number of times, then :meth:`result`. What is kept is a few values per connection
    (and the first-flight points, below), never the packets, so a capture can be streamed.

    The first flight (:func:`_initial_window`) is cut at half the sender leg's 5th percentile over
    *all* connections, known only at the end: each connection keeps the points where its highest
    sequence number sent grows, up to half the largest sender leg seen so far, which bounds that
    percentile unless 95 % of the later connections have a longer leg than every earlier one.

    Parts whose statistics do not depend on the order or the connection of their rows (modes,
    medians, shares: :data:`_COUNTED`) are kept as their distinct rows with counts, a few hundred
    rows whatever the number of connections (the parts of up to :data:`HOLD_ROWS` connections
    wait to be counted together), and expanded again for :meth:`result`. The others
    go to ``spool`` (:class:`~traceflow.scale.spool.Spool`: in memory up to its budget, then on
    disk; default: one of its own), a frame per part and :data:`HOLD_ROWS` connections."""

    def __init__(self, spool=None):
        # the parts of a few rows, and the spool of those with a row or more per connection
        self.counted = {name: None for name in _COUNTED}
        self.held = {}          # name -> parts not yet counted or in the spool
        self.held_rows = 0
        self.spool = Spool() if spool is None else spool
        self.spa = np.zeros(4, dtype=np.int64)  # late data, late ACKs, new data, ACK advances
        self.leg_cap = 0.0

    def add(self, df):
        """Reduce the packets ``df`` of whole connections (see the class docstring)."""
        self.merge(reduce_connections(df))

    def merge(self, reduced):
        """Take the :func:`reduce_connections` of the next connections (those reduced in other
        threads: in the order :meth:`add` would have taken them)."""
        if reduced is None:
            return
        for name in _COUNTED:
            self._keep(name, reduced[name])
        self._keep("legs", reduced["legs"])
        if reduced["leg_max"] is not None:
            self.leg_cap = max(self.leg_cap, reduced["leg_max"])
        # the last point before the first data ACK is before any cut (the cap is >= 0)
        points = reduced["flight"]
        self._keep("flight", points.filter(pl.col("ts_s") < pl.col("t_ack1") + 0.5 * self.leg_cap)
                   .select("conn", "ts_s", "top"))
        for name in _AS_REDUCED:
            self._keep(name, reduced[name])
        self.spa += reduced["spa"]
        self.held_rows += reduced["legs"].height
        if self.held_rows >= HOLD_ROWS:
            self._flush()

    def _keep(self, name, part):
        self.held.setdefault(name, []).append(
            part.to_frame() if isinstance(part, pl.Series) else part)

    def _flush(self):
        """Count the counted parts held (their distinct rows and ``_n``) and move the others to
        the spool, a frame per part (all at once: "flight" and "flight_conns" are read back
        frame by frame, in pairs)."""
        for name, frames in self.held.items():
            if not frames:
                continue
            frame = pl.concat(frames, how="vertical")
            frames.clear()
            if name not in _COUNTED:
                self.spool.append(f"hosts.{name}", frame)
                continue
            self._count(name, frame.group_by(frame.columns).agg(_n=pl.len().cast(pl.Int64)))
        self.held_rows = 0

    def _count(self, name, counts):
        """Add ``counts`` (distinct rows of the part ``name`` and ``_n``) to those counted."""
        if self.counted[name] is not None:
            counts = pl.concat([self.counted[name], counts], how="vertical").group_by(
                counts.columns[:-1]).agg(pl.col("_n").sum())
        self.counted[name] = counts

    def parts(self):
        """Everything kept so far, as :meth:`absorb` takes it (picklable: the facts of the
        connections of one hash partition, sent from the process that streamed them)."""
        self._flush()
        return {"counted": self.counted, "spa": self.spa, "leg_cap": self.leg_cap,
                "spooled": {name: list(self.spool.frames(f"hosts.{name}"))
                            for name in ("legs", "flight", *_AS_REDUCED)}}

    def absorb(self, parts):
        """Add the facts of other connections (:meth:`parts` of another instance; connection
        ids unique across both). The statistics of :meth:`result` do not depend on the order
        of the connections (the first flights are read back in the pairs of frames they were
        kept in). Each instance kept first-flight points below its own running bound (the
        class docstring): the merged facts are those one instance of every connection gives
        whenever both bounds reach the final cut, i.e. unless nearly all of a part's later
        connections have a longer sender leg than every earlier one."""
        self._flush()
        for name, counts in parts["counted"].items():
            if counts is not None:
                self._count(name, counts)
        for name, frames in parts["spooled"].items():
            for frame in frames:
                self.spool.append(f"hosts.{name}", frame)
        self.spa += parts["spa"]
        self.leg_cap = max(self.leg_cap, parts["leg_cap"])

    def _all(self, name):
        if name in _COUNTED:    # every row as often as it was added (in no particular order)
            counts = self.counted[name]
            if counts is None:
                return None
            rows = counts.drop("_n")[np.repeat(np.arange(counts.height), counts["_n"].to_numpy())]
            return rows["mss"] if name == "mss" else rows
        frame = self.spool.concat(f"hosts.{name}")
        return frame.to_series() if frame is not None and name in _SERIES else frame

    def result(self, *, min_flows=5):
        """The :class:`~traceflow.models.model.Hosts` of every connection added."""
        self._flush()
        if not self.spool.count("hosts.legs"):
            return Hosts(mss=None, segment_size=None, initial_window=None, initial_window_flows=0,
                         initial_window_observable=False, receiver_window=None, min_rto_s=None,
                         rto_samples=0, delayed_ack=None, segments_per_ack=None, vantage="unknown")
        mss = _mode(self._all("mss").to_numpy())
        per_conn = self._all("per_conn")
        full = per_conn.filter(pl.col("n_data") >= 3)
        sack, stamps, wscale = _options(self._all("options"))
        seg, seg_quality = _segment_size(per_conn, mss, stamps)
        header = _mode(full["header"].to_numpy()) if full.height else None
        legs = self._all("legs")
        where = vantage(legs)
        observable = where == "sender"
        iw_quality = {}
        if not observable:
            # behind the bottleneck the timestamp echoes mark the first flights, where timed
            # flights cannot be told from what they released
            echoed = self._all("flight_ts")
            iw, iw_n = _window_of_flights(
                echoed["flight"].to_numpy() if echoed is not None else np.zeros(0), seg)
            if iw_n >= min_flows:
                iw_quality["initial_window"] = (
                    f"ok: {iw_n:,} first flights marked by their timestamp echoes")
        if "initial_window" not in iw_quality:
            iw, iw_n = _initial_window(self.spool.frames("hosts.flight"),
                                       self.spool.frames("hosts.flight_conns"), legs, seg)
        timeouts = self._all("timeouts")
        rto, rto_n = _min_rto(timeouts)
        init_rto, init_rto_n = _initial_rto(self._all("syn_gaps"))
        spa = _segments_per_ack(*self.spa)
        cc, cc_confidence, cc_evidence = congestion.aggregate(self._all("cc"))
        return plausible(Hosts(
            mss=None if mss is None else int(mss),
            segment_size=None if seg is None else int(seg),
            initial_window=iw if iw_n >= min_flows else None,
            initial_window_flows=iw_n,
            initial_window_observable=observable or "initial_window" in iw_quality,
            receiver_window=_receiver_window(self._all("rwnd")),
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
            **_app_delays({name: self._all(name) for name in ("request", "response", "close")},
                          sender_side=where == "sender"),
            quality={"segment_size": seg_quality, **iw_quality,
                     "congestion_control": congestion.quality(cc, cc_evidence)},
            congestion_control=cc,
            congestion_control_confidence=cc_confidence,
            congestion_control_evidence=cc_evidence,
        ))


#: the floors of real stacks: RFC 6298's minimum RTO is 1 s, Linux's 200 ms (TCP_RTO_MIN), and
#: none goes lower; the initial RTO is 1 s (RFC 6298, Linux TCP_TIMEOUT_INIT), 3 s in older stacks
STACK_MIN_RTO_S = 0.2
STACK_INITIAL_RTO_S = 1.0
#: Linux's (and RFC 6928's) initial window, segments: what a stack that shows Linux's options
#: (SACK, timestamps, window scaling) uses when the capture cannot show it
LINUX_INITIAL_WINDOW = 10
#: jiffy rounding and timer slack: a measured RTO this far below a floor is still that floor
RTO_SLACK = 0.9
#: why an initial window is not observed
_NO_WINDOW = "no first flight was the window's (none sent beyond it ending in a full segment)"
_QUEUED_FLIGHT = "behind the bottleneck the first flight queues with the segments it releases"


def plausible(hosts):
    """``hosts`` with each doubtful value flagged in ``hosts.quality`` (``ok``, ``lower bound``,
    ``default`` or ``implausible``, with why), and replaced where no stack behaves so.

    - initial window: at a vantage point behind the bottleneck the first flight cannot be told
      from what it released, so the estimate is a lower bound; where the handshakes show a
      modern stack (SACK and window scaling; timestamps may be off) and the bound does not exceed
      Linux's, or no flight shows the window at all, the value
      is Linux's :data:`LINUX_INITIAL_WINDOW` (flagged ``default``, the bound in the reason;
      where the timestamp echoes mark the first flights, :func:`_echo_flights`, it is observed);
    - minimum RTO below :data:`STACK_MIN_RTO_S`, or above the initial RTO: no stack's floor (the
      "timeouts" were other retransmissions); dropped (the replay keeps its profile's);
    - initial RTO below :data:`STACK_INITIAL_RTO_S`: duplicate SYN/ACKs are not a timer;
      dropped."""
    q = dict(hosts.quality)
    q.setdefault("segment_size", "ok")
    iw = hosts.initial_window
    modern = hosts.sack and hosts.window_scale is not None
    if iw is not None and hosts.initial_window_observable:
        q.setdefault("initial_window", "ok")
    elif modern and (iw is None or iw <= LINUX_INITIAL_WINDOW):
        why = (_NO_WINDOW if iw is None
               else f"{_QUEUED_FLIGHT}, the capture shows at least {iw:g}")
        q["initial_window"] = f"default: Linux's {LINUX_INITIAL_WINDOW} segments (RFC 6928); {why}"
        iw = float(LINUX_INITIAL_WINDOW)
    elif iw is None:
        q["initial_window"] = f"unknown: {_NO_WINDOW}"
    else:
        q["initial_window"] = f"lower bound: {_QUEUED_FLIGHT}"
    min_rto, init_rto = hosts.min_rto_s, hosts.initial_rto_s
    if init_rto is not None and init_rto < RTO_SLACK * STACK_INITIAL_RTO_S:
        q["initial_rto_s"] = (f"implausible: {init_rto * 1e3:.0f} ms between a SYN's copies is "
                              f"below every stack's initial RTO ({STACK_INITIAL_RTO_S:g} s): "
                              "duplicates, not a timer")
        init_rto = None
    elif init_rto is not None:
        q["initial_rto_s"] = "ok"
    if min_rto is not None and (min_rto < RTO_SLACK * STACK_MIN_RTO_S
                                or (init_rto is not None and min_rto > init_rto)):
        q["min_rto_s"] = (f"implausible: {min_rto * 1e3:.0f} ms from {hosts.rto_samples} "
                          f"retransmissions is outside every stack's floor ({STACK_MIN_RTO_S:g} s "
                          "up to the initial RTO): not timeouts")
        min_rto = None
    elif min_rto is not None:
        q["min_rto_s"] = "ok" if hosts.rto_samples >= 5 else \
            f"guess: from {hosts.rto_samples} timeouts"
    return dataclasses.replace(hosts, initial_window=iw, min_rto_s=min_rto,
                               initial_rto_s=init_rto, quality=q)


def _segment_size(per_conn, mss, timestamps):
    """``(payload bytes of a full segment, quality)``: the largest payload that bulk
    transfers (connections of 3 data segments or more) share — at least a tenth of them reach it
    — where the handshakes' MSS (less 12 bytes of timestamps) allows it; interactive traffic,
    whose largest payloads are its messages, is not a segment size. Without bulk transfers: the
    MSS less its options, flagged."""
    full = per_conn.filter(pl.col("n_data") >= 3)["max_payload"].to_numpy()
    cap = None if mss is None else int(mss) - (12 if timestamps else 0)
    if full.size:
        values, counts = np.unique(full, return_counts=True)
        common = values[counts >= max(1, 0.1 * full.size)]
        if cap is not None:
            common = common[common <= cap]
        if common.size and (cap is None or common.max() >= cap // 2):
            return int(common.max()), "ok"
    if cap is not None:
        return cap, ("default: no bulk transfers; the handshakes' MSS less its options")
    payloads = per_conn["max_payload"].to_numpy()
    payloads = payloads[payloads > 0]
    if payloads.size:
        return int(payloads.max()), "guess: no bulk transfers and no MSS option; the largest payload"
    return None, "unknown: no data"


def infer_hosts(packets, *, min_flows=5):
    """Infer :class:`~traceflow.models.model.Hosts` from a packets table (Arrow table, Polars
    frame), whole; :class:`HostFacts` streams."""
    facts = HostFacts()
    df = connections(packets)
    if df.height:
        facts.add(df)
    return facts.result(min_flows=min_flows)


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



def _initial_window(points, conns, legs, seg):
    """Median first-flight size (segments) over connections that sent beyond it, and their count.
    ``points``, ``conns``: the ``flight`` and ``flight_conns`` parts of the connections, in
    the groups they were added in, taken pair by pair (the points of a long capture joined
    whole would take several times their memory)."""
    if not seg:
        return None, 0
    # The propagation part of the capture -> sender -> capture leg: a low quantile over all
    # connections (a handshake that met a queue would push the boundary past the first flight).
    sl = legs.select(leg=_sender_leg(legs)).drop_nulls()["leg"]
    leg = max(float(sl.quantile(0.05)), 0.0) if sl.len() else 0.0
    # Half the sender leg: at a sender-side capture the leg is the host's reaction time, so
    # segments released by the first ACK fall outside; at a receiver-side capture it is mid-gap.
    flight = []
    for some_points, some_conns in zip(points, conns):
        flights = (some_points.join(some_conns.select("conn", "t_ack1"), on="conn")
                   .group_by("conn").agg(
                       flight=pl.col("top").filter(pl.col("ts_s") < pl.col("t_ack1") + 0.5 * leg)
                       .max()))
        ok = (some_conns.join(flights, on="conn", how="left")
              .filter(pl.col("flight").is_not_null() & (pl.col("total") > pl.col("flight"))))
        flight.append(ok["flight"].to_numpy())
    return _window_of_flights(np.concatenate(flight) if flight else np.zeros(0), seg)


def _window_of_flights(flight, seg):
    """``(initial window in segments, flights)`` of first-flight sizes ``flight`` (bytes) of
    connections that sent beyond them, ``seg`` bytes a segment: the common size among the largest
    flights that end in a full segment (a window does; a flight that ends in a partial one is
    the application's: an SSH banner, an FTP reply)."""
    if flight.size == 0 or not seg:
        return None, 0
    flight = flight[flight % seg == 0]
    if flight.size == 0:
        return None, 0
    segments = np.ceil(flight / seg)
    # A first flight ends when the window is used up or when the application had nothing more to
    # send yet; the latter are smaller. The window is the common size among the largest flights.
    top = np.quantile(segments, 0.99)
    iw = _mode(segments[segments >= top / 2])
    return float(iw), int(flight.size)


def _receiver_window(per):
    if per is None or per.height == 0:
        return None
    return int(per["win"].median())


def _options(hs):
    """``(sack, timestamps, window_scale)``: SACK-permitted and Timestamps when both SYN and
    SYN/ACK carry them in at least :data:`OPTION_SHARE` of the connections with a handshake
    (None without one); the data receivers' most common window-scale shift."""
    if hs is None or hs.height == 0:
        return None, None, None
    wscale = _mode(hs["wscale"].drop_nulls().to_numpy())
    return (bool(hs["sack"].mean() >= OPTION_SHARE), bool(hs["ts"].mean() >= OPTION_SHARE),
            None if wscale is None else int(wscale))


def _app_delays(delays, *, sender_side):
    """Medians (s) of the client's request delay and, at a sender-side vantage point, of the
    server's response and close delays (see the module docstring); None where unmeasured.
    ``delays``: the ``request``, ``response`` and ``close`` parts of the connections."""
    def median(x):
        return float(x.median()) if x is not None and x.len() else None

    return {"request_delay_s": median(delays["request"]),
            "response_delay_s": median(delays["response"]) if sender_side else None,
            "close_delay_s": median(delays["close"]) if sender_side else None}


def _timeouts(r):
    """The timeout retransmissions of the data senders (see the module docstring) in the
    kernel's facts ``r``: ``conn``, ``ts``, ``rel_seq``, ``since_tx`` (s since the segment's
    previous transmission), ``srtt`` (s, the sender's smoothed RTT then: RFC 6298's estimator,
    gain 1/8, over the handshake round trip that spans it and the data -> ACK samples of
    segments sent once, Karn), ``nth`` (1 for a segment's first timeout, 2 for the next, ...),
    ``last_rx`` and ``prev_tx`` (s, the receiver's last packet and the segment's previous copy
    before it)."""
    return _nan_as_null(r["timeouts"]).select(
        "conn", "ts", "rel_seq", "since_tx", "srtt", "nth", "last_rx", "prev_tx")


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


def _initial_rto(gaps):
    """Median of the ``syn_gaps`` ``gaps`` (s between the first two copies of a SYN or SYN/ACK)
    and the number of handshakes with a retransmission: the RTO before any RTT sample."""
    gaps = gaps.drop_nulls()
    if gaps.len() == 0:
        return None, 0
    return float(gaps.median()), int(gaps.len())


def _segments_per_ack(late_data, late_acks, new_data, acks):
    """New data segments per acknowledgment advance, pooled over connections, beyond the first
    :data:`QUICKACK_SEGMENTS` segments of each (all of them when no connection is that long)."""
    if late_acks and late_data:
        return float(late_data / late_acks)
    if acks == 0 or new_data == 0:
        return None
    return float(new_data / acks)

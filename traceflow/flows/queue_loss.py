"""Exact loss at a bottleneck from two captures: one before the queue, one after it.

A packet of the data senders' direction that the upstream capture (``before``) holds and the
downstream capture (``after``) does not was dropped in between. Packets are matched by their
headers (addresses, ports, sequence and acknowledgment numbers, flags, payload length, window and
the timestamp option), as a multiset: a retransmission carries a new timestamp (or, without the
option, is one more copy of the same key), so each copy is matched at most once.

Counted are the packets sent by the data sender of each connection (:func:`traceflow.flows.hosts.connections`:
data segments and that side's SYN/ACK, FIN and pure ACKs: everything that enters the bottleneck
queue of a download), of the connections present in both captures, sent while both captures ran
(before-capture timestamps from the after-capture's first packet to ``margin_s`` before its
last, so packets still queued when it stopped are not taken for drops). Both captures must share
one clock (taken on one machine, or synchronised).
"""
from dataclasses import dataclass

import polars as pl

from traceflow.errors import InputFormatError

#: seconds before the end of the downstream capture ignored: longer than any queueing delay
MARGIN_S = 2.0
_KEY = ["src", "dst", "sport", "dport", "seq", "ack", "tcp_flags", "payload_len", "window",
        "tsval", "tsecr"]


@dataclass
class QueueLoss:
    """Packets of the data direction that reached the queue (``arrived``) and were lost there
    (``lost``); ``data_*`` the same for segments carrying payload. Rates are fractions."""
    arrived: int
    lost: int
    data_arrived: int
    data_lost: int

    @property
    def rate(self):
        return self.lost / self.arrived if self.arrived else float("nan")

    @property
    def data_rate(self):
        return self.data_lost / self.data_arrived if self.data_arrived else float("nan")


def _sender_packets(packets):
    from traceflow.flows.hosts import connections

    df = connections(packets)
    if df.height == 0:
        return df
    missing = [k for k in _KEY if k not in df.columns]
    if missing:
        raise InputFormatError(f"not a packets table: missing {', '.join(missing)}")
    return df.filter(pl.col("sender")).select(_KEY + ["ts"]).with_columns(
        pl.col("ts").cast(pl.Int64))


def queue_loss(before, after, *, margin_s=MARGIN_S):
    """:class:`QueueLoss` of the packets in ``before`` (packets table upstream of the queue)
    missing from ``after`` (downstream)."""
    b, a = _sender_packets(before), _sender_packets(after)
    if b.height == 0 or a.height == 0:
        raise InputFormatError("no TCP packets of a data sender in both captures")
    lo, hi = int(a["ts"].min()), int(a["ts"].max()) - int(margin_s * 1e9)
    conn = ["src", "dst", "sport", "dport"]
    both = b.select(conn).unique().join(a.select(conn).unique(), on=conn)
    b = b.filter((pl.col("ts") >= lo) & (pl.col("ts") <= hi)).join(both, on=conn)
    seen = a.group_by(_KEY, maintain_order=False).agg(n_after=pl.len())
    counts = (b.group_by(_KEY).agg(n_before=pl.len())
              .join(seen, on=_KEY, how="left", nulls_equal=True)
              .with_columns(lost=(pl.col("n_before") - pl.col("n_after").fill_null(0)).clip(0),
                            data=pl.col("payload_len") > 0))
    tot = counts.select(arrived=pl.col("n_before").sum(), lost=pl.col("lost").sum(),
                        data_arrived=pl.col("n_before").filter(pl.col("data")).sum(),
                        data_lost=pl.col("lost").filter(pl.col("data")).sum())
    return QueueLoss(**{k: int(tot[k][0] or 0) for k in tot.columns})

"""Did a connection's SYN/ACK wait in the bottleneck queue? The packet-pair test at the capture.

Behind a bottleneck of capacity C, a frame that found the link busy leaves right after the one
before it, so at a capture downstream of the bottleneck it follows that frame by one transmission
time: its own (size · 8 / C) behind a serializing link, the previous frame's behind a token bucket
such as Linux HTB, which sends a frame as soon as the last one's debt is repaid. A frame that found
the link idle follows later than both. For each flow's SYN/ACK this gives whether it queued,
independently of the RTT it measured, so a handshake slowed by host or relay jitter is not mistaken
for a queued one (:func:`traceflow.models.fit.path_rtt`).
"""
from __future__ import annotations

import polars as pl

from traceflow.flows.scatter import scattered
from traceflow.flows.transfers import ACK, SYN

#: a gap up to this many transmission times (capture timestamp jitter) still counts as back to back
BACK_TO_BACK = 1.25


def synack_queued(packets, flows, capacity_bps, gaps=None):
    """``flows`` with ``synack_queued``: True when the flow's SYN/ACK followed the frame before it
    in its direction within one transmission time of the larger of the two at ``capacity_bps``
    (bit/s, the bottleneck's rate as the fit estimates it, IP bytes), False when the link was idle before it, null when its SYN/ACK is not
    in ``packets`` or the capacity is unknown. Only meaningful for a capture downstream of the
    bottleneck in the SYN/ACK's direction; :func:`~traceflow.models.fit.path_rtt` uses it only when
    the queue sits on that leg (capture → server → capture). ``gaps``: the
    :meth:`SynAckGaps.table` of ``packets`` when streamed (``packets`` is then not read)."""
    if gaps is None:
        stream = SynAckGaps()
        stream.feed(packets)
        gaps = stream.table()
    if not capacity_bps or capacity_bps <= 0 or gaps.height == 0:
        return flows.with_columns(synack_queued=pl.lit(None, dtype=pl.Boolean))
    down = gaps.select("t", synack_queued=pl.col("gap")
                       <= BACK_TO_BACK * pl.col("size") * 8e9 / capacity_bps)
    at = (pl.col("start").cast(pl.Int64) + (pl.col("rtt_syn") * 1e9).round().cast(pl.Int64))
    hit = (flows.select(t=at).with_row_index("_row").filter(pl.col("t").is_not_null()).sort("t")
           .join_asof(down.sort("t", maintain_order=True), on="t", strategy="nearest",
                      tolerance=2_000))
    return flows.with_columns(scattered("synack_queued", hit["_row"], hit["synack_queued"],
                                        flows.height))


class SynAckGaps:
    """The packet-pair test's measurements, packet batch by batch (in time order): for every
    SYN/ACK, ``t`` (ns), ``gap`` (ns since the frame before it from a server: an address that
    sent a SYN/ACK so far) and ``size`` (IP bytes, the larger of the two). Keeps the server
    addresses, the last server frame and, in ``spool`` (:class:`~traceflow.scale.spool.Spool`;
    default: one of its own), one row per SYN/ACK."""

    SCHEMA = {"t": pl.Int64, "gap": pl.Int64, "size": pl.Float64}

    def __init__(self, spool=None):
        from traceflow.scale.spool import Spool

        self.servers = None
        self.last = None
        self.spool = Spool() if spool is None else spool

    def feed(self, packets):
        """Consume a packets DataFrame (``ts``, ``src``, ``ip_len``, ``tcp_flags``)."""
        self.keep(self.measure(packets))

    def keep(self, rows):
        """Keep the rows :meth:`measure` made (None: nothing)."""
        if rows is not None:
            self.spool.append("synack_gaps", rows)

    def measure(self, packets):
        """The rows of the SYN/ACKs among ``packets`` (None without any server frame), not yet
        kept: :meth:`feed` in two halves, so that the measurement can run on the thread that
        makes the batches (:class:`traceflow.scale.prefetch.Prefetch`) and the spool be written
        by one thread."""
        synack = (pl.col("tcp_flags") & (SYN | ACK)) == (SYN | ACK)
        d = packets.select(t=pl.col("ts").cast(pl.Int64), src="src", ip_len="ip_len",
                           synack=synack.fill_null(False))
        new = d.filter(pl.col("synack"))["src"].unique()
        self.servers = new if self.servers is None else pl.concat([self.servers, new]).unique()
        down = d.filter(pl.col("src").is_in(self.servers.implode())).drop("src")
        if self.last is not None:
            down = pl.concat([self.last, down])
        if down.height == 0:
            return None
        if not down["t"].is_sorted():   # a batch in time order (most) is not sorted again
            down = down.sort("t", maintain_order=True)
        self.last = down.tail(1).with_columns(synack=pl.lit(False))
        return (down.with_columns(
            gap=pl.col("t").diff(),
            size=pl.max_horizontal("ip_len", pl.col("ip_len").shift(1)).cast(pl.Float64))
            .filter(pl.col("synack")).select("t", "gap", "size").cast(self.SCHEMA))

    def table(self):
        """The rows of every SYN/ACK so far (see the class docstring)."""
        rows = self.spool.concat("synack_gaps")
        return pl.DataFrame(schema=self.SCHEMA) if rows is None else rows

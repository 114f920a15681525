"""Record-range parallelism: the flow table of one capture from ranges of its records, each
decoded and split by its own worker, equal byte for byte to the table of one pass.

Why: with hash partitions of the endpoint pairs (``flows --partitions``) every worker decodes
every packet, so N workers pay the decoding N times. Here a capture is cut at record boundaries
(:func:`plan_ranges`: pcap records and pcapng blocks framed without decoding,
:func:`traceflow.pcap.reader.plan_chunks`; a packets Parquet by rows), and each worker decodes
only its range and runs the flow stream (:class:`traceflow.flows.table.FlowStream`) on it.

What a range cannot decide alone, and how it is stitched (:func:`merge_ranges`). Only a
connection that touches a border can differ from the one-pass table:

- *head* connections: those that open a pair's state within the idle timeout after the range's
  first packet (the pair may have a connection open since the previous range), and those that
  replace a head connection by a new ISN (the ISN rule compares with a base the range may not
  know). The kernel marks them (``FlowSplitter(head_until=...)``, row field ``head``).
- *tail* connections: those still open at the range's end (the next range may continue them).

A worker hands back the rows of all its connections, and the packets of these candidates in
their prepared (decoded) form. The merge (:func:`_stitched`) matches a head group to an
earlier range's tail of the same endpoint pair within the idle timeout before it (unless the
group opens with a SYN of a new ISN, which one pass would split at too), and feeds only the
matched heads and tails, in capture order, to one more flow stream: a head connection
continues whatever the previous ranges left open on its pair, a tail connection that is not a
head one starts afresh at its first packet (``force``, as its range found it start: after an
idle gap or by a new ISN its state does not depend on anything before). Every other row is the
range's own (an unmatched tail's close is decided again at the end of the whole input). Matched
connections are few (those that really cross a cut), so the merge is short; the candidates'
packets are what a range worker keeps (about twice the idle timeout's share of its range).

Exactness rests on timestamps that never run backwards (checked on every packet; the usual
case): then a pair's idle gap in a range is its idle gap in the whole capture, and the expiry
sweeps, whose phase a range does not know, change no row (a pair is swept only after its idle
timeout, when its next packet would split anyway). Captures whose timestamps step back, even
within a re-ordering window, are processed in one pass instead (:func:`range_flows` returns
None). Connections are ordered as in one pass: by :data:`traceflow.flows.table.SORT_KEY`, exact
ties by their first packet's frame number (the one-pass ``conn`` numbers connections in that
order).
"""
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from traceflow.flows.table import BATCH_ROWS, FLOW_SCHEMA, SORT_KEY, FlowStream


@dataclass(frozen=True)
class Range:
    """Records of one input that a worker decodes on its own.

    ``source``: the input (a capture or packets Parquet path; a pyarrow Table in-process);
    ``chunk``: the byte range of a capture (:class:`traceflow.pcap.reader.Chunk`) or None;
    ``rows``: ``(start, stop)`` packet rows of a packets table or None; ``first_frame``: the
    1-based number of the range's first record in the whole input; ``index``: its position."""

    source: object
    chunk: object = None
    rows: tuple | None = None
    first_frame: int = 1
    index: int = 0


def plan_ranges(source, n):
    """Cut ``source`` into about ``n`` :class:`Range` s of similar size.

    A capture is cut at record (pcap) or block (pcapng) boundaries found by framing it without
    decoding; a compressed capture, a pipe or a small file is one range (it does not split:
    decompressing is serial). A packets Parquet (with its other chunk parts) is cut by rows,
    each range reading only the row groups it needs; a pyarrow Table by rows."""
    from traceflow.flows.table import input_kind

    if isinstance(source, pa.Table):
        return row_ranges(source, source.num_rows, n)
    if input_kind(source) == "capture":
        from traceflow.pcap.reader import plan_chunks

        size = os.path.getsize(source)
        chunks = plan_chunks(source, target_bytes=max(1, math.ceil(size / max(n, 1))))
        return [Range(str(source), chunk=c, first_frame=c.first_record_index + 1, index=i)
                for i, c in enumerate(chunks)]
    return row_ranges(source, _parquet_rows(source), n)


def row_ranges(source, total, n, cuts=None):
    """``source``'s rows as :class:`Range` s: cut at ``cuts`` (row numbers) or in ``n`` equal
    parts."""
    if cuts is None:
        cuts = [round(total * k / n) for k in range(1, n)] if n > 1 else []
    edges = sorted({0, total, *(c for c in cuts if 0 < c < total)})
    return [Range(source if isinstance(source, pa.Table) else str(source), rows=(a, b),
                  first_frame=a + 1, index=i) for i, (a, b) in enumerate(zip(edges, edges[1:]))]


def _parquet_files(path):
    from traceflow.scale.parallel import chunk_parts

    return chunk_parts(path)


def _parquet_rows(path):
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(p).num_rows for p in _parquet_files(path))


def _range_batches(r, batch_size):
    """The packets of range ``r`` as record batches, in order."""
    from traceflow.flows.table import _PACKET_COLUMNS

    if r.chunk is not None:
        from traceflow.pcap.reader import iter_batches

        yield from iter_batches(r.source, batch_size=batch_size, chunk=r.chunk)
        return
    start, stop = r.rows
    if isinstance(r.source, pa.Table):
        yield from r.source.slice(start, stop - start).to_batches(max_chunksize=batch_size)
        return
    import pyarrow.parquet as pq

    at = 0  # rows of the stream before the current row group
    for part in _parquet_files(r.source):
        with pq.ParquetFile(part) as f:
            columns = [c for c in _PACKET_COLUMNS if c in f.schema_arrow.names]
            for g in range(f.metadata.num_row_groups):
                size = f.metadata.row_group(g).num_rows
                lo, hi = max(start - at, 0), min(stop - at, size)
                at += size
                if lo >= hi:
                    continue
                table = f.read_row_group(g, columns=columns).slice(lo, hi - lo)
                yield from table.to_batches(max_chunksize=batch_size)
                if at >= stop:
                    return


class RangeStream(FlowStream):
    """A :class:`FlowStream` over one range (``border``: hand back its border connections'
    packets, :mod:`traceflow.scale.ranges`) or over the ranges' border packets (the merge).

    Keeps every finished connection's row (with ``head``, ``at_end`` and ``first_frame``, the
    frame number of its first packet), checks that the timestamps never run backwards
    (``monotone``), and with ``border`` keeps the prepared packets of the connections that may
    be border ones: the open ones and the head ones (those of connections that ended otherwise
    are dropped as they end)."""

    def __init__(self, *, idle_timeout, timestamps, first_frame=1, head=False, border=False,
                 want_samples=False):
        super().__init__(idle_timeout=idle_timeout, timestamps=timestamps,
                         want_samples=want_samples,
                         keep_fields=(*_BORDER_FIELDS, "first_fwd", *_PAIR[:-1]))
        self.rows = first_frame - 1
        self.head = head
        self.border = border
        self.first_ts = self.prev_ts = None
        self.monotone = True
        self.firsts = []        # (conn, first_frame) of the connections opened
        # (packets, their conns, which of them may still be needed): copied only when less
        # than half of a batch may, so each packet is copied about once at most
        self.kept, self.kept_rows, self.pruned_rows = [], 0, 0
        self.dead = []          # conns ended not as head ones, whose packets can go
        self.on_packets = self._packets

    def consume(self, prepared):
        ts = prepared[1]
        if ts.size:
            if self.first_ts is None:
                self.first_ts = int(ts[0])
                if self.head:
                    self.splitter.head_until = self.first_ts + self.idle_ns
            self.monotone &= bool((self.prev_ts is None or ts[0] >= self.prev_ts)
                                  and (ts.size < 2 or (np.diff(ts) >= 0).all()))
            self.prev_ts = int(ts[-1])
        super().consume(prepared)

    def _packets(self, done, out):
        fresh = out["fresh"].view(np.bool_)
        self.firsts.append((out["conn"][fresh], done["frame"].to_numpy()[fresh]))
        if self.border:
            self.kept.append((done.drop("sweep", "pos"), out["conn"], None))
            self.kept_rows += done.height

    def _collect(self):
        before = len(self.waiting)
        super()._collect()
        if not self.border or len(self.waiting) == before:
            return
        ended = self.waiting[-1]
        self.dead.append(ended.filter((pl.col("head") == 0) & (pl.col("at_end") == 0))["conn"])
        if self.kept_rows > 1.5 * self.pruned_rows + BATCH_ROWS:
            # amortised: the ended connections are marked when the kept packets have grown by
            # half since; a batch is copied when less than half of it is still needed
            dead = np.concatenate([d.to_numpy() for d in self.dead])
            kept = []
            for packets, of, alive in self.kept:
                alive = np.isin(of, dead, invert=True) & (True if alive is None else alive)
                if alive.mean() >= 0.5:
                    kept.append((packets, of, None if alive.all() else alive))
                elif alive.any():
                    kept.append((packets.filter(pl.Series(alive)), of[alive], None))
            self.kept, self.dead = kept, []
            self.kept_rows = self.pruned_rows = sum(of.size for _, of, _ in kept)

    def border_packets(self, conns):
        """The kept packets of the connections ``conns`` (a Series), with ``conn``, in capture
        order; None without any."""
        out = []
        for packets, of, _ in self.kept:
            mask = np.isin(of, conns.to_numpy())
            if mask.any():
                out.append(packets.filter(pl.Series(mask)).hstack([pl.Series("conn", of[mask])]))
        return pl.concat(out) if out else None

    def flow_rows(self):
        """Every finished connection's row with ``head``, ``at_end``, ``conn`` and
        ``first_frame`` (after :meth:`finish`)."""
        schema = {**{c: t for c, t in FLOW_SCHEMA.items() if c != "flow_id"},
                  "conn": pl.Int64, "client_is_a": pl.Boolean,
                  **{c: pl.Int64 for c in _BORDER_FIELDS}, "first_fwd": pl.Boolean,
                  **{c: pl.UInt64 for c in _PAIR[:4]}, "port_a": pl.UInt16, "port_b": pl.UInt16}
        rows = (pl.concat(self.waiting, how="vertical") if self.waiting
                else pl.DataFrame(schema=schema))
        firsts = pl.DataFrame({
            "conn": np.concatenate([c for c, _ in self.firsts] or [np.zeros(0, np.int64)]),
            "first_frame": np.concatenate([f for _, f in self.firsts]
                                          or [np.zeros(0, np.int64)])})
        return rows.join(firsts, on="conn", how="left")


#: the splitter's row fields a range keeps: which connections may touch a border, and their
#: endpoint pair (unordered: the a/b sides of the kernel)
_BORDER_FIELDS = ("head", "at_end", "cause", "syn_opened", "seen_a", "seen_b", "base_a",
                  "base_b")
_PAIR = ("a_hi", "a_lo", "b_hi", "b_lo", "port_a", "port_b", "proto")


def range_part(task):
    """One worker's range (a task of :func:`range_flows`, top level so worker processes can
    import it): a dict with ``rows`` (its finished connections' flow rows with ``first_frame``;
    ``head``, ``tail``, the endpoint pair, ``conn`` and the splitter's row fields
    :data:`_BORDER_FIELDS` for the border candidates), ``packets`` (the prepared packets of
    the border candidates, in capture order, with ``conn``; with ``spool``, a directory, the
    Arrow IPC file under it that holds them), the range's first and last timestamps (ns),
    ``monotone``, ``trace_end`` (its last IP packet's timestamp) and, with ``want_samples``,
    ``samples``: the RTT samples of its connections
    (:func:`traceflow.flows.pathrtt.path_samples`, by ``conn``)."""
    from traceflow.scale.prefetch import Prefetch

    r, idle_timeout, timestamps, batch_size, last, spool, want_samples = task
    stream = RangeStream(idle_timeout=idle_timeout, timestamps=timestamps,
                         first_frame=r.first_frame, head=r.index > 0, border=True,
                         want_samples=want_samples)
    with Prefetch(stream.prepare(b) for b in _range_batches(r, batch_size)) as ready:
        for prepared in ready:
            stream.consume(prepared)
    stream.finish()
    rows = stream.flow_rows().with_columns(tail=(pl.col("at_end") == 1) & (not last),
                                           head=pl.col("head") == 1)
    candidate = pl.col("head") | pl.col("tail")
    keys = [*_BORDER_FIELDS, *_PAIR[:-1], "tail", "first_fwd"]
    rows = rows.with_columns(pl.when(candidate).then(pl.col(c)).alias(c) for c in keys)
    packets = stream.border_packets(rows.filter(candidate)["conn"])
    if packets is not None:
        if spool is not None:   # the merge reads back only the connections it feeds again
            path = Path(spool) / f"range-{r.index}.arrow"
            packets.write_ipc(path)
            packets = str(path)
    return {"rows": rows, "packets": packets, "first_ts": stream.first_ts,
            "last_ts": stream.prev_ts, "monotone": stream.monotone,
            "trace_end": stream.trace_end, "samples": stream.path_samples()}


def _stitched(parts, idle_ns):
    """Which border candidates of the ranges are fed again, and how: a DataFrame of ``range``,
    ``conn`` and ``force`` (start it afresh at its first packet).

    A head group (a head connection opening its pair's state and the head connections that
    replace it by a new ISN) may continue a connection open before its range only if a
    previous range ends with a connection of its pair (a tail) whose last packet is within
    the idle timeout before the group's first: those groups and tails are *matched*, and fed
    again, the head groups as they come (the rules decide), every other connection fed again
    afresh (it started after an idle gap or by a new ISN in its range). A group that opens
    with a SYN whose ISN differs from the base of its direction in the latest such tail
    (itself no head connection, so its row is the one-pass connection's) replaces that tail's
    connection in one pass too (a new ISN): not matched."""
    rows = pl.concat([p["rows"].filter(pl.col("head").is_not_null())
                      .select("conn", "head", "tail", *_BORDER_FIELDS[2:], "first_fwd", *_PAIR,
                              "start", "end", range=pl.lit(k, pl.Int64))
                      for k, p in enumerate(parts)])
    pair = list(_PAIR)
    heads = rows.filter("head").sort("range", *pair, "conn").with_columns(
        group=pl.when(pl.col("cause") == 0).then(pl.col("conn")).forward_fill()
        .over("range", *pair, order_by="conn"))
    starts = heads.filter(pl.col("conn") == pl.col("group"))
    tails = rows.filter("tail").select(*pair, t_range="range", t_conn="conn", t_end="end",
                                       t_head="head", t_seen_a="seen_a", t_seen_b="seen_b",
                                       t_base_a="base_a", t_base_b="base_b")
    near = starts.join(tails, on=pair, how="inner", nulls_equal=True).filter(
        (pl.col("t_range") < pl.col("range"))
        & ((pl.col("start") - pl.col("t_end")).dt.total_nanoseconds() <= idle_ns))

    def side(name):   # the value of the direction the group's first packet was sent in
        return pl.when("first_fwd").then(pl.col(f"{name}_a")).otherwise(pl.col(f"{name}_b"))

    latest = near.filter(pl.col("t_range") == pl.col("t_range").max().over("range", "group"))
    new_isn = latest.filter((pl.col("syn_opened") == 1) & ~pl.col("t_head")
                            & (side("t_seen") == 1) & (side("t_base") != side("base")))
    near = near.join(new_isn.select("range", "group"), on=["range", "group"], how="anti")
    matched_groups = near.select("range", "group").unique()
    matched_tails = near.select(range="t_range", conn="t_conn").unique()
    in_group = heads.join(matched_groups, on=["range", "group"], how="semi")
    return pl.concat([in_group.select("range", "conn", force=pl.lit(False)),
                      matched_tails.join(in_group, on=["range", "conn"], how="anti")
                      .with_columns(force=pl.lit(True))]).unique(["range", "conn"])


def merge_ranges(parts, *, idle_timeout, timestamps, batch_size=BATCH_ROWS, want_samples=False):
    """The flow table of the whole input from its ranges' :func:`range_part` results, in
    order: their rows and the matched border connections' rows, fed again as one stream
    (:func:`_stitched`). With ``want_samples``, ``(table, RTT samples)`` as
    :func:`traceflow.flows.flows_with_rtt_samples` makes them. None when the timestamps ran
    backwards somewhere (the ranges cannot be stitched exactly)."""
    stamped = [p for p in parts if p["first_ts"] is not None]
    if not all(p["monotone"] for p in stamped) or any(
            a["last_ts"] > b["first_ts"] for a, b in zip(stamped, stamped[1:])):
        return None
    idle_ns = int(round(idle_timeout * 1e9))
    trace_end = stamped[-1]["trace_end"] if stamped else None
    again = _stitched(parts, idle_ns)
    stitch = RangeStream(idle_timeout=idle_timeout, timestamps=timestamps,
                         want_samples=want_samples)
    tables, samples = [], []
    for k, p in enumerate(parts):
        mine = again.filter(pl.col("range") == k).drop("range")
        rows = p["rows"].join(mine, on="conn", how="anti").with_columns(src=pl.lit(k))
        if want_samples and p["samples"] is not None:
            samples.append((k, p["samples"].join(mine, on="conn", how="anti")))
        if p["packets"] is not None and mine.height:
            firsts = p["rows"].join(mine, on="conn").select(
                "conn", frame="first_frame", force=pl.col("force").cast(pl.UInt8))
            packets = p["packets"]
            packets = (pl.scan_ipc(packets) if isinstance(packets, str)
                       else packets.lazy())
            # a filter keeps capture order (a semi join need not)
            packets = packets.filter(pl.col("conn").is_in(mine["conn"].implode())).collect()
            packets = packets.join(
                firsts, on=["conn", "frame"], how="left", maintain_order="left").with_columns(
                pl.col("force").fill_null(0)).drop("conn")
            for batch in packets.iter_slices(batch_size):
                stitch.consume(stitch._split(batch))
        # a tail no later range continues: its close as at the end of the whole input
        quiet = pl.lit(trace_end, pl.Int64) - pl.col("end").dt.epoch("ns") <= idle_ns
        tables.append(rows.with_columns(close=pl.when(pl.col("tail").fill_null(False)
                                                      & pl.col("close").is_in(["EOF", "IDLE"]))
                                        .then(pl.when(quiet).then(pl.lit("EOF"))
                                              .otherwise(pl.lit("IDLE")))
                                        .otherwise("close")))
    stitch.trace_end = trace_end
    stitch.finish()
    tables.append(stitch.flow_rows().with_columns(src=pl.lit(-1)))
    if want_samples and stitch.samples:
        samples.append((-1, stitch.path_samples()))
    columns = [c for c in FLOW_SCHEMA if c != "flow_id"] + ["first_frame", "src", "conn",
                                                             "client_is_a"]
    table = pl.concat([t.select(columns) for t in tables], how="vertical")
    table = table.sort([*SORT_KEY[:-1], "first_frame"], nulls_last=True, maintain_order=True)
    table = table.with_columns(flow_id=pl.int_range(pl.len(), dtype=pl.Int64))
    if not want_samples:
        return table.select(list(FLOW_SCHEMA))
    from traceflow.flows.pathrtt import labelled_samples

    keys = table.select("src", "conn", "flow_id", "client_is_a")
    labelled = [labelled_samples(path, keys.filter(pl.col("src") == k).drop("src"))
                for k, path in samples] or [labelled_samples(None, keys)]
    return (table.select(list(FLOW_SCHEMA)),
            pl.concat(labelled).sort("ts", "connection", maintain_order=True))


def range_flows(source, *, ranges=None, workers=2, idle_timeout=300.0, timestamps=True,
                batch_size=BATCH_ROWS, executor="local", scheduler=None, want_samples=False):
    """The flow table of ``source`` (as :func:`traceflow.flows.flows` makes it in one pass)
    from ``ranges`` (:func:`plan_ranges`, by default ``workers`` of them) decoded by
    ``workers`` processes (``executor`` ``"dask"``: tasks on ``scheduler`` or a local Dask
    cluster; only the results come back). None when ``source`` does not split (one range) or
    its timestamps run backwards: make it in one pass then. ``want_samples``: ``(table, RTT
    samples)`` as :func:`traceflow.flows.flows_with_rtt_samples` makes them."""
    from traceflow.scale.parallel import map_tasks

    ranges = plan_ranges(source, workers) if ranges is None else ranges
    if len(ranges) < 2:
        return None
    import tempfile

    # on this machine the candidates' packets wait in files (the merge reads back the few it
    # feeds again); a Dask worker sends them back with its result
    with tempfile.TemporaryDirectory(prefix="traceflow-ranges-") as spool:
        tasks = [(r, idle_timeout, timestamps, batch_size, i == len(ranges) - 1,
                  None if executor == "dask" else spool, want_samples)
                 for i, r in enumerate(ranges)]
        parts = map_tasks(range_part, tasks, executor=executor, workers=workers,
                          scheduler=scheduler, progress=False, user_errors=True, label="ranges",
                          first_here=True)
        return merge_ranges(parts, idle_timeout=idle_timeout, timestamps=timestamps,
                            batch_size=batch_size, want_samples=want_samples)

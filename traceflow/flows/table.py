"""Packets → flows: bidirectional connections with counters, close reason and handshake RTTs.

The flow table follows the "Flows" contract of DESIGN.md. How a flow is delimited:

- Packets are grouped by their unordered endpoint pair (address, port, address, port, protocol)
  and kept in capture order (not timestamp order: after a clock step backwards the packets of a
  connection still follow each other as they were seen; ``reorder`` puts them in timestamp
  order within a window first, :mod:`traceflow.pcap.reorder`).
- A flow ends before a packet when the gap since the previous packet of the pair exceeds
  ``idle_timeout`` seconds (a lone timestamp far ahead of both neighbours — the pair's next
  packet, within 65536 packets, is more than ``idle_timeout`` behind it — is a clock glitch and
  splits nothing, while its connection is open), or (TCP) when the packet is a SYN without ACK whose ISN differs from
  the base sequence number of its direction in the current connection (port reuse; the rule
  Wireshark uses for ``tcp.stream``). A SYN with the same ISN is a retransmission: counted in
  ``syn_count``, no new flow. Late packets after a FIN/RST stay in their connection.
- ``start``/``end``: timestamps of the first and last packet in capture order (as Wireshark's
  conversations); ``duration`` = end - start, clipped at 0 if the clock stepped backwards.
- Client = sender of the first SYN without ACK; else the receiver of the first SYN/ACK; else the
  first sender (flows seen mid-stream, UDP, other protocols).
- ``close``: ``RST`` if a reset was seen; else ``FIN`` if both directions sent a FIN; else
  ``EOF`` if the flow is the last one of its endpoint pair and its last packet is within
  ``idle_timeout`` of the end of the trace (the last packet's timestamp); else ``IDLE`` (timed
  out, or an abandoned half-open connection replaced by a new SYN on the same ports).
- ``handshake``: ``complete`` (SYN, SYN/ACK and the client's final ACK seen), ``none`` (neither
  SYN nor SYN/ACK seen), else ``partial``. Non-TCP flows: ``none``.

Handshake RTT samples (seconds, null when not measurable), after the lifetime/RTT paper
(Wu & Nikolaidis, section 2.2): ``rtt_syn`` SYN → SYN/ACK, ``rtt_ack`` SYN/ACK → final ACK,
``rtt_data1`` final ACK (the client's first ACK after the SYN/ACK, or after the SYN when the
SYN/ACK was not captured) → first data packet (either direction), ``rtt_data2`` first data → second
data packet, ``rtt_min3`` = min(rtt_syn, rtt_data1, rtt_data2) over the available samples (the
paper's estimate), ``rtt_handshake`` SYN → final ACK (Wireshark's ``tcp.analysis.initial_rtt``).
Karn's rule: if the client sent more than one SYN, ``rtt_syn`` and ``rtt_handshake`` are null;
if the server sent more than one SYN/ACK, ``rtt_syn``, ``rtt_ack``, ``rtt_handshake`` and
``rtt_data1`` are null. Negative intervals (clock steps) and intervals longer than the idle
timeout (timestamp glitches) are null.

Path RTT over the whole connection (:mod:`traceflow.flows.pathrtt`; seconds): ``rtt_samples``,
``rtt_min`` (minimum of each half of the path around the capture point, summed), ``rtt_median``,
``rtt_p90``; TCP timestamps time the halves where present, sequence numbers (Karn's rule) else.

Sequence space (TCP, per direction): sequence numbers are unwrapped relative to the first packet
of the direction (signed 32-bit differences, so 2^32 wraparound is harmless). ``app_bytes_*`` is
the length of the union of the payload ranges (each byte once: the transfer size, retransmissions
excluded); ``retransmissions`` counts segments occupying sequence space (SYN, payload, FIN) that
start below the highest sequence number already sent in that direction (retransmissions,
including retransmitted SYNs, and reordered segments).

Implementation, streaming (issue 17): packets are read batch by batch (:func:`packet_batches`);
the Cython kernel :class:`traceflow.flows.flowsplit.FlowSplitter` keeps state for open endpoint
pairs only (a hash table, so no sort of the packets) and does the sequential rules (ISN-based
splitting, handshake event chain, sequence space, exact payload coverage) and the counters in
one O(n) pass; a connection is finished when a new one replaces it on its pair or the capture's
clock passes its last packet by more than ``idle_timeout``. Polars turns finished connections
into flow rows, and :class:`FlowStream` hands them out in start order as soon as no open
connection can start earlier, so memory is O(open connections + one batch) whatever the
capture's length; ``traceflow flows -o`` writes them chunk by chunk (:func:`write_flows`). The
next batch is decoded and prepared on another thread while the kernels, which release the GIL,
split the current one (:meth:`FlowStream.prepare`, :class:`traceflow.scale.prefetch.Prefetch`).

Extra columns beyond the contract: ``ip_version``, ``frame_bytes`` (captured frames' wire lengths,
link header included, as Wireshark's ``frame.len``), ``synack_count``, the path RTT columns.
"""
import ipaddress
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from traceflow.errors import InputFormatError
from traceflow.flows.pathrtt import (
    RTT_COLUMNS, combined_minima, connection_rtts, half_minima, labelled_samples, path_samples,
    rtt_columns)
from traceflow.pcap.schema import TCP

CLOSE_REASONS = ("FIN", "RST", "IDLE", "EOF")
HANDSHAKE_STATES = ("complete", "partial", "none")

_PACKET_COLUMNS = ["ts", "wirelen", "ip_version", "src", "dst", "ip_len", "proto", "sport",
                   "dport", "tcp_flags", "seq", "ack", "payload_len", "tsval", "tsecr"]
_ADDR = ["src_hi", "src_lo", "dst_hi", "dst_lo"]

FLOW_SCHEMA = {
    "flow_id": pl.Int64, "proto": pl.UInt8, "ip_version": pl.UInt8,
    "client_addr": pl.String, "client_port": pl.UInt16,
    "server_addr": pl.String, "server_port": pl.UInt16,
    "start": pl.Datetime("ns"), "end": pl.Datetime("ns"), "duration": pl.Duration("ns"),
    "packets": pl.Int64, "bytes": pl.Int64, "payload_bytes": pl.Int64, "frame_bytes": pl.Int64,
    "packets_c2s": pl.Int64, "bytes_c2s": pl.Int64, "payload_bytes_c2s": pl.Int64,
    "packets_s2c": pl.Int64, "bytes_s2c": pl.Int64, "payload_bytes_s2c": pl.Int64,
    "app_bytes_c2s": pl.Int64, "app_bytes_s2c": pl.Int64,
    "syn_count": pl.Int64, "synack_count": pl.Int64, "retransmissions": pl.Int64,
    "handshake": pl.String, "close": pl.String,
    "rtt_syn": pl.Float64, "rtt_ack": pl.Float64, "rtt_data1": pl.Float64,
    "rtt_data2": pl.Float64, "rtt_min3": pl.Float64, "rtt_handshake": pl.Float64,
    **RTT_COLUMNS,
}


#: a flow's ``duration`` from its ``start`` and ``end`` (clipped at 0 if the clock stepped back)
DURATION = pl.max_horizontal(pl.col("end") - pl.col("start"), pl.duration(nanoseconds=0)).cast(
    FLOW_SCHEMA["duration"])

BATCH_ROWS = 1 << 16    # packets per batch when streaming an input
#: finished connections turned into flow rows at a time, and the most the splitter holds (its
#: rows buffer: 4 MB; it reserved room for every open connection's row before, 17-34 MB at
#: dev10m's 18k open connections)
COLLECT_ROWS = 1 << 13


def flows(packets, *, idle_timeout=300.0, partitions=1, timestamps=True, batch_size=BATCH_ROWS,
          reorder=None, workers=1, executor="local", scheduler=None):
    """Build the flow table of packets (see the module docstring for the rules).

    ``packets`` is read ``batch_size`` packets at a time and only the open connections are kept
    (:class:`FlowStream`), so memory does not grow with the input's length.

    Parameters
    ----------
    packets : str, pathlib.Path, pyarrow.Table, polars.DataFrame, polars.LazyFrame or iterable
        A capture or packets Parquet file (path), a pyarrow Table, Polars DataFrame or LazyFrame
        with the packets schema (:mod:`traceflow.pcap.schema`; only ts, wirelen, ip_version, src,
        dst, ip_len, proto, sport, dport, tcp_flags, seq, ack, payload_len, tsval, tsecr are read),
        or an iterable of such record batches.
    idle_timeout : float, default 300.0
        Seconds without a packet after which a connection ends.
    partitions : int, default 1
        Process that many disjoint sets of endpoint pairs (hash of the pair) one after the other,
        each one pass over the input (bounds the state of a capture with very many concurrent
        connections).
    timestamps : bool, default True
        False samples the path RTT columns from sequence numbers only, ignoring the TCP timestamp
        option (:mod:`traceflow.flows.pathrtt`).
    batch_size : int, default 65536
        Packets read at a time.
    reorder : float, optional
        Seconds; put the packets in timestamp order within that window first
        (:mod:`traceflow.pcap.reorder`; None: capture order, as Wireshark).
    workers : int, default 1
        With ``partitions`` > 1, run the partitions in that many processes at once (``packets`` a
        path; each reads the whole input and keeps its partition's connections); else cut
        ``packets`` (a path) into that many ranges of records, each decoded by one process
        (:mod:`traceflow.scale.ranges`; a compressed capture, or one whose timestamps run
        backwards, is read in one pass).
    executor : str, default "local"
        Where the ranges run (:func:`traceflow.scale.parallel.map_tasks`).
    scheduler : str, optional
        The scheduler of a distributed ``executor`` (:func:`traceflow.scale.parallel.map_tasks`).

    Returns
    -------
    polars.DataFrame
        One row per flow, ordered by start, ``flow_id`` = 0, 1, ... (columns:
        :data:`FLOW_SCHEMA`; times in ns, sizes in bytes).

    Raises
    ------
    InputFormatError
        Several ``workers`` given packets that are not a path.

    Examples
    --------
    >>> from traceflow.flows import flows
    >>> table = flows("trace.pcap.gz", idle_timeout=60)
    """
    if workers > 1 and partitions == 1:
        table = _range_table(packets, idle_timeout, timestamps, batch_size, workers, executor,
                             scheduler)
        if table is not None:
            return table
    return _flow_tables(packets, idle_timeout, partitions, timestamps, False, batch_size,
                        reorder, workers=workers)[0]


def _range_table(packets, idle_timeout, timestamps, batch_size, workers, executor, scheduler,
                 want_samples=False):
    """The flow table of a path from ranges of its records (:func:`traceflow.scale.ranges.
    range_flows`), or None when it does not split (read it in one pass)."""
    if not isinstance(packets, (str, Path)):
        raise InputFormatError("flows in several workers need a path (a capture or packets "
                               "Parquet)")
    from traceflow.scale.ranges import range_flows

    return range_flows(packets, workers=workers, idle_timeout=idle_timeout,
                       timestamps=timestamps, batch_size=batch_size, executor=executor,
                       scheduler=scheduler, want_samples=want_samples)


def flows_with_rtt_samples(packets, *, idle_timeout=300.0, partitions=1, timestamps=True,
                           batch_size=BATCH_ROWS, reorder=None, notes=None, workers=1,
                           executor="local", scheduler=None):
    """:func:`flows` and, from the same pass, every passive RTT sample: a DataFrame with
    :data:`traceflow.flows.pathrtt.SAMPLE_SCHEMA` (``connection`` is the ``flow_id``), by time.
    ``notes``: a list that gets the re-ordering report (:meth:`FlowStream.report`).
    ``workers``, ``executor``, ``scheduler``: ranges of the input's records, as :func:`flows`."""
    if workers > 1 and partitions == 1:
        tables = _range_table(packets, idle_timeout, timestamps, batch_size, workers, executor,
                              scheduler, want_samples=True)
        if tables is not None:
            return tables
    return _flow_tables(packets, idle_timeout, partitions, timestamps, True, batch_size, reorder,
                        notes)


def _flow_tables(packets, idle_timeout, partitions, timestamps, want_samples, batch_size,
                 reorder, notes=None, workers=1):
    args = [(packets, (k, partitions), idle_timeout, timestamps, want_samples, batch_size, reorder)
            for k in range(partitions)]
    if workers > 1 and partitions > 1:
        if not isinstance(packets, (str, Path)):
            raise InputFormatError("flows in several workers need a path (a capture or packets "
                                   "Parquet)")
        from traceflow.scale.parallel import map_tasks

        parts = map_tasks(_partition_flows, args, workers=workers, progress=False,
                          user_errors=True)
    else:
        parts = [_partition_flows(a) for a in args]
    if notes is not None and parts[0][2] is not None:
        notes.append(parts[0][2])
    out = pl.concat([table for table, *_ in parts], how="vertical")
    if partitions > 1 or not parts[0][1]:
        out = _resorted(out, ties=("part", "conn"))
    table = out.select(list(FLOW_SCHEMA))
    if not want_samples:
        return table, None
    keys = out.select("part", "conn", "flow_id", "client_is_a")
    samples = pl.concat([labelled_samples(path, keys.filter(pl.col("part") == k).drop("part"))
                         for k, (_, _, _, path) in enumerate(parts)])
    return table, samples.sort("ts", "connection", maintain_order=True)


def _partition_flows(args):
    """The flows of one hash partition of the endpoint pairs (a task of :func:`_flow_tables`,
    top level so worker processes can import it): ``(table with part, conn and client_is_a,
    in order, re-ordering report, path RTT samples or None)``."""
    packets, part, idle_timeout, timestamps, want_samples, batch_size, reorder = args
    chunks, stream = [], None
    for chunk, stream in flow_chunks(packets, idle_timeout=idle_timeout, timestamps=timestamps,
                                     want_samples=want_samples, part=part,
                                     batch_size=batch_size, reorder=reorder):
        chunks.append(chunk)
    table = pl.concat(chunks, how="vertical").with_columns(part=pl.lit(part[0]))
    return table, stream.in_order, stream.report(), stream.path_samples()


def flow_chunks(packets, *, idle_timeout=300.0, timestamps=True, want_samples=False, part=(0, 1),
                batch_size=BATCH_ROWS, reorder=None, rtt_quantiles=True):
    """Stream the flow table of ``packets`` (as :func:`flows`): yields ``(chunk, stream)``, each
    chunk a DataFrame of flows (:data:`FLOW_SCHEMA` plus the splitter's ``conn`` and
    ``client_is_a``) with consecutive ``flow_id`` s, in start order, as soon as no open or
    later connection can start before them; ``stream`` is the :class:`FlowStream`. If
    ``stream.in_order`` is False at the end, a connection started before flows already handed
    out (timestamps out of order): sort the concatenated chunks by :data:`SORT_KEY` and number
    them again. ``rtt_quantiles``: as :class:`FlowStream`."""
    if idle_timeout is None or not idle_timeout > 0:
        raise InputFormatError(f"idle timeout must be > 0 seconds, got {idle_timeout!r}")
    if batch_size < 1:
        raise InputFormatError(f"batch size must be positive, got {batch_size!r}")
    from traceflow.scale.prefetch import Prefetch

    stream = FlowStream(idle_timeout=idle_timeout, timestamps=timestamps,
                        want_samples=want_samples, part=part, reorder=reorder,
                        rtt_quantiles=rtt_quantiles)
    with Prefetch(stream.prepare(batch) for batch in packet_batches(packets, batch_size)) as ready:
        for prepared in ready:
            stream.consume(prepared)
            chunk = stream.release()
            if chunk.height:
                yield chunk, stream
    stream.finish()
    yield stream.release(), stream


#: the order of the flow table (``conn``, the connection's number, breaks exact ties)
SORT_KEY = ["start", "proto", "client_addr", "client_port", "server_addr", "server_port", "conn"]


class FlowStream:
    """The flows of a packet stream, fed batch by batch in capture order.

    Keeps the state of the open connections only (:class:`traceflow.flows.flowsplit.FlowSplitter`
    and :class:`traceflow.flows.rttsample.RttSampler`, plus the RTT samples of the open
    connections, which their quantiles need), turns every connection into its flow row as soon
    as it is finished, and :meth:`release` s the finished flows in start order. ``part``: (k, n)
    keeps only the endpoint pairs in hash partition k of n. ``want_samples``: also keep every
    RTT sample (:meth:`path_samples`). ``reorder``: window (seconds) of
    :class:`traceflow.pcap.reorder.Reorder`, or None to keep capture order.
    ``rtt_quantiles``: False leaves ``rtt_median`` and ``rtt_p90`` null and keeps only each
    open connection's smallest sample per half and its sample count instead of every sample
    (``rtt_min`` and ``rtt_samples`` are the same; no ``want_samples`` then). ``extra``: more
    packet columns (name -> dtype; null as -1) carried with the prepared packets to
    :attr:`on_packets`. ``keep_fields``: more of the splitter's row fields
    (:data:`traceflow.flows.flowsplit.ROW_FIELDS`) kept in the finished rows (not released).
    """

    def __init__(self, *, idle_timeout=300.0, timestamps=True, want_samples=False, part=(0, 1),
                 reorder=None, rtt_quantiles=True, extra=None, keep_fields=()):
        from traceflow.flows.flowsplit import FlowSplitter, StreamClock
        from traceflow.flows.rttsample import RttSampler

        if want_samples and not rtt_quantiles:
            raise ValueError("want_samples needs rtt_quantiles")
        self.idle_ns = int(round(idle_timeout * 1e9))
        self.splitter = FlowSplitter(self.idle_ns, max_rows=COLLECT_ROWS)
        self.sampler = RttSampler(self.idle_ns, timestamps)
        self.part = part
        self.rows = 0           # packet rows fed (frame numbers)
        self.carry = None       # packets the splitter has not consumed yet
        self.unclocked = None   # the stream's last packets: their expiry clock needs the next batch
        self.seen = 0           # packets of the whole stream given a clock (``pos``)
        self.clock = StreamClock(self.idle_ns)
        self.late_sweep = None  # sweep due after the partition's last packet so far (ns)
        self.quantiles = rtt_quantiles
        self.extra = extra or {}
        self.keep_fields = tuple(keep_fields)
        self.pending = None     # RTT samples of open connections (or their half_minima)
        self.trace_end = None   # timestamp (ns) of the last IP packet
        self.last_ts = None     # timestamp (ns) of the last packet consumed
        self.waiting = []       # finished flow rows not released yet
        self.collected = False  # rows were added to ``waiting`` since the last release
        self.released = 0       # flows released (the next flow_id)
        self.last_start = None  # start (ns) of the latest released flow
        self.in_order = True    # no finished flow started before a released one
        self.ended = False
        self.samples = [] if want_samples else None
        #: called with each slice of prepared packets the splitter consumed and the splitter's
        #: per-packet output (``conn``, ``fwd``, ...): connection ids for one-pass consumers
        self.on_packets = None
        self.reorder = None
        if reorder:
            from traceflow.pcap.reorder import Reorder

            self.reorder = Reorder(reorder)

    def report(self):
        """What re-ordering did (:meth:`traceflow.pcap.reorder.Reorder.report`), or None."""
        return None if self.reorder is None else self.reorder.report()

    def feed(self, batch):
        """Consume the next packets (pyarrow RecordBatch/Table or Polars DataFrame)."""
        self.consume(self.prepare(batch))

    def prepare(self, batch):
        """The next packets (pyarrow RecordBatch/Table or Polars DataFrame) as :meth:`consume`
        takes them. The two halves of :meth:`feed`: ``prepare`` may run on another thread
        (:class:`traceflow.scale.prefetch.Prefetch`), one batch ahead, as long as the batches
        are prepared and consumed in the same order."""
        df = batch if isinstance(batch, pl.DataFrame) else pl.from_arrow(batch)
        missing = [c for c in (*_PACKET_COLUMNS, *self.extra) if c not in df.columns]
        if missing:
            raise InputFormatError(f"not a packets table: missing columns {', '.join(missing)}")
        first = self.rows + 1
        self.rows += df.height
        df = _ip_packets(df, first, self.extra)
        if self.part[1] > 1 and self.reorder is None:
            # only the partition's packets are prepared further (each worker of a partitioned
            # pass reads every packet: preparing all of them took most of a worker's time)
            ts = df["ts"].dt.epoch("ns").to_numpy()
            own = np.flatnonzero(self._mine(df))
            return _kernel_frame(df[own], self.extra), ts, own
        df = _kernel_frame(df, self.extra)
        if self.reorder is not None:
            df = self.reorder.push(df)
        return self._split(df)

    def _split(self, df):
        """Prepared packets as :meth:`consume` takes them, from the kernel form of every IP
        packet (:func:`_kernel_frame`): ``(the partition's packets, every packet's timestamp,
        the partition's rows among them or None for all)``."""
        ts = df["ts"].to_numpy()
        if self.part[1] == 1:
            return df, ts, None
        own = np.flatnonzero(self._mine(df))
        return df[own], ts, own

    def _mine(self, df):
        """Whether each packet of ``df`` (with the address halves) is in the partition."""
        from traceflow.flows.flowsplit import in_partition

        return in_partition(*(df[c].to_numpy() for c in _ADDR),
                            *(df[c].fill_null(0).cast(t).to_numpy()
                              for c, t in (("sport", pl.UInt16), ("dport", pl.UInt16),
                                           ("proto", pl.UInt8))),
                            *self.part)

    def consume(self, prepared):
        """Consume packets made by :meth:`prepare`."""
        self._consume(prepared)

    def _consume(self, prepared, final=False):
        # the clocks (expiry sweeps, look-ahead, trace end, re-ordering) are every IP packet's,
        # whatever the partition, so that each partition's flows are those of the whole stream;
        # the last CLOCK_AHEAD packets wait for the next batch, which their clock needs
        from traceflow.flows.flowsplit import CLOCK_AHEAD

        df, ts, own = (None, None, None) if prepared is None else prepared
        if ts is not None and ts.size:
            self.trace_end = int(ts[-1])
        if self.unclocked is not None:
            df, ts, own = self.unclocked if df is None else _joined(self.unclocked, (df, ts, own))
            self.unclocked = None
        if ts is not None and ts.size:
            n = ts.size
            keep = n if final else max(n - CLOCK_AHEAD, 0)
            rows = keep if own is None else int(np.searchsorted(own, keep))
            if keep < n:
                self.unclocked = (df.slice(rows), ts[keep:],
                                  None if own is None else own[rows:] - keep)
            sweeps = self.clock.sweeps(ts, keep)
            if own is None:
                df = df.slice(0, keep).with_columns(
                    sweep=pl.Series(sweeps, dtype=pl.Int64),
                    pos=pl.int_range(keep, dtype=pl.Int64) + self.seen)
            else:
                df = df.slice(0, rows).with_columns(
                    sweep=pl.Series(self._own_sweeps(own[:rows], sweeps), dtype=pl.Int64),
                    pos=pl.Series(own[:rows] + self.seen, dtype=pl.Int64))
            self.seen += keep
        if df is not None and not df.height:
            df = None
        if final or df is not None:
            self._run(df, final)
        if final and self.late_sweep is not None:
            self.splitter.expire(self.late_sweep)

    def _own_sweeps(self, rows, sweeps):
        """The sweeps due before the partition's packets at ``rows`` of the stream's packets
        (``sweeps``, :meth:`StreamClock.sweeps`): each carries the latest sweep due since the
        partition's previous packet (a sweep between them finds the partition's state as it
        is at the next one); sweeps after the last go on to the next batch (``late_sweep``)."""
        from traceflow.flows.flowsplit import NO_SWEEP

        at = np.flatnonzero(sweeps != NO_SWEEP)
        clocks = sweeps[at]
        if self.late_sweep is not None:
            at, clocks = np.r_[-1, at], np.r_[self.late_sweep, clocks]
        target = np.searchsorted(rows, at)          # the partition's next packet
        kept = np.full(rows.size, NO_SWEEP, dtype=np.int64)
        inside = target < rows.size
        np.maximum.at(kept, target[inside], clocks[inside])
        self.late_sweep = int(clocks[~inside].max()) if (~inside).any() else None
        return kept

    def finish(self):
        """End of input: every open connection is finished (:meth:`release` hands them out)."""
        flushed = None if self.reorder is None else self.reorder.flush()
        self._consume(None if flushed is None else self._split(flushed), final=True)
        self.splitter.close()
        self._collect()
        self.ended = True

    def release(self):
        """The finished flows no connection still open, or starting later in a monotone clock,
        can precede, sorted by :data:`SORT_KEY` and numbered on (``flow_id``): a DataFrame with
        :data:`FLOW_SCHEMA`, ``conn`` and ``client_is_a`` (possibly empty). Until the end of
        input, only after rows were collected: the watermark is mostly held by the splitter's
        earliest connection, which moves only when rows are collected (16x dev10m: 50 passes
        over the waiting rows instead of 173; the released chunks differ, their concatenation
        does not)."""
        schema = {**FLOW_SCHEMA, "conn": pl.Int64, "client_is_a": pl.Boolean}
        if not self.waiting or not (self.collected or self.ended):
            return pl.DataFrame(schema=schema)
        self.collected = False
        waiting = pl.concat(self.waiting, how="vertical")
        mark = None if self.ended else self._watermark()
        if mark is None:
            ready, self.waiting = waiting, []
        else:
            early = pl.col("start").dt.epoch("ns") < mark
            ready, self.waiting = waiting.filter(early), [waiting.filter(~early)]
        ready = ready.sort(SORT_KEY, nulls_last=True, maintain_order=True).with_columns(
            flow_id=pl.int_range(pl.len(), dtype=pl.Int64) + self.released)
        self.released += ready.height
        if ready.height:
            self.last_start = ready["start"].dt.epoch("ns").max()
        return ready.select([pl.col(c).cast(t) for c, t in schema.items()])

    def path_samples(self):
        """The path RTT samples of every finished connection (``want_samples``;
        :func:`traceflow.flows.pathrtt.path_samples`)."""
        return pl.concat(self.samples) if self.samples else None

    def _watermark(self):
        """No connection not yet collected (still open, finished in the splitter, or starting
        after the packets consumed so far if the clock runs forward) starts before this time
        (ns)."""
        marks = [self.splitter.min_start(), self.last_ts]
        for waiting in (self.carry, self.unclocked and self.unclocked[0]):
            if waiting is not None and waiting.height:
                marks.append(waiting["ts"].min())
        marks = [m for m in marks if m is not None]
        return min(marks) if marks else None

    def _run(self, df, final):
        if self.carry is not None:
            df = self.carry if df is None else pl.concat([self.carry, df])
        self.carry = None
        while df is not None:
            # ``force``: the stitching of record ranges (:mod:`traceflow.scale.ranges`)
            cols = [c for c in (*_KERNEL_COLUMNS, "force") if c in df.columns]
            used, out = self.splitter.feed({c: df[c].to_numpy() for c in cols}, final,
                                           horizon=self.seen)
            rest = df.slice(used) if used < df.height else None
            if used:
                self._sample(df.slice(0, used), out)
            full = self.splitter.rows_full      # stopped to hand its rows out: go on at once
            if self.splitter.n_rows >= COLLECT_ROWS:  # (full too) a fixed cost per call
                self._collect()
            df, self.carry = (rest, None) if full else (None, rest)

    def _sample(self, done, out):
        """The splitter consumed ``done`` (its output ``out``): the RTT samples and the
        ``on_packets`` hook."""
        self.last_ts = done["ts"][-1]
        if self.on_packets is not None:
            self.on_packets(done, out)
        batch = {c: done[c].to_numpy() for c in _SAMPLER_COLUMNS}
        samples = self.sampler.feed({**batch, **out})
        if self.quantiles:
            # the packet numbers only for the samples' table (``want_samples``)
            samples = pl.DataFrame(samples).select(
                "conn", "ts", "side", "rtt",
                *(("frame", "opening_frame") if self.samples is not None else ()))
        else:
            samples = half_minima(pl.DataFrame({c: samples[c] for c in ("conn", "side", "rtt")}))
        self.pending = samples if self.pending is None else pl.concat([self.pending, samples])

    def _collect(self):
        """Flow rows of the connections the splitter finished."""
        from traceflow.flows.flowsplit import ROW_FIELDS

        rows = self.splitter.finished()
        if rows["conn"].size == 0:
            return
        conns = pl.DataFrame(rows).select(*ROW_FIELDS)
        if self.last_start is not None and conns["start"].min() <= self.last_start:
            self.in_order = False
        ended = pl.col("conn").is_in(conns["conn"].implode())
        samples = self.pending.filter(ended)
        self.pending = self.pending.filter(~ended)
        if self.quantiles:
            path = path_samples(samples)
            rtts = connection_rtts(path)
        else:
            rtts = rtt_columns(combined_minima(samples))
        conns = conns.join(rtts, on="conn", how="left").with_columns(
            pl.col("rtt_samples").fill_null(0))
        conns = _close(_rtts(_columns(conns), self.idle_ns), self.idle_ns, self.trace_end)
        self.waiting.append(_finish(conns, self.keep_fields))
        self.collected = True
        if self.samples is not None:
            self.samples.append(path)


#: what the splitter reads of a prepared batch, and what the sampler reads besides its output
_KERNEL_COLUMNS = ["ts", *_ADDR, "sport", "dport", "has_ports", "proto", "ip_version", "is_tcp",
                   "flags", "seq", "payload", "ip_len", "wirelen", "sweep", "pos"]
_SAMPLER_COLUMNS = ["frame", "ts", "is_tcp", "flags", "seq", "ack", "payload", "has_ts", "tsval",
                    "tsecr"]


def _ip_packets(df, first_frame, extra=None):
    """The IP packets of a batch (the columns the splitter and sampler read, and ``extra``),
    with ``frame`` (the 1-based row number in the input) and the addresses as uint64 halves
    (:func:`_endpoints`)."""
    return _endpoints(df.select(*_PACKET_COLUMNS, *(extra or {}))
                      .with_row_index("frame", offset=first_frame)
                      .filter(pl.col("ip_version").is_not_null()))


def _kernel_frame(df, extra=None):
    """IP packets (:func:`_ip_packets`) as the kernels read them: nulls filled; the ``extra``
    columns (name -> dtype) cast, null as -1."""
    return df.select(
        pl.col("frame").cast(pl.Int64), ts=pl.col("ts").dt.epoch("ns"), *_ADDR,
        sport=pl.col("sport").fill_null(0), dport=pl.col("dport").fill_null(0),
        has_ports=pl.col("sport").is_not_null().cast(pl.UInt8), proto="proto",
        ip_version="ip_version",
        is_tcp=((pl.col("proto") == TCP) & pl.col("tcp_flags").is_not_null()).cast(pl.UInt8),
        flags=pl.col("tcp_flags").fill_null(0).cast(pl.UInt16),
        seq=pl.col("seq").fill_null(0).cast(pl.UInt32),
        ack=pl.col("ack").fill_null(0).cast(pl.UInt32),
        payload=pl.col("payload_len").fill_null(0).cast(pl.Int64),
        ip_len=pl.col("ip_len").fill_null(0).cast(pl.Int64),
        wirelen=pl.col("wirelen").cast(pl.Int64),
        has_ts=pl.col("tsval").is_not_null().cast(pl.UInt8),
        tsval=pl.col("tsval").fill_null(0), tsecr=pl.col("tsecr").fill_null(0),
        *[pl.col(c).cast(t).fill_null(-1) for c, t in (extra or {}).items()])


def _joined(first, then):
    """Two runs of prepared packets (:meth:`FlowStream.prepare`) as one."""
    (df, ts, own), (df2, ts2, own2) = first, then
    return (pl.concat([df, df2]), np.concatenate([ts, ts2]),
            None if own is None else np.concatenate([own, own2 + ts.size]))


def _endpoints(lf):
    """Replace the 16-byte addresses by big-endian uint64 halves (``src_hi``, ``src_lo``, ...):
    hashing and comparing integers is several times faster than binaries, with the same order."""
    halves = []
    for side in ("src", "dst"):
        words = pl.col(side).bin.reinterpret(dtype=pl.Array(pl.UInt64, 2), endianness="big")
        halves += [words.arr.get(0).alias(f"{side}_hi"), words.arr.get(1).alias(f"{side}_lo")]
    return lf.with_columns(halves).drop("src", "dst")


def _columns(conns):
    """The splitter's rows under the names the flow columns are built from."""
    return conns.with_columns(
        start=pl.col("start").cast(pl.Datetime("ns")), end=pl.col("end").cast(pl.Datetime("ns")),
        first_fwd=pl.col("first_fwd") == 1,
        *[pl.when(pl.col("has_ports") == 1).then(pl.col(c).cast(pl.UInt16)).alias(c)
          for c in ("port_a", "port_b")],
        proto=pl.col("proto").cast(pl.UInt8), ip_version=pl.col("ip_version").cast(pl.UInt8),
        rst=(pl.col("rst_a") + pl.col("rst_b")) > 0,
        fin_a=pl.col("fin_a") > 0, fin_b=pl.col("fin_b") > 0,
        tcp=(pl.col("tcp_a") + pl.col("tcp_b")) > 0,
        retransmissions=pl.col("retransmissions_a") + pl.col("retransmissions_b"),
        frame_bytes=pl.col("frame_bytes_a") + pl.col("frame_bytes_b"),
    )


def _rtts(conns, idle_ns):
    """Client side, handshake state and RTT samples from the kernel's event times.

    Samples that are negative (clock stepped back) or longer than the idle timeout (a clock
    glitch: no round trip takes longer than the silence that ends a flow) are null.
    """
    def at(name):
        return pl.when(pl.col(name) >= 0).then(pl.col(name))

    # Karn's rule: no sample from a SYN or SYN/ACK that was sent more than once. Counted over
    # the whole connection: seen from the client, the server's first SYN/ACK may be lost before
    # the capture point and only its retransmission (and a later duplicate) seen.
    client_a = pl.col("client_is_a")
    syn_ok = pl.when(client_a).then("syn_a").otherwise("syn_b") <= 1
    sa_ok = pl.when(client_a).then("synack_b").otherwise("synack_a") <= 1

    def interval(since, until, ok=True):
        # times 1e-9, as Polars divides columns of more than one row by a constant: a
        # connection's value does not depend on how many were finished with it (a one-row
        # frame is divided exactly)
        dt = at(until) - at(since)
        return pl.when(ok & (dt >= 0) & (dt <= idle_ns)).then(dt * 1e-9)

    has_syn, has_sa, has_ack = (pl.col(c) >= 0 for c in ("t_syn", "t_synack", "t_ack"))
    return conns.with_columns(
        client_is_a=pl.when(pl.col("client_fwd") >= 0).then(pl.col("client_fwd") == 1)
        .otherwise(pl.col("first_fwd")),
    ).with_columns(
        rtt_syn=interval("t_syn", "t_synack", syn_ok & sa_ok),
        rtt_ack=interval("t_synack", "t_ack", sa_ok),
        rtt_data1=interval("t_ack", "t_data1", sa_ok),
        rtt_data2=interval("t_data1", "t_data2"),
        rtt_handshake=interval("t_syn", "t_ack", syn_ok & sa_ok),
        handshake=pl.when(has_syn & has_sa & has_ack).then(pl.lit("complete"))
        .when(~has_syn & ~has_sa).then(pl.lit("none")).otherwise(pl.lit("partial")),
    ).with_columns(rtt_min3=pl.min_horizontal("rtt_syn", "rtt_data1", "rtt_data2"))


def _close(conns, idle_ns, trace_end):
    """``close``: RST, FIN (both directions), EOF (open at the end of the input and its last
    packet within the idle timeout of the input's last timestamp ``trace_end``, ns) or IDLE."""
    quiet = trace_end - pl.col("end").dt.epoch("ns") <= idle_ns
    return conns.with_columns(
        close=pl.when(pl.col("rst")).then(pl.lit("RST"))
        .when(pl.col("fin_a") & pl.col("fin_b")).then(pl.lit("FIN"))
        .when((pl.col("at_end") == 1) & quiet).then(pl.lit("EOF"))
        .otherwise(pl.lit("IDLE")))


def _finish(conns, keep=()):
    """Orient a/b columns as client/server and format addresses (``keep``: more of the rows'
    columns kept)."""
    a = pl.col("client_is_a")

    def pick(col_a, col_b, client=True):
        return (pl.when(a).then(col_a).otherwise(col_b) if client
                else pl.when(a).then(col_b).otherwise(col_a))

    tcp = pl.col("tcp")
    out = conns.with_columns(
        client_hi=pick("a_hi", "b_hi"), client_lo=pick("a_lo", "b_lo"),
        server_hi=pick("a_hi", "b_hi", False), server_lo=pick("a_lo", "b_lo", False),
        client_port=pick("port_a", "port_b"), server_port=pick("port_a", "port_b", False),
        packets_c2s=pick("packets_a", "packets_b"),
        packets_s2c=pick("packets_a", "packets_b", False),
        bytes_c2s=pick("bytes_a", "bytes_b"), bytes_s2c=pick("bytes_a", "bytes_b", False),
        payload_bytes_c2s=pick("payload_a", "payload_b"),
        payload_bytes_s2c=pick("payload_a", "payload_b", False),
        app_bytes_c2s=pl.when(tcp).then(pick("app_a", "app_b")),
        app_bytes_s2c=pl.when(tcp).then(pick("app_a", "app_b", False)),
        syn_count=pick("syn_a", "syn_b"), synack_count=pick("synack_a", "synack_b", False),
        retransmissions=pl.when(tcp).then("retransmissions"),
    ).with_columns(
        packets=pl.col("packets_c2s") + pl.col("packets_s2c"),
        bytes=pl.col("bytes_c2s") + pl.col("bytes_s2c"),
        payload_bytes=pl.col("payload_bytes_c2s") + pl.col("payload_bytes_s2c"),
        duration=DURATION,
    )
    ends = [out.select(hi=f"{side}_hi", lo=f"{side}_lo") for side in ("client", "server")]
    names = _address_strings(pl.concat(ends).unique())
    for side in ("client", "server"):
        rename = {"hi": f"{side}_hi", "lo": f"{side}_lo", "str": f"{side}_addr"}
        out = out.join(names.rename(rename), on=[f"{side}_hi", f"{side}_lo"], how="left")
    return out.select(*[c for c in FLOW_SCHEMA if c != "flow_id"], "conn", "client_is_a", *keep)


def _address_strings(halves):
    """Map addresses (uint64 halves) to text (IPv4-mapped → dotted quad), once per address."""
    text = []
    for hi, lo in halves.iter_rows():
        ip = ipaddress.IPv6Address((hi << 64) | lo)
        text.append(str(ip.ipv4_mapped) if ip.ipv4_mapped else str(ip))
    return halves.with_columns(str=pl.Series(text, dtype=pl.String))


# ----------------------------------------------------------------------------- inputs

PARQUET_MAGIC = b"PAR1"


def input_kind(path):
    """``"flows"``, ``"packets"`` (Parquet tables) or ``"capture"`` (anything else) for ``path``."""
    path = Path(path)
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic != PARQUET_MAGIC:
        return "capture"
    names = pl.read_parquet_schema(path).keys()
    if "flow_id" in names:
        return "flows"
    if "ts" in names and "src" in names:
        return "packets"
    raise InputFormatError("Parquet file is neither a packets nor a flows table", path=path)


def scan_packets(path):
    """Packets of one input as a LazyFrame, whole: a packets Parquet (scanned lazily, together
    with the other chunk parts of the same capture when it is one) or a capture (decoded into
    memory; :func:`packet_batches` streams it instead)."""
    from traceflow.scale.parallel import chunk_parts

    kind = input_kind(path)
    if kind == "packets":
        return pl.scan_parquet(chunk_parts(path))
    if kind == "flows":
        raise InputFormatError("expected packets or a capture, got a flows table", path=path)
    from traceflow.pcap.reader import read_packets

    return pl.from_arrow(read_packets(path)).lazy()


def packet_batches(packets, batch_size=BATCH_ROWS, columns=tuple(_PACKET_COLUMNS)):
    """The packets of ``packets`` as batches of at most ``batch_size`` rows, in order, read
    lazily: a path (a capture, decoded batch by batch, or a packets Parquet, read together with
    the other chunk parts of the same capture when it is one), a pyarrow Table, a Polars
    DataFrame or LazyFrame, or an iterable of record batches (passed through). ``columns``: what
    is read of a Parquet file or LazyFrame (those it has; None: every column)."""
    if isinstance(packets, (str, Path)):
        yield from _file_batches(packets, batch_size, columns)
    elif isinstance(packets, pa.Table):
        yield from packets.to_batches(max_chunksize=batch_size)
    elif isinstance(packets, pl.DataFrame):
        yield from packets.iter_slices(batch_size)
    elif isinstance(packets, pl.LazyFrame):
        names = packets.collect_schema().names()
        yield from packets.select([c for c in columns or names if c in names]).collect_batches(
            chunk_size=batch_size)
    elif isinstance(packets, pa.RecordBatch):
        yield packets
    else:
        try:
            yield from packets
        except TypeError:
            raise TypeError(f"packets must be a path, a pyarrow Table or a Polars (Lazy)DataFrame, "
                            f"not {type(packets).__name__}") from None


def _file_batches(path, batch_size, columns=tuple(_PACKET_COLUMNS)):
    kind = input_kind(path)
    if kind == "flows":
        raise InputFormatError("expected packets or a capture, got a flows table", path=path)
    if kind == "capture":
        from traceflow.pcap.reader import iter_batches

        yield from iter_batches(path, batch_size=batch_size)
        return
    import pyarrow.parquet as pq

    from traceflow.scale.parallel import chunk_parts

    for part in chunk_parts(path):
        with pq.ParquetFile(part) as f:
            names = f.schema_arrow.names
            yield from f.iter_batches(batch_size=batch_size,
                                      columns=[c for c in columns or names if c in names])


def load_flows(inputs, *, idle_timeout=300.0, partitions=1, timestamps=True, columns=None,
               reorder=None, notes=None, workers=1, executor="local", scheduler=None):
    """Flows of one or more inputs (captures, packets Parquet or flows Parquet), concatenated.

    Each input gets its own flows (two captures of the same traffic are never merged) and a
    ``source`` column with its file name; ``flow_id`` is renumbered 0, 1, ... over the result.
    ``idle_timeout``, ``partitions``, ``timestamps``: as :func:`flows`. ``columns``: keep only
    these columns (of the finished flows, as they are handed out), so long captures need memory
    for these columns only. ``reorder``: as :func:`flows`; ``notes``: a list that gets
    ``(input, report)`` for every input re-ordering looked at (:meth:`FlowStream.report`).
    ``workers``, ``executor``, ``scheduler``: as :func:`flows`.
    """
    tables = []
    for path in _whole(inputs):
        chunks = []
        keep = None if columns is None else list(dict.fromkeys([*columns, *SORT_KEY[:-1]]))
        ordered = _input_flows(path, idle_timeout, partitions, timestamps, reorder, notes,
                               lambda c: chunks.append(c if keep is None else c.select(
                                   [k for k in keep if k in c.columns])), workers,
                               executor, scheduler)
        table = pl.concat(chunks, how="diagonal_relaxed")
        if not ordered:
            table = _resorted(table)
        if columns is not None:
            table = table.select([c for c in columns if c in table.columns])
        tables.append(table.with_columns(source=pl.lit(Path(path).name)))
    out = pl.concat(tables, how="diagonal_relaxed")
    if "flow_id" in out.columns:
        out = out.with_columns(flow_id=pl.int_range(pl.len(), dtype=pl.Int64))
    return out


def stream_flows(inputs, sink, *, idle_timeout=300.0, partitions=1, timestamps=True,
                 reorder=None, notes=None):
    """Hand the table :func:`load_flows` makes of ``inputs`` to ``sink`` chunk by chunk (each a
    DataFrame of its rows, with ``source`` and ``flow_id`` numbered on over the inputs) without
    holding it; memory stays O(open connections + one batch + what ``sink`` keeps). Returns
    False when an input's flows came out of start order (see :func:`flow_chunks`): the chunks
    were then not in the table's order, which :func:`load_flows` restores by sorting."""
    handed, ordered = 0, True

    def put(chunk):
        nonlocal handed
        sink(chunk.with_columns(flow_id=pl.col("flow_id") + first, source=pl.lit(name)))
        handed += chunk.height

    for path in _whole(inputs):
        name, first = Path(path).name, handed
        ordered &= _input_flows(path, idle_timeout, partitions, timestamps, reorder, notes, put)
    return ordered


def write_flows(inputs, output, *, columns, idle_timeout=300.0, partitions=1, timestamps=True,
                reorder=None, notes=None, workers=1, executor="local", scheduler=None):
    """Write :func:`load_flows` ``(inputs)`` to the Parquet file ``output`` (atomically) chunk
    by chunk, so memory does not grow with the captures' length; returns its ``columns``.

    If an input's timestamps ran backwards across flows already written, its flows are read
    back and sorted in memory. Inputs that are flows tables are read whole."""
    import pyarrow.parquet as pq

    from traceflow.atomic import atomic_path
    from traceflow.output import utc_aware

    files = _whole(inputs)
    if any(input_kind(path) == "flows" for path in files):
        table = load_flows(files, idle_timeout=idle_timeout, partitions=partitions,
                           timestamps=timestamps, reorder=reorder, notes=notes, workers=workers,
                           executor=executor, scheduler=scheduler)
        with atomic_path(output) as tmp:
            pq.write_table(utc_aware(table.to_arrow()), tmp, compression="zstd")
        return table.select(columns)
    kept, written, writer = [], 0, None

    def append(chunk):
        nonlocal writer, written
        chunk = chunk.with_columns(flow_id=pl.col("flow_id") + first, source=pl.lit(name))
        table = utc_aware(chunk.to_arrow())  # start/end are UTC instants: say so in the file
        writer = writer or pq.ParquetWriter(tmp, table.schema, compression="zstd")
        writer.write_table(table)
        kept.append(chunk.select(columns))
        written += chunk.height

    with atomic_path(output) as tmp:
        try:
            for path in files:
                name, first = Path(path).name, written
                if not _input_flows(path, idle_timeout, partitions, timestamps, reorder, notes,
                                    append, workers, executor, scheduler):
                    writer.close()                  # sort this input's flows in memory
                    table = pl.read_parquet(tmp)
                    late = pl.col("flow_id") >= first
                    table = pl.concat([table.filter(~late), _resorted(table.filter(late))
                                      .with_columns(flow_id=pl.col("flow_id") + first)])
                    arrow = utc_aware(table.to_arrow())
                    writer = pq.ParquetWriter(tmp, arrow.schema, compression="zstd")
                    writer.write_table(arrow)
                    kept = [table.select(columns)]
        finally:
            if writer is not None:
                writer.close()
    return pl.concat(kept, how="vertical")


def _whole(inputs):
    from traceflow.scale.parallel import whole_inputs

    files = whole_inputs([inputs] if isinstance(inputs, (str, Path)) else inputs)
    if not files:
        raise InputFormatError("no input files")
    return files


def _input_flows(path, idle_timeout, partitions, timestamps, reorder, notes, sink, workers=1,
                 executor="local", scheduler=None):
    """Hand the flows of one input to ``sink`` chunk by chunk (``flow_id`` from 0 on); returns
    False when they came out of order (see :func:`flow_chunks`): sort them with
    :func:`_resorted`."""
    if input_kind(path) == "flows":
        sink(pl.read_parquet(path))
        return True
    if partitions > 1:
        sink(flows(path, idle_timeout=idle_timeout, partitions=partitions, timestamps=timestamps,
                   reorder=reorder, workers=workers))
        return True
    if workers > 1:
        # ranges of the input's records in several workers (no re-ordering report: the ranges
        # are used only where the timestamps are in order, which re-ordering leaves alone)
        table = _range_table(path, idle_timeout, timestamps, BATCH_ROWS, workers, executor,
                             scheduler)
        if table is not None:
            sink(table)
            return True
    stream = None
    for chunk, stream in flow_chunks(path, idle_timeout=idle_timeout, timestamps=timestamps,
                                     reorder=reorder):
        sink(chunk.drop("conn", "client_is_a"))
    if notes is not None and stream.report() is not None:
        notes.append((str(path), stream.report()))
    return stream.in_order


def _resorted(table, ties=()):
    """``table`` in :data:`SORT_KEY` order, exact ties broken by the columns ``ties`` (then
    equal keys keep their order), its ``flow_id`` (if it has one) numbered again. The flow
    tables of hash partitions, concatenated, take ``ties=("part", "conn")``: in a partition the
    connections are numbered in the order they started, and an endpoint pair is in one
    partition only, so that is the order of one pass."""
    table = table.sort([*SORT_KEY[:-1], *ties], nulls_last=True, maintain_order=True)
    if "flow_id" not in table.columns:
        return table
    return table.with_columns(flow_id=pl.int_range(pl.len(), dtype=pl.Int64))

"""What :func:`traceflow.models.fit.fit` needs of the packets, in one streaming pass (issue 17).

Packets are read batch by batch (:func:`traceflow.flows.table.packet_batches`: a capture is
decoded, a Parquet file read, a frame sliced) and every batch goes once to

- the flow table (:class:`traceflow.flows.table.FlowStream`, whose splitter numbers the
  connections: no second connection split, no string keys, no sort of the packets);
- the span counters (first and last timestamp, packets, IP bytes);
- the packet-pair test of the SYN/ACKs (:class:`traceflow.flows.handshake_queue.SynAckGaps`);
- a buffer of the TCP packets of the connections still open (only the columns the end-host
  inference reads, carried with the splitter's packets, each in the narrowest integer type
  that holds a batch's values; connection ids in 32 bits). When the flow table hands out a
  finished connection, its packets leave the buffer and are reduced: end-host facts
  (:class:`traceflow.flows.hosts.HostFacts`) and request/response exchanges
  (:func:`traceflow.flows.hosts.reduce_packets`, a Cython kernel) and, from the packets of its
  data sender, the data-direction bytes per 10 ms (:class:`Bins`, from the first packet's
  timestamp: every bin's sum is known whatever order the connections end in).

Each batch is read, decoded and prepared (:meth:`PacketPass._made`) one batch ahead on a thread
of its own (:class:`~traceflow.scale.prefetch.Prefetch`); the main thread splits the packets into
flows (the decoder, Polars and the splitter's kernels release the GIL); and the end-host buffer
belongs to a third thread, the host thread, which buffers the packets the splitter consumed and
reduces the finished connections, merging their end-host facts in the order the connections
were handed out (:meth:`traceflow.flows.hosts.HostFacts.merge`). It takes its jobs in the order
the main thread queued them, and the main thread applies what they return (exchanges, bins) in
that order too.

With ``--workers N`` (:func:`stream_inputs`) N processes each read every packet and keep the
connections of one hash partition; their results are merged (:meth:`PacketPass.absorb`) into
those of one pass.

Memory is O(packets of open connections + one batch): the few values kept per connection (flow
rows, end-host facts, SYN/ACK gaps) go to a :class:`~traceflow.scale.spool.Spool`, on disk once
they outgrow its budget. The
results equal those of the whole-table functions for a capture whose timestamps run forward;
where they do not, the bins keep the clock of the first packets (earlier packets extend the
series by whole bins in front).
"""
from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from itertools import groupby
from pathlib import Path

import numpy as np
import polars as pl

from traceflow import compare as cmp
from traceflow.errors import InputFormatError, about
from traceflow.flows.table import CLOSE_REASONS, HANDSHAKE_STATES
from traceflow.models.network import Spacing
from traceflow.scale.memory import trim_heap
from traceflow.scale.spool import SPOOL_BYTES, Spool
from traceflow.stats.bins import check_span

#: finished connections whose packets are reduced together (the reductions have a fixed cost
#: per call)
REDUCE_CONNS = 4096
#: the flow columns of few values (the rest of fit compares them with strings)
_STATES = {"handshake": HANDSHAKE_STATES, "close": CLOSE_REASONS}
#: flow columns kept narrower when only some are kept (fit's): addresses as categories (4 bytes
#: instead of a 16-byte string view), packet counts in 32 bits. Handed back so: widened again
#: (the 16x dev10m table: 417,392 flows), fit's peak was 393-399 MB; kept narrow, 378-392 MB
_NARROW_FLOWS = {"client_addr": pl.Categorical, "server_addr": pl.Categorical,
                 "packets": pl.UInt32}
#: what the end-host inference reads besides the flow splitter's columns, in the kernels' form
#: (null as -1) and narrow (:func:`traceflow.flows.hosts.kernel_columns` widens them): carried
#: with the splitter's packets (``FlowStream(extra=...)``)
_HOST_EXTRA = {"window": pl.Int32, "mss": pl.Int32, "wscale": pl.Int16, "sack_ok": pl.Int8}
#: what the host thread buffers of the packets the splitter consumed: name -> (the prepared
#: column, the integer dtypes it may be kept in, narrowest first: the first that holds a batch's
#: values; none: its own). The buffer holds the packets of every connection not yet handed out,
#: and a connection ends when its pair has been idle for the idle timeout (300 s): on a long
#: capture, about 300 s of connections (16x dev10m: 0.8-1.2 M packets). MSS and window scale
#: are -1 on every packet but the SYNs, and lengths fit 16 bits on most links: 33 bytes a
#: packet instead of 43 (there, 32-37 MB instead of 40-54 MB)
_BUFFERED = {"ts": ("ts", ()), "tcp_flags": ("flags", (np.uint8,)), "seq": ("seq", ()),
             "ack": ("ack", ()), "payload_len": ("payload", (np.uint16, np.uint32)),
             "ip_len": ("ip_len", (np.uint16, np.uint32)), "has_tsval": ("has_ts", ()),
             "window": ("window", (np.uint16,)), "mss": ("mss", (np.int16,)),
             "wscale": ("wscale", (np.int8,)), "sack_ok": ("sack_ok", ()),
             # the congestion control's flight behind the bottleneck (TSecr names the ACK)
             "tsval": ("tsval", ()), "tsecr": ("tsecr", ())}
#: the end-host parts that name connections (joined or grouped by them)
_WITH_CONN = ("flight", "flight_conns", "timeouts")
#: jobs queued for the host thread and not yet applied; the main thread waits beyond this
#: (each holds a batch of packets). A reduction is a burst of work: with 4, the main thread
#: waited 2.5 s of an 11 s pass at 16x for the host thread, and the pass took 12.9-14.0 s
#: against 10.6-12.9 s with 8 (in-process, alternating; peak RSS 418-426 MB either way). Since
#: the host thread does less per batch, 6 is as fast as 8: whole ``fit`` on the 16x copy,
#: 7.62-8.27 s against 7.76-8.29 s, peak 300-308 MB against 303-311 MB (alternating, four each)
_QUEUED = 6


class Bins:
    """Bytes per ``width`` ns bin counted from ``origin`` (ns; packets before it extend the
    series in front by whole bins, so the origin stays on its grid), and the count, sum, first
    and last timestamp of the packets."""

    def __init__(self, origin, width=cmp.BIN_NS):
        self.width = width
        self.origin = origin
        self.sums = np.zeros(0)
        self.count = 0
        self.total = 0.0
        self.lo = None      # smallest timestamp added (ns)
        self.hi = None      # largest

    def add(self, ts, size):
        """Add packets: timestamps ``ts`` (int64 ns) and ``size`` (float64 bytes) arrays."""
        if ts.size == 0:
            return
        self._span(ts.size, float(size.sum()), int(ts.min()), int(ts.max()))
        idx = (ts - self.origin) // self.width
        first = int(idx.min())
        self._add_at(first, np.bincount(idx - first, weights=size))

    def merge(self, other):
        """Add the packets of ``other``, Bins on the same grid (origins a whole number of bins
        apart); byte counts are whole numbers, so the sums do not depend on the order."""
        if other.count == 0:
            return
        first, rest = divmod(other.origin - self.origin, self.width)
        if rest:
            raise ValueError("bins on different grids")
        self._span(other.count, other.total, other.lo, other.hi)
        self._add_at(first, other.sums)

    def _span(self, count, total, lo, hi):
        self.count += count
        self.total += total
        self.lo = lo if self.lo is None else min(self.lo, lo)
        self.hi = hi if self.hi is None else max(self.hi, hi)

    def _add_at(self, first, add):
        """Add ``add`` to the bins from bin ``first`` of the series on (< 0: before the origin,
        which moves back to it)."""
        if first < 0:
            self.sums = np.concatenate([np.zeros(-first), self.sums])
            self.origin += first * self.width
            first = 0
        if first + add.size > self.sums.size:
            self.sums = np.concatenate([self.sums, np.zeros(first + add.size - self.sums.size)])
        self.sums[first:first + add.size] += add

    def series(self, end):
        """The bins from the origin up to ``end`` (ns, exclusive; float64 array, at least one
        bin)."""
        n = max(1, -(-(end - self.origin) // self.width), self.sums.size)
        return np.concatenate([self.sums, np.zeros(n - self.sums.size)])

    def busy(self):
        """The bins from the one holding the first packet to the one holding the last."""
        return self.sums[(self.lo - self.origin) // self.width:
                         (self.hi - self.origin) // self.width + 1]


class PacketPass:
    """Accumulates what fit needs (see the module docstring) over the inputs fed with
    :meth:`feed_input`. ``flows``: keep the flow tables, the series, the span and the sessions'
    inputs; ``hosts``: infer end-host facts (both: fit's inputs without ``--hosts-from``).
    ``reduce_conns``: finished connections whose packets are reduced together; ``spool_bytes``:
    what is kept per connection stays in memory up to this many bytes, then goes to temporary
    files (:class:`~traceflow.scale.spool.Spool`). ``part``: (k, n) keeps only the
    connections of hash partition k of n (:class:`~traceflow.flows.table.FlowStream`); the
    link's measurements (the span counters, the SYN/ACK gaps, the packets of no connection) are
    partition 0's. The passes of the n partitions, each in a process of its own, are merged by
    :meth:`absorb` (see :func:`stream_inputs`)."""

    def __init__(self, *, flows=True, hosts=True, idle_timeout=300.0, reduce_conns=REDUCE_CONNS,
                 spool_bytes=SPOOL_BYTES, part=(0, 1)):
        from traceflow.flows.handshake_queue import SynAckGaps
        from traceflow.flows.hosts import HostFacts

        self.keep_flows = flows
        self.part = part
        self.link = part[0] == 0      # this pass measures the link (see the class docstring)
        self.reduce_conns = reduce_conns
        self.idle_timeout = idle_timeout
        # what is kept per connection until the end (flows, host facts, SYN/ACK gaps)
        self.spool = Spool(spool_bytes)
        self.hosts = HostFacts(self.spool) if hosts else None
        self.synacks = SynAckGaps(self.spool) if flows and self.link else None
        # the bottleneck's back-to-back spacing (traceflow.models.network), the link's
        self.spacing = Spacing() if flows and self.link else None
        self.data = None             # data-direction packets' Bins, origin: the first packet's
        self.packets = 0
        self.bytes = 0
        self.start = None            # first / last timestamp (ns)
        self.end = None
        self.exchanges = [0, 0]      # sum, connections with payload
        # ts_s origin of the end-host inference: the first TCP packet's timestamp (ns), in
        # capture order (every partition's)
        self.origin = None
        # the end-host facts' connection ids: (the input's first + the stream's) * n + k, one
        # per connection of every input and partition (the stream numbers an input's from 0)
        self.conn_base = 0

    # ------------------------------------------------------------------ one input

    def feed_input(self, source, *, filter=None, proto=None, batch_size=None, columns=None):
        """Stream one input (a path of a capture or packets Parquet, or a packets frame / Arrow
        table); returns its flow table (:func:`traceflow.flows.flows`; only ``columns`` if
        given, those of :data:`_NARROW_FLOWS` then in its types) when keeping flows."""
        from traceflow.flows.table import FlowStream, _resorted
        from traceflow.scale.prefetch import Prefetch

        self.columns = columns
        # the path RTT quantiles only if the flows kept show them: keeping every open
        # connection's samples for them took 1.8 s of the 16x dev10m pass's main thread
        quantiles = self.keep_flows and (columns is None
                                          or not {"rtt_median", "rtt_p90"}.isdisjoint(columns))
        self.stream = FlowStream(idle_timeout=self.idle_timeout, part=self.part,
                                 rtt_quantiles=quantiles, extra=_HOST_EXTRA)
        self.stream.on_packets = self._consumed
        self.pending, self.done = [], []   # the host thread's (see _host)
        self.queued = deque()
        made = self._made(source, filter, proto, batch_size)
        with (about(source if isinstance(source, (str, Path)) else None),
              ThreadPoolExecutor(1, thread_name_prefix="fit-hosts") as self.pool):
            try:
                with Prefetch(made, name="fit-batches") as batches:
                    for facts, prepared in batches:
                        self._take(facts)
                        self.stream.consume(prepared)
                        self._released(self.stream.release())
                self.stream.finish()
                self._released(self.stream.release())
                self._host(self._reduce)
                self._apply(wait=True)
                self.conn_base += self.stream.splitter.n_conns
            finally:
                for job in self.queued:
                    job.cancel()
        # the stream's state for the open connections, high-water sized (16x dev10m: 22 MB)
        in_order, self.stream = self.stream.in_order, None
        trim_heap()             # the pass's buffers, before its results come back
        if not self.keep_flows:
            return None
        table = self.spool.concat("flows")
        self.spool.drop("flows")
        if self.part[1] > 1:    # in order once merged with the other partitions' (by conn)
            return table.with_columns(part=pl.lit(self.part[0], dtype=pl.Int64))
        return table if in_order else _resorted(table)

    def _made(self, source, filter, proto, batch_size):
        """The batches of ``source`` as the pass takes them: ``(facts, prepared)``, the
        per-batch measurements (:meth:`_measure`) and the flow stream's packets
        (:meth:`FlowStream.prepare <traceflow.flows.table.FlowStream.prepare>`). A generator run
        one batch ahead on a thread of its own (:class:`~traceflow.scale.prefetch.Prefetch`):
        it touches only the state nothing else reads during the pass (the SYN/ACK gaps'
        servers, the stream's row count)."""
        from traceflow.flows.table import BATCH_ROWS, packet_batches
        from traceflow.selection import select_rows

        for batch in packet_batches(source, batch_size or BATCH_ROWS, columns=None):
            df = batch if isinstance(batch, pl.DataFrame) else pl.from_arrow(batch)
            df = select_rows(df, filter, proto)
            yield self._measure(df), self.stream.prepare(df)

    def _measure(self, df):
        """What the pass keeps of a batch besides its flows (None for no packets): the span
        counters, the SYN/ACK gaps' rows, the non-TCP packets' sizes for the bins and the first
        TCP packet's time."""
        if df.height == 0:
            return None
        ts = df["ts"].cast(pl.Int64)
        ip_len = df["ip_len"].cast(pl.Int64).fill_null(0)
        other = df.filter(pl.col("proto") != 6) if self.link else df.clear()
        tcp = ((pl.col("proto") == 6) & pl.col("tcp_flags").is_not_null()
               & pl.col("ip_version").is_not_null())
        return {
            "lo": ts.min(), "hi": ts.max(), "packets": df.height,
            "bytes": int(ip_len.sum()),
            "synacks": None if self.synacks is None else self.synacks.measure(df),
            "spacing": None if self.spacing is None else self.spacing.measure(
                ts.to_numpy(), ip_len.to_numpy()),
            "other": (other["ts"].cast(pl.Int64).to_numpy(),
                      other["ip_len"].cast(pl.Float64).fill_null(0).to_numpy()),
            "first_tcp": df.select(pl.col("ts").filter(tcp).first().cast(pl.Int64)).item(),
        }

    def _take(self, facts):
        """Apply a batch's :meth:`_measure`."""
        if facts is None:
            return
        if self.data is None:
            self.data = Bins(facts["lo"])
        if self.origin is None:
            self.origin = facts["first_tcp"]
        self.start = facts["lo"] if self.start is None else min(self.start, facts["lo"])
        self.end = facts["hi"] if self.end is None else max(self.end, facts["hi"])
        check_span(self.start, self.end, cmp.BIN_NS)     # the series' bins, before any is made
        self.packets += facts["packets"]
        self.bytes += facts["bytes"]
        if self.synacks is not None:
            self.synacks.keep(facts["synacks"])
        if self.spacing is not None:
            self.spacing.add(facts["spacing"])
        self._data(*facts["other"])

    def _consumed(self, done, out):
        """FlowStream hook: the packets it consumed, with their connection ids (buffered by
        the host thread, :meth:`_buffer`): only the columns it reads stay referenced."""
        self._host(self._buffer, done.select("is_tcp", *(c for c, _ in _BUFFERED.values())),
                   out["conn"], out["fwd"])

    def _released(self, chunk):
        # a partition's flows keep their connection numbers (the order of the merged table)
        conn = ["conn"] if self.part[1] > 1 else []
        if self.keep_flows and (chunk.height or not self.spool.count("flows")):  # keeps the schema
            self.spool.append("flows", chunk.drop("client_is_a", *({"conn"} - set(conn)))
                              if self.columns is None
                              else chunk.select(*self.columns, *conn).with_columns(
                              # kept for every connection: a byte each instead of a string
                              [pl.col(c).cast(pl.Enum(values)) for c, values in _STATES.items()
                               if c in self.columns]
                              + [pl.col(c).cast(narrow) for c, narrow in _NARROW_FLOWS.items()
                                 if c in self.columns]))
        if chunk.height == 0:
            return
        self._host(self._ended, chunk["conn"])
        self._apply()

    # ------------------------------------------------------------------ the host thread
    # The end-host buffer (``pending``, ``done``) belongs to one thread of its own,
    # which takes its jobs in the order they were queued; the main thread only queues them and
    # applies what they return in that order (:meth:`_apply`).

    def _host(self, job, *args):
        """Queue ``job(*args)`` for the host thread (waiting, beyond :data:`_QUEUED` jobs, for
        the oldest: most hold a batch's packets)."""
        while len(self.queued) >= _QUEUED:
            self._apply_one()
        self.queued.append(self.pool.submit(job, *args))

    def _buffer(self, done, conn, fwd):
        """Buffer the TCP packets of ``done`` with their connection ids ``conn`` and directions
        ``fwd`` (the splitter's), as numpy columns (a dict)."""
        tcp = done["is_tcp"].to_numpy() == 1
        if not tcp.any():
            return
        pk = {name: _narrowest(done[src].to_numpy()[tcp], kinds)
              for name, (src, kinds) in _BUFFERED.items()}
        pk.update(conn=conn[tcp].astype(np.uint32), a_side=(fwd[tcp] == 1).view(np.uint8))
        self.pending.append(_Pending(pk))

    def _ended(self, conns):
        """Connections handed out: reduced once ``reduce_conns`` have ended."""
        self.done.append(conns)
        if sum(c.len() for c in self.done) >= self.reduce_conns:
            return self._reduce()
        return None

    def _reduce(self):
        """Reduce the packets of the connections handed out so far, ``reduce_conns`` at a time
        (the reductions' temporaries stay small when many end together, as at the end): the
        results of :meth:`_reduce_group`, in order."""
        from traceflow.flows.hosts import kernel_columns

        if not self.done or not self.pending:
            self.done = []
            return None
        ids = np.sort(np.concatenate([c.to_numpy() for c in self.done]))
        self.done = []
        # whether a connection id is in the group: a lookup table (hashing every buffered
        # packet's id took most of this method's time)
        top = max(int(ids[-1]), *(int(p.columns["conn"].max()) for p in self.pending))
        in_group = np.zeros(top + 1, dtype=bool)
        results = []
        # group by group, each group's packets taken out of the buffer, with its connections
        # contiguous and in time order (stable): only one group's copy exists at a time (at the
        # end of a capture every open connection ends at once, and one release can end many:
        # the copy of all of them was 32 MB at the 16x dev10m pass's high-water mark, memray)
        for k in range(0, ids.size, self.reduce_conns):
            group = ids[k:k + self.reduce_conns]
            in_group[group] = True
            taken = [rows for piece in self.pending if (rows := piece.take(in_group)) is not None]
            in_group[group] = False
            if taken:
                conns = _concat(taken)
                del taken
                rows = np.lexsort((conns["ts"], conns["conn"]))
                results.append(self._reduce_group(kernel_columns(conns, rows)))
                del conns
        self.pending = _Pending.compacted([p for p in self.pending if p.left])
        return results

    def _reduce_group(self, columns):
        """The reductions of whole connections (their packets' kernel columns, each
        connection's rows contiguous and in time order): the end-host parts, merged into the
        end-host facts (in the order the connections were handed out, the order
        :meth:`HostFacts.merge <traceflow.flows.hosts.HostFacts.merge>` needs; the main thread
        reads them only after the pass), and the exchanges and the data sender's packets
        (:func:`traceflow.flows.hosts.reduce_packets`), for :meth:`_apply_one`."""
        from traceflow.flows.hosts import reduce_packets

        reduced, ts, size = reduce_packets(columns, self.origin)
        ex = reduced.pop("exchanges")
        if self.hosts is not None:
            k, n = self.part
            unique = (pl.col("conn").cast(pl.UInt64) + self.conn_base) * n + k
            for name in _WITH_CONN:
                reduced[name] = reduced[name].with_columns(conn=unique)
            self.hosts.merge(reduced)
        return int(ex.sum()), ex.len(), ts, size.astype(np.float64)

    def _apply_one(self):
        """Wait for the oldest host job and apply the reductions it returns (byte counts are
        whole numbers, so the sums do not depend on the order packets are added in)."""
        for ex_sum, ex_n, ts, size in self.queued.popleft().result() or ():
            self.exchanges[0] += ex_sum
            self.exchanges[1] += ex_n
            self._data(ts, size)

    def _apply(self, wait=False):
        """Apply the finished host jobs in order (all of them with ``wait``)."""
        while self.queued and (wait or self.queued[0].done()):
            self._apply_one()

    def _data(self, ts, size):
        if self.keep_flows:
            self.data.add(ts, size)

    # ------------------------------------------------------------------ results

    def span(self):
        """``(start, end)`` (ns, end exclusive) of every packet fed."""
        if self.start is None:
            raise InputFormatError("inputs hold no packets")
        return self.start, self.end + 1

    def exchanges_per_connection(self):
        n = self.exchanges[1]
        return self.exchanges[0] / n if n else float("nan")

    def snapshot(self):
        """What the pass measured, as :meth:`absorb` takes it (picklable: a partition's pass
        sends it from its process)."""
        return {"span": (self.start, self.end, self.packets, self.bytes) if self.link else None,
                "data": self.data if self.keep_flows else None, "exchanges": self.exchanges,
                "synacks": None if self.synacks is None else self.synacks.table(),
                "spacing": self.spacing,
                "hosts": None if self.hosts is None else self.hosts.parts()}

    def absorb(self, snapshot):
        """Add what another pass measured (:meth:`snapshot`): that of each partition in turn,
        into a pass that read nothing itself."""
        if snapshot["span"] is not None:
            self.start, self.end, self.packets, self.bytes = snapshot["span"]
        data = snapshot["data"]
        if data is not None:
            if self.data is None:
                self.data = data
            else:
                self.data.merge(data)
        self.exchanges = [mine + theirs for mine, theirs in zip(self.exchanges,
                                                                snapshot["exchanges"])]
        if snapshot.get("spacing") is not None:
            self.spacing.merge(snapshot["spacing"])
        if snapshot["synacks"] is not None and snapshot["synacks"].height:
            self.synacks.keep(snapshot["synacks"])
        if snapshot["hosts"] is not None:
            self.hosts.absorb(snapshot["hosts"])


def stream_inputs(inputs, *, workers=1, partitions=None, flows=True, hosts=True, filter=None,
                  proto=None, columns=None):
    """One pass over ``inputs`` (each as :meth:`PacketPass.feed_input` reads it): ``(the pass,
    each input's flow table or None)``. ``partitions`` (default ``workers``) > 1: the connections
    are split into that many hash partitions, each streamed by a pass of its own in one of
    ``workers`` processes (each reads every packet of ``inputs``, which must then be paths),
    and the passes are merged: the results are those of one pass."""
    partitions = partitions or workers
    if partitions <= 1:
        state = PacketPass(flows=flows, hosts=hosts)
        return state, [state.feed_input(source, filter=filter, proto=proto, columns=columns)
                       for source in inputs]
    if workers > 1 and not all(isinstance(source, (str, Path)) for source in inputs):
        raise InputFormatError("a pass in several workers needs paths (captures or packets "
                               "Parquet)")
    from traceflow.flows.table import _resorted
    from traceflow.scale.parallel import map_tasks

    tasks = [(inputs, (k, partitions), flows, hosts, filter, proto, columns)
             for k in range(partitions)]
    parts = map_tasks(_partition_pass, tasks, workers=workers, progress=False, user_errors=True)
    state = PacketPass(flows=flows, hosts=hosts)
    for _, snapshot in parts:
        state.absorb(snapshot)
    if not flows:
        return state, [None] * len(inputs)
    return state, [_resorted(pl.concat([tables_of[i] for tables_of, _ in parts], how="vertical"),
                             ties=("part", "conn")).drop("part", "conn")
                   for i in range(len(inputs))]


def _partition_pass(task):
    """The pass of one hash partition (a task of :func:`stream_inputs`, top level so that worker
    processes can import it): ``(each input's flow table or None, the pass's snapshot)``."""
    inputs, part, flows, hosts, filter, proto, columns = task
    state = PacketPass(flows=flows, hosts=hosts, part=part)
    try:
        tables = [state.feed_input(source, filter=filter, proto=proto, columns=columns)
                  for source in inputs]
        return tables, state.snapshot()
    finally:
        state.spool.close()


class _Pending:
    """A piece of the end-host buffer: the columns of a batch's TCP packets (a dict of arrays)
    and which of them are still buffered. Packets taken out are only marked until fewer than
    half are left (then the piece is copied): most packets of a batch leave with the first few
    reductions, and copying the rest at every reduction cost more than the reductions."""

    #: pieces beyond which the compacted ones are joined into one
    PIECES = 32

    def __init__(self, columns):
        self.columns = columns
        self.alive = None               # None: every row
        self.left = columns["conn"].size

    def take(self, ended):
        """Take out the rows whose connection ended (``ended``: a lookup table by connection
        id); returns them (None for none)."""
        mine = ended[self.columns["conn"]]
        if self.alive is not None:
            mine &= self.alive
        n = int(np.count_nonzero(mine))
        if n == 0:
            return None
        out = _rows(self.columns, mine)
        self.alive = ~mine if self.alive is None else self.alive & ~mine
        self.left -= n
        if 0 < 2 * self.left < self.alive.size:
            self.columns, self.alive = _rows(self.columns, self.alive), None
        return out

    @classmethod
    def compacted(cls, pieces):
        """``pieces``, the copied ones next to each other joined into one when there are too
        many (in order)."""
        if len(pieces) <= cls.PIECES:
            return pieces
        out = []
        for copied, run in groupby(pieces, key=lambda p: p.alive is None):
            run = list(run)
            if copied and len(run) > 1:
                out.append(cls(_concat([p.columns for p in run])))
            else:
                out.extend(run)
        return out


def _narrowest(values, kinds):
    """``values`` (an integer array) in the first dtype of ``kinds`` that holds all of them, else
    in their own (pieces in different dtypes concatenate into one that holds both: the values
    never change)."""
    if values.size:
        lo, hi = values.min(), values.max()
        for kind in kinds:
            if np.iinfo(kind).min <= lo and hi <= np.iinfo(kind).max:
                return values.astype(kind)
    return values


def _rows(columns, rows):
    """The ``rows`` (a slice or a boolean mask) of every column of ``columns``."""
    return {name: values[rows] for name, values in columns.items()}


def _concat(pieces):
    """Columns (dicts of arrays) one after another."""
    if len(pieces) == 1:
        return pieces[0]
    return {name: np.concatenate([p[name] for p in pieces]) for name in pieces[0]}

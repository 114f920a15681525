"""The sequential core of :mod:`traceflow.flows.pathrtt`: passive RTT samples over whole TCP
connections.

Each sample is one round trip *vantage point → host → vantage point*, opened by a packet the
capture sees going toward a host and closed by the first packet that host sends back echoing it:

- **Timestamps** (RFC 7323, as pping does): the first packet carrying a new TSval opens a sample;
  the first packet of the other direction whose TSecr equals that TSval closes it (first echo
  only; TSvals the host never echoes are dropped when a later one is echoed). Only round trips
  count (Karn's rule for timestamps; ePPing skips pure ACKs the same way):

  - a sample opens only at a segment that elicits an immediate ACK (payload, SYN, FIN), not at a
    pure ACK (the host echoes it whenever it next sends, seconds later) nor a retransmission;
  - a retransmission drops every pending TSval of its direction: whatever answers next may answer
    the retransmission yet echo an older TSval (a SYN/ACK echoes the first SYN);
  - the echo closes nothing if its ACK does not cover the opening segment (a duplicate ACK may
    echo an earlier pure ACK's equal TSval), if it is a retransmission, if it starts beyond the
    sequence space its direction has shown (the capture missed earlier packets, one of which may
    have been the first echo), or if it ends a silence of its host longer than the host's RTO
    (the RTO timer may have sent it, a retransmission whose original the capture never saw,
    echoing a stale ``TS.Recent``). The RTO is RFC 6298's from the half's samples so far (``srtt +
    4 rttvar``, at least ``min_rto_ns``); before the first, ``initial_rto_ns`` for a SYN or a
    connection whose handshake the capture missed, else ``min_rto_ns`` (the host's handshake
    passed untimed: its RTO is unknown, and the smallest one is assumed).
- **Sequence numbers** (packets without the timestamp option, as tcptrace does): a segment
  occupying sequence space (payload, SYN, FIN) opens a sample that the first ACK of the other
  direction covering its end closes (a RST/ACK too: a closed port answers at once); an ACK
  covering several pending segments closes the newest one (the segment whose arrival released
  it) and drops the others. Karn's rule: a
  retransmitted (or reordered) segment opens nothing and drops every pending segment of its
  direction, since any ACK covering them may answer the retransmission. The handshake is the
  same rule (SYN → SYN/ACK, SYN/ACK → final ACK).

A sample belongs to the *half* of the path beyond the host that closed it: the packet's direction
(``side``, 1 = sent by the endpoint pair's smaller endpoint, as
:func:`traceflow.flows.flowsplit.pair_ids`).
The two halves of a connection sum to its path RTT at any vantage point.

The state is per connection and direction only (pending TSvals and pending segment ends, in
FIFO lists of a shared node pool, plus the last sequence number seen), held in the state slot the
splitter (:class:`traceflow.flows.flowsplit.FlowSplitter`) gives the connection's endpoint pair
and reset when a new connection takes the slot, so :class:`RttSampler` consumes a capture batch
by batch (``feed`` each batch in capture order) in memory bounded by the open connections.
Times are int64 nanoseconds.
"""
import numpy as np

from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t

cdef uint16_t FIN = 0x01
cdef uint16_t SYN = 0x02
cdef uint16_t ACK = 0x10

cdef uint8_t SEEN = 1        # last_raw/last_rel hold the direction's latest sequence number
cdef uint8_t HAS_TSVAL = 2   # last_tsval holds the newest TSval opened in the direction
cdef uint8_t SENT_SYN = 4    # the direction's SYN (or SYN/ACK) was seen

#: RFC 6298 section 2.1: the RTO before any sample (also Linux's TCP_TIMEOUT_INIT), ns
INITIAL_RTO_NS = 1_000_000_000
#: the smallest RTO floor of common stacks (Linux's TCP_RTO_MIN; RFC 6298 says 1 s), ns: a
#: timer never fires sooner, so a shorter silence is never taken for one
MIN_RTO_NS = 200_000_000

#: ``kind`` of a sample
TIMESTAMP, SEQUENCE = 0, 1

#: the per-packet columns :meth:`RttSampler.feed` reads (NumPy dtypes)
BATCH_COLUMNS = {"conn": np.int64, "slot": np.int64, "fresh": np.uint8, "frame": np.int64,
                 "fwd": np.uint8, "ts": np.int64, "is_tcp": np.uint8,
                 "flags": np.uint16, "rel": np.int64, "seq": np.uint32, "ack": np.uint32,
                 "payload": np.int64, "retrans": np.uint8, "has_ts": np.uint8,
                 "tsval": np.uint32, "tsecr": np.uint32}


cdef inline bint _before(uint32_t a, uint32_t b) nogil:
    # a precedes b in 32-bit serial-number arithmetic (TSvals wrap)
    return <int32_t>(a - b) < 0


cdef class RttSampler:
    """Passive RTT samples of a packet stream (see the module docstring).

    ``max_ns``: samples longer than this (clock glitches; use the flow idle timeout) or negative
    are dropped. ``timestamps``: False ignores the timestamp option, so every packet is sampled
    by sequence numbers (tcptrace's and Wireshark's ``tcp.analysis.ack_rtt`` rule).
    ``initial_rto_ns``, ``min_rto_ns``: the RTO bounds of the silence rule (module docstring).
    """
    cdef readonly int64_t max_ns, initial_rto_ns, min_rto_ns
    cdef readonly bint timestamps
    cdef int64_t n_slots, n_nodes, free_node, n_used   # n_used: nodes in the lists
    # per connection direction, slot k = 2 * conn + direction
    cdef object _slot_arrays
    cdef int64_t[:] last_rel
    # the direction's last packet time and RFC 6298 state of its timestamp samples (ns; srtt 0:
    # no sample yet)
    cdef int64_t[:] last_t, srtt, rttvar
    # the end of the highest sequence space the direction's packets occupied (relative)
    cdef int64_t[:] high
    # FIFO list l = 2 * slot + (0 pending TSvals, 1 pending segment ends): first and last node
    cdef int64_t[:] head, tail
    cdef uint32_t[:] last_raw, last_tsval
    cdef uint8_t[:] state
    # node pool of the FIFO lists: key (TSval or sequence end), time and packet that opened
    # the sample, next node
    cdef object _node_arrays
    cdef int64_t[:] node_key, node_t, node_pkt, node_next
    cdef int64_t[:] node_end     # a TSval's: the end of the segment that opened it (relative)

    def __init__(self, int64_t max_ns, bint timestamps=True,
                 int64_t initial_rto_ns=INITIAL_RTO_NS, int64_t min_rto_ns=MIN_RTO_NS):
        self.max_ns = max_ns
        self.initial_rto_ns = initial_rto_ns
        self.min_rto_ns = min_rto_ns
        self.timestamps = timestamps
        self.n_slots = self.n_nodes = self.n_used = 0
        self.free_node = -1
        self._grow_slots(2048)
        self._grow_nodes(4096)

    cdef _grow_slots(self, int64_t capacity):
        specs = [("head", np.int64, -1, 2), ("tail", np.int64, -1, 2),
                 ("last_rel", np.int64, 0, 1), ("last_raw", np.uint32, 0, 1),
                 ("last_t", np.int64, 0, 1), ("srtt", np.int64, 0, 1),
                 ("rttvar", np.int64, 0, 1), ("high", np.int64, 0, 1),
                 ("last_tsval", np.uint32, 0, 1), ("state", np.uint8, 0, 1)]
        new = {name: np.full(per * capacity, fill, dtype=dt) for name, dt, fill, per in specs}
        if self.n_slots:
            for name, values in self._slot_arrays.items():
                new[name][:values.shape[0]] = values
        self._slot_arrays = new
        self.n_slots = capacity
        self.head, self.tail = new["head"], new["tail"]
        self.last_rel = new["last_rel"]
        self.last_t, self.srtt, self.rttvar = new["last_t"], new["srtt"], new["rttvar"]
        self.high = new["high"]
        self.last_raw, self.last_tsval = new["last_raw"], new["last_tsval"]
        self.state = new["state"]

    cdef _grow_nodes(self, int64_t capacity):
        new = {name: np.zeros(capacity, dtype=np.int64)
               for name in ("key", "t", "pkt", "next", "end")}
        if self.n_nodes:
            for name, values in self._node_arrays.items():
                new[name][:self.n_nodes] = values
        # the added nodes form the free list
        new["next"][self.n_nodes:capacity - 1] = np.arange(self.n_nodes + 1, capacity)
        new["next"][capacity - 1] = self.free_node
        self.free_node = self.n_nodes
        self._node_arrays = new
        self.n_nodes = capacity
        self.node_key, self.node_t = new["key"], new["t"]
        self.node_pkt, self.node_next = new["pkt"], new["next"]
        self.node_end = new["end"]

    cdef inline void _push(self, int64_t l, int64_t key, int64_t t, int64_t pkt,
                           int64_t end) noexcept nogil:
        # a free node exists: :meth:`_feed` grows the pool before its loop
        cdef int64_t node = self.free_node
        self.free_node = self.node_next[node]
        self.n_used += 1
        self.node_key[node] = key
        self.node_end[node] = end
        self.node_t[node] = t
        self.node_pkt[node] = pkt
        self.node_next[node] = -1
        if self.tail[l] >= 0:
            self.node_next[self.tail[l]] = node
        else:
            self.head[l] = node
        self.tail[l] = node

    cdef inline void _pop(self, int64_t l) noexcept nogil:
        cdef int64_t node = self.head[l]
        self.head[l] = self.node_next[node]
        if self.head[l] < 0:
            self.tail[l] = -1
        self.node_next[node] = self.free_node
        self.free_node = node
        self.n_used -= 1

    cdef void _reset(self, int64_t s) noexcept nogil:
        """Forget the state of slot ``s``'s two directions (a new connection took it)."""
        cdef int64_t k, l
        for k in range(2 * s, 2 * s + 2):
            if k >= self.n_slots:
                return
            for l in range(2 * k, 2 * k + 2):
                while self.head[l] >= 0:
                    self._pop(l)
            self.last_rel[k] = 0
            self.last_t[k] = 0
            self.srtt[k] = 0
            self.rttvar[k] = 0
            self.high[k] = 0
            self.last_raw[k] = 0
            self.last_tsval[k] = 0
            self.state[k] = 0

    def feed(self, batch):
        """Consume the next packets (capture order) and return their samples.

        ``batch``: a mapping (dict, Polars DataFrame) of equal-length columns
        :data:`BATCH_COLUMNS`: ``conn`` (connection number, reported with the samples),
        ``slot`` (the connection's state slot, :meth:`FlowSplitter.feed
        <traceflow.flows.flowsplit.FlowSplitter.feed>`), ``fresh`` (the packet opens its
        connection: the slot's state is reset), ``frame`` (the packet's number, reported with
        the samples), ``fwd`` (direction), ``ts`` (ns), ``is_tcp``, ``flags`` (TCP flags),
        ``rel`` (sequence number relative to the direction's first packet, unwrapped, as the
        splitter computes), ``seq``/``ack`` (raw), ``payload`` (bytes), ``retrans`` (the
        splitter's flag), ``has_ts`` (the timestamp option is present), ``tsval``/``tsecr``.

        Returns a dict of NumPy arrays, one entry per sample, in capture order of the closing
        packets: ``frame`` (of the closing packet), ``opening_frame`` (of the packet it
        answers), ``ts`` (closing time), ``conn``, ``side`` (the closing packet's direction: the
        half the sample measures), ``rtt`` (ns) and ``kind`` (:data:`TIMESTAMP` or
        :data:`SEQUENCE`).
        """
        cols = [np.ascontiguousarray(batch[name], dtype=dt) for name, dt in BATCH_COLUMNS.items()]
        return self._feed(*cols)

    def _feed(self, const int64_t[:] conn, const int64_t[:] slot, const uint8_t[:] fresh,
              const int64_t[:] frame, const uint8_t[:] fwd, const int64_t[:] ts,
              const uint8_t[:] is_tcp, const uint16_t[:] flags, const int64_t[:] rel,
              const uint32_t[:] seq, const uint32_t[:] ack, const int64_t[:] payload,
              const uint8_t[:] retrans, const uint8_t[:] has_ts, const uint32_t[:] tsval,
              const uint32_t[:] tsecr):
        cdef Py_ssize_t n = conn.shape[0], i
        out = {name: np.empty(n, dtype=dt) for name, dt in [
            ("frame", np.int64), ("opening_frame", np.int64), ("ts", np.int64),
            ("conn", np.int64), ("side", np.uint8), ("rtt", np.int64), ("kind", np.uint8)]}
        cdef int64_t[:] o_packet = out["frame"]
        cdef int64_t[:] o_opener = out["opening_frame"]
        cdef int64_t[:] o_ts = out["ts"]
        cdef int64_t[:] o_conn = out["conn"]
        cdef uint8_t[:] o_side = out["side"]
        cdef int64_t[:] o_rtt = out["rtt"]
        cdef uint8_t[:] o_kind = out["kind"]
        cdef Py_ssize_t m = 0
        cdef int64_t c, k, o, t, a, rtt, opened, opener, opened_end, occupied, need, rto
        cdef uint8_t d, kind
        cdef uint16_t f
        cdef uint32_t x
        cdef bint use_ts
        cdef uint8_t by_ts = TIMESTAMP, by_seq = SEQUENCE
        # room for the batch before the loop, which then runs without the GIL: every packet
        # pushes at most one node, and its slot's two directions must exist
        if n:
            need = self.n_slots
            while need <= 2 * int(np.max(slot)) + 1:
                need *= 2
            if need > self.n_slots:
                self._grow_slots(need)
            need = self.n_used + n
            if need > self.n_nodes:
                self._grow_nodes(max(need, 2 * self.n_nodes))
        with nogil:
            for i in range(n):
                c = slot[i]
                if fresh[i]:
                    self._reset(c)
                if not is_tcp[i]:
                    continue
                d = fwd[i] & 1
                k = 2 * c + d          # this packet's direction
                o = 2 * c + 1 - d      # the direction it answers
                f = flags[i]
                t = ts[i]
                use_ts = self.timestamps and has_ts[i]

                # 1. does this packet close a sample opened in the other direction?
                opened = -1
                occupied = payload[i] + (1 if f & SYN else 0) + (1 if f & FIN else 0)
                if f & ACK:
                    if use_ts:
                        x = tsecr[i]
                        while self.head[2 * o] >= 0 and _before(
                                <uint32_t>self.node_key[self.head[2 * o]], x):
                            self._pop(2 * o)                   # never echoed
                        if (self.head[2 * o] >= 0
                                and <uint32_t>self.node_key[self.head[2 * o]] == x):
                            opened = self.node_t[self.head[2 * o]]
                            opener = self.node_pkt[self.head[2 * o]]
                            opened_end = self.node_end[self.head[2 * o]]
                            self._pop(2 * o)                   # first echo only
                            if self.srtt[k] == 0:
                                # the RTO before any sample, unless the host's handshake passed
                                # untimed (end 1: the opener is a SYN at relative 0)
                                rto = (self.initial_rto_ns if opened_end == 1
                                       or not (self.state[k] & SENT_SYN) else self.min_rto_ns)
                            else:
                                rto = self.srtt[k] + 4 * self.rttvar[k]
                                if rto < self.min_rto_ns:
                                    rto = self.min_rto_ns
                            a = opened if opened > self.last_t[k] else self.last_t[k]
                            if (retrans[i] or t - a > rto
                                    or self.last_rel[o] + <int32_t>(ack[i] - self.last_raw[o])
                                    < opened_end
                                    or (self.state[k] & SEEN and rel[i] > self.high[k])):
                                opened = -1                    # a stale TS.Recent
                        kind = by_ts
                    elif self.state[o] & SEEN:
                        a = self.last_rel[o] + <int32_t>(ack[i] - self.last_raw[o])
                        while (self.head[2 * o + 1] >= 0
                               and self.node_key[self.head[2 * o + 1]] <= a):
                            opened = self.node_t[self.head[2 * o + 1]]  # the newest covered wins
                            opener = self.node_pkt[self.head[2 * o + 1]]
                            self._pop(2 * o + 1)
                        kind = by_seq
                if opened >= 0:
                    rtt = t - opened
                    if 0 <= rtt <= self.max_ns:
                        o_packet[m] = frame[i]
                        o_opener[m] = opener
                        o_ts[m] = t
                        o_conn[m] = conn[i]
                        o_side[m] = d
                        o_rtt[m] = rtt
                        o_kind[m] = kind
                        m += 1
                        if kind == by_ts:                      # RFC 6298 section 2.3
                            if self.srtt[k] == 0:
                                self.srtt[k] = rtt if rtt > 0 else 1
                                self.rttvar[k] = rtt // 2
                            else:
                                a = self.srtt[k] - rtt if self.srtt[k] > rtt else rtt - self.srtt[k]
                                self.rttvar[k] += (a - self.rttvar[k]) // 4
                                self.srtt[k] += (rtt - self.srtt[k]) // 8

                # 2. what does it ask the other side to answer?
                if use_ts:
                    x = tsval[i]
                    if retrans[i]:
                        # its host waited an RTO for an answer: whatever it now gets may answer
                        # the retransmission yet echo an older TSval (a SYN/ACK echoes the
                        # first SYN), so every pending TSval of the direction is ambiguous
                        while self.head[2 * k] >= 0:
                            self._pop(2 * k)
                    elif occupied > 0 and (
                            not (self.state[k] & HAS_TSVAL) or _before(self.last_tsval[k], x)):
                        self._push(2 * k, x, t, frame[i], rel[i] + occupied)
                        self.last_tsval[k] = x
                        self.state[k] |= HAS_TSVAL
                else:
                    if retrans[i]:
                        while self.head[2 * k + 1] >= 0:     # Karn's rule
                            self._pop(2 * k + 1)
                    elif occupied > 0:
                        self._push(2 * k + 1, rel[i] + occupied, t, frame[i], 0)
                self.last_raw[k] = seq[i]
                self.last_rel[k] = rel[i]
                self.last_t[k] = t
                if f & SYN:
                    self.state[k] |= SENT_SYN
                if not (self.state[k] & SEEN) or rel[i] + occupied > self.high[k]:
                    self.high[k] = rel[i] + occupied
                self.state[k] |= SEEN
        # copies of the samples' rows: views would keep the batch-long arrays alive for as long
        # as a caller holds the samples of its open connections
        return {name: values[:m].copy() for name, values in out.items()}


def nearest_other(const int64_t[:] conn, const int64_t[:] ts, const uint8_t[:] side,
                  const int64_t[:] rtt):
    """For samples sorted by (``conn``, ``ts``): the ``rtt`` of the nearest-in-time sample of the
    other ``side`` of the same connection (the earlier one on a tie), -1 where there is none.
    Two passes: the latest other-side sample before each sample, then the first one after."""
    cdef Py_ssize_t n = conn.shape[0], i
    out_arr = np.full(n, -1, dtype=np.int64)
    gap_arr = np.zeros(n, dtype=np.int64)
    cdef int64_t[:] out = out_arr
    cdef int64_t[:] gap = gap_arr       # distance in time to the sample in ``out``
    cdef int64_t last_t[2]
    cdef int64_t last_rtt[2]
    cdef int64_t c = -1
    cdef uint8_t o
    for i in range(n):
        if conn[i] != c:
            c = conn[i]
            last_rtt[0] = last_rtt[1] = -1
        o = 1 - side[i]
        if last_rtt[o] >= 0:
            out[i] = last_rtt[o]
            gap[i] = ts[i] - last_t[o]
        last_t[side[i]] = ts[i]
        last_rtt[side[i]] = rtt[i]
    c = -1
    for i in range(n - 1, -1, -1):
        if conn[i] != c:
            c = conn[i]
            last_rtt[0] = last_rtt[1] = -1
        o = 1 - side[i]
        if last_rtt[o] >= 0 and (out[i] < 0 or last_t[o] - ts[i] < gap[i]):
            out[i] = last_rtt[o]
        last_t[side[i]] = ts[i]
        last_rtt[side[i]] = rtt[i]
    return out_arr

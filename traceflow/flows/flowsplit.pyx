# distutils: language = c++
"""The sequential core of :mod:`traceflow.flows`: a streaming connection splitter.

Why a kernel: three rules are genuinely sequential. (1) A SYN starts a new connection when its ISN
differs from the base sequence number of its direction *in the current connection*, and that base
is reset by the split itself (recursive, so no exact closed form as window expressions). (2) The
handshake is an ordered chain of events (SYN → SYN/ACK → final ACK → first data → second data),
each defined relative to the previous one. (3) Sequence analysis carries running per-direction
state (unwrapped sequence number, highest byte sent). One O(n) pass in capture order with state
per endpoint pair does all three, and the counters of every connection too.

Streaming: :class:`FlowSplitter` keeps state only for the endpoint pairs that have an open
connection (a hash table of pairs, their current connection's counters, handshake events and
sequence space), consumes packets batch by batch, and hands out each connection's row when it
is finished: replaced by a new connection on the same pair, or expired because the capture's
clock passed its pair's last packet by more than the idle timeout, or at the end of the input.
Memory is O(open endpoint pairs + one batch), whatever the capture's length.
"""
import numpy as np

from cython.operator cimport dereference as deref, predecrement as dec
from libc.stdint cimport INT64_MIN, int8_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libcpp.map cimport map as cmap
from libcpp.vector cimport vector

cdef uint16_t FIN = 0x01
cdef uint16_t SYN = 0x02
cdef uint16_t RST = 0x04
cdef uint16_t ACK = 0x10

#: packets a lone-timestamp decision may look ahead for its pair's next packet
LOOKAHEAD = 1 << 16
#: packets the expiry clock looks ahead (a lone far-ahead timestamp must not expire every pair)
CLOCK_AHEAD = 2
#: no expiry sweep before this packet (:meth:`StreamClock.sweeps`)
NO_SWEEP = INT64_MIN
# how FlowSplitter._feed's loop stopped: at the end, before a packet whose pair's next packet
# may be in the next batch, to make room, or before a packet that needs the pairs' next packets
cdef enum:
    _DONE, _EARLY, _ROOM, _NEXT

# Per-pair state of the pair's open connection (columns of ``_p``).
PAIR_FIELDS = ("used", "port_a", "port_b", "proto", "ip_version", "pair_ts", "conn", "start",
               "end", "first_fwd", "client_fwd", "t_syn", "t_synack", "t_ack", "t_data1",
               "t_data2", "cause", "has_ports", "head", "syn_opened")
cdef enum:
    P_USED, P_PA, P_PB, P_PROTO, P_IPVER, P_PAIR_TS, P_CONN, P_START, P_END, P_FIRST_FWD, \
        P_CLIENT, P_T_SYN, P_T_SA, P_T_ACK, P_T_D1, P_T_D2, P_CAUSE, P_HAS_PORTS, P_HEAD, P_SYN_OPENED, NP
# Per-direction state, row 2 * pair + direction (1 = sent by the pair's smaller endpoint "a").
DIR_FIELDS = ("seen", "base", "last_seq", "pos", "occ_set", "occ_max", "data_set", "data_lo",
              "data_hi", "packets", "bytes", "payload", "frame_bytes", "syn", "synack", "fin",
              "rst", "app", "irregular", "retransmissions", "tcp")
cdef enum:
    D_SEEN, D_BASE, D_LAST_SEQ, D_POS, D_OCC_SET, D_OCC_MAX, D_DATA_SET, D_DATA_LO, D_DATA_HI, \
        D_PACKETS, D_BYTES, D_PAYLOAD, D_FRAME, D_SYN, D_SYNACK, D_FIN, D_RST, D_APP, D_IRREG, \
        D_RETRANS, D_TCP, ND
#: columns of a finished connection's row: the pair's key (uint64 address halves, stored as
#: int64 bits), :data:`PAIR_FIELDS`, :data:`DIR_FIELDS` of direction a then b (suffixes _a, _b)
#: and ``at_end`` (still open at the end of the input)
ROW_FIELDS = (("a_hi", "a_lo", "b_hi", "b_lo") + PAIR_FIELDS
              + tuple(f + "_a" for f in DIR_FIELDS) + tuple(f + "_b" for f in DIR_FIELDS)
              + ("at_end",))
cdef int NROW = 4 + NP + 2 * ND + 1


cdef inline uint64_t _mix(uint64_t x) nogil:
    # splitmix64 finalizer
    x ^= x >> 30
    x *= 0xbf58476d1ce4e5b9ULL
    x ^= x >> 27
    x *= 0x94d049bb133111ebULL
    x ^= x >> 31
    return x


cdef inline bint _src_first(uint64_t s_hi, uint64_t s_lo, uint16_t sp,
                            uint64_t d_hi, uint64_t d_lo, uint16_t dp) nogil:
    # the endpoint pair's "a" side is the smaller (address, port)
    if s_hi != d_hi:
        return s_hi < d_hi
    if s_lo != d_lo:
        return s_lo < d_lo
    return sp <= dp


cdef inline bint _same_pair(uint64_t s_hi, uint64_t s_lo, uint16_t sp, uint64_t d_hi,
                            uint64_t d_lo, uint16_t dp, uint64_t t_hi, uint64_t t_lo, uint16_t tp,
                            uint64_t u_hi, uint64_t u_lo, uint16_t up) nogil:
    # the same two endpoints, in either direction
    return ((s_hi == t_hi and s_lo == t_lo and sp == tp and d_hi == u_hi and d_lo == u_lo
             and dp == up)
            or (s_hi == u_hi and s_lo == u_lo and sp == up and d_hi == t_hi and d_lo == t_lo
                and dp == tp))


cdef inline uint64_t _pair_hash(uint64_t a_hi, uint64_t a_lo, uint64_t b_hi, uint64_t b_lo,
                                uint16_t pa, uint16_t pb, uint8_t proto) nogil:
    return _mix(a_hi ^ _mix(a_lo ^ _mix(b_hi ^ _mix(b_lo ^ (
        (<uint64_t>pa << 24) | (<uint64_t>pb << 8) | proto)))))


cdef inline uint64_t _packet_pair_hash(bint src_first, uint64_t s_hi, uint64_t s_lo, uint16_t sp,
                                       uint64_t d_hi, uint64_t d_lo, uint16_t dp,
                                       uint8_t proto) noexcept nogil:
    # a packet's unordered endpoint pair, hashed with its "a" side (_src_first) first
    if src_first:
        return _pair_hash(s_hi, s_lo, d_hi, d_lo, sp, dp, proto)
    return _pair_hash(d_hi, d_lo, s_hi, s_lo, dp, sp, proto)


def pair_ids(const uint64_t[:] src_hi, const uint64_t[:] src_lo, const uint64_t[:] dst_hi,
             const uint64_t[:] dst_lo, const uint16_t[:] sport, const uint16_t[:] dport,
             const uint8_t[:] proto):
    """Number the unordered endpoint pairs 0, 1, ... in order of first appearance.

    Addresses are 16-byte addresses as big-endian uint64 halves. Returns ``(gid, fwd)``: int64
    pair id per packet and uint8 direction, 1 when the packet is sent by the pair's smaller
    (address, port) endpoint. An open-addressing hash table keyed by the whole pair (compared
    exactly, so hash collisions cannot merge pairs).
    """
    cdef Py_ssize_t n = src_hi.shape[0], i, j, k
    cdef uint64_t cap = 1024, mask, h
    while cap < 2 * <uint64_t>n:
        cap <<= 1
    mask = cap - 1
    slots_arr = np.full(cap, -1, dtype=np.int64)     # slot -> first packet of the pair
    ids_arr = np.empty(n, dtype=np.int64)
    fwd_arr = np.empty(n, dtype=np.uint8)
    cdef int64_t[:] slots = slots_arr
    cdef int64_t[:] ids = ids_arr
    cdef uint8_t[:] fwd = fwd_arr
    cdef int64_t n_pairs = 0
    with nogil:
        for i in range(n):
            fwd[i] = _src_first(src_hi[i], src_lo[i], sport[i], dst_hi[i], dst_lo[i], dport[i])
            h = _packet_pair_hash(fwd[i], src_hi[i], src_lo[i], sport[i], dst_hi[i], dst_lo[i],
                                  dport[i], proto[i])
            j = h & mask
            while True:
                k = slots[j]
                if k < 0:
                    slots[j] = i
                    ids[i] = n_pairs
                    n_pairs += 1
                    break
                if proto[k] == proto[i] and _same_pair(
                        src_hi[i], src_lo[i], sport[i], dst_hi[i], dst_lo[i], dport[i],
                        src_hi[k], src_lo[k], sport[k], dst_hi[k], dst_lo[k], dport[k]):
                    ids[i] = ids[k]
                    break
                j = (j + 1) & mask
    return ids_arr, fwd_arr


def in_partition(const uint64_t[:] src_hi, const uint64_t[:] src_lo, const uint64_t[:] dst_hi,
                 const uint64_t[:] dst_lo, const uint16_t[:] sport, const uint16_t[:] dport,
                 const uint8_t[:] proto, int64_t k, int64_t n):
    """Whether each packet's unordered endpoint pair is in hash partition ``k`` of ``n`` (bool
    array; both directions of a pair land in the same partition)."""
    cdef Py_ssize_t m = src_hi.shape[0], i
    out_arr = np.empty(m, dtype=np.bool_)
    cdef uint8_t[:] out = out_arr.view(np.uint8)
    cdef uint64_t h
    with nogil:
        for i in range(m):
            h = _packet_pair_hash(
                _src_first(src_hi[i], src_lo[i], sport[i], dst_hi[i], dst_lo[i], dport[i]),
                src_hi[i], src_lo[i], sport[i], dst_hi[i], dst_lo[i], dport[i], proto[i])
            out[i] = <int64_t>(h % <uint64_t>n) == k
    return out_arr


cdef void _cover_add(cmap[int64_t, int64_t]& m, int64_t s, int64_t e) noexcept nogil:
    """Add the byte range [s, e) to the disjoint ranges ``m`` (start → end), merging."""
    cdef cmap[int64_t, int64_t].iterator it = m.upper_bound(s), prev
    if it != m.begin():
        prev = it
        dec(prev)
        if deref(prev).second >= s:
            if deref(prev).second >= e:
                return
            s = deref(prev).first
            it = prev
    while it != m.end() and deref(it).first <= e:
        if deref(it).second > e:
            e = deref(it).second
        it = m.erase(it)
    m[s] = e


cdef int64_t _cover_sum(cmap[int64_t, int64_t]& m) noexcept nogil:
    cdef int64_t total = 0
    for item in m:
        total += item.second - item.first
    return total


cdef class FlowSplitter:
    """Split a packet stream (capture order) into connections, batch by batch.

    ``idle_ns``: idle timeout (ns). A connection of an endpoint pair ends before packet i when
    the gap to the pair's previous packet exceeds ``idle_ns`` (unless packet i's timestamp is a
    lone glitch: the pair's next packet, if it comes within :data:`LOOKAHEAD` packets, jumps back
    by more than ``idle_ns``), or when i is a TCP SYN (without ACK) whose sequence number
    differs from the base sequence number of its direction in the connection (the ISN of an
    earlier SYN, else the first seen sequence number minus one). A retransmitted SYN (same ISN)
    stays. Connections are numbered 0, 1, ... in the order of their first packets (``conn``).

    A pair's state is dropped (its connection finished) once the capture's clock
    (:class:`StreamClock`) is more than ``idle_ns`` past the pair's last packet.

    ``head_until`` (ns, for a range of a capture cut into several, :mod:`traceflow.scale.ranges`):
    a connection gets ``head`` = 1 when it opens a pair's state (``cause`` 0) at or before this
    time, or replaces a ``head`` connection by a new ISN (``cause`` 2): the connections that may
    continue one open before the range, since no idle gap separates them from it. A packet whose
    ``force`` column (optional) is 1 starts a new connection whatever the rules (``cause`` 3):
    the border connections of the ranges are stitched by feeding them again, each starting where
    its range found it start. ``syn_opened`` = 1: the connection's first packet is a TCP SYN
    without ACK (its ISN is then the base of its direction: whether it would have replaced a
    connection open before the range is decided from that connection's row).

    ``max_rows``: finished connections' rows held until :meth:`finished` hands them out. When
    they fill it (an expiry sweep too, which resumes where it stopped), :meth:`feed` stops with
    ``rows_full`` set: hand the rows out and feed the rest. The rows of the open connections
    (hundreds of bytes each) are then never all reserved at once, whatever their number.
    """
    cdef readonly int64_t idle_ns, n_conns, n_open, n_rows, max_rows
    cdef public int64_t head_until
    cdef readonly bint rows_full
    cdef int64_t n_pairs_cap, free_pair
    cdef object _pk, _pp, _pd, _rows_arr, _table_arr
    # C-contiguous: the kernel's many field reads need no stride multiplication
    cdef uint64_t[:, ::1] pkey      # pair -> a_hi, a_lo, b_hi, b_lo
    cdef int64_t[:, ::1] p          # pair -> PAIR_FIELDS (P_USED: 0 free, 1 used; free list in P_CONN)
    cdef int64_t[:, ::1] d          # 2 * pair + direction -> DIR_FIELDS
    cdef int64_t[:, ::1] rows       # finished connections, ROW_FIELDS
    cdef int64_t[::1] table         # hash slot -> pair, -1 empty
    cdef uint64_t mask
    cdef vector[cmap[int64_t, int64_t]] cover   # payload ranges of irregular directions

    def __init__(self, int64_t idle_ns, int64_t max_rows=1 << 13, int64_t head_until=INT64_MIN):
        if max_rows < 1:
            raise ValueError("max_rows must be at least 1")
        self.idle_ns = idle_ns
        self.head_until = head_until
        self.max_rows = max_rows
        self.rows_full = False
        self.n_conns = self.n_open = 0
        self.n_pairs_cap = 0
        self.free_pair = -1
        self._grow_pairs(1024)
        self._reset_rows()

    cdef _grow_pairs(self, int64_t capacity):
        old = self.n_pairs_cap
        pk = np.zeros((capacity, 4), dtype=np.uint64)
        pp = np.zeros((capacity, NP), dtype=np.int64)
        pd = np.zeros((2 * capacity, ND), dtype=np.int64)
        if old:
            pk[:old], pp[:old], pd[:2 * old] = self._pk, self._pp, self._pd
        # the added pairs form the free list (linked through P_CONN)
        pp[old:capacity - 1, P_CONN] = np.arange(old + 1, capacity)
        pp[capacity - 1, P_CONN] = self.free_pair
        self.free_pair = old
        self._pk, self._pp, self._pd = pk, pp, pd
        self.pkey, self.p, self.d = pk, pp, pd
        self.n_pairs_cap = capacity
        self.cover.resize(2 * capacity)
        cdef uint64_t cap = 1024
        while cap < 2 * <uint64_t>capacity:
            cap <<= 1
        self._table_arr = np.full(cap, -1, dtype=np.int64)
        self.table = self._table_arr
        self.mask = cap - 1
        self._reindex()

    cdef void _reindex(self) noexcept nogil:
        """Rebuild the hash table over the used pairs (after growth or expiry)."""
        cdef uint64_t j
        cdef int64_t q
        for j in range(self.mask + 1):
            self.table[j] = -1
        for q in range(self.n_pairs_cap):
            if self.p[q, P_USED]:
                j = _pair_hash(self.pkey[q, 0], self.pkey[q, 1], self.pkey[q, 2], self.pkey[q, 3],
                               <uint16_t>self.p[q, P_PA], <uint16_t>self.p[q, P_PB],
                               <uint8_t>self.p[q, P_PROTO]) & self.mask
                while self.table[j] >= 0:
                    j = (j + 1) & self.mask
                self.table[j] = q

    cdef _reset_rows(self):
        # the buffer is kept unless close() or expire() made it larger than max_rows
        if self._rows_arr is None or self.rows.shape[0] > self.max_rows:
            self._rows_arr = np.zeros((min(256, self.max_rows), NROW), dtype=np.int64)
            self.rows = self._rows_arr
        self.n_rows = 0
        self.rows_full = False

    cdef _room(self, int64_t rows):
        """Room for ``rows`` finished rows in all (growing the buffer at least twofold) and for
        one more pair (the kernel's loop runs without the GIL, so it allocates nothing: it stops
        where it needs more)."""
        cdef int64_t cap = self.rows.shape[0]
        if rows > cap:
            self._grow_rows(max(rows, 2 * cap))
        if self.free_pair < 0:
            self._grow_pairs(2 * self.n_pairs_cap)

    cdef _grow_rows(self, int64_t capacity):
        grown = np.zeros((capacity, NROW), dtype=np.int64)
        grown[:self.n_rows] = self._rows_arr[:self.n_rows]
        self._rows_arr = grown
        self.rows = grown

    cdef int64_t _lookup(self, uint64_t a_hi, uint64_t a_lo, uint64_t b_hi, uint64_t b_lo,
                         uint16_t pa, uint16_t pb, uint8_t proto) noexcept nogil:
        """The pair's index, or a new pair (fresh state) if it has none (a free pair exists:
        :meth:`_room`)."""
        cdef uint64_t j = _pair_hash(a_hi, a_lo, b_hi, b_lo, pa, pb, proto) & self.mask
        cdef int64_t q
        while True:
            q = self.table[j]
            if q < 0:
                break
            if (self.pkey[q, 0] == a_hi and self.pkey[q, 1] == a_lo and self.pkey[q, 2] == b_hi
                    and self.pkey[q, 3] == b_lo and self.p[q, P_PA] == pa
                    and self.p[q, P_PB] == pb and self.p[q, P_PROTO] == proto):
                return q
            j = (j + 1) & self.mask
        q = self.free_pair
        self.free_pair = self.p[q, P_CONN]
        self.table[j] = q
        self.pkey[q, 0], self.pkey[q, 1], self.pkey[q, 2], self.pkey[q, 3] = a_hi, a_lo, b_hi, b_lo
        self.p[q, P_USED] = 1
        self.p[q, P_PA], self.p[q, P_PB], self.p[q, P_PROTO] = pa, pb, proto
        self.p[q, P_CONN] = -1
        self.n_open += 1
        return q

    cdef void _emit(self, int64_t q, bint at_end) noexcept nogil:
        """Append pair ``q``'s current connection to the finished rows (there is room:
        :meth:`_room`)."""
        cdef int64_t r = self.n_rows, k, c = 0, dd, z
        for k in range(4):
            self.rows[r, c] = <int64_t>self.pkey[q, k]
            c += 1
        for k in range(NP):
            self.rows[r, c] = self.p[q, k]
            c += 1
        for z in range(2):
            dd = 1 - z          # direction a first
            for k in range(ND):
                self.rows[r, c] = self.d[2 * q + dd, k]
                c += 1
            if self.d[2 * q + dd, D_IRREG]:   # exact coverage where payload came out of order
                self.rows[r, c - ND + D_APP] = _cover_sum(self.cover[2 * q + dd])
        self.rows[r, c] = at_end
        self.n_rows += 1

    cdef void _start(self, int64_t q, int64_t t, uint8_t fwd, uint8_t ipver, uint8_t why,
                     uint8_t has_ports) noexcept nogil:
        """A new connection on pair ``q``, first packet at ``t`` sent in direction ``fwd``."""
        cdef int64_t k, dd
        for k in range(P_PAIR_TS, NP):
            self.p[q, k] = -1
        self.p[q, P_IPVER] = ipver
        self.p[q, P_CONN] = self.n_conns
        self.n_conns += 1
        self.p[q, P_START] = t
        self.p[q, P_FIRST_FWD] = fwd
        self.p[q, P_CAUSE] = why
        self.p[q, P_HAS_PORTS] = has_ports
        for dd in range(2):
            for k in range(ND):
                self.d[2 * q + dd, k] = 0
            self.cover[2 * q + dd].clear()

    def expire(self, int64_t clock):
        """Finish the connections of pairs silent for more than the idle timeout at ``clock``
        (ns): a sweep due after the last packet fed (:meth:`StreamClock.sweeps`)."""
        self._room(self.n_rows + self.n_open)
        self._expire(clock)

    cdef bint _expire(self, int64_t clock) noexcept nogil:
        """Finish the connections of pairs silent for more than the idle timeout at ``clock``,
        as many as the rows buffer holds: False if it filled first (the same call finishes the
        rest, in the same order, once there is room)."""
        cdef int64_t q, n = 0
        cdef bint done = True
        for q in range(self.n_pairs_cap):
            if self.p[q, P_USED] and clock - self.p[q, P_PAIR_TS] > self.idle_ns:
                if self.n_rows >= self.rows.shape[0]:
                    done = False
                    break
                self._emit(q, False)
                self._free(q)
                n += 1
        if n:
            self._reindex()
        return done

    cdef void _free(self, int64_t q) noexcept nogil:
        self.p[q, P_USED] = 0
        self.p[q, P_CONN] = self.free_pair
        self.free_pair = q
        self.n_open -= 1

    def finished(self):
        """The rows of the connections finished since the last call: a dict of NumPy arrays
        named :data:`ROW_FIELDS` (``a_hi`` ... ``b_lo`` as uint64), in the order they ended."""
        rows = self._rows_arr[:self.n_rows]
        out = {name: rows[:, i].copy() for i, name in enumerate(ROW_FIELDS)}
        for name in ("a_hi", "a_lo", "b_hi", "b_lo"):
            out[name] = out[name].view(np.uint64)
        self._reset_rows()
        return out

    def min_start(self):
        """The earliest start (ns) of the open connections and of the finished ones not yet
        handed out by :meth:`finished`, None without any."""
        cdef int64_t q, best = 0
        cdef bint found = False
        for q in range(self.n_pairs_cap):
            if self.p[q, P_USED] and self.p[q, P_CONN] >= 0 and (
                    not found or self.p[q, P_START] < best):
                best = self.p[q, P_START]
                found = True
        for q in range(self.n_rows):
            if not found or self.rows[q, 4 + P_START] < best:
                best = self.rows[q, 4 + P_START]
                found = True
        return best if found else None

    def close(self):
        """End of the input: finish every open connection (``at_end`` = 1)."""
        cdef int64_t q
        self._room(self.n_rows + self.n_open)
        for q in range(self.n_pairs_cap):
            if self.p[q, P_USED]:
                self._emit(q, True)
                self._free(q)
        self._reindex()

    def feed(self, cols, bint final, int64_t horizon):
        """Consume packets ``cols`` (a dict of NumPy arrays, capture order): ``ts`` (int64 ns),
        ``src_hi``, ``src_lo``, ``dst_hi``, ``dst_lo`` (uint64), ``sport``, ``dport`` (uint16,
        0 when absent), ``has_ports``, ``proto``, ``ip_version``, ``is_tcp`` (uint8), ``flags``
        (uint16),
        ``seq`` (uint32), ``payload``, ``ip_len``, ``wirelen`` (int64).

        A lone-timestamp decision may need packets after the ones fed: unless ``final``, the
        kernel stops before the first packet it cannot decide yet and returns how many it
        consumed; feed the rest again in front of the next batch. It also stops when the
        finished rows fill ``max_rows`` (``rows_full``): take them (:meth:`finished`) and feed
        the rest at once.

        The expiry sweeps and the look-ahead run on the whole stream's packets, even when the
        splitter is fed only part of it (one hash partition of the endpoint pairs), so that its
        connections are those of a single pass: ``cols`` holds ``sweep`` (int64 ns, the clock
        of the expiry sweep due before each packet, :data:`NO_SWEEP` if none:
        :meth:`StreamClock.sweeps`) and ``pos`` (int64, the packet's index in the whole stream),
        and ``horizon`` is the number of the whole stream's packets seen so far.

        Returns ``(n, packets)``: the number of packets consumed and, for them, a dict of NumPy
        arrays: ``conn`` int64; ``slot`` int64, the pair's state index (reused after the pair
        expires); ``fresh`` uint8, the packet opens its connection; ``fwd`` uint8, sent by the
        pair's smaller endpoint; ``rel`` int64, the sequence number relative to the first packet
        of its direction in the connection, unwrapped by signed 32-bit steps (0 for non-TCP);
        ``retrans`` uint8, the segment occupies sequence space (SYN, payload, FIN) starting below
        the highest sequence number already sent in its direction.
        """
        ts_arr = np.ascontiguousarray(cols["ts"], dtype=np.int64)
        keys = [np.ascontiguousarray(cols[c], dtype=np.uint64)
                for c in ("src_hi", "src_lo", "dst_hi", "dst_lo")]
        ports = [np.ascontiguousarray(cols[c], dtype=np.uint16) for c in ("sport", "dport")]
        proto_arr = np.ascontiguousarray(cols["proto"], dtype=np.uint8)
        n = ts_arr.shape[0]
        out = {name: np.zeros(n, dtype=dt) for name, dt in [
            ("conn", np.int64), ("slot", np.int64), ("fresh", np.uint8), ("rel", np.int64),
            ("retrans", np.uint8), ("fwd", np.uint8)]}
        rest = [np.ascontiguousarray(cols[c], dtype=t) for c, t in (
            ("has_ports", np.uint8), ("ip_version", np.uint8), ("is_tcp", np.uint8),
            ("flags", np.uint16), ("seq", np.uint32), ("payload", np.int64), ("ip_len", np.int64),
            ("wirelen", np.int64))]
        sweep_arr = np.ascontiguousarray(cols["sweep"], dtype=np.int64)
        pos_arr = np.ascontiguousarray(cols["pos"], dtype=np.int64)
        force = cols.get("force")
        force_arr = (np.zeros(n, dtype=np.uint8) if force is None
                     else np.ascontiguousarray(force, dtype=np.uint8))
        # the next packet of the same pair within this input, for the lone-timestamp rule: made
        # only for an input that has an idle gap to decide (few do), when the kernel asks
        nxt_arr = np.zeros(0, dtype=np.int64)
        first = 0
        while True:
            used = self._feed(first, ts_arr, *keys, *ports, proto_arr, *rest, nxt_arr, sweep_arr,
                              pos_arr, force_arr, horizon, out["conn"], out["slot"], out["fresh"],
                              out["rel"], out["retrans"], out["fwd"], final)
            if used >= 0:
                break
            first = -used - 1
            gid_arr, _ = pair_ids(*keys, *ports, proto_arr)
            nxt_arr = np.full(n, -1, dtype=np.int64)
            _next_of_pair(gid_arr, nxt_arr, np.full(int(gid_arr.max()) + 1, -1, dtype=np.int64))
        return used, {name: values[:used] for name, values in out.items()}

    def _feed(self, Py_ssize_t first, const int64_t[::1] ts, const uint64_t[::1] src_hi,
              const uint64_t[::1] src_lo, const uint64_t[::1] dst_hi, const uint64_t[::1] dst_lo,
              const uint16_t[::1] sport, const uint16_t[::1] dport, const uint8_t[::1] proto,
              const uint8_t[::1] has_ports, const uint8_t[::1] ipver, const uint8_t[::1] is_tcp,
              const uint16_t[::1] flags, const uint32_t[::1] seq, const int64_t[::1] payload,
              const int64_t[::1] ip_len, const int64_t[::1] wirelen, const int64_t[::1] nxt,
              const int64_t[::1] sweep, const int64_t[::1] pos, const uint8_t[::1] force,
              int64_t horizon,
              int64_t[::1] conn, int64_t[::1] slot, uint8_t[::1] fresh, int64_t[::1] rel,
              uint8_t[::1] retrans, uint8_t[::1] fwd, bint final):
        """The loop of :meth:`feed` from packet ``first``: the packets consumed, or -1 - i if
        packet i needs ``nxt`` (empty: not made yet)."""
        cdef Py_ssize_t n = ts.shape[0], i, j, stop = 0
        cdef bint have_next = nxt.shape[0] > 0
        cdef int64_t q, k, r, start, end, occupied, t
        cdef uint8_t dd, why
        cdef uint16_t f
        cdef bint split, syn_only, synack, is_client, head
        cdef int64_t lookahead = LOOKAHEAD
        cdef int status
        # The loop runs without the GIL and allocates nothing: before each packet it checks
        # that there is a free pair and room for a row (an expiry sweep stops when the rows fill
        # and is run again), else it stops there and the room is made with the GIL, up to
        # max_rows rows; beyond, feed returns with rows_full.
        while True:
            status = _DONE
            with nogil:
                for i in range(first, n):
                    if self.free_pair < 0 or self.n_rows >= self.rows.shape[0]:
                        status, stop = _ROOM, i
                        break
                    t = ts[i]
                    if sweep[i] != INT64_MIN and (not self._expire(sweep[i])
                                                  or self.n_rows >= self.rows.shape[0]):
                        status, stop = _ROOM, i     # the sweep (done: a no-op) runs again
                        break
                    dd = _src_first(src_hi[i], src_lo[i], sport[i], dst_hi[i], dst_lo[i], dport[i])
                    fwd[i] = dd
                    if dd:
                        q = self._lookup(src_hi[i], src_lo[i], dst_hi[i], dst_lo[i], sport[i],
                                         dport[i], proto[i])
                    else:
                        q = self._lookup(dst_hi[i], dst_lo[i], src_hi[i], src_lo[i], dport[i],
                                         sport[i], proto[i])
                    f = flags[i]
                    split = False
                    if force[i]:
                        split = True
                        why = 3
                    elif self.p[q, P_CONN] < 0:
                        split = True
                        why = 0
                    elif t - self.p[q, P_PAIR_TS] > self.idle_ns:
                        if not have_next:
                            status, stop = _NEXT, i
                            break
                        j = nxt[i]
                        if j < 0 and not final and horizon - pos[i] <= lookahead:
                            # the pair's next packet may come in the next batch
                            status, stop = _EARLY, i
                            break
                        if j >= 0 and pos[j] - pos[i] > lookahead:
                            j = -1
                        # A lone timestamp far ahead of both neighbours is a clock glitch, not an
                        # idle period: keep the packet, and measure the next gap from before it.
                        if not (j >= 0 and ts[j] < t - self.idle_ns):
                            split = True
                            why = 1
                    elif (is_tcp[i] and (f & (SYN | ACK)) == SYN and self.d[2 * q + dd, D_SEEN]
                          and seq[i] != self.d[2 * q + dd, D_BASE]):
                        split = True
                        why = 2
                    if split:
                        head = ((why == 2 and self.p[q, P_HEAD] == 1)
                                or (why == 0 and t <= self.head_until))
                        if self.p[q, P_CONN] >= 0:
                            self._emit(q, False)
                        self._start(q, t, dd, ipver[i], why, has_ports[i])
                        self.p[q, P_HEAD] = head
                        self.p[q, P_SYN_OPENED] = is_tcp[i] and (f & (SYN | ACK)) == SYN
                    if split or t - self.p[q, P_PAIR_TS] <= self.idle_ns:
                        self.p[q, P_PAIR_TS] = t
                    self.p[q, P_END] = t
                    conn[i] = self.p[q, P_CONN]
                    slot[i] = q
                    fresh[i] = split

                    # counters of direction dd
                    k = 2 * q + dd
                    self.d[k, D_PACKETS] += 1
                    self.d[k, D_BYTES] += ip_len[i]
                    self.d[k, D_PAYLOAD] += payload[i]
                    self.d[k, D_FRAME] += wirelen[i]
                    if (f & (SYN | ACK)) == SYN:
                        self.d[k, D_SYN] += 1
                    elif (f & (SYN | ACK)) == (SYN | ACK):
                        self.d[k, D_SYNACK] += 1
                    if f & FIN:
                        self.d[k, D_FIN] = 1
                    if f & RST:
                        self.d[k, D_RST] = 1
                    if not is_tcp[i]:
                        continue
                    self.d[k, D_TCP] = 1

                    # sequence space of direction dd
                    if not self.d[k, D_SEEN]:
                        self.d[k, D_SEEN] = 1
                        self.d[k, D_BASE] = seq[i] if f & SYN else <uint32_t>(seq[i] - 1)
                        self.d[k, D_POS] = 0
                    else:
                        self.d[k, D_POS] += <int32_t>(seq[i] - <uint32_t>self.d[k, D_LAST_SEQ])
                    self.d[k, D_LAST_SEQ] = seq[i]
                    r = self.d[k, D_POS]
                    rel[i] = r
                    occupied = payload[i] + (1 if f & SYN else 0) + (1 if f & FIN else 0)
                    if occupied > 0:
                        if self.d[k, D_OCC_SET] and r < self.d[k, D_OCC_MAX]:
                            retrans[i] = 1
                            self.d[k, D_RETRANS] += 1
                        if not self.d[k, D_OCC_SET] or r + occupied > self.d[k, D_OCC_MAX]:
                            self.d[k, D_OCC_MAX] = r + occupied
                        self.d[k, D_OCC_SET] = 1
                    if payload[i] > 0:
                        start = r + (1 if f & SYN else 0)
                        end = start + payload[i]
                        if not self.d[k, D_DATA_SET]:
                            self.d[k, D_DATA_LO] = start
                            self.d[k, D_DATA_HI] = end
                            self.d[k, D_DATA_SET] = 1
                            self.d[k, D_APP] += payload[i]
                        else:
                            if not self.d[k, D_IRREG] and (start > self.d[k, D_DATA_HI]
                                                           or start < self.d[k, D_DATA_LO]):
                                # out of order: from now on keep the exact union of payload ranges,
                                # seeded with the contiguous range covered so far
                                self.d[k, D_IRREG] = 1
                                _cover_add(self.cover[k], self.d[k, D_DATA_LO], self.d[k, D_DATA_HI])
                            if self.d[k, D_IRREG]:
                                _cover_add(self.cover[k], start, end)
                            if start < self.d[k, D_DATA_LO]:
                                self.d[k, D_DATA_LO] = start
                            if end > self.d[k, D_DATA_HI]:
                                self.d[k, D_APP] += end - (start if start > self.d[k, D_DATA_HI]
                                                           else self.d[k, D_DATA_HI])
                                self.d[k, D_DATA_HI] = end

                    # handshake events
                    syn_only = (f & (SYN | ACK)) == SYN
                    synack = (f & (SYN | ACK)) == (SYN | ACK)
                    if self.p[q, P_CLIENT] < 0:
                        if syn_only:
                            self.p[q, P_CLIENT] = dd
                        elif synack:
                            self.p[q, P_CLIENT] = 1 - dd
                    is_client = self.p[q, P_CLIENT] == dd
                    if syn_only and is_client:
                        if self.p[q, P_T_SYN] < 0:
                            self.p[q, P_T_SYN] = t
                    elif synack and self.p[q, P_CLIENT] >= 0 and not is_client:
                        if self.p[q, P_T_SA] < 0:
                            self.p[q, P_T_SA] = t
                    elif (is_client and self.p[q, P_T_ACK] < 0 and (f & (SYN | ACK | RST)) == ACK
                          and (self.p[q, P_T_SA] >= 0 or self.p[q, P_T_SYN] >= 0)):
                        self.p[q, P_T_ACK] = t
                        continue
                    if payload[i] > 0 and self.p[q, P_T_ACK] >= 0:
                        if self.p[q, P_T_D1] < 0:
                            self.p[q, P_T_D1] = t
                        elif self.p[q, P_T_D2] < 0:
                            self.p[q, P_T_D2] = t
            if status == _DONE:
                return n
            if status == _EARLY:
                return stop
            if status == _NEXT:
                return -1 - stop
            if self.n_rows >= self.rows.shape[0]:
                if self.rows.shape[0] >= self.max_rows:
                    self.rows_full = True
                    return stop
                self._grow_rows(min(2 * self.rows.shape[0], self.max_rows))
            else:
                self._grow_pairs(2 * self.n_pairs_cap)
            first = stop


cdef class StreamClock:
    """When :class:`FlowSplitter` sweeps for idle pairs, decided on the whole packet stream.

    The clock at a packet is the smallest timestamp of the packet and the :data:`CLOCK_AHEAD`
    after it (a lone timestamp far ahead expires nothing); a sweep is due before a packet whose
    clock has advanced by an eighth of the idle timeout ``idle_ns`` (ns) since the last sweep.
    """
    cdef readonly int64_t idle_ns
    cdef int64_t next_sweep

    def __init__(self, int64_t idle_ns):
        self.idle_ns = idle_ns
        self.next_sweep = -(1 << 62)

    def sweeps(self, ts, Py_ssize_t keep):
        """The sweeps due before the first ``keep`` packets of ``ts`` (int64 ns, the stream's
        next packets in order, at least :data:`CLOCK_AHEAD` beyond ``keep`` unless the stream
        ends there): int64 array, the sweep's clock (ns) or :data:`NO_SWEEP`."""
        ts_arr = np.ascontiguousarray(ts, dtype=np.int64)
        clock_arr = ts_arr.copy()
        for m in range(1, CLOCK_AHEAD + 1):
            np.minimum(clock_arr[:-m], ts_arr[m:], out=clock_arr[:-m])
        out_arr = np.full(keep, NO_SWEEP, dtype=np.int64)
        cdef const int64_t[:] clock = clock_arr
        cdef int64_t[:] out = out_arr
        cdef int64_t step = max(self.idle_ns // 8, 1)
        cdef Py_ssize_t i
        for i in range(keep):
            if clock[i] >= self.next_sweep:
                out[i] = clock[i]
                self.next_sweep = clock[i] + step
        return out_arr


cdef void _next_of_pair(const int64_t[::1] gid, int64_t[::1] nxt, int64_t[::1] later):
    cdef Py_ssize_t i
    for i in range(gid.shape[0] - 1, -1, -1):
        nxt[i] = later[gid[i]]
        later[gid[i]] = i

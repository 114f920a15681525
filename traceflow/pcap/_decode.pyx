# cython: language_level=3
"""Fast capture decoder: frame pcap/pcapng records in a byte buffer and decode each packet's
link, IP and transport headers straight into preallocated column buffers.

No Python object is created per packet.  The Python side (:mod:`traceflow.pcap.reader`) reads the
file in chunks, hands each chunk to :meth:`Decoder.decode`, handles the rare pcapng blocks that are
not packets (section and interface headers, statistics, unknown blocks) and turns full
:class:`Columns` into Arrow record batches.

Units: timestamps are integer nanoseconds since the epoch; lengths are bytes.
"""
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

import numpy as np
import pyarrow as pa

from traceflow.pcap.schema import PACKET_SCHEMA

cdef extern from *:
    """
    #include <stdint.h>
    /* floor(a * b / 2^shift) without overflow: binary pcapng timestamp resolutions. */
    static inline uint64_t tf_mulshift(uint64_t a, uint64_t b, unsigned shift) {
        return (uint64_t)(((unsigned __int128)a * b) >> shift);
    }
    static inline uint32_t tf_bswap32(uint32_t x) { return __builtin_bswap32(x); }
    static inline uint16_t tf_bswap16(uint16_t x) { return __builtin_bswap16(x); }
    """
    uint64_t tf_mulshift(uint64_t a, uint64_t b, unsigned shift) nogil
    uint32_t tf_bswap32(uint32_t x) nogil
    uint16_t tf_bswap16(uint16_t x) nogil

# decode() status codes
cdef enum:
    NEED_MORE = 0     # the buffer ends inside a record: append more bytes and call again
    BATCH_FULL = 1    # the columns are full: emit them and call again with fresh columns
    BLOCK = 2         # pcapng block that is not a packet at ``pos``: the caller handles it
    BAD_RECORD = 3    # malformed record at ``pos``: ``err`` tells why

# error codes (``Decoder.err``), explained by ERRORS
cdef enum:
    ERR_CAPLEN_SNAPLEN = 1
    ERR_CAPLEN_MAX = 2
    ERR_BLOCK_LEN = 3
    ERR_BLOCK_TRAILER = 4
    ERR_EPB_CAPLEN = 5
    ERR_IFACE = 6

STATUS = {"NEED_MORE": NEED_MORE, "BATCH_FULL": BATCH_FULL, "BLOCK": BLOCK, "BAD_RECORD": BAD_RECORD}
# errors after which the pcapng block framing is still trustworthy (the block can be skipped whole)
FRAMING_INTACT = frozenset({ERR_EPB_CAPLEN, ERR_IFACE})
ERRORS = {
    ERR_CAPLEN_SNAPLEN: "record captured length {a} exceeds the snapshot length {b}",
    ERR_CAPLEN_MAX: "record captured length {a} exceeds the maximum {b}",
    ERR_BLOCK_LEN: "invalid pcapng block length {a}",
    ERR_BLOCK_TRAILER: "pcapng block length {a} does not match its trailer {b}",
    ERR_EPB_CAPLEN: "packet block captured length {a} exceeds the block (room for {b})",
    ERR_IFACE: "packet block refers to undefined interface {a} ({b} defined)",
}

cdef enum:
    PCAP = 0
    PCAPNG = 1

cdef enum:
    TS_MUL = 0    # ns = units * mul
    TS_DIV = 1    # ns = units // div (div == 0: always 0)
    TS_BIN = 2    # ns = units * 1e9 >> shift

# The link types the decoder understands (values from tcpdump.org/linktypes.html).
SUPPORTED_LINKTYPES = frozenset({0, 1, 10, 12, 14, 101, 104, 108, 113, 226, 228, 229, 239, 242,
                                 258, 276})

cdef struct Cols:
    int64_t* ts
    uint32_t* caplen
    uint32_t* wirelen
    uint16_t* iface
    uint16_t* linktype
    uint16_t* vlan
    uint8_t* vlan_v
    uint8_t* ip_version
    uint8_t* ip_v
    uint8_t* src
    uint8_t* dst
    uint32_t* ip_len
    uint8_t* ttl
    uint8_t* proto
    uint16_t* frag_offset
    uint8_t* more_frags
    uint16_t* sport
    uint16_t* dport
    uint8_t* port_v
    uint16_t* tcp_flags
    uint32_t* seq
    uint32_t* ack
    uint16_t* window
    uint8_t* tcp_v
    uint32_t* payload_len
    uint8_t* payload_v
    uint16_t* mss
    uint8_t* mss_v
    uint8_t* wscale
    uint8_t* wscale_v
    uint8_t* sack_ok
    uint8_t* sack_v
    uint32_t* tsval
    uint32_t* tsecr
    uint8_t* tsopt_v


# (column, numpy dtype, items per row, validity array or None); order = PACKET_SCHEMA
_LAYOUT = [
    ("ts", np.int64, 1, None), ("caplen", np.uint32, 1, None), ("wirelen", np.uint32, 1, None),
    ("iface", np.uint16, 1, None), ("linktype", np.uint16, 1, None), ("vlan", np.uint16, 1, "vlan_v"),
    ("ip_version", np.uint8, 1, "ip_v"), ("src", np.uint8, 16, "ip_v"), ("dst", np.uint8, 16, "ip_v"),
    ("ip_len", np.uint32, 1, "ip_v"), ("ttl", np.uint8, 1, "ip_v"), ("proto", np.uint8, 1, "ip_v"),
    ("frag_offset", np.uint16, 1, "ip_v"), ("more_frags", np.uint8, 1, "ip_v"),
    ("sport", np.uint16, 1, "port_v"), ("dport", np.uint16, 1, "port_v"),
    ("tcp_flags", np.uint16, 1, "tcp_v"), ("seq", np.uint32, 1, "tcp_v"), ("ack", np.uint32, 1, "tcp_v"),
    ("window", np.uint16, 1, "tcp_v"), ("payload_len", np.uint32, 1, "payload_v"),
    ("mss", np.uint16, 1, "mss_v"), ("wscale", np.uint8, 1, "wscale_v"), ("sack_ok", np.uint8, 1, "sack_v"),
    ("tsval", np.uint32, 1, "tsopt_v"), ("tsecr", np.uint32, 1, "tsopt_v"),
]
_VALIDITY = ["vlan_v", "ip_v", "port_v", "tcp_v", "payload_v", "mss_v", "wscale_v", "sack_v", "tsopt_v"]
_BOOL = {"more_frags", "sack_ok"}


cdef class Columns:
    """Preallocated column buffers for up to ``capacity`` packets (one record batch)."""
    cdef Cols c
    cdef public Py_ssize_t capacity
    cdef public Py_ssize_t n
    cdef dict arrays

    def __init__(self, Py_ssize_t capacity):
        self.capacity = capacity
        self.n = 0
        self.arrays = {}
        for name, dtype, width, _ in _LAYOUT:
            self.arrays[name] = np.zeros(capacity * width, dtype=dtype)
        for name in _VALIDITY:
            self.arrays[name] = np.zeros(capacity, dtype=np.uint8)
        a = self.arrays
        self.c.ts = <int64_t*> _ptr(a["ts"])
        self.c.caplen = <uint32_t*> _ptr(a["caplen"])
        self.c.wirelen = <uint32_t*> _ptr(a["wirelen"])
        self.c.iface = <uint16_t*> _ptr(a["iface"])
        self.c.linktype = <uint16_t*> _ptr(a["linktype"])
        self.c.vlan = <uint16_t*> _ptr(a["vlan"])
        self.c.vlan_v = <uint8_t*> _ptr(a["vlan_v"])
        self.c.ip_version = <uint8_t*> _ptr(a["ip_version"])
        self.c.ip_v = <uint8_t*> _ptr(a["ip_v"])
        self.c.src = <uint8_t*> _ptr(a["src"])
        self.c.dst = <uint8_t*> _ptr(a["dst"])
        self.c.ip_len = <uint32_t*> _ptr(a["ip_len"])
        self.c.ttl = <uint8_t*> _ptr(a["ttl"])
        self.c.proto = <uint8_t*> _ptr(a["proto"])
        self.c.frag_offset = <uint16_t*> _ptr(a["frag_offset"])
        self.c.more_frags = <uint8_t*> _ptr(a["more_frags"])
        self.c.sport = <uint16_t*> _ptr(a["sport"])
        self.c.dport = <uint16_t*> _ptr(a["dport"])
        self.c.port_v = <uint8_t*> _ptr(a["port_v"])
        self.c.tcp_flags = <uint16_t*> _ptr(a["tcp_flags"])
        self.c.seq = <uint32_t*> _ptr(a["seq"])
        self.c.ack = <uint32_t*> _ptr(a["ack"])
        self.c.window = <uint16_t*> _ptr(a["window"])
        self.c.tcp_v = <uint8_t*> _ptr(a["tcp_v"])
        self.c.payload_len = <uint32_t*> _ptr(a["payload_len"])
        self.c.payload_v = <uint8_t*> _ptr(a["payload_v"])
        self.c.mss = <uint16_t*> _ptr(a["mss"])
        self.c.mss_v = <uint8_t*> _ptr(a["mss_v"])
        self.c.wscale = <uint8_t*> _ptr(a["wscale"])
        self.c.wscale_v = <uint8_t*> _ptr(a["wscale_v"])
        self.c.sack_ok = <uint8_t*> _ptr(a["sack_ok"])
        self.c.sack_v = <uint8_t*> _ptr(a["sack_v"])
        self.c.tsval = <uint32_t*> _ptr(a["tsval"])
        self.c.tsecr = <uint32_t*> _ptr(a["tsecr"])
        self.c.tsopt_v = <uint8_t*> _ptr(a["tsopt_v"])

    def to_batch(self):
        """The first ``n`` rows as a ``pyarrow.RecordBatch`` in :data:`PACKET_SCHEMA` (zero-copy for
        the value buffers; the Columns must not be reused afterwards)."""
        cdef Py_ssize_t n = self.n
        a = self.arrays
        bitmaps = {}
        for name in _VALIDITY:
            v = a[name][:n]
            bitmaps[name] = None if v.all() else pa.py_buffer(np.packbits(v, bitorder="little"))
        arrays = []
        for (name, _, width, valid), field in zip(_LAYOUT, PACKET_SCHEMA):
            values = a[name][:n * width]
            data = pa.py_buffer(np.packbits(values, bitorder="little") if name in _BOOL else values)
            bitmap = bitmaps[valid] if valid is not None else None
            arrays.append(pa.Array.from_buffers(field.type, n, [bitmap, data]))
        return pa.RecordBatch.from_arrays(arrays, schema=PACKET_SCHEMA)


cdef size_t _ptr(arr):
    return arr.ctypes.data


cdef inline uint16_t be16(const uint8_t* p) noexcept nogil:
    return (<uint16_t> p[0] << 8) | p[1]


cdef inline uint32_t be32(const uint8_t* p) noexcept nogil:
    return (<uint32_t> p[0] << 24) | (<uint32_t> p[1] << 16) | (<uint32_t> p[2] << 8) | p[3]


cdef inline uint16_t le16(const uint8_t* p) noexcept nogil:
    return (<uint16_t> p[1] << 8) | p[0]


cdef inline uint32_t le32(const uint8_t* p) noexcept nogil:
    return (<uint32_t> p[3] << 24) | (<uint32_t> p[2] << 16) | (<uint32_t> p[1] << 8) | p[0]


cdef inline uint32_t rd32(const uint8_t* p, bint big) noexcept nogil:
    return be32(p) if big else le32(p)


cdef inline uint16_t rd16(const uint8_t* p, bint big) noexcept nogil:
    return be16(p) if big else le16(p)


# --- link layer ---------------------------------------------------------------------------------
# l2() returns the offset of the network header (or -1 when there is none) and sets *kind to 4 or 6.

cdef inline int from_ethertype(uint32_t et) noexcept nogil:
    if et == 0x0800:
        return 4
    if et == 0x86DD:
        return 6
    return 0


cdef inline int from_family(uint32_t fam) noexcept nogil:
    # BSD/Linux address families used by NULL/LOOP, IPNET and NFLOG headers.
    if fam == 2:
        return 4
    if fam == 10 or fam == 24 or fam == 26 or fam == 28 or fam == 30:
        return 6
    return 0


cdef inline int ethertypes(const uint8_t* p, uint32_t n, int off, uint32_t et, int* kind,
                           int* vlan) noexcept nogil:
    """Walk VLAN tags, MPLS labels, PPPoE and LLC/SNAP from ethertype ``et`` at ``off``."""
    cdef int hops = 0
    cdef int v
    while hops < 16:
        hops += 1
        if et == 0x8100 or et == 0x88A8 or et == 0x9100:
            if off + 4 > <int> n:
                return -1
            if vlan[0] < 0:
                vlan[0] = be16(p + off) & 0x0FFF
            et = be16(p + off + 2)
            off += 4
        elif et == 0x8847 or et == 0x8848:
            while True:
                if off + 4 > <int> n:
                    return -1
                off += 4
                if p[off - 2] & 1:
                    break
            if off >= <int> n:
                return -1
            v = p[off] >> 4
            if v == 4 or v == 6:
                kind[0] = v
                return off
            return -1
        elif et == 0x8864:
            if off + 8 > <int> n:
                return -1
            et = be16(p + off + 6)
            off += 8
            if et == 0x0021:
                kind[0] = 4
                return off
            if et == 0x0057:
                kind[0] = 6
                return off
            return -1
        elif et < 0x0600:
            # 802.3 length field (or SLL's LLC protocol): IP only inside LLC/SNAP
            if off + 8 > <int> n or p[off] != 0xAA or p[off + 1] != 0xAA or p[off + 2] != 0x03:
                return -1
            et = be16(p + off + 6)
            off += 8
        else:
            kind[0] = from_ethertype(et)
            return off if kind[0] else -1
    return -1


cdef int l2(const uint8_t* p, uint32_t n, uint32_t lt, int* kind, int* vlan, int depth) noexcept nogil:
    cdef uint32_t v, hl, tl, tt
    cdef int off
    if lt == 1:                     # Ethernet
        if n < 14:
            return -1
        return ethertypes(p, n, 14, be16(p + 12), kind, vlan)
    if lt == 113:                   # Linux cooked v1
        if n < 16:
            return -1
        return ethertypes(p, n, 16, be16(p + 14), kind, vlan)
    if lt == 276:                   # Linux cooked v2
        if n < 20:
            return -1
        return ethertypes(p, n, 20, be16(p), kind, vlan)
    if lt == 12 or lt == 14 or lt == 101:   # raw IP: version from the first nibble
        if n < 1:
            return -1
        v = p[0] >> 4
        if v == 4 or v == 6:
            kind[0] = v
            return 0
        return -1
    if lt == 228:
        kind[0] = 4
        return 0
    if lt == 229:
        kind[0] = 6
        return 0
    if lt == 0 or lt == 108:        # BSD loopback: address family in host (0) or network (108) order
        if n < 4:
            return -1
        v = be32(p) if lt == 108 else le32(p)
        if lt == 0 and v > 0xFFFF:
            v = be32(p)
        if lt == 0 and v > 0xFFFF:  # Linux-style: an ethertype in bytes 2-3
            return ethertypes(p, n, 4, be16(p + 2), kind, vlan)
        kind[0] = from_family(v)
        return 4 if kind[0] else -1
    if lt == 10:                    # FDDI: 13-byte MAC header + LLC/SNAP
        if n < 13:
            return -1
        return ethertypes(p, n, 13, 0, kind, vlan)
    if lt == 104:                   # Cisco HDLC
        if n < 4:
            return -1
        return ethertypes(p, n, 4, be16(p + 2), kind, vlan)
    if lt == 226:                   # Solaris ipnet
        if n < 24:
            return -1
        kind[0] = from_family(p[1])
        return 24 if kind[0] else -1
    if lt == 242:                   # IP over InfiniBand: 40-byte pseudo header, then type + reserved
        if n < 44:
            return -1
        return ethertypes(p, n, 44, be16(p + 40), kind, vlan)
    if lt == 239:                   # Linux NFLOG: TLVs (host order); type 9 is the packet
        if n < 4:
            return -1
        kind[0] = from_family(p[0])
        if not kind[0]:
            return -1
        off = 4
        while off + 4 <= <int> n:
            tl = le16(p + off)
            tt = le16(p + off + 2)
            if tl < 4:
                return -1
            if tt == 9:
                return off + 4
            off += (tl + 3) & ~3u
        return -1
    if lt == 258 and depth == 0:    # Apple PKTAP: header length and inner DLT (host order)
        if n < 8:
            return -1
        hl = le32(p)
        v = le32(p + 4)
        if hl < 8 or hl > n:
            return -1
        off = l2(p + hl, n - hl, v, kind, vlan, 1)
        return off + <int> hl if off >= 0 else -1
    return -1


# --- network and transport ----------------------------------------------------------------------

cdef inline void tcp_options(const uint8_t* p, int end, Cols* c, Py_ssize_t r) noexcept nogil:
    cdef int i = 20
    cdef int kind, ln
    while i < end:
        kind = p[i]
        if kind == 0:
            return
        if kind == 1:
            i += 1
            continue
        if i + 1 >= end:
            return
        ln = p[i + 1]
        if ln < 2 or i + ln > end:
            return
        if kind == 2 and ln == 4:
            c.mss[r] = be16(p + i + 2)
            c.mss_v[r] = 1
        elif kind == 3 and ln == 3:
            c.wscale[r] = p[i + 2]
            c.wscale_v[r] = 1
        elif kind == 4 and ln == 2:
            c.sack_ok[r] = 1
            c.sack_v[r] = 1
        elif kind == 8 and ln == 10:
            c.tsval[r] = be32(p + i + 2)
            c.tsecr[r] = be32(p + i + 6)
            c.tsopt_v[r] = 1
        i += ln


cdef inline void ports_payload(const uint8_t* p, int64_t payload, Cols* c,
                               Py_ssize_t r) noexcept nogil:
    """Source and destination port of the TCP/UDP header at ``p``; the payload length (bytes)
    when ``payload`` >= 0 (a negative one: the IP length is shorter than the headers)."""
    c.sport[r] = be16(p)
    c.dport[r] = be16(p + 2)
    c.port_v[r] = 1
    if payload >= 0:
        c.payload_len[r] = <uint32_t> payload
        c.payload_v[r] = 1


cdef inline void transport(const uint8_t* p, int avail, uint32_t proto, int64_t room, Cols* c,
                           Py_ssize_t r) noexcept nogil:
    """Decode TCP/UDP at ``p`` with ``avail`` captured bytes; ``room`` = ip_len - network headers."""
    cdef int doff
    if proto == 6:
        if avail < 20:
            return
        c.seq[r] = be32(p + 4)
        c.ack[r] = be32(p + 8)
        c.tcp_flags[r] = (<uint16_t> (p[12] & 1) << 8) | p[13]
        c.window[r] = be16(p + 14)
        c.tcp_v[r] = 1
        doff = (p[12] >> 4) * 4
        ports_payload(p, room - doff if doff >= 20 else -1, c, r)
        if doff > 20:
            tcp_options(p, doff if doff < avail else avail, c, r)
    elif proto == 17:
        if avail < 8:
            return
        ports_payload(p, room - 8, c, r)


cdef inline void ipv4(const uint8_t* p, int n, Cols* c, Py_ssize_t r) noexcept nogil:
    cdef int ihl, fo
    cdef uint32_t ip_len
    if n < 20 or (p[0] >> 4) != 4:
        return
    ihl = (p[0] & 15) * 4
    if ihl < 20:
        return
    ip_len = be16(p + 2)
    c.ip_version[r] = 4
    c.ip_v[r] = 1
    c.src[16 * r + 10] = 0xFF
    c.src[16 * r + 11] = 0xFF
    c.dst[16 * r + 10] = 0xFF
    c.dst[16 * r + 11] = 0xFF
    memcpy(c.src + 16 * r + 12, p + 12, 4)
    memcpy(c.dst + 16 * r + 12, p + 16, 4)
    c.ip_len[r] = ip_len
    c.ttl[r] = p[8]
    c.proto[r] = p[9]
    fo = be16(p + 6)
    c.frag_offset[r] = (fo & 0x1FFF) * 8
    c.more_frags[r] = (fo >> 13) & 1
    if (fo & 0x1FFF) == 0 and ihl <= n:
        transport(p + ihl, n - ihl, p[9], <int64_t> ip_len - ihl, c, r)


cdef inline void ipv6(const uint8_t* p, int n, Cols* c, Py_ssize_t r) noexcept nogil:
    cdef uint32_t ip_len, nh, fo
    cdef int pos = 40
    cdef int hl
    cdef int hops = 0
    cdef bint done = False
    if n < 40 or (p[0] >> 4) != 6:
        return
    ip_len = <uint32_t> be16(p + 4) + 40
    c.ip_version[r] = 6
    c.ip_v[r] = 1
    memcpy(c.src + 16 * r, p + 8, 16)
    memcpy(c.dst + 16 * r, p + 24, 16)
    c.ip_len[r] = ip_len
    c.ttl[r] = p[7]
    nh = p[6]
    while hops < 32:
        hops += 1
        if nh == 0 or nh == 43 or nh == 60 or nh == 51:  # hop-by-hop, routing, dest. options, AH
            if pos + 2 > n:
                break
            # AH counts its length in 4-byte units minus 2, the others in 8-byte units minus 1
            hl = (p[pos + 1] + 2) * 4 if nh == 51 else (p[pos + 1] + 1) * 8
            nh = p[pos]
            pos += hl
        elif nh == 44:                             # fragment header
            if pos + 8 > n:
                break
            fo = be16(p + pos + 2)
            c.frag_offset[r] = fo & 0xFFF8
            c.more_frags[r] = fo & 1
            nh = p[pos]
            pos += 8
            if fo & 0xFFF8:
                c.proto[r] = nh
                return
        else:
            done = True
            break
    c.proto[r] = nh
    if done and pos <= n:
        transport(p + pos, n - pos, nh, <int64_t> ip_len - pos, c, r)


cdef inline void decode_packet(const uint8_t* p, uint32_t caplen, uint32_t lt, Cols* c,
                               Py_ssize_t r) noexcept nogil:
    cdef int kind = 0
    cdef int vlan = -1
    cdef int off
    # the columns start zeroed (all null): only decoded fields are written
    off = l2(p, caplen, lt, &kind, &vlan, 0)
    if vlan >= 0:
        c.vlan[r] = <uint16_t> vlan
        c.vlan_v[r] = 1
    if off < 0 or off > <int> caplen:
        return
    if kind == 4:
        ipv4(p + off, caplen - off, c, r)
    elif kind == 6:
        ipv6(p + off, caplen - off, c, r)


cdef class Decoder:
    """Record framing state of one capture file (set up by the reader from the file header).

    ``decode(buf, pos, cols)`` decodes records from ``buf[pos:]`` into ``cols`` and returns
    ``(new_pos, status)``; see the status codes NEED_MORE, BATCH_FULL, BLOCK and BAD_RECORD.
    """
    cdef public int fmt
    cdef public bint big             # container fields are big-endian
    cdef public uint32_t max_caplen  # records longer than this are malformed
    cdef public uint32_t snaplen     # pcap: from the file header (0 = unknown)
    cdef public uint64_t pcap_mul    # pcap: 1000 for microsecond files, 1 for nanosecond files
    cdef public uint32_t pcap_linktype
    cdef public bint pcap_supported
    cdef public Py_ssize_t records   # records framed so far (index of the next record)
    cdef public uint64_t unsupported  # pcap: records of an unsupported link type
    cdef public int err
    cdef public uint64_t err_a
    cdef public uint64_t err_b
    # pcapng interfaces (numpy arrays owned here, pointers cached)
    cdef public object if_arrays
    cdef int n_if
    cdef uint32_t* if_linktype
    cdef uint8_t* if_supported
    cdef uint8_t* if_tsmode
    cdef uint64_t* if_tsarg
    cdef int64_t* if_tsoffset
    cdef uint64_t* if_unsupported

    def __init__(self, int fmt, bint big, uint32_t max_caplen):
        self.fmt = fmt
        self.big = big
        self.max_caplen = max_caplen
        self.snaplen = 0
        self.pcap_mul = 1000
        self.records = 0
        self.unsupported = 0
        self.err = 0
        self.reset_interfaces()

    def set_pcap(self, uint32_t linktype, uint32_t snaplen, bint nanos):
        self.pcap_linktype = linktype
        self.pcap_supported = linktype in SUPPORTED_LINKTYPES
        self.snaplen = snaplen
        self.pcap_mul = 1 if nanos else 1000

    def reset_interfaces(self):
        """Forget the interfaces (a new pcapng section begins)."""
        self.n_if = 0
        self.if_arrays = None
        self._grow(8)

    def _grow(self, int cap):
        old = self.if_arrays
        arrays = {
            "linktype": np.zeros(cap, np.uint32), "supported": np.zeros(cap, np.uint8),
            "tsmode": np.zeros(cap, np.uint8), "tsarg": np.zeros(cap, np.uint64),
            "tsoffset": np.zeros(cap, np.int64), "unsupported": np.zeros(cap, np.uint64),
        }
        if old is not None:
            for k, v in old.items():
                arrays[k][:len(v)] = v
        self.if_arrays = arrays
        self.if_linktype = <uint32_t*> _ptr(arrays["linktype"])
        self.if_supported = <uint8_t*> _ptr(arrays["supported"])
        self.if_tsmode = <uint8_t*> _ptr(arrays["tsmode"])
        self.if_tsarg = <uint64_t*> _ptr(arrays["tsarg"])
        self.if_tsoffset = <int64_t*> _ptr(arrays["tsoffset"])
        self.if_unsupported = <uint64_t*> _ptr(arrays["unsupported"])

    def add_interface(self, uint32_t linktype, int tsresol, int64_t tsoffset_s):
        """Add a pcapng interface: ``tsresol`` is the raw if_tsresol byte (default 6 = µs)."""
        cdef int k = tsresol & 0x7F
        if self.n_if == len(self.if_arrays["linktype"]):
            self._grow(2 * self.n_if)
        i = self.n_if
        self.if_linktype[i] = linktype
        self.if_supported[i] = linktype in SUPPORTED_LINKTYPES
        if tsresol & 0x80:
            self.if_tsmode[i] = TS_BIN
            self.if_tsarg[i] = k
        elif k <= 9:
            self.if_tsmode[i] = TS_MUL
            self.if_tsarg[i] = 10 ** int(9 - k)
        else:
            self.if_tsmode[i] = TS_DIV
            self.if_tsarg[i] = 10 ** int(k - 9) if k - 9 <= 19 else 0
        self.if_tsoffset[i] = tsoffset_s * 1000000000
        self.n_if += 1

    @property
    def n_interfaces(self):
        return self.n_if

    def decode(self, const uint8_t[::1] buf, Py_ssize_t pos, Columns cols):
        cdef Py_ssize_t end = buf.shape[0]
        cdef const uint8_t* base = &buf[0] if end > 0 else NULL
        cdef int status
        if end == 0:
            return pos, NEED_MORE
        with nogil:
            if self.fmt == PCAP:
                status = self._pcap(base, end, &pos, cols)
            else:
                status = self._pcapng(base, end, &pos, cols)
        return pos, status

    cdef int _pcap(self, const uint8_t* base, Py_ssize_t end, Py_ssize_t* ppos, Columns cols) noexcept nogil:
        cdef Py_ssize_t pos = ppos[0], row = cols.n, cap = cols.capacity
        cdef Cols* c = &cols.c
        cdef const uint8_t* h
        cdef uint32_t incl, orig
        cdef bint big = self.big
        cdef uint32_t limit = self.snaplen if self.snaplen else self.max_caplen
        cdef int status = NEED_MORE
        while True:
            if row == cap:
                status = BATCH_FULL
                break
            if end - pos < 16:
                break
            h = base + pos
            incl = rd32(h + 8, big)
            orig = rd32(h + 12, big)
            if incl > limit or incl > self.max_caplen:
                self.err = ERR_CAPLEN_SNAPLEN if incl > limit and self.snaplen else ERR_CAPLEN_MAX
                self.err_a = incl
                self.err_b = limit if self.err == ERR_CAPLEN_SNAPLEN else self.max_caplen
                status = BAD_RECORD
                break
            if end - pos < 16 + <Py_ssize_t> incl:
                break
            if self.pcap_supported:
                c.ts[row] = <int64_t> (<uint64_t> rd32(h, big) * 1000000000ULL
                                       + <uint64_t> rd32(h + 4, big) * self.pcap_mul)
                c.caplen[row] = incl
                c.wirelen[row] = orig
                c.iface[row] = 0
                c.linktype[row] = <uint16_t> self.pcap_linktype
                decode_packet(h + 16, incl, self.pcap_linktype, c, row)
                row += 1
            else:
                self.unsupported += 1
            pos += 16 + incl
            self.records += 1
        cols.n = row
        ppos[0] = pos
        return status

    cdef int _pcapng(self, const uint8_t* base, Py_ssize_t end, Py_ssize_t* ppos, Columns cols) noexcept nogil:
        cdef Py_ssize_t pos = ppos[0], row = cols.n, cap = cols.capacity
        cdef Cols* c = &cols.c
        cdef const uint8_t* h
        cdef uint32_t btype, blen, incl, orig, iface, room
        cdef uint64_t units, ns
        cdef bint big = self.big
        cdef int status = NEED_MORE
        cdef int hdr
        while True:
            if row == cap:
                status = BATCH_FULL
                break
            if end - pos < 8:
                break
            h = base + pos
            btype = rd32(h, big)
            if btype == 0x0A0D0D0A:
                status = BLOCK
                break
            blen = rd32(h + 4, big)
            if blen < 12 or (blen & 3) or blen > self.max_caplen + 64:
                self.err = ERR_BLOCK_LEN
                self.err_a = blen
                status = BAD_RECORD
                break
            if end - pos < <Py_ssize_t> blen:
                break
            if rd32(h + blen - 4, big) != blen:
                self.err = ERR_BLOCK_TRAILER
                self.err_a = blen
                self.err_b = rd32(h + blen - 4, big)
                status = BAD_RECORD
                break
            if btype == 6 or btype == 2:               # enhanced / obsolete packet block
                if blen < 32:
                    self.err = ERR_BLOCK_LEN
                    self.err_a = blen
                    status = BAD_RECORD
                    break
                iface = rd32(h + 8, big) if btype == 6 else rd16(h + 8, big)
                units = (<uint64_t> rd32(h + 12, big) << 32) | rd32(h + 16, big)
                incl = rd32(h + 20, big)
                orig = rd32(h + 24, big)
                hdr = 28
            elif btype == 3:                           # simple packet block
                if blen < 16:
                    self.err = ERR_BLOCK_LEN
                    self.err_a = blen
                    status = BAD_RECORD
                    break
                iface = 0
                units = 0
                orig = rd32(h + 8, big)
                incl = orig if orig < blen - 16 else blen - 16
                hdr = 12
            else:
                status = BLOCK
                break
            room = blen - hdr - 4
            if incl > room:
                self.err = ERR_EPB_CAPLEN
                self.err_a = incl
                self.err_b = room
                status = BAD_RECORD
                break
            if iface >= <uint32_t> self.n_if:
                self.err = ERR_IFACE
                self.err_a = iface
                self.err_b = self.n_if
                status = BAD_RECORD
                break
            if self.if_supported[iface]:
                if btype == 3:
                    ns = 0
                elif self.if_tsmode[iface] == TS_MUL:
                    ns = units * self.if_tsarg[iface]
                elif self.if_tsmode[iface] == TS_DIV:
                    ns = units // self.if_tsarg[iface] if self.if_tsarg[iface] else 0
                else:
                    ns = tf_mulshift(units, 1000000000ULL, <unsigned> self.if_tsarg[iface])
                c.ts[row] = <int64_t> ns + self.if_tsoffset[iface]
                c.caplen[row] = incl
                c.wirelen[row] = orig
                c.iface[row] = <uint16_t> iface
                c.linktype[row] = <uint16_t> self.if_linktype[iface]
                decode_packet(h + hdr, incl, self.if_linktype[iface], c, row)
                row += 1
            else:
                self.if_unsupported[iface] += 1
            pos += blen
            self.records += 1
        cols.n = row
        ppos[0] = pos
        return status

    def resync(self, const uint8_t[::1] buf, Py_ssize_t pos):
        """First offset >= ``pos`` where a plausible record starts whose successor (if it lies in
        the buffer) is plausible too; -1 if there is none in ``buf``.  Used by on_error="skip"."""
        cdef Py_ssize_t end = buf.shape[0]
        cdef const uint8_t* base = &buf[0] if end > 0 else NULL
        cdef Py_ssize_t nxt
        cdef Py_ssize_t found = -1
        cdef Py_ssize_t step = 1 if self.fmt == PCAP else 4
        if self.fmt == PCAPNG:
            pos = (pos + 3) & ~3
        with nogil:
            while pos < end:
                nxt = self._plausible(base, end, pos)
                if nxt >= 0 and (nxt >= end or self._plausible(base, end, nxt) >= 0):
                    found = pos
                    break
                pos += step
        return found

    cdef Py_ssize_t _plausible(self, const uint8_t* base, Py_ssize_t end, Py_ssize_t pos) noexcept nogil:
        """End of a record that plausibly starts at ``pos`` and lies in the buffer, else -1
        (-1 too when its header does not fit in the buffer: resync needs the whole record)."""
        cdef const uint8_t* h = base + pos
        cdef uint32_t incl, orig, btype, blen
        cdef uint32_t limit = self.snaplen if self.snaplen else self.max_caplen
        if self.fmt == PCAP:
            if end - pos < 16:
                return -1
            incl = rd32(h + 8, self.big)
            orig = rd32(h + 12, self.big)
            if incl > limit or incl > orig or orig > self.max_caplen:
                return -1
            if rd32(h + 4, self.big) >= 1000000 * (1 if self.pcap_mul == 1000 else 1000):
                return -1
            if end - pos < 16 + <Py_ssize_t> incl:
                return -1
            return pos + 16 + incl
        if end - pos < 12:
            return -1
        btype = rd32(h, self.big)
        blen = rd32(h + 4, self.big)
        if not (btype == 0x0A0D0D0A or (1 <= btype <= 10)):
            return -1
        if blen < 12 or (blen & 3) or blen > self.max_caplen + 64 or end - pos < <Py_ssize_t> blen:
            return -1
        if rd32(h + blen - 4, self.big) != blen:
            return -1
        return pos + blen

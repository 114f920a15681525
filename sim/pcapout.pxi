# pcap writer for a link (written at transmission start): nanosecond pcap, Ethernet + IPv4 +
# TCP/UDP headers, truncated after the transport header (caplen) with the true wire length.
# Node n has address 10.((n+1)>>16).(((n+1)>>8)&255).((n+1)&255); the data sender of a flow is the
# "client" (it sends the SYN) on port 1024 + (flow*1009 + conn) mod 64511, the receiver port 5001.
# Sequence numbers are byte-exact relative to a per-connection ISN; FIN/SYN consume one.

cdef inline void _be16(uint8_t* b, uint32_t v) noexcept:
    b[0] = (v >> 8) & 0xff
    b[1] = v & 0xff


cdef inline void _be32(uint8_t* b, uint32_t v) noexcept:
    b[0] = (v >> 24) & 0xff
    b[1] = (v >> 16) & 0xff
    b[2] = (v >> 8) & 0xff
    b[3] = v & 0xff


cdef inline void _le32(uint8_t* b, uint32_t v) noexcept:
    b[0] = v & 0xff
    b[1] = (v >> 8) & 0xff
    b[2] = (v >> 16) & 0xff
    b[3] = (v >> 24) & 0xff


cdef inline uint32_t node_ip(int32_t n) noexcept:
    return (<uint32_t>10 << 24) | (<uint32_t>(n + 1) & 0xffffff)


cdef inline uint32_t conn_isn(int32_t flow, int32_t conn, int side) noexcept:
    return <uint32_t>((<uint64_t>flow * 2654435761u + <uint64_t>conn * 40503u + side * 977u)
                      & 0xffffffffu)


cdef class PcapWriter:
    cdef FILE* fp
    cdef readonly str path
    cdef readonly int64_t records
    cdef int32_t mss
    cdef uint8_t buf[16 + 14 + 20 + 20]

    def __init__(self, str path, int mss=1000):
        self.path = path
        self.mss = mss
        self.fp = fopen(path.encode(), b"wb")
        if self.fp == NULL:
            raise OSError(f"cannot open {path} for writing")
        cdef uint8_t hdr[24]
        _le32(hdr, 0xa1b23c4d)                    # nanosecond-resolution pcap
        hdr[4] = 2; hdr[5] = 0; hdr[6] = 4; hdr[7] = 0
        _le32(hdr + 8, 0)
        _le32(hdr + 12, 0)
        _le32(hdr + 16, 96)                       # snaplen
        _le32(hdr + 20, 1)                        # LINKTYPE_ETHERNET
        fwrite(hdr, 1, 24, self.fp)

    def close(self):
        if self.fp != NULL:
            fclose(self.fp)
            self.fp = NULL

    def __dealloc__(self):
        if self.fp != NULL:
            fclose(self.fp)

    cdef void write(self, Packet* p, int64_t now) noexcept:
        cdef uint8_t* b = self.buf
        cdef uint8_t* ip = b + 16 + 14
        cdef uint8_t* th = ip + 20
        cdef int thl = 20 if p.proto == PROTO_TCP else 8
        cdef int caplen = 14 + 20 + thl
        cdef uint32_t iplen = p.size if p.size >= 20 + thl else 20 + thl
        cdef uint32_t src_ip = node_ip(p.src), dst_ip = node_ip(p.dst)
        cdef uint32_t csum = 0, cport, seq, ack
        cdef uint16_t flags
        cdef int i
        cdef int fwd = p.dir == DIR_FWD
        if self.fp == NULL:
            return
        _le32(b, <uint32_t>(now // 1000000000))
        _le32(b + 4, <uint32_t>(now % 1000000000))
        _le32(b + 8, caplen)
        _le32(b + 12, 14 + iplen)
        # Ethernet: locally administered MACs from the node ids
        b[16] = 0x02; b[17] = 0; _be32(b + 18, p.dst)
        b[22] = 0x02; b[23] = 0; _be32(b + 24, p.src)
        b[28] = 0x08; b[29] = 0x00
        # IPv4
        ip[0] = 0x45; ip[1] = 0
        _be16(ip + 2, iplen)
        _be16(ip + 4, <uint32_t>(p.uid & 0xffff))
        _be16(ip + 6, 0x4000)
        ip[8] = 64; ip[9] = p.proto
        ip[10] = 0; ip[11] = 0
        _be32(ip + 12, src_ip)
        _be32(ip + 16, dst_ip)
        for i in range(0, 20, 2):
            csum += (<uint32_t>ip[i] << 8) | ip[i + 1]
        while csum >> 16:
            csum = (csum & 0xffff) + (csum >> 16)
        _be16(ip + 10, (~csum) & 0xffff)
        cport = 1024 + <uint32_t>((<int64_t>p.flow * 1009 + p.conn) % 64511)
        if p.proto == PROTO_TCP:
            _be16(th, cport if fwd else 5001)
            _be16(th + 2, 5001 if fwd else cport)
            if fwd:
                seq = conn_isn(p.flow, p.conn, 0)
                ack = conn_isn(p.flow, p.conn, 1) + 1
                if not (p.flags & F_SYN):
                    seq += 1 + <uint32_t>(p.seq * self.mss)
            else:
                seq = conn_isn(p.flow, p.conn, 1)
                ack = conn_isn(p.flow, p.conn, 0) + 1 + <uint32_t>p.ack_bytes
                if not (p.flags & F_SYN):
                    seq += 1
            flags = p.flags
            if p.dir == DIR_FWD and (flags & F_SYN):
                ack = 0
            _be32(th + 4, seq)
            _be32(th + 8, ack)
            th[12] = 0x50
            th[13] = flags & 0xff
            _be16(th + 14, 65535)
            th[16] = 0; th[17] = 0; th[18] = 0; th[19] = 0
        else:
            _be16(th, cport)
            _be16(th + 2, 5001)
            _be16(th + 4, iplen - 20)
            th[6] = 0; th[7] = 0
        fwrite(b, 1, 16 + caplen, self.fp)
        self.records += 1

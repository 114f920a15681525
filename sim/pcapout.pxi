# pcap writer for a link (written at transmission start): nanosecond pcap, Ethernet + IPv4 +
# TCP/UDP headers, truncated after the transport header (caplen) with the true wire length.
# Node n has address 10.((n+1)>>16).(((n+1)>>8)&255).((n+1)&255); the data sender of a flow is the
# "client" (it sends the SYN) on port 1024 + (flow*1009 + conn) mod 64511, the receiver port 5001.
# Sequence numbers are byte-exact relative to a per-connection ISN; FIN/SYN consume one.
# TCP options: with tcp_header = 40 (the default) none, as before. With tcp_header > 40 the TCP
# header carries tcp_header - 40 option bytes (rounded up to a multiple of 4, at most 40), so a
# decoder sees the simulated payload: when tcp_header >= 52 NOP, NOP, Timestamps (TSval = the
# sending agent's clock in ms when it made the segment; TSecr = for an ACK the TSval of the
# segment it acknowledges, for data the TSval of the last ACK the sender had received (carried
# in the data packet's ack_bytes, ns), 0 on a SYN), then NOPs. SYN and SYN/ACK carry MSS (= mss),
# plus SACK-permitted and Timestamps when tcp_header >= 52; their header grows if these do not
# fit (a SYN of a tcp_header = 52 run has 16 option bytes, 56 IP bytes: real SYNs are longer too).
# Packets flagged F_XOPT (profile linux) carry their own header: p.size - 20 - payload TCP bytes,
# with Linux's option layout (SYN: MSS, SACK-permitted, timestamps, window scale 10; others:
# timestamps, SACK blocks), their relative sequence / acknowledgment numbers (tcp_seq, tcp_ack)
# and timestamp echo (tsecr); with F_CLIREV the receiving end is the client (its port is the
# ephemeral one).

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
    cdef int opt_len        # option bytes on non-SYN TCP segments (0: classic 20-byte header)
    cdef bint ts_opt        # Timestamps option on every TCP segment
    cdef uint8_t buf[16 + 14 + 20 + 60]

    def __init__(self, str path, int mss=1000, int tcp_header=40):
        """``tcp_header``: IP + TCP header bytes of the simulated segments (IP header 20)."""
        self.path = path
        self.mss = mss
        self.opt_len = min(40, (tcp_header - 40 + 3) & ~3) if tcp_header > 40 else 0
        self.ts_opt = tcp_header >= 52
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

    cdef int _options(self, Packet* p, uint8_t* o, bint fwd) noexcept:
        """Write the TCP options of ``p`` at ``o``; returns their length (a multiple of 4)."""
        cdef int n = 0, total = self.opt_len
        cdef uint32_t tsval = <uint32_t>(p.t_created // 1000000), tsecr
        if p.flags & F_SYN:
            o[0] = 2; o[1] = 4; _be16(o + 2, <uint32_t>self.mss)       # MSS
            n = 4
            if self.ts_opt or total >= 8:
                if not self.ts_opt:
                    o[4] = 1; o[5] = 1; n = 6
                o[n] = 4; o[n + 1] = 2                                  # SACK permitted
                n += 2
        elif self.ts_opt:
            o[0] = 1; o[1] = 1
            n = 2
        if self.ts_opt:
            # an ACK echoes its segment's timestamp; a SYN echoes nothing
            tsecr = (0 if p.flags & F_SYN else <uint32_t>(p.ack_bytes // 1000000)) if fwd \
                else <uint32_t>(p.ts // 1000000)
            o[n] = 8; o[n + 1] = 10
            _be32(o + n + 2, tsval)
            _be32(o + n + 6, tsecr)
            n += 10
        if total < n:
            total = n
        while n < total:
            o[n] = 1
            n += 1
        return total

    cdef int _linux_options(self, Packet* p, uint8_t* o, int total) noexcept:
        """Linux's TCP options of an F_XOPT packet (tcp_options_write), ``total`` bytes."""
        cdef int n = 0, i
        cdef uint32_t isn = conn_isn(p.flow, p.conn, 0)
        if p.flags & F_SYN:
            # the MSS Linux advertises is the MTU's (the timestamps option then takes 12 bytes)
            o[0] = 2; o[1] = 4; _be16(o + 2, <uint32_t>(self.mss + (12 if p.flags & F_TSOPT else 0)))
            n = 4
            if p.flags & F_TSOPT:
                if p.flags & F_SACKOK:
                    o[n] = 4; o[n + 1] = 2
                else:
                    o[n] = 1; o[n + 1] = 1
                n += 2
            elif p.flags & F_SACKOK:
                o[n] = 1; o[n + 1] = 1; o[n + 2] = 4; o[n + 3] = 2
                n += 4
        elif p.flags & F_TSOPT:
            o[0] = 1; o[1] = 1
            n = 2
        if p.flags & F_TSOPT:
            o[n] = 8; o[n + 1] = 10
            _be32(o + n + 2, <uint32_t>(p.t_created // 1000000))
            _be32(o + n + 6, <uint32_t>(p.tsecr // 1000000))
            n += 10
        if p.flags & F_SYN:
            o[n] = 1; o[n + 1] = 3; o[n + 2] = 3; o[n + 3] = 10         # NOP, window scale 10
            n += 4
        elif p.nsack > 0 and n + 4 + 8 * p.nsack <= total:
            o[n] = 1; o[n + 1] = 1; o[n + 2] = 5; o[n + 3] = 2 + 8 * p.nsack
            n += 4
            for i in range(2 * p.nsack):
                _be32(o + n, isn + p.sack[i])
                n += 4
        while n < total:
            o[n] = 1
            n += 1
        return total

    cdef void write(self, Packet* p, int64_t now) noexcept:
        cdef uint8_t* b = self.buf
        cdef uint8_t* ip = b + 16 + 14
        cdef uint8_t* th = ip + 20
        cdef int thl = 20 if p.proto == PROTO_TCP else 8
        cdef int caplen
        cdef uint32_t iplen
        cdef uint32_t src_ip = node_ip(p.src), dst_ip = node_ip(p.dst)
        cdef uint32_t csum = 0, cport, seq, ack
        cdef uint16_t flags
        cdef int i
        cdef int fwd = p.dir == DIR_FWD
        if self.fp == NULL:
            return
        if p.proto == PROTO_TCP and p.flags & F_XOPT:
            thl = p.size - 20 - p.payload
            if thl > 60:
                thl = 60
            self._linux_options(p, th + 20, thl - 20)
            iplen = p.size
        elif p.proto == PROTO_TCP and self.opt_len > 0:
            thl += self._options(p, th + 20, fwd)
            iplen = 20 + thl + p.payload
        else:
            iplen = p.size if p.size >= 20 + thl else 20 + thl
        caplen = 14 + 20 + thl
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
        if p.proto == PROTO_TCP and p.flags & F_XOPT:
            if p.flags & F_CLIREV:
                _be16(th, 5001 if fwd else cport)
                _be16(th + 2, cport if fwd else 5001)
            else:
                _be16(th, cport if fwd else 5001)
                _be16(th + 2, 5001 if fwd else cport)
            seq = conn_isn(p.flow, p.conn, 0 if fwd else 1) + p.tcp_seq
            ack = conn_isn(p.flow, p.conn, 1 if fwd else 0) + p.tcp_ack
            flags = p.flags
            if not (flags & F_ACK):
                ack = 0
            _be32(th + 4, seq)
            _be32(th + 8, ack)
            th[12] = <uint8_t>((thl // 4) << 4)
            th[13] = flags & 0xff
            _be16(th + 14, 65535)
            th[16] = 0; th[17] = 0; th[18] = 0; th[19] = 0
        elif p.proto == PROTO_TCP:
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
            th[12] = <uint8_t>((thl // 4) << 4)
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

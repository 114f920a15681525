# TCP receiver: cumulative ACKs (next expected segment), out-of-order segments kept in a ring
# bitmap, optional delayed ACK (every second in-order segment or after ``delack_timeout``; out of
# order data, duplicates and FIN are acknowledged at once). Echoes the segment's timestamp and
# retransmission flag so the sender can apply Karn's rule.

cdef enum:
    SINK_EV_DELACK = 1
    SINK_EV_INJECT = 2


@cython.final
cdef class TcpSink(Agent):
    cdef public int32_t mss, hdr
    cdef public bint delack
    cdef public int64_t delack_timeout
    cdef public int64_t extra_delay
    cdef public App app
    cdef Node node_obj
    cdef readonly int32_t dst_node, dst_agent
    cdef readonly int32_t conn
    cdef readonly int64_t rcv_nxt, fin_seg, fin_payload
    cdef readonly bint done
    cdef uint8_t* ring
    cdef int64_t cap                 # ring size (power of two)
    cdef int64_t nooo
    cdef int pending                 # in-order segments not yet acknowledged
    cdef int64_t echo_ts
    cdef uint8_t echo_retx
    cdef int64_t delack_gen
    cdef TcpSender sender

    def __init__(self, Node node, int flow, TcpSender sender, int mss=1000, int hdr=40):
        self.node_obj = node
        self.node = node.id
        self.flow = flow
        self.sender = sender
        self.dst_node = sender.node
        self.mss = mss
        self.hdr = hdr
        self.delack_timeout = 100_000_000
        self.fin_seg = -1
        self.conn = 0

    def connect(self, int dst_agent):
        self.dst_agent = dst_agent

    def __dealloc__(self):
        free(self.ring)

    cdef int _ring_set(self, int64_t seg) except -1:
        cdef int64_t off = seg - self.rcv_nxt, newcap, i, s
        cdef uint8_t* nr
        if off >= self.cap:
            newcap = max(64, self.cap)
            while newcap <= off:
                newcap *= 2
            nr = <uint8_t*>calloc(newcap, 1)
            if nr == NULL:
                raise MemoryError()
            for i in range(self.cap):
                s = self.rcv_nxt + i
                if self.ring[s & (self.cap - 1)]:
                    nr[s & (newcap - 1)] = 1
            free(self.ring)
            self.ring = nr
            self.cap = newcap
        if not self.ring[seg & (self.cap - 1)]:
            self.ring[seg & (self.cap - 1)] = 1
            self.nooo += 1

    cdef void _reset(self, int32_t conn) noexcept:
        self.conn = conn
        self.rcv_nxt = 0
        self.fin_seg = -1
        self.done = False
        self.pending = 0
        self.nooo = 0
        if self.ring != NULL:
            memset(self.ring, 0, self.cap)

    cdef int _send_ack(self, int64_t now, uint16_t flags) except -1:
        cdef Packet* p = pkt_alloc()
        p.flow = self.flow
        p.conn = self.conn
        p.src = self.node
        p.dst = self.dst_node
        p.dst_agent = self.dst_agent
        p.proto = PROTO_TCP
        p.dir = DIR_REV
        p.cls = self.sim.flow_class[self.flow]
        p.size = self.hdr
        p.flags = flags
        p.ack = self.rcv_nxt
        if self.done:
            p.ack_bytes = self.fin_seg * self.mss + self.fin_payload + 1
        else:
            p.ack_bytes = self.rcv_nxt * self.mss
        p.seq = -1
        p.ts = self.echo_ts
        p.retx = self.echo_retx
        p.t_created = now
        self.pending = 0
        self.delack_gen += 1
        self.sim.count_sent(p)
        if self.extra_delay > 0:
            self.sim.schedule(now + self.extra_delay, self, SINK_EV_INJECT, p, 0)
        else:
            self.node_obj.receive(p, now)

    cdef int handle(self, int32_t kind, Packet* p, int64_t arg, int64_t now) except -1:
        if kind == SINK_EV_INJECT:
            self.node_obj.receive(p, now)
        elif kind == SINK_EV_DELACK:
            if arg == self.delack_gen and self.pending > 0:
                self._send_ack(now, F_ACK)

    cdef int recv(self, Packet* p, int64_t now) except -1:
        cdef int64_t seg = p.seq
        cdef bint in_order = False
        cdef uint16_t flags = F_ACK
        cdef FlowStat* f = &self.sim.flows[self.flow]
        if p.conn > self.conn:
            self._reset(p.conn)
        elif p.conn < self.conn:
            pkt_free(p)
            return 0
        self.echo_ts = p.ts
        self.echo_retx = p.retx
        if p.flags & F_SYN:
            pkt_free(p)
            self._send_ack(now, F_SYN | F_ACK)
            return 0
        if p.flags & F_FIN:
            self.fin_seg = seg
            self.fin_payload = p.payload
        if seg == self.rcv_nxt:
            in_order = True
            f.goodput_bytes += p.payload
            self.rcv_nxt += 1
            while self.nooo > 0 and self.ring[self.rcv_nxt & (self.cap - 1)]:
                self.ring[self.rcv_nxt & (self.cap - 1)] = 0
                self.nooo -= 1
                f.goodput_bytes += self.fin_payload if self.rcv_nxt == self.fin_seg else self.mss
                self.rcv_nxt += 1
        elif seg > self.rcv_nxt:
            self._ring_set(seg)
        pkt_free(p)
        if not self.done and self.fin_seg >= 0 and self.rcv_nxt > self.fin_seg:
            self.done = True   # set before the ACK so it acknowledges the FIN
            flags |= F_FIN
            f.completed += 1
            if self.sender.conn == self.conn and self.sender.xfer >= 0:
                self.sim.transfers[self.sender.xfer].end = now
            self._send_ack(now, flags)
            if self.app is not None:
                self.app.transfer_done(self.flow, now)
            return 0
        if self.delack and in_order and self.nooo == 0:
            self.pending += 1
            if self.pending >= 2:
                self._send_ack(now, flags)
            elif self.pending == 1:
                self.sim.schedule(now + self.delack_timeout, self, SINK_EV_DELACK, NULL,
                                  self.delack_gen)
        else:
            self._send_ack(now, flags)

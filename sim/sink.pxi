# TCP receiver: cumulative ACKs (next expected segment), out-of-order segments kept in a ring
# bitmap. Echoes the segment's timestamp and retransmission flag so the sender can apply Karn's
# rule. Two ACK policies:
#   classic  every segment, or (delayed_ack) every second in-order segment or after
#            ``delack_timeout``; out-of-order data, duplicates and the FIN are acknowledged at once
#   linux    (linux_ack) tcp_input.c's __tcp_ack_snd_check: quick-ACK mode for the first 16 ACKs
#            of a connection and after a duplicate, an ACK once more than one full segment is
#            unacknowledged, the delayed-ACK timer after ``ato`` (40 ms adapted to the arrival
#            gaps), immediate ACKs for out-of-order data (after three, SACK compression), and a
#            delayed ACK of the FIN that the application's own FIN usually carries
# With ``sack``: SACK blocks (RFC 2018) kept as Linux does (tcp_sack_new_ofo_skb: the block that
# grew moves to the front, merged with any it now touches; at most 4, the oldest dropped) and,
# with ``dsack``, a D-SACK block (RFC 2883) for a duplicate segment on the next ACK.
# In request mode a TcpClient (client.pxi) owns the connection life at this end.

cdef enum:
    SINK_EV_DELACK = 1
    SINK_EV_INJECT = 2
    SINK_EV_COMPACK = 3

cdef enum:
    TCP_MAX_QUICKACKS = 16
    TCP_MSS_DEFAULT = 536
    TCP_FASTRETRANS_THRESH = 3
    TCP_COMP_SACK_NR = 44
    TCP_NUM_SACKS = 4
    TCP_COMP_SACK_DELAY = 1000000     # ns, tcp_comp_sack_delay_ns
    TCP_DELACK_MAX = 200000000        # ns
    TCP_ATO_MAX = 500000000           # ns (HZ / 2)


@cython.final
cdef class TcpSink(Agent):
    cdef public int32_t mss, hdr
    cdef public bint delack
    cdef public int64_t delack_timeout
    cdef public int64_t extra_delay
    cdef public bint linux_tcp              # option headers (F_XOPT) as the sender's
    cdef public bint linux_ack             # Linux delayed-ACK policy
    cdef public bint sack, dsack, ts_opt
    cdef public int64_t tick, rto_bound    # linux: jiffy (ns); ato never exceeds rto_bound
    cdef public int64_t jiffy_phase        # linux: where the host's jiffies begin, ns
    cdef public App app
    cdef public TcpClient client           # request mode: this end opens and closes
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
    # sequence space of the current connection (for TCP numbers in the headers)
    cdef int64_t total               # response bytes (< 0: unknown / unlimited)
    # SACK state: blocks [blk[2i], blk[2i+1]) in segments, most recent first
    cdef int64_t blk[8]
    cdef int nblk
    cdef int64_t dsk_s, dsk_e        # pending D-SACK block (dsk_e > dsk_s)
    # Linux delayed-ACK state (icsk_ack)
    cdef int quick
    cdef bint pingpong, ack_now, ack_sched
    cdef int64_t ato, lrcvtime, dack_t
    cdef int64_t unacked             # in-order payload bytes since the last ACK (rcv_nxt - rcv_wup)
    cdef int32_t rcv_mss
    cdef int64_t comp_nxt, comp_gen
    cdef int dup_cnt, comp_cnt
    cdef bint comp_armed
    cdef int64_t rcv_rtt             # ns: minimum TS-echo delay, for the SACK compression delay

    def __init__(self, Node node, int flow, TcpSender sender, int mss=1000, int hdr=40):
        self.node_obj = node
        self.node = node.id
        self.flow = flow
        self.sender = sender
        sender.peer = self
        self.dst_node = sender.node
        self.mss = mss
        self.hdr = hdr
        self.delack_timeout = 100_000_000
        self.tick = 4_000_000
        self.rto_bound = 200_000_000
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

    cdef inline bint _ring_has(self, int64_t seg) noexcept:
        return (seg > self.rcv_nxt and seg - self.rcv_nxt < self.cap
                and self.ring[seg & (self.cap - 1)] != 0)

    cdef void _reset(self, int32_t conn) noexcept:
        self.conn = conn
        self.rcv_nxt = 0
        self.fin_seg = -1
        self.done = False
        self.pending = 0
        self.nooo = 0
        if self.ring != NULL:
            memset(self.ring, 0, self.cap)
        self.total = self.sender.total if self.sender.conn == conn else -1
        self.nblk = 0
        self.dsk_e = self.dsk_s = 0
        self.quick = 0
        self.pingpong = self.ack_now = self.ack_sched = False
        self.ato = 0
        self.dack_t = 0
        self.unacked = 0
        self.rcv_mss = self.mss if self.mss < TCP_MSS_DEFAULT else TCP_MSS_DEFAULT
        self.comp_nxt = -1
        self.dup_cnt = self.comp_cnt = 0
        self.comp_armed = False
        self.rcv_rtt = 0

    # ---- sequence numbers ----
    cdef inline uint32_t _seq_of(self, int64_t seg) noexcept:
        """Relative TCP sequence number of the start of segment ``seg`` of the data direction
        (the sender's _seq_of, from what this end knows: the FIN once it has arrived)."""
        cdef int64_t b = seg * self.mss
        if self.total >= 0 and b > self.total:
            b = self.total
        if self.fin_seg >= 0 and seg > self.fin_seg:
            b += 1
        return <uint32_t>(1 + b)

    cdef inline int64_t _seg_payload(self, int64_t seg) noexcept:
        """Payload of a segment drained from the out-of-order ring."""
        if seg == self.fin_seg:
            return self.fin_payload
        if self.total >= 0 and (seg + 1) * self.mss > self.total:
            return self.total - seg * self.mss
        return self.mss

    # ---- packets out ----
    cdef Packet* _packet(self, uint16_t flags, int64_t now) except NULL:
        """A packet of this end toward the sender (ACK, or the client's SYN / request / FIN)."""
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
        p.t_created = now
        p.seq = -1
        if self.linux_tcp or self.client is not None:
            # own TCP fields (F_XOPT): option-exact headers under linux, else ``hdr`` bytes
            p.flags |= F_XOPT | (F_TSOPT if self.ts_opt else 0)
            p.tsecr = self.echo_ts
            p.tcp_ack = self._seq_of(self.rcv_nxt)
            p.tcp_seq = self.client.seq_field(flags) if self.client is not None else 1
            if self.linux_tcp:
                p.size = 40 + 12 * self.ts_opt
            if flags & F_SYN:
                p.tcp_seq = 0
                if self.linux_tcp:
                    p.size = 40 + syn_options(self.ts_opt, self.sack)
                    p.flags |= F_SACKOK if self.sack else 0
            if self.client is not None:
                p.flags |= F_CLIREV
        return p

    cdef int emit(self, Packet* p, int64_t now) except -1:
        self.sim.count_sent(p)
        if self.extra_delay > 0:
            self.sim.schedule(now + self.extra_delay, self, SINK_EV_INJECT, p, 0)
        else:
            self.node_obj.receive(p, now)

    cdef int _send_ack(self, int64_t now, uint16_t flags) except -1:
        cdef Packet* p = self._packet(flags, now)
        cdef int n = 0, i, nmax
        p.ack = self.rcv_nxt
        if self.done:
            p.ack_bytes = self.fin_seg * self.mss + self.fin_payload + 1
        else:
            p.ack_bytes = self.rcv_nxt * self.mss
        p.ts = self.echo_ts
        p.retx = self.echo_retx
        if self.sack and (self.nblk > 0 or self.dsk_e > self.dsk_s):
            # with timestamps 3 blocks fit in the 40 option bytes, else 4 (D-SACK first)
            nmax = 3 if self.ts_opt else 4
            if self.dsk_e > self.dsk_s:
                p.sack[0] = self._seq_of(self.dsk_s)
                p.sack[1] = self._seq_of(self.dsk_e)
                n = 1
                self.dsk_e = self.dsk_s
            i = 0
            while i < self.nblk and n < nmax:
                p.sack[2 * n] = self._seq_of(self.blk[2 * i])
                p.sack[2 * n + 1] = self._seq_of(self.blk[2 * i + 1])
                n += 1
                i += 1
            p.nsack = n
            if self.linux_tcp:
                p.size += 4 + 8 * n
        self.pending = 0
        self.delack_gen += 1
        if self.linux_ack:
            self._ack_sent()
        self.emit(p, now)

    cdef int handle(self, int32_t kind, Packet* p, int64_t arg, int64_t now) except -1:
        if kind == SINK_EV_INJECT:
            self.node_obj.receive(p, now)
        elif kind == SINK_EV_DELACK:
            if self.linux_ack:
                if arg == self.delack_gen and self.ack_sched:
                    self._delack_fired(now)
            elif arg == self.delack_gen and self.pending > 0:
                self._send_ack(now, F_ACK)
        elif kind == SINK_EV_COMPACK:
            if arg == self.comp_gen and self.comp_armed:
                self.comp_armed = False
                self._send_ack(now, F_ACK)

    # ---- data in ----
    cdef int recv(self, Packet* p, int64_t now) except -1:
        cdef int64_t seg = p.seq
        cdef bint in_order = False
        cdef uint16_t flags = F_ACK
        cdef FlowStat* f
        if p.conn > self.conn:
            self._reset(p.conn)
        elif p.conn < self.conn:
            pkt_free(p)
            return 0
        self.echo_ts = p.ts
        self.echo_retx = p.retx
        if self.client is not None:
            # request mode: the server's SYN-ACK and pure ACKs are the client's; its data
            # segments also acknowledge the request and our FIN
            self.client.peer_ack(p, now)
            if p.seq < 0:
                pkt_free(p)
                return 0
        if p.flags & F_SYN:
            pkt_free(p)
            self._send_ack(now, F_SYN | F_ACK)
            return 0
        if self.linux_ack or self.sack:
            return self._recv_modern(p, now)
        f = &self.sim.flows[self.flow]
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
                f.goodput_bytes += self._seg_payload(self.rcv_nxt)
                self.rcv_nxt += 1
        elif seg > self.rcv_nxt:
            self._ring_set(seg)
        pkt_free(p)
        if not self.done and self.fin_seg >= 0 and self.rcv_nxt > self.fin_seg:
            self.done = True   # set before the ACK so it acknowledges the FIN
            f.completed += 1
            if self.client is None:
                flags |= F_FIN
            self._send_ack(now, flags)
            self._transfer_end(now)
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

    cdef int _transfer_end(self, int64_t now) except -1:
        if self.sender.conn == self.conn and self.sender.xfer >= 0:
            self.sim.transfers[self.sender.xfer].end = now
        if self.client is not None:
            self.client.peer_closed(now)

    cdef int _recv_modern(self, Packet* p, int64_t now) except -1:
        """SACK blocks, D-SACK and / or Linux's ACK policy."""
        cdef int64_t seg = p.seq, before = self.rcv_nxt
        cdef int32_t payload = p.payload
        cdef bint dup = False, ooo = False, filled = False
        cdef FlowStat* f = &self.sim.flows[self.flow]
        if p.flags & F_FIN:
            self.fin_seg = seg
            self.fin_payload = payload
        if self.ts_opt and p.tsecr > 0 and (self.rcv_rtt == 0 or now - p.tsecr < self.rcv_rtt):
            self.rcv_rtt = now - p.tsecr
        pkt_free(p)
        if seg < self.rcv_nxt or self._ring_has(seg):
            dup = True
            if self.sack and self.dsack:
                self.dsk_s = seg
                self.dsk_e = seg + 1
        elif seg == self.rcv_nxt:
            f.goodput_bytes += payload
            self.unacked += payload
            self.rcv_nxt += 1
            filled = self.nooo > 0
            while self.nooo > 0 and self.ring[self.rcv_nxt & (self.cap - 1)]:
                self.ring[self.rcv_nxt & (self.cap - 1)] = 0
                self.nooo -= 1
                f.goodput_bytes += self._seg_payload(self.rcv_nxt)
                self.unacked += self._seg_payload(self.rcv_nxt)
                self.rcv_nxt += 1
            filled = filled and self.nooo == 0
            if self.nblk > 0:
                self._sack_remove()
        else:
            ooo = True
            self._ring_set(seg)
            if self.sack:
                self._sack_new_ofo(seg)
        if not self.done and self.fin_seg >= 0 and self.rcv_nxt > self.fin_seg:
            self.done = True
            f.completed += 1
            if self.client is None:
                # the sender opened: it closes with us (classic FIN|ACK)
                self._send_ack(now, F_ACK | F_FIN)
            elif self.linux_ack:
                # tcp_fin: CLOSE_WAIT enters ping-pong mode, so unless more than a segment is
                # unacknowledged the ACK waits, usually for the application's own FIN
                if payload > 0:
                    self._data_event(payload, now)
                self.pingpong = True
                self.ack_sched = True
                self.ack_now = filled
                self._ack_check(True, now)
            else:
                self._send_ack(now, F_ACK)
            self._transfer_end(now)
            if self.app is not None:
                self.app.transfer_done(self.flow, now)
            return 0
        if not self.linux_ack:
            if self.delack and self.rcv_nxt > before and self.nooo == 0 and not dup:
                self.pending += 1
                if self.pending >= 2:
                    self._send_ack(now, F_ACK)
                elif self.pending == 1:
                    self.sim.schedule(now + self.delack_timeout, self, SINK_EV_DELACK, NULL,
                                      self.delack_gen)
            else:
                self._send_ack(now, F_ACK)
            return 0
        self.ack_sched = True
        if dup:
            # tcp_send_dupack: quick-ACK mode and an immediate (D-SACK) ACK
            self._enter_quickack()
            self._send_ack(now, F_ACK)
        elif ooo:
            self._ack_check(True, now)
        else:
            if payload > 0:
                self._data_event(payload, now)
            if filled:
                self.ack_now = True        # RFC 5681 4.2: ACK at once when a gap is filled
            self._ack_check(True, now)

    # ---- SACK blocks (tcp_sack_new_ofo_skb, tcp_sack_maybe_coalesce, tcp_sack_remove) ----
    cdef void _sack_new_ofo(self, int64_t seg) noexcept:
        cdef int i, j
        cdef int64_t s0, e0
        for i in range(self.nblk):
            if self.blk[2 * i] <= seg + 1 and seg <= self.blk[2 * i + 1]:
                # extends block i: grow it and move it to the front
                s0 = min(self.blk[2 * i], seg)
                e0 = max(self.blk[2 * i + 1], seg + 1)
                for j in range(i, 0, -1):
                    self.blk[2 * j] = self.blk[2 * j - 2]
                    self.blk[2 * j + 1] = self.blk[2 * j - 1]
                self.blk[0] = s0
                self.blk[1] = e0
                self._sack_coalesce()
                return
        if self.nblk >= TCP_NUM_SACKS:
            self.nblk = TCP_NUM_SACKS - 1      # the oldest block is forgotten
        for j in range(self.nblk, 0, -1):
            self.blk[2 * j] = self.blk[2 * j - 2]
            self.blk[2 * j + 1] = self.blk[2 * j - 1]
        self.blk[0] = seg
        self.blk[1] = seg + 1
        self.nblk += 1

    cdef void _sack_coalesce(self) noexcept:
        """Merge the first block with every other block it overlaps or touches."""
        cdef int i = 1, j
        while i < self.nblk:
            if self.blk[2 * i] <= self.blk[1] and self.blk[0] <= self.blk[2 * i + 1]:
                self.blk[0] = min(self.blk[0], self.blk[2 * i])
                self.blk[1] = max(self.blk[1], self.blk[2 * i + 1])
                for j in range(i, self.nblk - 1):
                    self.blk[2 * j] = self.blk[2 * j + 2]
                    self.blk[2 * j + 1] = self.blk[2 * j + 3]
                self.nblk -= 1
            else:
                i += 1

    cdef void _sack_remove(self) noexcept:
        """Drop the blocks the cumulative ACK now covers."""
        cdef int i = 0, n = 0
        for i in range(self.nblk):
            if self.blk[2 * i] > self.rcv_nxt:
                self.blk[2 * n] = self.blk[2 * i]
                self.blk[2 * n + 1] = self.blk[2 * i + 1]
                n += 1
        self.nblk = n

    # ---- Linux delayed ACKs (tcp_input.c, tcp_output.c, tcp_timer.c) ----
    cdef inline bint _quickack_mode(self) noexcept:
        return self.quick > 0 and not self.pingpong

    cdef inline void _incr_quickack(self) noexcept:
        if self.quick < TCP_MAX_QUICKACKS:
            self.quick = TCP_MAX_QUICKACKS

    cdef inline void _enter_quickack(self) noexcept:
        self._incr_quickack()
        self.pingpong = False
        self.ato = self.delack_timeout

    cdef void _data_event(self, int32_t payload, int64_t now) noexcept:
        """tcp_event_data_recv: quick-ACK mode on the first data, ato follows the arrival gaps
        (in jiffies), rcv_mss the largest segment seen."""
        cdef int64_t m, ato_min = self.delack_timeout
        if payload >= self.rcv_mss:
            self.rcv_mss = payload if payload < self.mss else self.mss
        if self.ato == 0:
            self._incr_quickack()
            self.ato = ato_min
        else:
            m = ((now + self.jiffy_phase) // self.tick
                 - (self.lrcvtime + self.jiffy_phase) // self.tick) * self.tick
            if m <= ato_min // 2:
                self.ato = self.ato // 2 + ato_min // 2
            elif m < self.ato:
                self.ato = self.ato // 2 + m
                if self.ato > self.rto_bound:
                    self.ato = self.rto_bound
            elif m > self.rto_bound:
                self._incr_quickack()
        self.lrcvtime = now

    cdef int _ack_check(self, bint ofo_possible, int64_t now) except -1:
        """__tcp_ack_snd_check."""
        cdef int64_t delay, rtt
        if (self.unacked > self.rcv_mss or self._quickack_mode() or self.ack_now):
            self._send_ack(now, F_ACK)
            return 0
        if not ofo_possible or self.nooo == 0:
            self._delayed_ack(now)
            return 0
        if not self.sack or self.comp_cnt >= TCP_COMP_SACK_NR:
            self._send_ack(now, F_ACK)
            return 0
        if self.comp_nxt != self.rcv_nxt:
            self.comp_nxt = self.rcv_nxt
            self.dup_cnt = 0
        if self.dup_cnt < TCP_FASTRETRANS_THRESH:
            self.dup_cnt += 1
            self._send_ack(now, F_ACK)
            return 0
        self.comp_cnt += 1
        if self.comp_armed:
            return 0
        # compressed SACK: 5 % of the RTT, at most tcp_comp_sack_delay_ns (an hrtimer)
        rtt = self.rcv_rtt
        if self.client is not None and self.client.srtt() > 0 and (rtt == 0 or self.client.srtt() < rtt):
            rtt = self.client.srtt()
        delay = rtt // 20
        if delay > TCP_COMP_SACK_DELAY:
            delay = TCP_COMP_SACK_DELAY
        self.comp_armed = True
        self.comp_gen += 1
        self.sim.schedule(now + delay, self, SINK_EV_COMPACK, NULL, self.comp_gen)

    cdef int _delayed_ack(self, int64_t now) except -1:
        """tcp_send_delayed_ack: the timer runs ato (bounded by the RTT when ato grew), never
        later than an already armed one; an ACK due within ato/4 goes now."""
        cdef int64_t ato = self.ato, max_ato, rtt, deadline
        if ato > self.delack_timeout:
            max_ato = TCP_DELACK_MAX if self.pingpong else TCP_ATO_MAX
            if self.client is not None and self.client.srtt() > 0:
                rtt = jiffies_ns(self.client.srtt(), self.tick)
                if rtt < self.delack_timeout:
                    rtt = self.delack_timeout
                if rtt < max_ato:
                    max_ato = rtt
            if ato > max_ato:
                ato = max_ato
        if ato > TCP_DELACK_MAX:
            ato = TCP_DELACK_MAX
        deadline = wheel_expiry(now, ato, self.tick, self.jiffy_phase)
        if self.dack_t > 0:
            if self.dack_t <= now + (ato >> 2):
                self._send_ack(now, F_ACK)
                return 0
            if deadline > self.dack_t:
                deadline = self.dack_t
        if deadline != self.dack_t:
            self.dack_t = deadline
            self.sim.schedule(deadline, self, SINK_EV_DELACK, NULL, self.delack_gen)

    cdef int _delack_fired(self, int64_t now) except -1:
        """tcp_delack_timer_handler: a missed delayed ACK inflates ato (or ends ping-pong)."""
        if not self.pingpong:
            self.ato = self.ato * 2 if self.ato * 2 < self.rto_bound else self.rto_bound
        else:
            self.pingpong = False
            self.ato = self.delack_timeout
        self._send_ack(now, F_ACK)

    cdef inline void _ack_sent(self) noexcept:
        """tcp_event_ack_sent: one quick ACK used, timers and compression cleared."""
        if self.quick > 0 and self.ack_sched:
            self.quick -= 1
            if self.quick == 0:
                self.ato = self.delack_timeout
        self.ack_sched = self.ack_now = False
        self.dack_t = 0
        self.unacked = 0
        self.comp_cnt = 0
        self.comp_armed = False

    # ---- request mode ----
    cdef int open(self, int32_t conn, int64_t req, int64_t now) except -1:
        """The sender started connection ``conn`` in request mode: the client sends its SYN."""
        self._reset(conn)
        self.echo_ts = 0
        self.echo_retx = 0
        self.client.open(conn, req, now)

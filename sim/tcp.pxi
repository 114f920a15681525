# TCP sender: segments of ``mss`` payload bytes, windows in segments (like ns-2's one-way TCP),
# Tahoe / Reno / NewReno loss recovery selected by the congestion-control object, RTO after
# Jacobson/Karels with Karn's rule, exponential backoff, min/max RTO and timer granularity, and a
# receiver-window limit. Window growth and the loss response are delegated to a CongestionOps
# (cc.pxi); a SenderHook observes the sender and may change ``xi`` and ``ssthresh`` (TCP-MT's SSC).

cdef enum:
    RECOVERY_TAHOE = 0
    RECOVERY_RENO = 1
    RECOVERY_NEWRENO = 2
    RECOVERY_CC = 3         # duplicate ACKs go to the congestion control (cc.on_dupack)

cdef enum:
    TCP_IDLE = 0
    TCP_SYN_SENT = 1
    TCP_ESTABLISHED = 2

cdef enum:
    TCP_EV_RTO = 1
    TCP_EV_INJECT = 2
    TCP_EV_HOOK = 3

cdef int64_t INFINITE_SEGS = (<int64_t>1) << 60


cdef class SenderHook:
    """Observer attached to a TcpSender; every method is a no-op by default.

    ``period`` (ns): when > 0 the sender calls ``on_timer`` every ``period`` ns from the first
    connection on. A hook may write ``sender.xi`` (congestion-avoidance slope) and
    ``sender.ssthresh`` (segments) at any call.
    """
    cdef public int64_t period

    cdef int on_attach(self, TcpSender s, int64_t now) except -1:
        pass

    cdef int on_conn_start(self, TcpSender s, int64_t now) except -1:
        """A new connection (transfer) starts; cwnd/ssthresh were just reset."""
        pass

    cdef int on_send(self, TcpSender s, int64_t nbytes, bint retx, int64_t now) except -1:
        pass

    cdef int on_ack(self, TcpSender s, int64_t acked_bytes, int64_t now) except -1:
        """A new cumulative ACK acknowledged ``acked_bytes`` payload bytes."""
        pass

    cdef int on_rtt(self, TcpSender s, int64_t rtt, int64_t now) except -1:
        pass

    cdef int on_loss(self, TcpSender s, int64_t now) except -1:
        """Fast retransmit (three duplicate ACKs)."""
        pass

    cdef int on_timeout(self, TcpSender s, int64_t now) except -1:
        pass

    cdef int on_timer(self, TcpSender s, int64_t now) except -1:
        pass


@cython.final
cdef class TcpSender(Agent):
    # configuration (segments, ns)
    cdef public int32_t mss, hdr
    cdef public double init_cwnd, init_ssthresh
    cdef public int64_t rwnd                    # receiver (advertised) window, segments
    cdef public int64_t min_rto, max_rto, init_rto, tick
    cdef public bint handshake
    cdef public bint rtt_per_ack                # RTO estimator fed by every ACK (timestamps)
    cdef public bint limited_transmit           # RFC 3042: new data on the 1st and 2nd dupack
    cdef public bint ns2_rto                    # ns-2's RTO arithmetic (whole ticks, fixed point)
    cdef public int64_t tick_phase              # ns: ns-2's boot_time_, uniform in [0, tick)
    cdef int64_t ns2_srtt, ns2_rttvar           # ns-2's t_srtt_ (1/8 tick), t_rttvar_ (1/4 tick)
    cdef public int64_t extra_delay             # one-way delay line in front of the host, ns
    cdef public double xi                       # congestion-avoidance slope: cwnd += xi/cwnd
    cdef public CongestionOps cc
    cdef public SenderHook hook
    cdef public App app
    cdef Node node_obj
    cdef readonly int32_t dst_node, dst_agent
    # connection state
    cdef readonly int32_t conn
    cdef readonly int state
    cdef readonly int64_t n_seg, last_payload, avail
    cdef readonly int64_t snd_una, snd_nxt, snd_max
    cdef public double cwnd, ssthresh
    cdef readonly int64_t dupacks, recover
    cdef readonly bint in_recovery
    cdef bint partial_acked                     # a partial ACK has arrived in this recovery
    cdef readonly double srtt, rttvar          # ns
    cdef readonly bint have_rtt
    cdef readonly int64_t rto, last_rtt, min_rtt
    cdef readonly int32_t backoff
    cdef int64_t rto_deadline, rto_pending_t
    cdef bint rto_armed, rto_pending
    cdef int64_t rto_gen
    cdef int64_t syn_ts
    cdef int64_t ts_recent                      # creation time of the last ACK received (ns, 0: none)
    cdef int64_t rtt_seq, rtt_ts                # segment being timed (-1: none), its send time
    cdef bint syn_retx
    cdef Py_ssize_t xfer                        # row in sim.transfers, -1 if none
    cdef list pending                           # transfer sizes waiting for the connection
    cdef bint hook_timer_on

    def __init__(self, Node node, int flow, int dst_node, int mss=1000, int hdr=40):
        self.node_obj = node
        self.node = node.id
        self.flow = flow
        self.dst_node = dst_node
        self.mss = mss
        self.hdr = hdr
        self.init_cwnd = 1.0
        self.init_ssthresh = 1e9
        self.rwnd = 1 << 30
        self.min_rto = 200_000_000
        self.max_rto = 60_000_000_000
        self.init_rto = 3_000_000_000
        self.tick = 1_000_000
        self.xi = 1.0
        self.cc = Reno()
        self.xfer = -1
        self.pending = []
        self.min_rtt = -1

    def connect(self, int dst_agent):
        self.dst_agent = dst_agent

    # ---- application interface ----
    cdef int start_transfer(self, int64_t nbytes, int64_t now) except -1:
        """Open a connection and send ``nbytes`` (< 0: unlimited). Queued if one is open."""
        if self.state != TCP_IDLE:
            self.pending.append(nbytes)
            return 0
        self.conn += 1
        self.ts_recent = 0
        if nbytes < 0:
            self.n_seg = INFINITE_SEGS
            self.last_payload = self.mss
        else:
            self.n_seg = max(1, (nbytes + self.mss - 1) // self.mss)
            self.last_payload = nbytes - (self.n_seg - 1) * self.mss if nbytes > 0 else 0
        self.avail = self.n_seg
        self.snd_una = 0
        self.snd_nxt = 0
        self.snd_max = 0
        self.cwnd = self.init_cwnd
        self.ssthresh = self.init_ssthresh
        self.dupacks = 0
        self.recover = -1
        self.in_recovery = False
        self.have_rtt = False
        self.ns2_srtt = 0
        self.srtt = 0
        self.rttvar = 0
        self.rto = self.init_rto
        self.backoff = 1
        self.rtt_seq = -1
        self.xfer = self.sim.new_transfer(self.flow, self.conn, nbytes, now)
        self.cc.on_start(self, now)
        if self.hook is not None:
            if not self.hook_timer_on and self.hook.period > 0:
                self.hook_timer_on = True
                self.sim.schedule(now + self.hook.period, self, TCP_EV_HOOK, NULL, 0)
            self.hook.on_conn_start(self, now)
        if self.handshake:
            self.state = TCP_SYN_SENT
            self.syn_retx = False
            self._send_syn(now)
        else:
            self.state = TCP_ESTABLISHED
            self.send_much(now)

    cdef int app_limit(self, int64_t avail_segs, int64_t now) except -1:
        """Application-limited sending: only segments below ``avail_segs`` may be sent."""
        self.avail = avail_segs
        self.send_much(now)

    cdef int app_append(self, int64_t nseg, int64_t now) except -1:
        """The application hands ``nseg`` more segments to an open unlimited connection."""
        self.avail += nseg
        self.send_much(now)

    cdef int app_close(self, int64_t now) except -1:
        """End an unlimited transfer after what was already handed over (on/off sources)."""
        if self.state == TCP_IDLE or self.n_seg != INFINITE_SEGS:
            return 0
        self.n_seg = max(self.snd_max, self.snd_una) + 1
        self.avail = self.n_seg
        self.send_much(now)

    # ---- packets out ----
    cdef Packet* _new_packet(self, int64_t now) except NULL:
        cdef Packet* p = pkt_alloc()
        p.flow = self.flow
        p.conn = self.conn
        p.src = self.node
        p.dst = self.dst_node
        p.dst_agent = self.dst_agent
        p.proto = PROTO_TCP
        p.dir = DIR_FWD
        p.cls = self.sim.flow_class[self.flow]
        p.t_created = now
        p.ts = now
        p.ack_bytes = self.ts_recent      # for the pcap's TSecr (data segments carry no ack_bytes)
        return p

    cdef int _inject(self, Packet* p, int64_t now) except -1:
        self.sim.count_sent(p)
        if self.extra_delay > 0:
            self.sim.schedule(now + self.extra_delay, self, TCP_EV_INJECT, p, 0)
        else:
            self.node_obj.receive(p, now)

    cdef int _send_syn(self, int64_t now) except -1:
        cdef Packet* p = self._new_packet(now)
        p.seq = -1
        p.size = self.hdr
        p.flags = F_SYN
        p.retx = self.syn_retx
        self.syn_ts = now
        self._inject(p, now)
        self._timer_set(now + self.rto * self.backoff)

    cdef int _send_seg(self, int64_t seg, int64_t now) except -1:
        cdef Packet* p = self._new_packet(now)
        cdef TransferRec* tr = &self.sim.transfers[self.xfer]
        cdef bint retx = seg < self.snd_max
        p.seq = seg
        p.payload = self.last_payload if seg == self.n_seg - 1 else self.mss
        p.size = self.hdr + p.payload
        p.flags = F_ACK
        if seg == self.n_seg - 1:
            p.flags |= F_FIN | F_PSH
        p.retx = retx
        if retx:
            if seg <= self.rtt_seq:
                self.rtt_seq = -1       # Karn: the timed segment's ACK would be ambiguous
        elif self.rtt_seq < 0:
            self.rtt_seq = seg
            self.rtt_ts = now
        tr.bytes_sent += p.payload
        tr.pkts_sent += 1
        if retx:
            tr.retx += 1
            self.sim.flows[self.flow].retx += 1
        self.cc.on_send(self, seg, retx, now)
        if self.hook is not None:
            self.hook.on_send(self, p.payload, retx, now)
        self._inject(p, now)

    cdef inline int64_t window(self) noexcept:
        cdef int64_t w = <int64_t>self.cwnd
        if w > self.rwnd:
            w = self.rwnd
        return w          # 0 below one segment (ns-2 window(); only Vegas's deflation gets there)

    cdef int send_much(self, int64_t now) except -1:
        cdef int64_t limit
        if self.state != TCP_ESTABLISHED:
            return 0
        limit = self.snd_una + self.window()
        if limit > self.avail:
            limit = self.avail
        if limit > self.n_seg:
            limit = self.n_seg
        while self.snd_nxt < limit:
            self._send_seg(self.snd_nxt, now)
            self.snd_nxt += 1
            if self.snd_nxt > self.snd_max:
                self.snd_max = self.snd_nxt
        if self.snd_max > self.snd_una and not self.rto_armed:
            self._timer_set(now + self._rto_value())

    cdef int _send_one_new(self, int64_t now) except -1:
        """Limited transmit (RFC 3042, ns-2 singledup_): one new segment on the first and second
        duplicate ACK, within the receiver window but regardless of cwnd."""
        if (self.state == TCP_ESTABLISHED and self.snd_nxt == self.snd_max
                and self.snd_nxt < self.avail and self.snd_nxt < self.n_seg
                and self.snd_nxt < self.snd_una + self.rwnd):
            self._send_seg(self.snd_nxt, now)
            self.snd_nxt += 1
            self.snd_max = self.snd_nxt

    cdef int retransmit(self, int64_t seg, int64_t now) except -1:
        self._send_seg(seg, now)

    # ---- RTO timer (one pending event; restarts only move the deadline) ----
    cdef inline int64_t _rto_value(self) noexcept:
        cdef int64_t v = self.rto * self.backoff
        return v if v < self.max_rto else self.max_rto

    cdef int _timer_set(self, int64_t deadline) except -1:
        self.rto_deadline = deadline
        self.rto_armed = True
        if not self.rto_pending or deadline < self.rto_pending_t:
            self.rto_gen += 1
            self.rto_pending = True
            self.rto_pending_t = deadline
            self.sim.schedule(deadline, self, TCP_EV_RTO, NULL, self.rto_gen)

    cdef inline void _timer_stop(self) noexcept:
        self.rto_armed = False

    cdef int handle(self, int32_t kind, Packet* p, int64_t arg, int64_t now) except -1:
        if kind == TCP_EV_INJECT:
            self.node_obj.receive(p, now)
        elif kind == TCP_EV_RTO:
            if arg != self.rto_gen:
                return 0
            self.rto_pending = False
            if not self.rto_armed:
                return 0
            if now < self.rto_deadline:
                self._timer_set(self.rto_deadline)
                return 0
            self.rto_armed = False
            self._timeout(now)
        elif kind == TCP_EV_HOOK:
            self.hook.on_timer(self, now)
            self.sim.schedule(now + self.hook.period, self, TCP_EV_HOOK, NULL, 0)

    cdef int _rtt_sample(self, int64_t r, int64_t now) except -1:
        """A per-ACK sample from the echoed timestamp (Karn-valid): congestion control and hook."""
        if r <= 0:
            r = 1
        self.last_rtt = r
        if self.min_rtt < 0 or r < self.min_rtt:
            self.min_rtt = r
        if self.rtt_per_ack:
            self._rto_update(r, now - r)
        self.cc.on_rtt(self, r, now)
        if self.hook is not None:
            self.hook.on_rtt(self, r, now)

    cdef void _rto_update(self, int64_t r, int64_t sent=0) noexcept:
        """Jacobson/Karels: srtt, rttvar (gains 1/8, 1/4), RTO = srtt + max(tick, 4 rttvar)
        rounded up to the timer granularity, within [min_rto, max_rto]; clears the backoff.
        ``sent``: the sample's send time (ns), for ns-2's tick phase."""
        cdef double v
        if r <= 0:
            r = 1
        if self.ns2_rto:
            self._rto_update_ns2(r, sent)
            return
        if not self.have_rtt:
            self.srtt = r
            self.rttvar = r / 2.0
            self.have_rtt = True
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * fabs(self.srtt - r)
            self.srtt = 0.875 * self.srtt + 0.125 * r
        v = self.srtt + max(<double>self.tick, 4.0 * self.rttvar)
        if self.tick > 1:
            v = ceil(v / self.tick) * self.tick
        self.rto = <int64_t>v
        if self.rto < self.min_rto:
            self.rto = self.min_rto
        if self.rto > self.max_rto:
            self.rto = self.max_rto
        self.backoff = 1

    cdef void _rto_update_ns2(self, int64_t r, int64_t sent) noexcept:
        """ns-2 TcpAgent::rtt_update() and rtt_timeout(): the sample in whole ticks, counting the
        send time's phase within the tick (boot_time_ = tick_phase), srtt and rttvar as integers in
        1/8 and 1/4 ticks, RTO = (srtt + 4 rttvar) ticks, at least 2 ticks and min_rto."""
        cdef int64_t t = (r + (sent + self.tick_phase) % self.tick) // self.tick, delta
        if t < 1:
            t = 1
        if self.ns2_srtt != 0:
            delta = t - (self.ns2_srtt >> 3)
            self.ns2_srtt += delta
            if self.ns2_srtt <= 0:
                self.ns2_srtt = 1
            if delta < 0:
                delta = -delta
            delta -= self.ns2_rttvar >> 2
            self.ns2_rttvar += delta
            if self.ns2_rttvar <= 0:
                self.ns2_rttvar = 1
        else:
            self.ns2_srtt = t << 3
            self.ns2_rttvar = t << 1
        self.srtt = self.ns2_srtt * self.tick / 8.0
        self.rttvar = self.ns2_rttvar * self.tick / 4.0
        self.have_rtt = True
        self.rto = (((self.ns2_rttvar << 3) + self.ns2_srtt) >> 3) * self.tick
        if self.rto < 2 * self.tick:
            self.rto = 2 * self.tick
        if self.rto < self.min_rto:
            self.rto = self.min_rto
        if self.rto > self.max_rto:
            self.rto = self.max_rto
        self.backoff = 1

    cdef int _timeout(self, int64_t now) except -1:
        cdef FlowStat* f = &self.sim.flows[self.flow]
        f.timeouts += 1
        if self.xfer >= 0:
            self.sim.transfers[self.xfer].timeouts += 1
        if self.backoff < 64:
            self.backoff *= 2
        if self.ns2_rto and self.backoff > 8 and self.ns2_srtt != 0:
            # ns-2 rtt_backoff(): backed off this far, srtt is folded into rttvar and re-learned
            self.ns2_rttvar += self.ns2_srtt >> 3
            self.ns2_srtt = 0
        if self.state == TCP_SYN_SENT:
            self.syn_retx = True
            self._send_syn(now)
            return 0
        if self.state != TCP_ESTABLISHED or (self.snd_una >= self.snd_max and self.cwnd >= 1.0):
            return 0
        if self.in_recovery and self.cwnd > self.ssthresh:
            # halve the window in force, not the one inflated by dupacks (ns-2 keeps the inflation
            # apart, in dupwnd_, and clears it before the timeout's slowdown)
            self.cwnd = self.ssthresh
        self.ssthresh = self.cc.ssthresh_on_loss(self)
        self.cwnd = 1.0
        self.in_recovery = False
        self.dupacks = 0
        self.recover = self.snd_max
        self.snd_nxt = self.snd_una          # go back N
        self.cc.on_loss(self, True, now)
        if self.hook is not None:
            self.hook.on_timeout(self, now)
        self.send_much(now)
        if not self.rto_armed:
            self._timer_set(now + self._rto_value())

    # ---- ACKs in ----
    cdef int recv(self, Packet* p, int64_t now) except -1:
        cdef int64_t ack, newly
        cdef bint valid_sample
        if p.conn != self.conn or self.state == TCP_IDLE:
            pkt_free(p)
            return 0
        self.ts_recent = p.t_created
        if self.state == TCP_SYN_SENT:
            if p.flags & F_SYN:
                self.state = TCP_ESTABLISHED
                self._timer_stop()
                if not p.retx:
                    self._rto_update(now - p.ts, p.ts)
                    self._rtt_sample(now - p.ts, now)
                pkt_free(p)
                self.send_much(now)
            else:
                pkt_free(p)
            return 0
        ack = p.ack
        valid_sample = not p.retx and p.ts > 0
        if ack > self.snd_una:
            newly = ack - self.snd_una
            if valid_sample:
                self._rtt_sample(now - p.ts, now)
            if self.rtt_seq >= 0 and ack > self.rtt_seq:
                if not self.rtt_per_ack:
                    self._rto_update(now - self.rtt_ts, self.rtt_ts)
                self.rtt_seq = -1
            pkt_free(p)
            self._new_ack(ack, newly, now)
        else:
            pkt_free(p)
            if ack == self.snd_una and self.snd_max > self.snd_una:
                self._dup_ack(now)

    cdef int _new_ack(self, int64_t ack, int64_t newly, int64_t now) except -1:
        cdef int64_t acked_bytes = newly * self.mss
        cdef int rec = self.cc.recovery
        if ack >= self.n_seg:
            acked_bytes = (self.n_seg - self.snd_una - 1) * self.mss + self.last_payload
        if self.in_recovery:
            if rec == RECOVERY_NEWRENO and ack < self.recover:
                # partial ACK: retransmit the next hole, deflate by the amount acked, stay
                self.snd_una = ack
                if self.snd_nxt < ack:
                    self.snd_nxt = ack
                self.cwnd = self.cwnd - newly + 1.0
                if self.cwnd < 1.0:
                    self.cwnd = 1.0
                self.retransmit(ack, now)
                # RFC 6582 / ns-2's default (newreno_changes1_): only the first partial ACK restarts
                # the timer, so a window with many losses falls back to a timeout instead of
                # recovering one segment per RTT
                if not self.partial_acked:
                    self.partial_acked = True
                    self._timer_set(now + self._rto_value())
                if self.hook is not None:
                    self.hook.on_ack(self, acked_bytes, now)
                self.send_much(now)
                return 0
            self.in_recovery = False
            self.cwnd = self.ssthresh
        # window growth on every new ACK, including the one that ends fast recovery (as ns-2)
        self.cc.on_ack(self, newly, now)
        self.snd_una = ack
        self.dupacks = 0
        if self.snd_nxt < ack:
            self.snd_nxt = ack
        if self.hook is not None:
            self.hook.on_ack(self, acked_bytes, now)
        if self.snd_una >= self.n_seg:
            self._finish(now)
            return 0
        if self.snd_una < self.snd_max or self.cwnd < 1.0:
            # as ns-2 newtimer(): a window below one segment sends nothing, so the timer must run
            self._timer_set(now + self._rto_value())
        else:
            self._timer_stop()
        self.send_much(now)

    cdef int _dup_ack(self, int64_t now) except -1:
        cdef int rec = self.cc.recovery
        if rec == RECOVERY_CC:
            return self.cc.on_dupack(self, now)
        self.dupacks += 1
        if self.in_recovery:
            self.cwnd += 1.0
            self.send_much(now)
            return 0
        if self.dupacks < 3:
            if self.limited_transmit:
                self._send_one_new(now)
            return 0
        if self.dupacks != 3:
            return 0
        if self.snd_una <= self.recover:
            # the ACK does not cover everything outstanding at the last loss event (RFC 6582
            # step 2, ns-2 bug_fix_): these dupacks may come from go-back-N duplicates
            return 0
        self.sim.flows[self.flow].fast_retx += 1
        self.ssthresh = self.cc.ssthresh_on_loss(self)
        self.recover = self.snd_max
        self.cc.on_loss(self, False, now)
        if self.hook is not None:
            self.hook.on_loss(self, now)
        if rec == RECOVERY_TAHOE:
            self.cwnd = 1.0
            self.snd_nxt = self.snd_una
            self.dupacks = 0
            self._timer_set(now + self._rto_value())
            self.send_much(now)
        else:
            self.retransmit(self.snd_una, now)
            self.cwnd = self.ssthresh + 3.0
            self.in_recovery = True
            self.partial_acked = False
            self._timer_set(now + self._rto_value())
            self.send_much(now)

    cdef int _finish(self, int64_t now) except -1:
        self._timer_stop()
        self.state = TCP_IDLE
        if self.app is not None:
            self.app.sender_done(self, now)
        if self.pending and self.state == TCP_IDLE:
            self.start_transfer(self.pending.pop(0), now)

    # ---- Python access ----
    def begin(self, int64_t nbytes, int64_t now):
        """Start a transfer from Python (tests, custom drivers)."""
        self.start_transfer(nbytes, now)

    def attach_hook(self, SenderHook hook):
        self.hook = hook
        hook.on_attach(self, self.sim.now if self.sim is not None else 0)

    @property
    def flight(self):
        return self.snd_max - self.snd_una


cdef class CwndSampler(SenderHook):
    """A SenderHook that counts every callback and samples (t, cwnd, ssthresh, srtt) every
    ``period`` ns; ``set_xi`` > 0 overrides the sender's xi at each connection start."""
    cdef readonly int64_t n_send, n_send_retx, n_ack, n_rtt, n_loss, n_timeout, n_timer, n_conn
    cdef readonly int64_t acked_bytes, sent_bytes
    cdef public double set_xi
    cdef list samples

    def __init__(self, int64_t period=0, double set_xi=0.0):
        self.period = period
        self.set_xi = set_xi
        self.samples = []

    cdef int on_conn_start(self, TcpSender s, int64_t now) except -1:
        self.n_conn += 1
        if self.set_xi > 0:
            s.xi = self.set_xi

    cdef int on_send(self, TcpSender s, int64_t nbytes, bint retx, int64_t now) except -1:
        self.n_send += 1
        self.n_send_retx += retx
        self.sent_bytes += nbytes

    cdef int on_ack(self, TcpSender s, int64_t acked_bytes, int64_t now) except -1:
        self.n_ack += 1
        self.acked_bytes += acked_bytes

    cdef int on_rtt(self, TcpSender s, int64_t rtt, int64_t now) except -1:
        self.n_rtt += 1

    cdef int on_loss(self, TcpSender s, int64_t now) except -1:
        self.n_loss += 1

    cdef int on_timeout(self, TcpSender s, int64_t now) except -1:
        self.n_timeout += 1

    cdef int on_timer(self, TcpSender s, int64_t now) except -1:
        self.n_timer += 1
        self.samples.append((now, s.cwnd, s.ssthresh, s.srtt))

    def trace(self):
        """List of (t_ns, cwnd, ssthresh, srtt_ns) samples."""
        return list(self.samples)

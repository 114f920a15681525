# Request mode, the end that opens the connection (the testbed's clients): its SYN, the ACK of
# the SYN-ACK, the request (``req`` bytes in segments of mss, a window that grows as in slow
# start, go-back-N after a timeout), and once the whole response and the server's FIN have
# arrived, its own FIN. Timers as Linux's (when the sink is ``linux_tcp``): initial RTO ``init_rto``,
# the SYN retried at that interval four times before backing off (tcp_syn_linear_timeouts), the
# RTO after the handshake's RTT sample from Linux's estimator. The response's ACKs are the
# TcpSink's; this object only adds the client's own segments.

cdef enum:
    CLI_EV_TIMER = 1
    CLI_EV_REQUEST = 2
    CLI_EV_CLOSE = 3

cdef enum:
    CLI_IDLE = 0
    CLI_SYN_SENT = 1
    CLI_ESTABLISHED = 2


@cython.final
cdef class TcpClient(Component):
    cdef TcpSink sink
    cdef public int64_t init_rto, min_rto, max_rto, tick       # ns
    cdef public int64_t request_delay, close_delay             # ns: the application's think times
    cdef public double init_cwnd                               # request window, segments
    cdef readonly int state
    cdef int32_t conn
    cdef readonly int64_t req_bytes, req_segs, una, nxt        # request segments
    cdef double cwnd
    cdef readonly bint fin_sent, fin_acked
    cdef bint syn_retx
    cdef int tries
    cdef LinuxRtt est
    cdef readonly int64_t rto
    cdef int64_t backoff
    cdef int64_t syn_ts
    cdef int64_t timer_gen
    cdef bint timer_on

    def __init__(self, TcpSink sink):
        self.sink = sink
        sink.client = self
        self.init_rto = 1_000_000_000
        self.min_rto = 200_000_000
        self.max_rto = 120_000_000_000
        self.tick = 4_000_000
        self.init_cwnd = 10.0

    cdef inline int64_t srtt(self) noexcept:
        """Smoothed RTT of the handshake sample (ns), 0 without one."""
        return (self.est.srtt8 >> 3) * 1000

    cdef inline uint32_t seq_field(self, uint16_t flags) noexcept:
        """Relative sequence number of this end's next byte (a FIN carries its own)."""
        cdef int64_t b = self.nxt * self.sink.mss
        if b > self.req_bytes:
            b = self.req_bytes
        return <uint32_t>(1 + b + (self.fin_sent and not (flags & F_FIN)))

    cdef int open(self, int32_t conn, int64_t req, int64_t now) except -1:
        self.conn = conn
        self.state = CLI_SYN_SENT
        self.req_bytes = req
        self.req_segs = (req + self.sink.mss - 1) // self.sink.mss
        self.una = self.nxt = 0
        self.cwnd = self.init_cwnd
        self.fin_sent = self.fin_acked = False
        self.syn_retx = False
        self.tries = 0
        lrtt_reset(&self.est)
        self.rto = self.init_rto
        self.backoff = 1
        self._send_syn(now)

    # ---- segments out ----
    cdef int _send_syn(self, int64_t now) except -1:
        cdef Packet* p = self.sink._packet(F_SYN, now)
        p.tcp_ack = 0
        p.tsecr = 0
        if self.sink.linux_tcp:
            p.size = 40 + syn_options(self.sink.ts_opt, self.sink.sack)
            p.flags |= F_SACKOK if self.sink.sack else 0
        p.ts = now
        p.retx = self.syn_retx
        self.syn_ts = now
        self.sink.emit(p, now)
        self._arm(now)

    cdef int _send_request(self, int64_t now) except -1:
        cdef Packet* p
        cdef int64_t k
        while self.nxt < self.req_segs and self.nxt < self.una + <int64_t>self.cwnd:
            k = self.nxt
            p = self.sink._packet(F_ACK | (F_PSH if k == self.req_segs - 1 else 0), now)
            p.seq = k
            p.payload = <int32_t>min(<int64_t>self.sink.mss, self.req_bytes - k * self.sink.mss)
            p.size += p.payload
            p.ts = now
            p.ack = self.sink.rcv_nxt
            p.tcp_seq = <uint32_t>(1 + k * self.sink.mss)
            self.nxt += 1
            self.sink.emit(p, now)
        if not self.timer_on and self.una < self.req_segs:
            self._arm(now)

    cdef int _send_fin(self, int64_t now) except -1:
        self.fin_sent = True
        self.sink._send_ack(now, F_FIN | F_ACK)
        self._arm(now)

    # ---- the retransmission timer ----
    cdef int _arm(self, int64_t now) except -1:
        cdef int64_t d = self.rto * self.backoff
        if d > self.max_rto:
            d = self.max_rto
        self.timer_on = True
        self.timer_gen += 1
        self.sim.schedule(wheel_expiry(now, d, self.tick, self.sink.jiffy_phase)
                          if self.sink.linux_tcp else now + d, self,
                          CLI_EV_TIMER, NULL, self.timer_gen)

    cdef int _timeout(self, int64_t now) except -1:
        cdef TcpSender s = self.sink.sender
        self.timer_on = False
        self.tries += 1
        s.sim.flows[s.flow].timeouts += 1
        if s.conn == self.conn and s.xfer >= 0:
            s.sim.transfers[s.xfer].timeouts += 1
        if self.state == CLI_SYN_SENT:
            if not self.sink.linux_tcp or self.tries > SYN_LINEAR_TIMEOUTS:
                self.backoff *= 2
            self.syn_retx = True
            self._send_syn(now)
            return 0
        self.backoff *= 2
        if self.una < self.req_segs:
            self.nxt = self.una        # go back N
            self._send_request(now)
        elif self.fin_sent and not self.fin_acked:
            self._send_fin(now)

    cdef int handle(self, int32_t kind, Packet* p, int64_t arg, int64_t now) except -1:
        if kind == CLI_EV_TIMER:
            if arg == self.timer_gen and self.timer_on and self.sink.conn == self.conn:
                self._timeout(now)
        elif kind == CLI_EV_REQUEST:
            if arg == self.conn and self.sink.conn == self.conn:
                self._send_request(now)
        elif kind == CLI_EV_CLOSE:
            if arg == self.conn and self.sink.conn == self.conn and not self.fin_sent:
                self._send_fin(now)

    # ---- segments in (called by the sink for every segment of the server) ----
    cdef int peer_ack(self, Packet* p, int64_t now) except -1:
        cdef int64_t a, r
        if p.flags & F_SYN:
            if self.state == CLI_SYN_SENT:
                self.state = CLI_ESTABLISHED
                self.timer_on = False
                r = -1 if self.syn_retx else now - self.syn_ts
                if r < 0 and self.sink.ts_opt and p.tsecr > 0:
                    r = max(1, now // 1000000 - p.tsecr // 1000000) * 1000000
                if r >= 0:
                    lrtt_sample(&self.est, max(1, r // 1000), self.min_rto // 1000, 0, 0)
                    self.rto = lrtt_rto(&self.est, self.tick, self.max_rto)
                else:
                    self.rto = 3_000_000_000       # tcp_init_metrics' fallback
                self.backoff = 1
                self.sink.rto_bound = self.rto
                self.sink._send_ack(now, F_ACK)
                if self.request_delay > 0:
                    self.sim.schedule(now + self.request_delay, self, CLI_EV_REQUEST, NULL,
                                      self.conn)
                else:
                    self._send_request(now)
            else:
                self.sink._send_ack(now, F_ACK)    # our ACK of the SYN-ACK was lost
            return 0
        if self.state != CLI_ESTABLISHED:
            return 0
        a = p.ack                                  # request segments (+1 for our FIN) acked
        if a > self.una and a <= self.nxt + self.fin_sent:
            self.cwnd += min(a, self.req_segs) - self.una
            self.una = min(a, self.req_segs)
            self.fin_acked = a > self.req_segs
            self.backoff = 1
            if self.una >= self.req_segs and (not self.fin_sent or self.fin_acked):
                self.timer_on = False
            else:
                self._arm(now)
            self._send_request(now)

    cdef int peer_closed(self, int64_t now) except -1:
        """The whole response and the server's FIN arrived: close after close_delay."""
        if self.close_delay > 0:
            self.sim.schedule(now + self.close_delay, self, CLI_EV_CLOSE, NULL, self.conn)
        else:
            self._send_fin(now)

# TCP sender: segments of ``mss`` payload bytes, windows in segments (like ns-2's one-way TCP).
# This file holds the connection life (SYN / SYN-ACK; in request mode the client's SYN, its
# request, the response and the FIN exchange), sending, the retransmission timer (one per
# sender, of kind RTO, TLP or REO) and RTT estimation (ns-2's Jacobson/Karels, or Linux's
# estimator and jiffy timers when ``linux_tcp``). Loss recovery is delegated to a RecoveryOps
# (recovery*.pxi), window growth to a CongestionOps (cc*.pxi); a SenderHook observes the sender
# and may change ``xi`` and ``ssthresh`` (TCP-MT's SSC).

cdef enum:
    RECOVERY_TAHOE = 0
    RECOVERY_RENO = 1
    RECOVERY_NEWRENO = 2
    RECOVERY_CC = 3         # duplicate ACKs go to the congestion control (cc.on_dupack)

cdef enum:
    TCP_IDLE = 0
    TCP_SYN_SENT = 1
    TCP_ESTABLISHED = 2     # data may flow
    TCP_LISTEN = 3          # request mode: waiting for the client's SYN
    TCP_SYN_RCVD = 4        # request mode: SYN-ACK sent
    TCP_REQUEST = 5         # request mode: the request is arriving; no response yet

cdef enum:
    TCP_EV_RTO = 1
    TCP_EV_INJECT = 2
    TCP_EV_HOOK = 3
    TCP_EV_RESPOND = 4      # request mode: the server application writes its response
    TCP_EV_CLOSE = 5        # request mode: the server application closes the socket
    TCP_EV_PACE = 6         # pacing: the next segment's departure time has come

cdef enum:
    TMR_RTO = 0             # retransmission timeout
    TMR_TLP = 1             # tail loss probe (RFC 8985 7)
    TMR_REO = 2             # RACK reordering-window timer (RFC 8985 6.2)

cdef enum:
    SYN_LINEAR_TIMEOUTS = 4 # Linux tcp_syn_linear_timeouts: SYN retries before backing off

cdef int64_t INFINITE_SEGS = (<int64_t>1) << 60


cdef struct AckSample:
    # What Linux's tcp_ack knows of one ACK when it calls a congestion control's cong_control
    # (the TCP side of struct rate_sample; the delivery-rate side is the congestion control's)
    int64_t acked_sacked        # segments newly delivered (cumulatively or by SACK)
    int64_t losses              # segments newly marked lost
    int64_t delivered           # tp->delivered: segments delivered on this connection so far
    int64_t lost                # tp->lost: segments marked lost so far
    int64_t rtt                 # ns, RTT of the last (S)ACKed segment (-1: none)
    int64_t prior_in_flight     # segments in flight before the ACK
    int64_t in_flight           # and after it
    int ca_state                # CA_* of the recovery after the ACK


cdef inline int syn_options(bint ts, bint sack) noexcept:
    """Option bytes Linux puts on a SYN / SYN-ACK: MSS, SACK-permitted, timestamps, window scale
    (tcp_output.c tcp_options_write), padded with NOPs to a multiple of 4."""
    return 4 + (12 if ts else (4 if sack else 0)) + 4

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
    cdef public bint ns2_bare_first               # segment 0 without header bytes (ns-2, no syn_)
    cdef public bint rtt_per_ack                # RTO estimator fed by every ACK (timestamps)
    cdef public bint limited_transmit           # RFC 3042: new data on the 1st and 2nd dupack
    cdef public bint ns2_rto                    # ns-2's RTO arithmetic (whole ticks, fixed point)
    cdef public bint precision_reduce           # ns-2 precisionReduce_: fast recovery's W/2 unrounded
    cdef public int64_t tick_phase              # ns: ns-2's boot_time_, uniform in [0, tick)
    cdef int64_t ns2_srtt, ns2_rttvar           # ns-2's t_srtt_ (1/8 tick), t_rttvar_ (1/4 tick)
    cdef public int64_t extra_delay             # one-way delay line in front of the host, ns
    cdef public double xi                       # congestion-avoidance slope: cwnd += xi/cwnd
    cdef public bint linux_tcp                   # Linux: option headers, RTT estimator, jiffies
    cdef public bint ts_opt, sack_ok            # timestamps option, SACK negotiated
    cdef public int64_t response_delay, close_delay   # request mode: server think times, ns
    cdef public int64_t jiffy_phase             # linux: where the host's jiffies begin, ns
    # departure-time pacing (Linux's TCP-internal pacing, tcp_output.c), set by the congestion
    # control (BBR) per connection; off for every other congestion control
    cdef public bint pacing
    cdef public int64_t pacing_rate             # bytes of payload per second (0: unpaced)
    cdef readonly int64_t wstamp                # earliest departure of the next segment, ns
    cdef int64_t data_segs_out                  # data segments sent on this connection
    cdef bint pace_armed                        # a TCP_EV_PACE event is pending
    cdef public CongestionOps cc
    cdef public RecoveryOps rec
    cdef public SenderHook hook
    cdef public App app
    cdef TcpSink peer                           # the receiving end (set by TcpSink)
    cdef Node node_obj
    cdef readonly int32_t dst_node, dst_agent
    # connection state
    cdef readonly int32_t conn
    cdef readonly int state
    cdef readonly int64_t n_seg, last_payload, avail
    cdef readonly int64_t total                 # response bytes (< 0: unlimited)
    cdef readonly bint reqmode                  # request mode: the peer opens and asks first
    cdef readonly int64_t req_bytes, req_segs, req_rcv   # request mode: the client's request
    cdef bint fin_ok                            # the FIN may go out (request mode: closed)
    cdef bint fin_bare                          # request mode: segment n_seg-1 is a bare FIN
    cdef readonly bint peer_fin                 # request mode: the client's FIN arrived
    cdef readonly int64_t snd_una, snd_nxt, snd_max
    cdef public double cwnd, ssthresh
    cdef readonly int64_t dupacks, recover
    cdef readonly bint in_recovery
    cdef readonly double recovery_cwnd          # classic fast recovery: the cut window under the
                                                # dupack inflation (ns-2's cwnd_ beside dupwnd_)
    cdef bint partial_acked                     # a partial ACK has arrived in this recovery
    cdef readonly double srtt, rttvar          # ns
    cdef readonly bint have_rtt
    cdef readonly int64_t rto, last_rtt, min_rtt
    cdef readonly int32_t backoff
    cdef LinuxRtt lrtt                          # Linux estimator state (linux)
    cdef public int64_t cwnd_cnt                # Linux snd_cwnd_cnt: ACKed segments toward +1
    cdef public double prior_cwnd               # cwnd before the last reduction (undo)
    cdef readonly bint cwnd_limited             # Linux is_cwnd_limited for this window
    cdef int64_t max_packets_out, cwnd_usage_seq
    cdef int64_t rto_deadline, rto_pending_t
    cdef bint rto_armed, rto_pending
    cdef readonly int tmr_kind                  # TMR_* of the armed timer
    cdef int64_t rto_gen
    cdef int64_t syn_ts
    cdef int32_t syn_tries                      # SYN / SYN-ACK timeouts of this handshake
    cdef int64_t ts_recent                      # creation time of the last ACK received (ns, 0: none)
    cdef readonly int64_t last_ack_t            # when the last ACK arrived (ns)
    cdef int64_t rtt_seq, rtt_ts                # segment being timed (-1: none), its send time
    cdef bint resend_untimes                    # Karn at the send: resending rtt_seq stops timing it
    cdef bint syn_retx
    cdef Py_ssize_t xfer                        # row in sim.transfers, -1 if none
    cdef list pending                           # (bytes, request bytes) waiting for the connection
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
        self.resend_untimes = True
        self.cc = Reno()
        self.rec = ClassicRecovery()
        self.xfer = -1
        self.pending = []
        self.min_rtt = -1

    def connect(self, int dst_agent):
        self.dst_agent = dst_agent

    # ---- application interface ----
    cdef int start_transfer(self, int64_t nbytes, int64_t now, int64_t req=-1,
                            int64_t avail=-1) except -1:
        """Open a connection and send ``nbytes`` (< 0: unlimited). Queued if one is open.
        ``req`` >= 0: request mode, the peer opens and sends ``req`` bytes first. ``avail`` >= 0:
        only segments below it may be sent yet (the application hands the rest over later with
        :meth:`app_limit`)."""
        if self.state != TCP_IDLE:
            self.pending.append((nbytes, req))
            return 0
        self.conn += 1
        self.ts_recent = 0
        self.total = nbytes
        self.reqmode = req >= 0
        self.req_bytes = req if req > 0 else 0
        self.req_segs = (self.req_bytes + self.mss - 1) // self.mss
        self.req_rcv = 0
        self.peer_fin = False
        self.fin_bare = False
        self.fin_ok = not self.reqmode
        if nbytes < 0:
            self.n_seg = INFINITE_SEGS
            self.last_payload = self.mss
        elif self.reqmode:
            # the FIN is added when the server closes (bare, or on the last data segment)
            self.n_seg = (nbytes + self.mss - 1) // self.mss
            self.last_payload = nbytes - (self.n_seg - 1) * self.mss if nbytes > 0 else 0
        else:
            self.n_seg = max(1, (nbytes + self.mss - 1) // self.mss)
            self.last_payload = nbytes - (self.n_seg - 1) * self.mss if nbytes > 0 else 0
        self.avail = self.n_seg if avail < 0 or avail > self.n_seg else avail
        self.snd_una = 0
        self.snd_nxt = 0
        self.snd_max = 0
        self.cwnd = self.init_cwnd
        self.ssthresh = self.init_ssthresh
        self.dupacks = 0
        self.recover = -1
        self.in_recovery = False
        self.recovery_cwnd = 0
        self.have_rtt = False
        self.ns2_srtt = 0
        self.srtt = 0
        self.rttvar = 0
        self.rto = self.init_rto
        self.backoff = 1
        self.rtt_seq = -1
        self.syn_tries = 0
        self.cwnd_cnt = 0
        self.prior_cwnd = 0
        self.cwnd_limited = False
        self.max_packets_out = 0
        self.cwnd_usage_seq = 0
        lrtt_reset(&self.lrtt)
        self.pacing = False
        self.pacing_rate = 0
        self.wstamp = 0
        self.data_segs_out = 0
        self.pace_armed = False
        self.xfer = self.sim.new_transfer(self.flow, self.conn, nbytes, now)
        self.sim.transfers[self.xfer].request = self.req_bytes
        self.cc.on_start(self, now)
        self.rec.on_start(self, now)
        if self.hook is not None:
            if not self.hook_timer_on and self.hook.period > 0:
                self.hook_timer_on = True
                self.sim.schedule_side(now + self.hook.period, self, TCP_EV_HOOK, NULL, 0)
            self.hook.on_conn_start(self, now)
        if self.reqmode:
            self.state = TCP_LISTEN
            self.peer.open(self.conn, self.req_bytes, now)
        elif self.handshake:
            self.state = TCP_SYN_SENT
            self.syn_retx = False
            self._send_syn(now)
        else:
            self.state = TCP_ESTABLISHED
            self.rec.output(self, now)

    cdef int app_limit(self, int64_t avail_segs, int64_t now) except -1:
        """Application-limited sending: only segments below ``avail_segs`` may be sent."""
        self.cc.on_app_write(self, now)
        self.avail = avail_segs
        self.rec.output(self, now)

    cdef int app_append(self, int64_t nseg, int64_t now) except -1:
        """The application hands ``nseg`` more segments to an open unlimited connection."""
        self.cc.on_app_write(self, now)
        self.avail += nseg
        self.rec.output(self, now)

    cdef int app_close(self, int64_t now) except -1:
        """End an unlimited transfer after what was already handed over (on/off sources)."""
        if self.state == TCP_IDLE or self.n_seg != INFINITE_SEGS:
            return 0
        self.n_seg = max(self.snd_max, self.snd_una) + 1
        self.avail = self.n_seg
        self.rec.output(self, now)

    # ---- sequence space ----
    cdef inline int64_t _payload(self, int64_t seg) noexcept:
        """Payload bytes of segment ``seg`` (the last data segment may be short; a bare FIN has none)."""
        cdef int64_t n_data = self.n_seg - self.fin_bare
        if seg < n_data - 1:
            return self.mss
        return self.last_payload if seg == n_data - 1 else 0

    cdef inline uint32_t _seq_of(self, int64_t seg) noexcept:
        """TCP sequence number (relative to the ISN) of the start of segment ``seg``: the SYN
        takes 1, data bytes follow, and the FIN takes 1 after them."""
        cdef int64_t b = seg * self.mss
        if self.total >= 0:
            if b > self.total:
                b = self.total
            if self.fin_ok and seg >= self.n_seg:
                b += 1
        return <uint32_t>(1 + b)

    cdef inline int64_t _seg_at(self, uint32_t q) noexcept:
        """Segment holding relative sequence number ``q`` (inverse of _seq_of; for SACK edges):
        wrap-safe around snd_una."""
        cdef int64_t off = <int32_t>(q - self._seq_of(self.snd_una))
        cdef int64_t b = self.snd_una * self.mss + off
        if self.total >= 0 and b >= self.total:
            return self.n_seg - 1 if b == self.total and self.fin_bare else self.n_seg
        return b // self.mss

    cdef inline uint32_t _ack_field(self) noexcept:
        """Acknowledgment number relative to the client's ISN (request mode: its request and FIN)."""
        cdef int64_t b = self.req_rcv * self.mss
        if b > self.req_bytes:
            b = self.req_bytes
        return <uint32_t>(1 + b + self.peer_fin)

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
        p.ack = self.req_rcv + self.peer_fin     # request mode: request segments (+ FIN) acked
        if self._own_header():
            p.tsecr = self.ts_recent
            p.tcp_ack = self._ack_field()
            if self.reqmode:
                p.flags = F_CLIREV
        else:
            p.ack_bytes = self.ts_recent      # for the pcap's TSecr (data segments carry no ack_bytes)
        return p

    cdef inline bint _own_header(self) noexcept:
        """Packets carry their own TCP fields for the pcap (F_XOPT): the linux profile, and
        request mode (whose client is the receiving end, which the classic layout cannot say)."""
        return self.linux_tcp or self.reqmode

    cdef inline int32_t _hdr_bytes(self) noexcept:
        """IP + TCP header bytes of a segment without SACK blocks."""
        return (40 + 12 * self.ts_opt) if self.linux_tcp else self.hdr

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
        p.flags |= F_SYN
        if self.linux_tcp:
            p.size = 40 + syn_options(self.ts_opt, self.sack_ok)
            p.flags |= F_XOPT | (F_TSOPT if self.ts_opt else 0) | (F_SACKOK if self.sack_ok else 0)
            p.tsecr = 0
            p.tcp_ack = 0
        p.retx = self.syn_retx
        self.syn_ts = now
        self._inject(p, now)
        if self.linux_tcp:
            self._ktimer(self._rto_value(), TMR_RTO, now)
        else:
            self._timer_set(now + self.rto * self.backoff)

    cdef int _send_ctrl(self, uint16_t flags, int64_t now) except -1:
        """Request mode: a segment without data (SYN-ACK, ACK of the request or of the client's FIN)."""
        cdef Packet* p = self._new_packet(now)
        p.seq = -1
        p.flags |= flags
        p.size = self._hdr_bytes()
        if flags & F_SYN:
            p.tcp_seq = 0
            p.retx = self.syn_retx
            if self.linux_tcp:
                p.size = 40 + syn_options(self.ts_opt, self.sack_ok)
                p.flags |= F_SACKOK if self.sack_ok else 0
        else:
            p.tcp_seq = self._seq_of(self.snd_max)
        p.flags |= F_XOPT | (F_TSOPT if self.ts_opt else 0)
        self._inject(p, now)

    cdef int _send_seg(self, int64_t seg, int64_t now) except -1:
        cdef Packet* p = self._new_packet(now)
        cdef TransferRec* tr = &self.sim.transfers[self.xfer]
        cdef bint retx = seg < self.snd_max
        p.seq = seg
        p.payload = self._payload(seg)
        p.size = p.payload if seg == 0 and self.ns2_bare_first else self._hdr_bytes() + p.payload
        p.flags |= F_ACK
        if seg == self.n_seg - 1 and self.fin_ok:
            p.flags |= F_FIN if self.fin_bare else F_FIN | F_PSH
        elif self.reqmode and seg == self.n_seg - 1:
            p.flags |= F_PSH
        if self._own_header():
            p.flags |= F_XOPT | (F_TSOPT if self.ts_opt else 0)
            p.tcp_seq = self._seq_of(seg)
        p.retx = retx
        if retx:
            if seg <= self.rtt_seq and self.resend_untimes:
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
        if self.pacing:
            self._paced(p.payload, now)
        self._inject(p, now)

    cdef void _paced(self, int64_t payload, int64_t now) noexcept:
        """tcp_update_skb_after_send: the next departure is ``payload / pacing_rate`` after this
        one (after now if the sender was idle, with up to half of it credited for the idle
        time); the first 10 data segments of a connection go unpaced."""
        cdef int64_t prior = self.wstamp, len_ns, credit
        if self.wstamp < now:
            self.wstamp = now
        if self.pacing_rate > 0 and self.data_segs_out >= 10:
            len_ns = payload * 1000000000 // self.pacing_rate
            credit = self.wstamp - prior
            len_ns -= len_ns // 2 if len_ns // 2 < credit else credit
            self.wstamp += len_ns
        self.data_segs_out += 1

    cdef bint pace_wait(self, int64_t now) except -1:
        """tcp_pacing_check: True while the next departure time lies ahead (the pacing timer is
        then armed to send again at it)."""
        if self.wstamp <= now:
            return False
        if not self.pace_armed:
            self.pace_armed = True
            self.sim.schedule(self.wstamp, self, TCP_EV_PACE, NULL, self.conn)
        return True

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
        """Limited transmit (RFC 3042; ns-2 singledup_, tcp.cc send_one()): on the first and
        second duplicate ACK, the segment at snd_nxt if the receiver window allows it and it
        leaves at most cwnd + dupacks segments outstanding (RFC 3042: one segment beyond cwnd per
        duplicate ACK, so none while a Reno partial ACK leaves more than cwnd outstanding). As in
        ns-2, after a timeout that segment is the next go-back-N retransmission."""
        if (self.state == TCP_ESTABLISHED
                and self.snd_nxt < self.avail and self.snd_nxt < self.n_seg
                and self.snd_nxt < self.snd_una + self.rwnd
                and self.snd_nxt - self.snd_una + 1 <= self.cwnd + self.dupacks):
            self._send_seg(self.snd_nxt, now)
            self.snd_nxt += 1
            if self.snd_nxt > self.snd_max:
                self.snd_max = self.snd_nxt

    cdef int retransmit(self, int64_t seg, int64_t now) except -1:
        self._send_seg(seg, now)

    # ---- the timer (one pending event; restarts only move the deadline) ----
    cdef inline int64_t _rto_value(self) noexcept:
        cdef int64_t v = self.rto * self.backoff
        return v if v < self.max_rto else self.max_rto

    cdef int _timer_set(self, int64_t deadline, int kind=TMR_RTO) except -1:
        self.rto_deadline = deadline
        self.rto_armed = True
        self.tmr_kind = kind
        if not self.rto_pending or deadline < self.rto_pending_t:
            self.rto_gen += 1
            self.rto_pending = True
            self.rto_pending_t = deadline
            self.sim.schedule(deadline, self, TCP_EV_RTO, NULL, self.rto_gen)

    cdef inline int _ktimer(self, int64_t delay, int kind, int64_t now) except -1:
        """Arm the timer as the kernel's timer wheel would (linux): ``delay`` ns from now."""
        return self._timer_set(wheel_expiry(now, delay, self.tick, self.jiffy_phase), kind)

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
                self._timer_set(self.rto_deadline, self.tmr_kind)
                return 0
            self.rto_armed = False
            if self.state == TCP_SYN_SENT or self.state == TCP_SYN_RCVD:
                self._handshake_timeout(now)
            else:
                self.rec.on_timer(self, self.tmr_kind, now)
        elif kind == TCP_EV_HOOK:
            self.hook.on_timer(self, now)
            self.sim.schedule_side(now + self.hook.period, self, TCP_EV_HOOK, NULL, 0)
        elif kind == TCP_EV_RESPOND:
            if arg == self.conn and self.state == TCP_REQUEST:
                self._respond(now)
        elif kind == TCP_EV_CLOSE:
            if arg == self.conn and self.state == TCP_ESTABLISHED:
                self._close(now)
        elif kind == TCP_EV_PACE:
            if arg == self.conn:
                self.pace_armed = False
                if self.state == TCP_ESTABLISHED:
                    self.rec.output(self, now)

    cdef int _count_timeout(self) except -1:
        self.sim.flows[self.flow].timeouts += 1
        if self.xfer >= 0:
            self.sim.transfers[self.xfer].timeouts += 1

    cdef int _handshake_timeout(self, int64_t now) except -1:
        self._count_timeout()
        self.syn_tries += 1
        if not self.linux_tcp:
            if self.backoff < 64:
                self.backoff *= 2
        elif self.state == TCP_SYN_RCVD or self.syn_tries > SYN_LINEAR_TIMEOUTS:
            self.backoff *= 2
        self.syn_retx = True
        if self.state == TCP_SYN_SENT:
            self._send_syn(now)
        else:
            self._send_synack(now)

    # ---- RTT ----
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

    cdef inline void _ns2_backoff(self) noexcept:
        """ns-2 rtt_backoff() past a backoff of 8: srtt is folded into rttvar and re-learned."""
        if self.ns2_rto and self.backoff > 8 and self.ns2_srtt != 0:
            self.ns2_rttvar += self.ns2_srtt >> 3
            self.ns2_srtt = 0

    cdef int _rtt_linux(self, int64_t seq_rtt, int64_t ca_rtt, int64_t now) except -1:
        """tcp_ack_update_rtt with a valid sample (ns): ``seq_rtt`` feeds the estimator and RTO,
        ``ca_rtt`` (the most recently sent segment's) the minimum RTT; clears the backoff."""
        if ca_rtt <= 0:
            ca_rtt = 1000
        self.last_rtt = ca_rtt
        if self.min_rtt < 0 or ca_rtt < self.min_rtt:
            self.min_rtt = ca_rtt
        lrtt_sample(&self.lrtt, seq_rtt // 1000 if seq_rtt >= 1000 else 1, self.min_rto // 1000,
                    self.snd_una, self.snd_max)
        self.srtt = (self.lrtt.srtt8 >> 3) * 1000.0
        self.rttvar = self.lrtt.rttvar * 1000.0
        self.have_rtt = True
        self.rto = lrtt_rto(&self.lrtt, self.tick, self.max_rto)
        self.backoff = 1
        if self.hook is not None:
            self.hook.on_rtt(self, ca_rtt, now)

    cdef int64_t _ts_rtt(self, Packet* p, int64_t now) noexcept:
        """RTT from the timestamp echo (ms clock, at least 1 ms, as tcp_rtt_tsopt_us), -1 if none."""
        cdef int64_t d
        if not self.ts_opt or p.tsecr <= 0:
            return -1
        d = now // 1000000 - p.tsecr // 1000000
        return (d if d > 0 else 1) * 1000000

    cdef int _handshake_rtt(self, bint retransmitted, Packet* p, int64_t now) except -1:
        """Linux: the SYN / SYN-ACK RTT sample (Karn, else the timestamp echo); with none, the
        RTO falls back to 3 s (tcp_init_metrics), and after two or more SYN retransmissions the
        window starts at 1 (tcp_init_transfer)."""
        cdef int64_t r = -1 if retransmitted else now - self.syn_ts
        if r < 0:
            r = self._ts_rtt(p, now)
        if r >= 0:
            self._rtt_linux(r, r, now)
        else:
            self.lrtt.rttvar = 3_000_000
            self.lrtt.mdev4 = 3_000_000
            self.lrtt.mdev_max = 3_000_000
            self.rto = 3_000_000_000
        self.backoff = 1
        if self.syn_tries > 1:
            self.cwnd = 1.0

    # ---- request mode: the server's side of the connection life ----
    cdef int _send_synack(self, int64_t now) except -1:
        self.syn_ts = now
        self._send_ctrl(F_SYN | F_ACK, now)
        if self.linux_tcp:
            self._ktimer(self._rto_value(), TMR_RTO, now)
        else:
            self._timer_set(now + self.rto * self.backoff)

    cdef int _server_recv(self, Packet* p, int64_t now) except -1:
        """Request mode: the client's SYN, handshake ACK, request, ACKs and FIN."""
        cdef bint first
        if p.flags & F_SYN:
            if self.state == TCP_LISTEN or self.state == TCP_SYN_RCVD:
                # a retransmitted SYN is answered at once (Linux inet_rtx_syn_ack)
                self.syn_retx = self.state == TCP_SYN_RCVD
                self.state = TCP_SYN_RCVD
                self._send_synack(now)
            return 0
        if self.state == TCP_LISTEN:
            return 0
        if self.state == TCP_SYN_RCVD:
            self.state = TCP_REQUEST
            self._timer_stop()
            if self.linux_tcp:
                self._handshake_rtt(self.syn_retx, p, now)
            elif not self.syn_retx:
                self._rto_update(now - self.syn_ts, self.syn_ts)
            if self.req_segs == 0:
                self._requested(now)
        if p.payload > 0:
            # request data: in order only (the client goes back N); ACKed at once (quick-ACK
            # mode at the start of a connection), before the response
            if p.seq == self.req_rcv and self.state == TCP_REQUEST:
                self.req_rcv += 1
                if self.req_rcv == self.req_segs:
                    self._send_ctrl(F_ACK, now)
                    self._requested(now)
                    return 0
            self._send_ctrl(F_ACK, now)
            return 0
        if self.state == TCP_ESTABLISHED:
            self.rec.on_ack(self, p, now)
        if p.flags & F_FIN:
            # the client's FIN (again, if our ACK was lost): ACK it at once
            first = not self.peer_fin
            self.peer_fin = True
            self._send_ctrl(F_ACK, now)
            if first and self.state == TCP_ESTABLISHED and self.fin_ok and self.snd_una >= self.n_seg:
                self._finish(now)
        return 0

    cdef int _requested(self, int64_t now) except -1:
        """The whole request is here: respond after response_delay."""
        if self.response_delay > 0:
            self.sim.schedule(now + self.response_delay, self, TCP_EV_RESPOND, NULL, self.conn)
        else:
            self._respond(now)

    cdef int _respond(self, int64_t now) except -1:
        """The whole request arrived: write the response, then close after close_delay."""
        self.state = TCP_ESTABLISHED
        self.sim.transfers[self.xfer].response = now
        self.rec.output(self, now)
        if self.close_delay > 0:
            self.sim.schedule(now + self.close_delay, self, TCP_EV_CLOSE, NULL, self.conn)
        else:
            self._close(now)

    cdef int _close(self, int64_t now) except -1:
        """close(): the FIN rides on the last data segment if that is still unsent, else it is a
        segment of its own (tcp_send_fin)."""
        self.fin_ok = True
        if self.snd_max >= self.n_seg:
            self.fin_bare = True
            self.n_seg += 1
            self.avail = self.n_seg
        self.rec.output(self, now)

    # ---- ACKs in ----
    cdef int recv(self, Packet* p, int64_t now) except -1:
        if p.conn != self.conn or self.state == TCP_IDLE:
            if p.conn == self.conn and self.reqmode and p.flags & F_FIN:
                self._send_ctrl(F_ACK, now)      # our ACK of the client's FIN was lost
            pkt_free(p)
            return 0
        self.ts_recent = p.t_created
        self.last_ack_t = now
        if self.reqmode:
            self._server_recv(p, now)
        elif self.state == TCP_SYN_SENT:
            if p.flags & F_SYN:
                self.state = TCP_ESTABLISHED
                self._timer_stop()
                if self.linux_tcp:
                    self._handshake_rtt(p.retx, p, now)
                elif not p.retx:
                    self._rto_update(now - p.ts, p.ts)
                    self._rtt_sample(now - p.ts, now)
                self.rec.output(self, now)
        else:
            self.rec.on_ack(self, p, now)
        pkt_free(p)

    cdef int _all_acked(self, int64_t now) except -1:
        """Everything sent is acknowledged: the transfer ends, unless (request mode) the server
        has not closed yet or waits for the client's FIN."""
        if self.reqmode and not (self.fin_ok and self.peer_fin):
            self._timer_stop()
            return 0
        self._finish(now)

    cdef int _finish(self, int64_t now) except -1:
        self._timer_stop()
        self.state = TCP_IDLE
        if self.app is not None:
            self.app.sender_done(self, now)
        if self.pending and self.state == TCP_IDLE:
            nbytes, req = self.pending.pop(0)
            self.start_transfer(nbytes, now, req)

    # ---- Linux window bookkeeping (tcp_output.c tcp_cwnd_validate, tcp.h tcp_is_cwnd_limited) ----
    cdef inline void cwnd_validate(self, bint limited) noexcept:
        cdef int64_t out = self.snd_max - self.snd_una
        if self.snd_una >= self.cwnd_usage_seq or limited or (
                not self.cwnd_limited and out > self.max_packets_out):
            self.cwnd_limited = limited
            self.max_packets_out = out
            self.cwnd_usage_seq = self.snd_max

    cdef inline bint is_cwnd_limited(self) noexcept:
        if self.cwnd_limited:
            return True
        if self.cwnd < self.ssthresh:      # slow start: grow to twice what was in flight
            return self.cwnd < 2 * self.max_packets_out
        return False

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

# Congestion control (like ns-3's TcpCongestionOps). The sender calls:
#   on_start(s, now)               new connection, after cwnd/ssthresh were reset
#   on_ack(s, newly_acked, now)    new cumulative ACK outside fast recovery: grow the window
#   on_rtt(s, rtt_ns, now)         each valid (Karn) RTT sample
#   ssthresh_on_loss(s) -> double  new ssthresh on fast retransmit or timeout
#   cwnd_on_fast_loss(s) -> double cwnd for classic fast recovery, before the dupack inflation
#   on_loss(s, timeout, now)       after the loss response was applied (timeout: Linux's
#                                  set_state(TCP_CA_Loss))
#   undo_cwnd(s) -> double         cwnd after a reduction proved spurious (Linux undo)
#   on_send(s, seg, retx, now)     a data segment leaves (new or retransmitted)
#   on_dupack(s, now)              a duplicate ACK, only with recovery = RECOVERY_CC
#   window_in_force(s) -> double   the window without fast-recovery inflation (TCP-MT's SSC)
#   on_app_write(s, now)           the application hands over more data (app_limit/app_append)
# A congestion control with ``cong_control`` set (Linux's cong_control op: BBR) owns the window
# outright: with SackRack its on_ack_sample(s, sample, now) runs on every ACK (AckSample, tcp.pxi) instead of
# on_ack and PRR, and on_delivered(s, seg, sacked, now) for each segment the ACK newly delivers
# (tcp_rate_skb_delivered); it may pace the sender (``s.pacing``, ``s.pacing_rate``).
# ``recovery`` selects the classic loss recovery the sender runs (Tahoe, Reno, NewReno) or hands
# duplicate ACKs to the congestion control (RECOVERY_CC: Vegas runs its own, as ns-2's
# VegasTcpAgent); a RecoveryOps such as SackRack ignores it. The congestion-avoidance slope is
# ``s.xi`` (default 1): cwnd += xi/cwnd per ACK. With SackRack ``newly`` counts segments newly
# delivered (cumulatively or by SACK), as Linux's ``acked``. ``slow_start`` and
# ``cong_avoid_ai`` are Linux's tcp_slow_start / tcp_cong_avoid_ai on integer windows (the
# Linux flavors in cc_reno_linux.pxi and cc_cubic.pxi use them).

cdef class CongestionOps:
    cdef public int recovery
    cdef readonly str name
    cdef readonly bint cong_control             # owns cwnd on every ACK (see above)

    def __init__(self):
        self.recovery = RECOVERY_RENO
        self.name = "reno"

    cdef int on_start(self, TcpSender s, int64_t now) except -1:
        pass

    cdef int on_ack(self, TcpSender s, int64_t newly, int64_t now) except -1:
        # once per new ACK, as ns-2's opencwnd: slow start +1, congestion avoidance +xi/cwnd
        if s.cwnd < s.ssthresh:
            s.cwnd += 1.0
        else:
            s.cwnd += s.xi / s.cwnd
        if s.cwnd > s.rwnd:
            s.cwnd = <double>s.rwnd

    cdef int on_rtt(self, TcpSender s, int64_t rtt, int64_t now) except -1:
        pass

    cdef double ssthresh_on_loss(self, TcpSender s) except? -1:
        cdef double w = s.cwnd if s.cwnd < s.rwnd else <double>s.rwnd
        w = floor(w / 2.0)
        return w if w > 2.0 else 2.0

    cdef double cwnd_on_fast_loss(self, TcpSender s) except? -1:
        """The window classic fast recovery cuts to (segments; the dupack inflation comes on top)
        and leaves in force when it ends: ns-2's slowdown(CLOSE_SSTHRESH_HALF | CLOSE_CWND_HALF),
        halfwin = min(cwnd, rwnd) / 2 unrounded with ``s.precision_reduce`` (precisionReduce_,
        ns-2's default since 2006), else its integer part; ssthresh_ is always the integer part."""
        cdef double w = (s.cwnd if s.cwnd < s.rwnd else <double>s.rwnd) / 2.0
        return w if s.precision_reduce else floor(w)

    cdef int on_loss(self, TcpSender s, bint timeout, int64_t now) except -1:
        pass

    cdef int on_send(self, TcpSender s, int64_t seg, bint retx, int64_t now) except -1:
        pass

    cdef int on_dupack(self, TcpSender s, int64_t now) except -1:
        pass

    cdef int on_app_write(self, TcpSender s, int64_t now) except -1:
        pass

    cdef int on_delivered(self, TcpSender s, int64_t seg, bint sacked, int64_t now) except -1:
        pass

    cdef int on_ack_sample(self, TcpSender s, AckSample* a, int64_t now) except -1:
        pass

    cdef double window_in_force(self, TcpSender s):
        """Segments the sender may have in flight, without the fast-recovery inflation by
        duplicate ACKs: the cut window (``cwnd_on_fast_loss``) from the fast retransmit to the end
        of Reno/NewReno recovery, else cwnd; at most rwnd."""
        cdef double w = s.recovery_cwnd if s.in_recovery and s.recovery_cwnd < s.cwnd else s.cwnd
        return w if w < s.rwnd else <double>s.rwnd

    cdef double undo_cwnd(self, TcpSender s) except? -1:
        return s.cwnd if s.cwnd > s.prior_cwnd else s.prior_cwnd

    cdef int64_t slow_start(self, TcpSender s, int64_t acked) except? -1:
        """cwnd += acked up to ssthresh; returns the ACKed segments left for congestion avoidance."""
        cdef double cwnd = s.cwnd + acked
        if cwnd > s.ssthresh:
            cwnd = s.ssthresh
        acked -= <int64_t>(cwnd - s.cwnd)
        s.cwnd = cwnd
        return acked

    cdef int cong_avoid_ai(self, TcpSender s, int64_t w, int64_t acked) except -1:
        """cwnd += 1 per ``w`` segments ACKed (s.cwnd_cnt holds the credit)."""
        cdef int64_t delta
        if w < 1:
            w = 1
        if s.cwnd_cnt >= w:
            s.cwnd_cnt = 0
            s.cwnd += 1.0
        s.cwnd_cnt += acked
        if s.cwnd_cnt >= w:
            delta = s.cwnd_cnt // w
            s.cwnd_cnt -= delta * w
            s.cwnd += delta


cdef class Tahoe(CongestionOps):
    def __init__(self):
        self.recovery = RECOVERY_TAHOE
        self.name = "tahoe"


cdef class Reno(CongestionOps):
    pass


cdef class NewReno(CongestionOps):
    def __init__(self):
        self.recovery = RECOVERY_NEWRENO
        self.name = "newreno"



cdef enum:
    VEGAS_ACT_NONE = 0
    VEGAS_ACT_DUPACK = 1
    VEGAS_ACT_TIMEOUT = 2

cdef int VEGAS_RING_CAP = 1 << 16


cdef class Vegas(CongestionOps):
    """TCP Vegas as ns-2.35's ``Agent/TCP/Vegas`` (tcp-vegas.cc, after Brakmo & Peterson 1995).

    Times are seconds since the connection's first segment (ns-2's ``vegastime()``); sequence
    numbers are segment indices, ``last_ack`` = cumulative ACK - 1 as in ns-2.

    * Fine-grained RTT: the send time and transmission count of every segment are kept in a ring
      of ``rwnd`` slots (ns-2's ``v_sendtime_``/``v_transmits_``, indexed seq mod window_, with
      ns-2's reset loop, which skips the slots of an ACK range that wraps the ring). Each new ACK
      whose segment was sent once yields a sample that feeds the round's mean (``v_sumRTT_ /
      v_cntRTT_``), BaseRTT (the minimum of samples and round means) and the fine-grained timeout
      ``v_timeout_`` (srtt + 2 dev, 1/8 and 1/4 gains, + 1/16).
    * Once per round (first ACK at or past the segment that was next when the round began):
      RTT = mean sample of the round (else the time since the round began), Diff = round((expected -
      actual) BaseRTT) with expected = segments outstanding / BaseRTT and actual = segments sent in
      the round / RTT. Slow start (cwnd < ssthresh): every other round, Diff > gamma leaves slow start
      (ssthresh 2, cwnd -= cwnd/8) else cwnd grows by 1 per ACK in the next round. Congestion
      avoidance: Diff > beta: cwnd -= 1; Diff < alpha: cwnd += xi/cwnd per ACK in the next round
      (TCP-MT couples xi here, Park & Tuan Table I); else unchanged.
    * Growth only while the application fills the window: cwnd - (outstanding + 1) <= 2.
    * Loss recovery (on_dupack, the sender's RECOVERY_CC): a duplicate ACK retransmits at once if
      the oldest unacknowledged segment has been out for ``v_timeout_`` (fine-grained timeout),
      otherwise at the third. If cwnd was not cut since that segment was sent, cwnd = 2 (window <= 3),
      window/2 (segment already retransmitted) or window - window/4, inflated by the duplicate
      ACKs; the coarse timer backs off. The first one or two new ACKs after a retransmission
      retransmit the next segment if it, too, exceeded the fine-grained timeout. The next new ACK
      deflates cwnd. No limited transmit.
    * Timeout: ssthresh = window/2 (>= 2), cwnd = 2 (``v_slowstart_``).

    ns-2's quirks are kept, since ns-2 is the reference: the ring reset loop skips a range that
    wraps (those slots count their next transmission as a retransmission); a deflation after a
    timeout sets cwnd to ``v_newcwnd_`` = 0 (nothing is sent until the next timeout); the new-ACK
    check may "retransmit" a segment never sent, which send_much then sends again; segments sent
    at the connection's first instant give no RTT sample; resending the timed segment does not
    stop its timing (ns-2's output() has no Karn check: only timeouts and duplicate-ACK
    retransmissions, through reset_rtx_timer(), do).
    """
    cdef public double alpha, beta, gamma
    cdef readonly double base_rtt, rtt, timeout_s   # s: BaseRTT, last sample, v_timeout_
    cdef readonly int64_t dupacks
    cdef readonly int64_t first_sent               # ns (absolute) of the first segment
    cdef double first_recv, sa, sd, sum_rtt, begtime, incr, newcwnd, cwnd_changed
    cdef int64_t cnt_rtt, begseq, worried, recover
    cdef bint inc_flag, incr_ss
    cdef int last_action
    cdef double* sendtime
    cdef int32_t* transmits
    cdef int64_t ring                               # slots (ns-2's v_maxwnd_)

    def __init__(self, double alpha=1.0, double beta=3.0, double gamma=1.0):
        self.recovery = RECOVERY_CC
        self.name = "vegas"
        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma

    def __dealloc__(self):
        free(self.sendtime)
        free(self.transmits)

    cdef int _alloc(self, int64_t n) except -1:
        cdef int64_t i
        if n != self.ring:
            free(self.sendtime)
            free(self.transmits)
            self.sendtime = <double*>malloc(n * sizeof(double))
            self.transmits = <int32_t*>malloc(n * sizeof(int32_t))
            if self.sendtime == NULL or self.transmits == NULL:
                raise MemoryError()
            self.ring = n
        for i in range(n):
            self.sendtime[i] = -1.0
            self.transmits[i] = 0

    cdef int _grow(self, TcpSender s) except -1:
        """Only when rwnd exceeds the ring cap (no ns-2 counterpart): double the ring, keeping
        the slots of the segments in flight."""
        cdef int64_t old = self.ring, n = old * 2, seq
        cdef double* st = self.sendtime
        cdef int32_t* tr = self.transmits
        self.sendtime = NULL
        self.transmits = NULL
        self.ring = 0
        self._alloc(n)
        for seq in range(s.snd_una, s.snd_max):
            self.sendtime[seq % n] = st[seq % old]
            self.transmits[seq % n] = tr[seq % old]
        free(st)
        free(tr)

    cdef inline double _t(self, int64_t now) noexcept:
        return (now - self.first_sent) * 1e-9

    cdef int on_start(self, TcpSender s, int64_t now) except -1:
        # ns-2 VegasTcpAgent::reset()
        self.first_recv = -1.0
        self.sa = 0.0
        self.sd = 0.0
        self.timeout_s = 1000.0
        self.worried = 0
        self.begseq = 0
        self.begtime = 0.0
        self.cnt_rtt = 0
        self.sum_rtt = 0.0
        self.base_rtt = 1e9
        self.rtt = 0.0
        self.incr = 0.0
        self.incr_ss = False
        self.inc_flag = True
        self.newcwnd = 0.0
        self.cwnd_changed = 0.0
        self.dupacks = 0
        self.recover = 0
        self.last_action = VEGAS_ACT_NONE
        self.first_sent = now
        self._alloc(s.rwnd if s.rwnd <= VEGAS_RING_CAP else 1024)
        # ns-2's output() never stops RTT timing: only reset_rtx_timer() does (rtt_active_ = 0), at
        # a timeout (on_loss) and at a duplicate-ACK retransmission (on_dupack). A resent segment
        # stays timed: the new-ACK check's retransmission, and the second copy that send_much
        # sends of a segment that check "retransmitted" before it was ever sent (then the ACK of
        # that segment ends the backoff, as ns-2's newack(); with Karn's rule at the send the
        # timer stayed backed off, x4 for 0.8 s where ns-2 timed out after 0.2 s)
        s.resend_untimes = False

    cdef int on_send(self, TcpSender s, int64_t seg, bint retx, int64_t now) except -1:
        cdef int64_t i
        if seg == 0 and s.snd_nxt == 0:
            # ns-2 send_much(): firstsent_ = now whenever t_seqno_ is 0, also after a timeout
            # that goes back to segment 0 (segments sent then have vegastime 0: no RTT sample)
            self.first_sent = now
        if s.rwnd > VEGAS_RING_CAP and s.snd_max - s.snd_una + 1 >= self.ring:
            self._grow(s)
        i = seg % self.ring
        self.sendtime[i] = self._t(now)
        self.transmits[i] += 1

    cdef inline bint _expired(self, int64_t seg, double t) noexcept:
        # ns-2 vegas_expire(): the slot of the first unacknowledged segment (a reset slot, -1,
        # counts as expired, as there)
        return t - self.sendtime[seg % self.ring] >= self.timeout_s

    cdef int on_ack(self, TcpSender s, int64_t newly, int64_t now) except -1:
        cdef double t = self._t(now), rtt, expect, actual, send_t, n
        cdef int64_t ack = s.snd_una + newly          # next expected segment
        cdef int64_t seqno = ack - 1                  # ns-2's ACK number
        cdef int64_t oldack = s.snd_una - 1
        cdef int64_t tseq = s.snd_nxt if s.snd_nxt > ack else ack   # ns-2 t_seqno_ after newack
        cdef int64_t rttlen, k, rng
        cdef int delta, transmits
        if self.first_recv < 0:
            self.first_recv = t
            self.base_rtt = t
            self.rtt = t
            self.sa = t * 8.0
            self.sd = t
            self.timeout_s = (self.sa / 4.0 + self.sd) / 2.0
        if self.dupacks > 3 and s.cwnd > self.newcwnd:
            # deflate the window inflated by duplicate ACKs; ssthresh only matters in slow start
            s.cwnd = self.newcwnd
            s.ssthresh = 2.0
        self.dupacks = 0
        if seqno >= self.begseq:
            rtt = self.sum_rtt / self.cnt_rtt if self.cnt_rtt > 0 else t - self.begtime
            self.sum_rtt = 0.0
            self.cnt_rtt = 0
            rttlen = tseq - self.begseq
            if rtt > 0:
                if rtt < self.base_rtt or rttlen <= 1:
                    self.base_rtt = rtt
                actual = rttlen / rtt
                expect = (tseq - seqno) / self.base_rtt
                delta = <int>((expect - actual) * self.base_rtt + 0.5)
                if s.cwnd < s.ssthresh:
                    self.inc_flag = not self.inc_flag
                    self.incr = 0.0
                    self.incr_ss = False
                    if self.inc_flag:
                        if delta > self.gamma:
                            s.ssthresh = 2.0
                            s.cwnd -= s.cwnd / 8.0
                            if s.cwnd < 2.0:
                                s.cwnd = 2.0
                        else:
                            self.incr = 1.0
                            self.incr_ss = True
                else:
                    self.incr_ss = False
                    if delta > self.beta:
                        s.cwnd -= 1.0
                        if s.cwnd < 2.0:
                            s.cwnd = 2.0
                        self.incr = 0.0
                    elif delta < self.alpha:
                        self.incr = s.xi / s.cwnd
                    else:
                        self.incr = 0.0
            self.begseq = tseq
            self.begtime = t
        if self.incr_ss and s.cwnd >= s.ssthresh:
            self.incr = 0.0
            self.incr_ss = False
        if self.incr > 0 and s.cwnd - (tseq - seqno) <= 2.0:
            s.cwnd += self.incr
        # fine-grained RTT of the segment this ACK covers, then clear the acknowledged slots
        k = seqno % self.ring
        send_t = self.sendtime[k]
        transmits = self.transmits[k]
        rng = seqno - oldack
        k = (oldack + 1) % self.ring
        while k <= seqno % self.ring and rng > 0:
            self.sendtime[k] = -1.0
            self.transmits[k] = 0
            k = (k + 1) % self.ring
            rng -= 1
        if send_t != 0.0 and transmits == 1:
            rtt = t - send_t
            self.sum_rtt += rtt
            self.cnt_rtt += 1
            if rtt > 0:
                self.rtt = rtt
                if rtt < self.base_rtt:
                    self.base_rtt = rtt
                n = rtt - self.sa / 8.0
                self.sa += n
                n = -n if n < 0 else n
                n -= self.sd / 4.0
                self.sd += n
                self.timeout_s = (self.sa / 4.0 + self.sd) / 2.0
                self.timeout_s += self.timeout_s / 16.0
        if self.worried > 0:
            # the first one or two new ACKs after a retransmission: is the next segment overdue?
            self.worried -= 1
            if self._expired(ack, t) and ack < s.n_seg:
                # as ns-2's output(expired): when nothing is outstanding the slot is a reset one
                # (always "expired") and the segment goes out now, and again from send_much
                self.dupacks = 3
                s.retransmit(ack, now)
                if ack == s.snd_max:
                    s.snd_max = ack + 1
            else:
                self.worried = 0

    cdef int on_dupack(self, TcpSender s, int64_t now) except -1:
        cdef double t = self._t(now), send_t
        cdef int64_t una = s.snd_una, win
        cdef int transmits
        self.dupacks += 1
        if self._expired(una, t) or self.dupacks == 3:
            send_t = self.sendtime[una % self.ring]
            transmits = self.transmits[una % self.ring]
            # ns-2 bug_fix_: no fast retransmit right after a timeout until the ACK passes recover
            if una > self.recover or self.last_action != VEGAS_ACT_TIMEOUT:
                win = <int64_t>s.cwnd if s.cwnd < s.rwnd else s.rwnd
                self.last_action = VEGAS_ACT_DUPACK
                self.recover = s.snd_max
                self.worried = min(2, s.snd_nxt - una + 1)
                if transmits > 1:
                    self.timeout_s *= 2.0
                else:
                    self.timeout_s += self.timeout_s / 8.0
                if self.cwnd_changed < send_t:
                    # cwnd not cut since this segment was sent
                    if win <= 3:
                        win = 2
                    elif transmits > 1:
                        win >>= 1
                    else:
                        win -= win >> 2
                    self.newcwnd = <double>win
                    s.cwnd = self.newcwnd + self.dupacks
                    self.cwnd_changed = t
                # ns-2 reset_rtx_timer(1): back the coarse timer off, restart it, stop RTT timing
                if s.backoff < 64:
                    s.backoff *= 2
                s._ns2_backoff()
                s._timer_set(now + s._rto_value())
                s.rtt_seq = -1
                s.sim.flows[s.flow].fast_retx += 1
                if s.hook is not None:
                    s.hook.on_loss(s, now)
                s.retransmit(una, now)
                if transmits == 1:
                    self.dupacks = 3
        elif self.dupacks > 3:
            s.cwnd += 1.0
        if self.dupacks == 0 or self.dupacks > 2:
            s.send_much(now)

    cdef double window_in_force(self, TcpSender s):
        # after the third duplicate ACK cwnd = v_newcwnd_ + dupacks: the window in force is newcwnd
        cdef double w = self.newcwnd if self.dupacks >= 3 and self.newcwnd < s.cwnd else s.cwnd
        return w if w < s.rwnd else <double>s.rwnd

    cdef int on_loss(self, TcpSender s, bint timeout, int64_t now) except -1:
        # only timeouts reach here (duplicate ACKs are handled in on_dupack)
        s.cwnd = 2.0
        s.rtt_seq = -1                  # reset_rtx_timer(0): rtt_active_ = 0
        self.newcwnd = 0.0
        self.cwnd_changed = self._t(now)
        self.dupacks = 0
        self.recover = s.snd_max
        self.last_action = VEGAS_ACT_TIMEOUT


cdef enum:
    RATE_EQ_INCREASE = 0
    RATE_EQ_HOLD = 1
    RATE_EQ_DECREASE = 2

_RATE_EQUAL = {"increase": RATE_EQ_INCREASE, "hold": RATE_EQ_HOLD, "decrease": RATE_EQ_DECREASE}


cdef class Rate(CongestionOps):
    """TCP Rate (Park & Tuan 2000, sec. 3.6.3 and Table I), Reno with a delay-variation congestion
    avoidance. For each ACK carrying a valid RTT sample, with dRTT the difference to the previous
    sample and tau the spacing (s) of the two ACKs that carried them::

        dRTT < 0:  cwnd += a xi / cwnd                   (segments; a xi: segments per RTT)
        dRTT > 0:  cwnd -= (a xi / RTT) b tau            (RTT, tau in s; b dimensionless, 0 < a < b)
        dRTT = 0:  per ``equal``: "increase", "hold" or "decrease" (Table I writes dRTT >= 0)

    ``tau`` > 0 replaces the measured ACK spacing by a constant (s). Over a round of back-to-back
    ACKs the spacings sum to about one RTT, so the decrease is about a xi b segments per round and
    the increase a xi. Slow start and loss recovery as Reno; TCP-MT's xi multiplies a."""
    cdef public double a, b, tau
    cdef public int equal                      # RATE_EQ_*
    cdef int64_t prev_rtt, cur_rtt, prev_t, cur_t
    cdef bint fresh

    def __init__(self, double a=1.0, double b=2.0, str equal="increase", double tau=0.0):
        if equal not in _RATE_EQUAL:
            raise ValueError(f"equal must be one of {sorted(_RATE_EQUAL)}")
        self.recovery = RECOVERY_RENO
        self.name = "rate"
        self.a = a
        self.b = b
        self.tau = tau
        self.equal = _RATE_EQUAL[equal]

    cdef int on_start(self, TcpSender s, int64_t now) except -1:
        self.prev_rtt = -1
        self.cur_rtt = -1
        self.fresh = False

    cdef int on_rtt(self, TcpSender s, int64_t rtt, int64_t now) except -1:
        self.prev_rtt = self.cur_rtt
        self.prev_t = self.cur_t
        self.cur_rtt = rtt
        self.cur_t = now
        self.fresh = True

    cdef int on_ack(self, TcpSender s, int64_t newly, int64_t now) except -1:
        cdef double a = self.a * s.xi, tau
        cdef int action = 0                        # +1 increase, -1 decrease
        if s.cwnd < s.ssthresh:
            s.cwnd += 1.0
        elif self.fresh and self.prev_rtt > 0:
            if self.cur_rtt < self.prev_rtt:
                action = 1
            elif self.cur_rtt > self.prev_rtt:
                action = -1
            elif self.equal == RATE_EQ_INCREASE:
                action = 1
            elif self.equal == RATE_EQ_DECREASE:
                action = -1
            if action > 0:
                s.cwnd += a / s.cwnd
            elif action < 0:
                tau = self.tau if self.tau > 0 else (self.cur_t - self.prev_t) * 1e-9
                s.cwnd -= a / (self.cur_rtt * 1e-9) * self.b * tau
                if s.cwnd < 1.0:
                    s.cwnd = 1.0
        self.fresh = False
        if s.cwnd > s.rwnd:
            s.cwnd = <double>s.rwnd

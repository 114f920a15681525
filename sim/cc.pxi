# Congestion control (like ns-3's TcpCongestionOps). The sender calls:
#   on_start(s, now)               new connection, after cwnd/ssthresh were reset
#   on_ack(s, newly_acked, now)    new cumulative ACK outside fast recovery: grow the window
#   on_rtt(s, rtt_ns, now)         each valid (Karn) RTT sample
#   ssthresh_on_loss(s) -> double  new ssthresh on fast retransmit or timeout
#   on_loss(s, timeout, now)       after the loss response was applied (timeout: Linux's
#                                  set_state(TCP_CA_Loss))
#   undo_cwnd(s) -> double         cwnd after a reduction proved spurious (Linux undo)
# ``recovery`` selects the classic loss recovery the sender runs (Tahoe, Reno, NewReno); a
# RecoveryOps such as SackRack ignores it. The congestion-avoidance slope is ``s.xi``
# (default 1): cwnd += xi/cwnd per ACK. With SackRack ``newly`` counts segments newly
# delivered (cumulatively or by SACK), as Linux's ``acked``. ``slow_start`` and
# ``cong_avoid_ai`` are Linux's tcp_slow_start / tcp_cong_avoid_ai on integer windows (the
# Linux flavors in cc_reno_linux.pxi and cc_cubic.pxi use them).

cdef class CongestionOps:
    cdef public int recovery
    cdef readonly str name

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

    cdef int on_loss(self, TcpSender s, bint timeout, int64_t now) except -1:
        pass

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


cdef class Vegas(CongestionOps):
    """Brakmo–Peterson Vegas: once per RTT compare expected (cwnd/BaseRTT) and actual
    (cwnd/RTT) rates; diff = cwnd·(1 − BaseRTT/RTT) packets. Congestion avoidance: +xi if
    diff < alpha, −1 if diff > beta. Slow start grows cwnd every other RTT (so the rates are
    compared over a round without growth) and ends when diff > gamma. RTT of a round is the
    minimum sample of that round; BaseRTT the minimum ever seen on the connection. Reno recovery."""
    cdef public double alpha, beta, gamma
    cdef readonly int64_t base_rtt, round_min
    cdef int64_t mark
    cdef bint ss_grow

    def __init__(self, double alpha=1.0, double beta=3.0, double gamma=1.0):
        self.recovery = RECOVERY_RENO
        self.name = "vegas"
        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma

    cdef int on_start(self, TcpSender s, int64_t now) except -1:
        self.base_rtt = -1
        self.round_min = -1
        self.mark = 0
        self.ss_grow = True

    cdef int on_rtt(self, TcpSender s, int64_t rtt, int64_t now) except -1:
        if self.base_rtt < 0 or rtt < self.base_rtt:
            self.base_rtt = rtt
        if self.round_min < 0 or rtt < self.round_min:
            self.round_min = rtt

    cdef int on_ack(self, TcpSender s, int64_t newly, int64_t now) except -1:
        cdef double diff, target
        cdef bint decide = s.snd_una + newly > self.mark and self.round_min > 0
        if decide:
            diff = s.cwnd * (1.0 - <double>self.base_rtt / <double>self.round_min)
            if s.cwnd < s.ssthresh:
                if diff > self.gamma:
                    target = s.cwnd * self.base_rtt / self.round_min
                    if s.cwnd > target + 1.0:
                        s.cwnd = target + 1.0
                    s.ssthresh = s.cwnd - 1.0 if s.cwnd > 3.0 else 2.0
                else:
                    self.ss_grow = not self.ss_grow
            elif diff < self.alpha:
                s.cwnd += s.xi
            elif diff > self.beta:
                s.cwnd -= 1.0
            if s.cwnd < 2.0:
                s.cwnd = 2.0
            self.mark = s.snd_max
            self.round_min = -1
        elif s.cwnd < s.ssthresh and self.ss_grow:
            s.cwnd += 1.0
        if s.cwnd > s.rwnd:
            s.cwnd = <double>s.rwnd

    cdef int on_loss(self, TcpSender s, bint timeout, int64_t now) except -1:
        self.ss_grow = True
        self.mark = s.snd_max
        self.round_min = -1


cdef class Rate(CongestionOps):
    """TCP Rate (Park & Tuan 2000, Table I): in congestion avoidance, per ACK with a valid RTT
    sample, cwnd += a·xi/cwnd when ΔRTT < 0 and cwnd −= (a·xi/RTT)·b when ΔRTT ≥ 0 (RTT and b
    in seconds), ΔRTT being the difference of consecutive samples. Slow start and loss
    recovery as Reno."""
    cdef public double a, b
    cdef int64_t prev_rtt, cur_rtt
    cdef bint fresh

    def __init__(self, double a=1.0, double b=0.002):
        self.recovery = RECOVERY_RENO
        self.name = "rate"
        self.a = a
        self.b = b

    cdef int on_start(self, TcpSender s, int64_t now) except -1:
        self.prev_rtt = -1
        self.cur_rtt = -1
        self.fresh = False

    cdef int on_rtt(self, TcpSender s, int64_t rtt, int64_t now) except -1:
        self.prev_rtt = self.cur_rtt
        self.cur_rtt = rtt
        self.fresh = True

    cdef int on_ack(self, TcpSender s, int64_t newly, int64_t now) except -1:
        cdef double a
        if s.cwnd < s.ssthresh:
            s.cwnd += 1.0
        elif self.fresh and self.prev_rtt > 0:
            a = self.a * s.xi
            if self.cur_rtt < self.prev_rtt:
                s.cwnd += a / s.cwnd
            else:
                s.cwnd -= a / (self.cur_rtt * 1e-9) * self.b
                if s.cwnd < 1.0:
                    s.cwnd = 1.0
        self.fresh = False
        if s.cwnd > s.rwnd:
            s.cwnd = <double>s.rwnd

# CUBIC (RFC 9438) as Linux implements it (net/ipv4/tcp_cubic.c): W(t) = C (t - K)^3 + W_max
# with K = cbrt(W_max (1 - beta) / C), computed in Linux's fixed point (time in 1/1024 s, a
# cube-root table plus one Newton step, updates at most once per jiffy); fast convergence
# (W_max = cwnd (1 + beta) / 2 when a loss comes below the previous W_max); the Reno-friendly
# region (an emulated Reno window growing 3 (1 - beta) / (1 + beta) per RTT, whose faster growth
# wins); at most +1 segment per 2 ACKed. HyStart leaves slow start (ssthresh = cwnd) from
# cwnd >= hystart_low_window when an ACK train lasts longer than half the minimum delay, or
# when the minimum RTT of a round (8 samples) exceeds the minimum delay by
# clamp(delay_min / 8, 4 ms, 16 ms). Windows are whole segments.

cdef uint8_t _CBRT_V[64]
_CBRT_V[:] = [0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156,
              157, 161, 164, 168, 170, 173, 176, 179, 181, 185, 187, 190, 192, 194, 197, 199,
              200, 202, 204, 206, 209, 211, 213, 215, 217, 219, 221, 222, 224, 225, 227, 229,
              231, 232, 234, 236, 237, 239, 240, 242, 244, 245, 246, 248, 250, 251, 252, 254]

cdef enum:
    BICTCP_HZ = 10                  # time unit 2^-10 s
    HYSTART_MIN_SAMPLES = 8
    HYSTART_DELAY_MIN = 4000        # us
    HYSTART_DELAY_MAX = 16000       # us
    HYSTART_ACK_DELTA = 2000        # us: ACKs closer than this form a train
    GSO_MAX_SIZE = 65536            # bytes, for hystart_ack_delay


cdef uint32_t cubic_root(uint64_t a) noexcept:
    """Linux's cube root: a table lookup on the top bits, then one Newton-Raphson step."""
    cdef uint32_t x, b = 0, shift
    cdef uint64_t t = a
    while t:
        b += 1
        t >>= 1
    if b < 7:
        return (<uint32_t>_CBRT_V[<uint32_t>a] + 35) >> 6
    b = ((b * 84) >> 8) - 1
    shift = <uint32_t>(a >> (b * 3))
    x = (<uint32_t>(<uint32_t>_CBRT_V[shift] + 10) << b) >> 6
    x = 2 * x + <uint32_t>(a // (<uint64_t>x * <uint64_t>(x - 1)))
    return (x * 341) >> 10


cdef class Cubic(CongestionOps):
    cdef public bint fast_convergence, tcp_friendliness, hystart
    cdef public int64_t hystart_low_window
    cdef readonly int64_t beta              # x/1024
    cdef readonly int64_t bic_scale         # C = bic_scale * 10 / 1024
    cdef int64_t cube_rtt_scale, beta_scale
    cdef uint64_t cube_factor
    # per-connection state (struct bictcp)
    cdef readonly int64_t cnt, last_max_cwnd, last_cwnd, last_time, origin, bic_k
    cdef readonly int64_t delay_min, epoch_start, ack_cnt, tcp_cwnd
    cdef readonly bint epoch_on, found
    cdef int sample_cnt
    cdef int64_t round_start, end_seq, last_ack, curr_rtt

    def __init__(self, double beta=0.7, double c=0.4, bint fast_convergence=True,
                 bint tcp_friendliness=True, bint hystart=True, int64_t hystart_low_window=16):
        self.recovery = RECOVERY_NEWRENO
        self.name = "cubic"
        self.beta = <int64_t>floor(beta * 1024 + 0.5)
        self.bic_scale = <int64_t>floor(c * 102.4 + 0.5)
        self.fast_convergence = fast_convergence
        self.tcp_friendliness = tcp_friendliness
        self.hystart = hystart
        self.hystart_low_window = hystart_low_window
        # cubictcp_register: precomputed scale factors
        self.beta_scale = 8 * (1024 + self.beta) // 3 // (1024 - self.beta)
        self.cube_rtt_scale = self.bic_scale * 10
        self.cube_factor = ((<uint64_t>1) << (10 + 3 * BICTCP_HZ)) // <uint64_t>self.cube_rtt_scale

    cdef void _reset(self) noexcept:
        self.cnt = self.last_max_cwnd = self.last_cwnd = self.last_time = 0
        self.origin = self.bic_k = self.delay_min = self.epoch_start = 0
        self.ack_cnt = self.tcp_cwnd = 0
        self.epoch_on = self.found = False

    cdef void _hystart_reset(self, TcpSender s, int64_t now) noexcept:
        self.round_start = self.last_ack = now // 1000
        self.end_seq = s.snd_max
        self.curr_rtt = -1
        self.sample_cnt = 0

    cdef int on_start(self, TcpSender s, int64_t now) except -1:
        self._reset()
        if self.hystart:
            self._hystart_reset(s, now)

    cdef int on_loss(self, TcpSender s, bint timeout, int64_t now) except -1:
        if timeout:
            self._reset()
            self._hystart_reset(s, now)

    cdef double ssthresh_on_loss(self, TcpSender s) except? -1:
        cdef int64_t cwnd = <int64_t>s.cwnd, w
        self.epoch_on = False
        if cwnd < self.last_max_cwnd and self.fast_convergence:
            self.last_max_cwnd = cwnd * (1024 + self.beta) // 2048
        else:
            self.last_max_cwnd = cwnd
        w = cwnd * self.beta // 1024
        return <double>(w if w > 2 else 2)

    cdef double cwnd_on_fast_loss(self, TcpSender s) except? -1:
        # integer windows: classic recovery (recovery = "classic") holds the new ssthresh
        return s.ssthresh

    cdef int on_ack(self, TcpSender s, int64_t newly, int64_t now) except -1:
        if not s.is_cwnd_limited():
            return 0
        if s.cwnd < s.ssthresh:
            newly = self.slow_start(s, newly)
            if newly <= 0:
                return 0
        self._update(s, <int64_t>s.cwnd, newly, now)
        self.cong_avoid_ai(s, self.cnt, newly)

    cdef void _update(self, TcpSender s, int64_t cwnd, int64_t acked, int64_t now) noexcept:
        """bictcp_update: the ACKs per +1 segment (cnt) that follow the cubic curve."""
        cdef int64_t jif = (now + s.jiffy_phase) // s.tick, hz = 1000000000 // s.tick
        cdef int64_t delta, target, max_cnt
        cdef uint64_t t, offs
        self.ack_cnt += acked
        if self.last_cwnd == cwnd and jif - self.last_time <= hz // 32:
            return
        if not (self.epoch_on and jif == self.last_time):
            self.last_cwnd = cwnd
            self.last_time = jif
            if not self.epoch_on:
                self.epoch_on = True
                self.epoch_start = jif
                self.ack_cnt = acked
                self.tcp_cwnd = cwnd
                if self.last_max_cwnd <= cwnd:
                    self.bic_k = 0
                    self.origin = cwnd
                else:
                    self.bic_k = cubic_root(self.cube_factor * <uint64_t>(self.last_max_cwnd - cwnd))
                    self.origin = self.last_max_cwnd
            # t since the epoch began plus the minimum delay, in 2^-10 s
            t = <uint64_t>(jif - self.epoch_start + (self.delay_min * 1000 + s.tick - 1) // s.tick)
            t = (t << BICTCP_HZ) // <uint64_t>hz
            offs = <uint64_t>self.bic_k - t if t < <uint64_t>self.bic_k else t - <uint64_t>self.bic_k
            delta = <int64_t>((<uint64_t>self.cube_rtt_scale * offs * offs * offs) >> (10 + 3 * BICTCP_HZ))
            target = self.origin - delta if t < <uint64_t>self.bic_k else self.origin + delta
            self.cnt = cwnd // (target - cwnd) if target > cwnd else 100 * cwnd
            if self.last_max_cwnd == 0 and self.cnt > 20:
                self.cnt = 20         # unknown bandwidth: at least 5 % growth per RTT
        if self.tcp_friendliness:
            delta = (cwnd * self.beta_scale) >> 3
            if delta > 0:
                while self.ack_cnt > delta:
                    self.ack_cnt -= delta
                    self.tcp_cwnd += 1
            if self.tcp_cwnd > cwnd:
                max_cnt = cwnd // (self.tcp_cwnd - cwnd)
                if self.cnt > max_cnt:
                    self.cnt = max_cnt
        if self.cnt < 2:
            self.cnt = 2

    cdef int on_rtt(self, TcpSender s, int64_t rtt, int64_t now) except -1:
        """cubictcp_acked: the minimum delay and HyStart (rtt: the newest ACKed segment's, ns)."""
        cdef int64_t delay = rtt // 1000
        if self.epoch_on and (now + s.jiffy_phase) // s.tick - self.epoch_start < 1000000000 // s.tick:
            return 0                  # discard delay samples right after a window reduction
        if delay <= 0:
            delay = 1
        if self.delay_min == 0 or self.delay_min > delay:
            self.delay_min = delay
        if not self.found and s.cwnd < s.ssthresh and self.hystart:
            self._hystart_update(s, delay, now)

    cdef void _hystart_update(self, TcpSender s, int64_t delay, int64_t now) noexcept:
        cdef int64_t now_us = now // 1000, threshold, rate, ack_delay, thresh
        if s.snd_una > self.end_seq:
            self._hystart_reset(s, now)
        if s.cwnd < self.hystart_low_window:
            return
        if now_us - self.last_ack <= HYSTART_ACK_DELTA:
            self.last_ack = now_us
            # hystart_ack_delay: TSO/GRO cushion from the pacing rate Linux keeps even without
            # fq (2 cwnd / srtt in slow start), at most 1 ms
            ack_delay = 0
            if s.srtt > 0:
                rate = <int64_t>(2.0 * s.cwnd * s.mss / (s.srtt * 1e-9))
                if rate > 0:
                    ack_delay = min(<int64_t>1000, <int64_t>GSO_MAX_SIZE * 4 * 1000000 // rate)
            threshold = (self.delay_min + ack_delay) >> 1      # no pacing: half
            if now_us - self.round_start > threshold:
                self.found = True
                s.ssthresh = s.cwnd
        if self.curr_rtt < 0 or self.curr_rtt > delay:
            self.curr_rtt = delay
        if self.sample_cnt < HYSTART_MIN_SAMPLES:
            self.sample_cnt += 1
        else:
            thresh = self.delay_min >> 3
            if thresh < HYSTART_DELAY_MIN:
                thresh = HYSTART_DELAY_MIN
            elif thresh > HYSTART_DELAY_MAX:
                thresh = HYSTART_DELAY_MAX
            if self.curr_rtt > self.delay_min + thresh:
                self.found = True
                s.ssthresh = s.cwnd

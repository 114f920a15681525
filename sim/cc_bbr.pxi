# BBR v1 as Linux implements it (net/ipv4/tcp_bbr.c, with the delivery-rate samples of
# net/ipv4/tcp_rate.c and the windowed filters of lib/win_minmax.c), in Linux's fixed point:
# bandwidth in segments per microsecond << 24, gains in 1/256, times in microseconds (the min-RTT
# and ProbeRTT clocks in jiffies).
#
#   model    bw = max delivery rate over the last 10 packet-timed rounds (app-limited samples only
#            when they raise it); min_rtt = min RTT over 10 s
#   Startup  pacing and cwnd gain 2/ln2; left when the max bw grew < 25 % in 3 rounds
#   Drain    pacing gain ln2/2 until the segments in flight fall to one BDP
#   ProbeBW  pacing gain cycle 5/4, 3/4, 1 x 6 (phase = one min_rtt; random first phase), cwnd
#            gain 2
#   ProbeRTT when min_rtt is 10 s old: cwnd 4 for max(200 ms, one round), then back
#   cwnd     cwnd_gain x BDP + 3 TSO goals (+ the ACK-aggregation allowance), rounded up to even;
#            grown by the delivered segments toward it; in loss recovery packet conservation for
#            the first round, the pre-recovery cwnd restored after (bbr_set_cwnd_to_recover_or_restore)
#   pacing   pacing_gain x bw x 99 %, per segment of payload (TcpSender._paced: Linux's internal
#            pacing, the first 10 segments unpaced)
#   lt_bw    long-term (policer) bandwidth: two lossy (>= 20 %) intervals of 4-16 rounds with
#            consistent rates make BBR use their average for 48 rounds
# The rate sampler (tcp_rate.c) lives here: it needs each segment's delivery state at its last
# transmission, kept in a ring indexed by segment. BBR needs the SackRack recovery (cong_control).

cdef enum:
    BBR_STARTUP = 0
    BBR_DRAIN = 1
    BBR_PROBE_BW = 2
    BBR_PROBE_RTT = 3
    BBR_CYCLE_LEN = 8
    BW_SCALE = 24
    BBR_SCALE = 8
    BBR_UNIT = 256
    BBR_CYCLE_RAND = 7
    BBR_EXTRA_ACKED_WIN_RTTS = 5
    BBR_LT_INTVL_MIN_RTTS = 4
    TCP_INIT_CWND = 10

cdef int64_t BW_UNIT = (<int64_t>1) << BW_SCALE
cdef int64_t NO_MIN_RTT = 0xFFFFFFFF           # ~0U: no RTT sample yet


cdef struct MinmaxSample:
    int64_t t
    int64_t v


cdef int64_t minmax_reset(MinmaxSample* m, int64_t t, int64_t v) noexcept:
    m[0].t = m[1].t = m[2].t = t
    m[0].v = m[1].v = m[2].v = v
    return v


cdef int64_t minmax_running_max(MinmaxSample* m, int64_t win, int64_t t, int64_t v) noexcept:
    """lib/win_minmax.c: Kathleen Nichols' windowed max with three samples (best, 2nd, 3rd
    best in successive quarters / halves of the window)."""
    cdef int64_t dt
    if v >= m[0].v or t - m[2].t > win:
        return minmax_reset(m, t, v)
    if v >= m[1].v:
        m[2].t = m[1].t = t
        m[2].v = m[1].v = v
    elif v >= m[2].v:
        m[2].t = t
        m[2].v = v
    dt = t - m[0].t
    if dt > win:
        m[0] = m[1]
        m[1] = m[2]
        m[2].t = t
        m[2].v = v
        if t - m[0].t > win:
            m[0] = m[1]
            m[1] = m[2]
            m[2].t = t
            m[2].v = v
    elif m[1].t == m[0].t and dt > win // 4:
        m[2].t = m[1].t = t
        m[2].v = m[1].v = v
    elif m[2].t == m[1].t and dt > win // 2:
        m[2].t = t
        m[2].v = v
    return m[0].v


cdef class Bbr(CongestionOps):
    # parameters (Linux's static consts; gains in 1/256)
    cdef readonly int64_t high_gain, drain_gain, cwnd_gain, probe_gain, drain_probe_gain
    cdef readonly int64_t bw_rtts, min_rtt_win_s, probe_rtt_ms, cwnd_min_target
    cdef readonly int64_t full_bw_thresh, full_bw_cnt_max, pacing_margin_pct
    cdef readonly int64_t lt_loss_thresh, lt_bw_max_rtts, min_tso_rate
    cdef readonly bint lt_enabled, extra_acked_enabled
    # struct bbr
    cdef readonly int64_t min_rtt_us, min_rtt_stamp, probe_rtt_done_stamp
    cdef MinmaxSample bw[3]
    cdef readonly int64_t rtt_cnt, next_rtt_delivered, cycle_mstamp
    cdef readonly int mode, prev_ca_state, cycle_idx
    cdef readonly bint packet_conservation, round_start, idle_restart, probe_rtt_round_done
    cdef readonly bint lt_is_sampling, lt_use_bw, full_bw_reached, has_seen_rtt
    cdef readonly int64_t lt_rtt_cnt, lt_bw, lt_last_delivered, lt_last_stamp, lt_last_lost
    cdef readonly int64_t pacing_gain, cur_cwnd_gain, full_bw_cnt, prior_cwnd, full_bw
    cdef int64_t ack_epoch_mstamp, ack_epoch_acked, extra_acked_win_rtts, extra_acked_win_idx
    cdef int64_t extra_acked[2]
    cdef bint started                           # the first data segment went out (bbr_init)
    cdef uint64_t rng
    # tcp_rate.c: the connection's delivery state (times in ns)
    cdef readonly int64_t delivered, delivered_mstamp, first_tx_mstamp, app_limited
    cdef int64_t lost
    # the rate sample being built for the current ACK (struct rate_sample)
    cdef int64_t rs_prior_delivered, rs_prior_mstamp, rs_interval_us, rs_last_end
    cdef readonly int64_t rs_delivered
    cdef bint rs_app_limited, rs_retrans
    # per segment, at its last transmission (ring, index seg & (cap - 1))
    cdef int64_t* tx_delivered
    cdef int64_t* tx_mstamp                     # tp->delivered_mstamp then (-1: delivered)
    cdef int64_t* tx_first                      # tp->first_tx_mstamp then
    cdef int64_t* tx_time
    cdef uint8_t* tx_app
    cdef uint8_t* tx_retx
    cdef int64_t cap
    # state log for tests and timelines (``record``): one row per round start and per change of
    # mode or gain-cycle phase
    cdef public bint record
    cdef list log
    cdef int last_mode, last_idx

    def __init__(self, double high_gain=2.885, double cwnd_gain=2.0, double probe_gain=1.25,
                 int64_t bw_rtts=10, double min_rtt_win=10.0, double probe_rtt_time=0.2,
                 int64_t cwnd_min_target=4, double full_bw_thresh=1.25, int64_t full_bw_cnt=3,
                 double pacing_margin=0.01, bint lt_bw=True, double lt_loss_thresh=0.2,
                 int64_t lt_bw_max_rtts=48, bint extra_acked=True, double min_tso_rate=1.2e6):
        self.recovery = RECOVERY_NEWRENO
        self.name = "bbr"
        self.cong_control = True
        # Linux: BBR_UNIT * 2885 / 1000 + 1 and BBR_UNIT * 1000 / 2885
        self.high_gain = <int64_t>(BBR_UNIT * high_gain) + 1
        self.drain_gain = <int64_t>(BBR_UNIT / high_gain)
        self.cwnd_gain = <int64_t>(BBR_UNIT * cwnd_gain)
        self.probe_gain = <int64_t>(BBR_UNIT * probe_gain)
        self.drain_probe_gain = <int64_t>(BBR_UNIT * (2.0 - probe_gain))
        self.bw_rtts = bw_rtts
        self.min_rtt_win_s = <int64_t>(min_rtt_win * 1e6)
        self.probe_rtt_ms = <int64_t>(probe_rtt_time * 1e3 + 0.5)
        self.cwnd_min_target = cwnd_min_target
        self.full_bw_thresh = <int64_t>(BBR_UNIT * full_bw_thresh)
        self.full_bw_cnt_max = full_bw_cnt
        self.pacing_margin_pct = <int64_t>(pacing_margin * 100 + 0.5)
        self.lt_enabled = lt_bw
        self.lt_loss_thresh = <int64_t>(BBR_UNIT * lt_loss_thresh + 0.5)
        self.lt_bw_max_rtts = lt_bw_max_rtts
        self.extra_acked_enabled = extra_acked
        self.min_tso_rate = <int64_t>min_tso_rate
        self.log = []

    def __dealloc__(self):
        self._free()

    cdef void _free(self) noexcept:
        free(self.tx_delivered)
        free(self.tx_mstamp)
        free(self.tx_first)
        free(self.tx_time)
        free(self.tx_app)
        free(self.tx_retx)

    # ---- the per-segment ring ----
    cdef int _grow(self, TcpSender s, int64_t need) except -1:
        cdef int64_t newcap = self.cap if self.cap > 0 else 64, seg, i, j
        cdef int64_t* d
        cdef int64_t* m
        cdef int64_t* f
        cdef int64_t* t
        cdef uint8_t* a
        cdef uint8_t* r
        while newcap < need:
            newcap *= 2
        d = <int64_t*>calloc(newcap, sizeof(int64_t))
        m = <int64_t*>calloc(newcap, sizeof(int64_t))
        f = <int64_t*>calloc(newcap, sizeof(int64_t))
        t = <int64_t*>calloc(newcap, sizeof(int64_t))
        a = <uint8_t*>calloc(newcap, 1)
        r = <uint8_t*>calloc(newcap, 1)
        if d == NULL or m == NULL or f == NULL or t == NULL or a == NULL or r == NULL:
            raise MemoryError()
        if self.cap > 0:
            for seg in range(s.snd_una, s.snd_max):
                i = seg & (self.cap - 1)
                j = seg & (newcap - 1)
                d[j] = self.tx_delivered[i]
                m[j] = self.tx_mstamp[i]
                f[j] = self.tx_first[i]
                t[j] = self.tx_time[i]
                a[j] = self.tx_app[i]
                r[j] = self.tx_retx[i]
        self._free()
        self.tx_delivered, self.tx_mstamp, self.tx_first, self.tx_time = d, m, f, t
        self.tx_app, self.tx_retx = a, r
        self.cap = newcap

    # ---- connection life ----
    cdef int on_start(self, TcpSender s, int64_t now) except -1:
        s.ssthresh = 1e9                        # TCP_INFINITE_SSTHRESH
        s.pacing = True
        self.started = False
        self.last_mode = -1
        self.delivered = 0
        self.lost = 0
        self.delivered_mstamp = self.first_tx_mstamp = now
        self.app_limited = 0
        self._rs_clear()
        # a per-connection stream for the random gain-cycle phase, from the host's jiffy phase
        # (itself drawn from the run's seed), the flow and the connection
        self.rng = <uint64_t>s.jiffy_phase * 0x9E3779B97F4A7C15ULL ^ (<uint64_t>s.flow << 32) ^ <uint64_t>s.conn
        self._init(s, now)
        if self.cap == 0:
            self._grow(s, 64)

    cdef void _init(self, TcpSender s, int64_t now) noexcept:
        """bbr_init."""
        self.prior_cwnd = 0
        self.rtt_cnt = 0
        self.next_rtt_delivered = self.delivered
        self.prev_ca_state = CA_OPEN
        self.packet_conservation = False
        self.probe_rtt_done_stamp = 0
        self.probe_rtt_round_done = False
        self.min_rtt_us = s.min_rtt // 1000 if s.min_rtt >= 0 else NO_MIN_RTT
        self.min_rtt_stamp = self._jiffies(s, now)
        minmax_reset(self.bw, self.rtt_cnt, 0)
        self.has_seen_rtt = False
        self._init_pacing_rate_from_rtt(s)
        self.round_start = False
        self.idle_restart = False
        self.full_bw_reached = False
        self.full_bw = 0
        self.full_bw_cnt = 0
        self.cycle_mstamp = 0
        self.cycle_idx = 0
        self._reset_lt_bw_sampling()
        self.mode = BBR_STARTUP
        self.pacing_gain = self.high_gain
        self.cur_cwnd_gain = self.high_gain
        self.ack_epoch_mstamp = now // 1000
        self.ack_epoch_acked = 0
        self.extra_acked_win_rtts = 0
        self.extra_acked_win_idx = 0
        self.extra_acked[0] = self.extra_acked[1] = 0

    cdef inline int64_t _jiffies(self, TcpSender s, int64_t now) noexcept:
        return (now + s.jiffy_phase) // s.tick

    cdef inline int64_t _hz(self, TcpSender s) noexcept:
        return 1000000000 // s.tick

    cdef uint32_t _random_below(self, uint32_t n) noexcept:
        """get_random_u32_below: splitmix64 on the connection's stream."""
        cdef uint64_t z
        self.rng += 0x9E3779B97F4A7C15ULL
        z = self.rng
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
        z = z ^ (z >> 31)
        return <uint32_t>(((z >> 32) * n) >> 32)

    # ---- tcp_rate.c ----
    cdef inline void _rs_clear(self) noexcept:
        self.rs_prior_delivered = 0
        self.rs_prior_mstamp = -1
        self.rs_interval_us = -1
        self.rs_last_end = 0
        self.rs_app_limited = False
        self.rs_retrans = False

    cdef int on_send(self, TcpSender s, int64_t seg, bint retx, int64_t now) except -1:
        """tcp_rate_skb_sent (and CA_EVENT_TX_START): the delivery state this segment carries."""
        cdef int64_t i
        if not self.started and not retx:
            # tcp_init_transfer: bbr_init sees the handshake's RTT; the application's first
            # write finds nothing queued (tcp_rate_check_app_limited)
            self.started = True
            self._init(s, now)
            self.app_limited = self.delivered if self.delivered > 0 else 1
        if s.snd_max == s.snd_una:
            self.first_tx_mstamp = self.delivered_mstamp = now
            if self.app_limited:
                self._tx_start(s, now)
        if seg - s.snd_una + 1 > self.cap:
            self._grow(s, seg - s.snd_una + 1)
        i = seg & (self.cap - 1)
        self.tx_delivered[i] = self.delivered
        self.tx_mstamp[i] = self.delivered_mstamp
        self.tx_first[i] = self.first_tx_mstamp
        self.tx_time[i] = now
        self.tx_app[i] = self.app_limited != 0
        self.tx_retx[i] = retx

    cdef int on_app_write(self, TcpSender s, int64_t now) except -1:
        """tcp_rate_check_app_limited: nothing left unsent and cwnd not filled."""
        cdef int64_t unsent = (s.avail if s.avail < s.n_seg else s.n_seg) - s.snd_max
        cdef int64_t out = s.snd_max - s.snd_una
        if s.state == TCP_ESTABLISHED and unsent < 1 and out < <int64_t>s.cwnd:
            self.app_limited = self.delivered + out if self.delivered + out > 0 else 1

    cdef int on_delivered(self, TcpSender s, int64_t seg, bint sacked, int64_t now) except -1:
        """tcp_rate_skb_delivered: the rate sample follows the most recently sent segment."""
        cdef int64_t i = seg & (self.cap - 1), tx
        if self.tx_mstamp[i] < 0:
            return 0
        tx = self.tx_time[i]
        if (self.rs_prior_delivered == 0 or tx > self.first_tx_mstamp
                or (tx == self.first_tx_mstamp and seg + 1 > self.rs_last_end)):
            self.rs_prior_delivered = self.tx_delivered[i]
            self.rs_prior_mstamp = self.tx_mstamp[i]
            self.rs_app_limited = self.tx_app[i]
            self.rs_retrans = self.tx_retx[i]
            self.rs_last_end = seg + 1
            self.first_tx_mstamp = tx
            self.rs_interval_us = (tx - self.tx_first[i]) // 1000
        if sacked:
            self.tx_mstamp[i] = -1

    cdef void _rate_gen(self, TcpSender s, AckSample* a, int64_t now) noexcept:
        """tcp_rate_gen: rs_delivered segments over rs_interval_us (-1: no valid sample)."""
        cdef int64_t ack_us, min_rtt
        if self.app_limited and self.delivered > self.app_limited:
            self.app_limited = 0
        if a.acked_sacked:
            self.delivered_mstamp = now
        if self.rs_prior_mstamp < 0:
            self.rs_delivered = -1
            self.rs_interval_us = -1
            return
        self.rs_delivered = self.delivered - self.rs_prior_delivered
        ack_us = (now - self.rs_prior_mstamp) // 1000
        if ack_us > self.rs_interval_us:
            self.rs_interval_us = ack_us
        min_rtt = s.min_rtt // 1000 if s.min_rtt >= 0 else NO_MIN_RTT
        if self.rs_interval_us < min_rtt:
            self.rs_interval_us = -1

    # ---- bbr_main ----
    cdef int on_ack_sample(self, TcpSender s, AckSample* a, int64_t now) except -1:
        cdef int64_t bw
        self.delivered = a.delivered
        self.lost = a.lost
        self._rate_gen(s, a, now)
        self._update_bw(s, a, now)
        self._update_ack_aggregation(s, a, now)
        if self.mode == BBR_PROBE_BW and self._is_next_cycle_phase(s, a, now):
            self._advance_cycle_phase()
        self._check_full_bw_reached()
        self._check_drain(s, a.in_flight, now)
        self._update_min_rtt(s, a, now)
        self._update_gains()
        bw = self._bw()
        self._set_pacing_rate(s, bw, self.pacing_gain)
        self._set_cwnd(s, a, bw, self.cur_cwnd_gain)
        if self.record and (self.round_start or self.mode != self.last_mode
                            or self.cycle_idx != self.last_idx):
            self.last_mode = self.mode
            self.last_idx = self.cycle_idx
            self.log.append((now, self.mode, self.cycle_idx, self.pacing_gain, self.cur_cwnd_gain,
                             <int64_t>s.cwnd, s.pacing_rate, self._bw(), self.full_bw,
                             self.full_bw_cnt, self.rtt_cnt, self.min_rtt_us, a.in_flight,
                             self.round_start))
        self._rs_clear()

    cdef inline int64_t _max_bw(self) noexcept:
        return self.bw[0].v

    cdef inline int64_t _bw(self) noexcept:
        return self.lt_bw if self.lt_use_bw else self.bw[0].v

    cdef int64_t _rate_bytes_per_sec(self, TcpSender s, int64_t rate, int64_t gain) noexcept:
        cdef uint64_t r = <uint64_t>rate * <uint64_t>s.mss
        r = (r * <uint64_t>gain) >> BBR_SCALE
        r = r * <uint64_t>(1000000 // 100 * (100 - self.pacing_margin_pct))
        return <int64_t>(r >> BW_SCALE)

    cdef void _init_pacing_rate_from_rtt(self, TcpSender s) noexcept:
        cdef int64_t rtt_us, bw
        if s.srtt > 0:
            rtt_us = <int64_t>(s.srtt / 1000) if s.srtt >= 1000 else 1
            self.has_seen_rtt = True
        else:
            rtt_us = 1000
        bw = <int64_t>s.cwnd * BW_UNIT // rtt_us
        s.pacing_rate = self._rate_bytes_per_sec(s, bw, self.high_gain)

    cdef void _set_pacing_rate(self, TcpSender s, int64_t bw, int64_t gain) noexcept:
        cdef int64_t rate = self._rate_bytes_per_sec(s, bw, gain)
        if not self.has_seen_rtt and s.srtt > 0:
            self._init_pacing_rate_from_rtt(s)
        if self.full_bw_reached or rate > s.pacing_rate:
            s.pacing_rate = rate

    cdef int64_t _tso_segs_goal(self, TcpSender s) noexcept:
        cdef int64_t b = s.pacing_rate >> 10, segs, min_segs        # sk_pacing_shift 10: ~1 ms
        if b > 65536 - 1 - 320:                                     # GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER
            b = 65536 - 1 - 320
        min_segs = 1 if s.pacing_rate < (self.min_tso_rate >> 3) else 2
        segs = b // s.mss
        if segs < min_segs:
            segs = min_segs
        return segs if segs < 0x7F else 0x7F

    cdef void _save_cwnd(self, TcpSender s) noexcept:
        if self.prev_ca_state < CA_RECOVERY and self.mode != BBR_PROBE_RTT:
            self.prior_cwnd = <int64_t>s.cwnd
        elif <int64_t>s.cwnd > self.prior_cwnd:
            self.prior_cwnd = <int64_t>s.cwnd

    cdef void _tx_start(self, TcpSender s, int64_t now) noexcept:
        """bbr_cwnd_event(CA_EVENT_TX_START) while app-limited: restarting from idle."""
        self.idle_restart = True
        self.ack_epoch_mstamp = now // 1000
        self.ack_epoch_acked = 0
        if self.mode == BBR_PROBE_BW:
            self._set_pacing_rate(s, self._bw(), BBR_UNIT)
        elif self.mode == BBR_PROBE_RTT:
            self._check_probe_rtt_done(s, now)

    cdef int64_t _bdp(self, int64_t bw, int64_t gain) noexcept:
        cdef uint64_t w
        if self.min_rtt_us == NO_MIN_RTT:
            return TCP_INIT_CWND
        w = <uint64_t>bw * <uint64_t>self.min_rtt_us
        return <int64_t>((((w * <uint64_t>gain) >> BBR_SCALE) + <uint64_t>BW_UNIT - 1) // <uint64_t>BW_UNIT)

    cdef int64_t _quantization_budget(self, TcpSender s, int64_t cwnd) noexcept:
        cwnd += 3 * self._tso_segs_goal(s)
        cwnd = (cwnd + 1) & ~1
        if self.mode == BBR_PROBE_BW and self.cycle_idx == 0:
            cwnd += 2
        return cwnd

    cdef inline int64_t _inflight(self, TcpSender s, int64_t bw, int64_t gain) noexcept:
        return self._quantization_budget(s, self._bdp(bw, gain))

    cdef int64_t _packets_in_net_at_edt(self, TcpSender s, int64_t inflight_now, int64_t now) noexcept:
        cdef int64_t edt = s.wstamp if s.wstamp > now else now
        cdef int64_t interval_us = (edt - now) // 1000
        cdef int64_t delivered = <int64_t>((<uint64_t>self._bw() * <uint64_t>interval_us) >> BW_SCALE)
        cdef int64_t at_edt = inflight_now
        if self.pacing_gain > BBR_UNIT:
            at_edt += self._tso_segs_goal(s)
        if delivered >= at_edt:
            return 0
        return at_edt - delivered

    cdef int64_t _ack_aggregation_cwnd(self) noexcept:
        cdef int64_t max_aggr, aggr = 0
        if self.extra_acked_enabled and self.full_bw_reached:
            max_aggr = self._bw() * 100000 // BW_UNIT             # bbr_extra_acked_max_us
            aggr = self.extra_acked[0] if self.extra_acked[0] > self.extra_acked[1] else self.extra_acked[1]
            if aggr > max_aggr:
                aggr = max_aggr
        return aggr

    cdef bint _set_cwnd_to_recover_or_restore(self, TcpSender s, AckSample* a, int64_t acked,
                                              int64_t* new_cwnd) noexcept:
        cdef int prev_state = self.prev_ca_state, state = a.ca_state
        cdef int64_t cwnd = <int64_t>s.cwnd
        if a.losses > 0:
            cwnd = cwnd - a.losses if cwnd - a.losses > 1 else 1
        if state == CA_RECOVERY and prev_state != CA_RECOVERY:
            self.packet_conservation = True
            self.next_rtt_delivered = self.delivered
            cwnd = a.in_flight + acked
        elif prev_state >= CA_RECOVERY and state < CA_RECOVERY:
            if self.prior_cwnd > cwnd:
                cwnd = self.prior_cwnd
            self.packet_conservation = False
        self.prev_ca_state = state
        if self.packet_conservation:
            new_cwnd[0] = cwnd if cwnd > a.in_flight + acked else a.in_flight + acked
            return True
        new_cwnd[0] = cwnd
        return False

    cdef void _set_cwnd(self, TcpSender s, AckSample* a, int64_t bw, int64_t gain) noexcept:
        cdef int64_t acked = a.acked_sacked, cwnd = <int64_t>s.cwnd, target
        if acked:
            if not self._set_cwnd_to_recover_or_restore(s, a, acked, &cwnd):
                target = self._bdp(bw, gain)
                target += self._ack_aggregation_cwnd()
                target = self._quantization_budget(s, target)
                if self.full_bw_reached:
                    cwnd = cwnd + acked if cwnd + acked < target else target
                elif cwnd < target or self.delivered < TCP_INIT_CWND:
                    cwnd = cwnd + acked
                if cwnd < self.cwnd_min_target:
                    cwnd = self.cwnd_min_target
        if cwnd > s.rwnd:
            cwnd = s.rwnd
        if self.mode == BBR_PROBE_RTT and cwnd > self.cwnd_min_target:
            cwnd = self.cwnd_min_target
        s.cwnd = <double>cwnd

    cdef bint _is_next_cycle_phase(self, TcpSender s, AckSample* a, int64_t now) noexcept:
        cdef bint full_length = (self.delivered_mstamp - self.cycle_mstamp) // 1000 > self.min_rtt_us
        cdef int64_t inflight, bw
        if self.pacing_gain == BBR_UNIT:
            return full_length
        inflight = self._packets_in_net_at_edt(s, a.prior_in_flight, now)
        bw = self._max_bw()
        if self.pacing_gain > BBR_UNIT:
            return full_length and (a.losses > 0 or inflight >= self._inflight(s, bw, self.pacing_gain))
        return full_length or inflight <= self._inflight(s, bw, BBR_UNIT)

    cdef void _advance_cycle_phase(self) noexcept:
        self.cycle_idx = (self.cycle_idx + 1) & (BBR_CYCLE_LEN - 1)
        self.cycle_mstamp = self.delivered_mstamp

    cdef void _reset_probe_bw_mode(self) noexcept:
        self.mode = BBR_PROBE_BW
        self.cycle_idx = BBR_CYCLE_LEN - 1 - <int>self._random_below(BBR_CYCLE_RAND)
        self._advance_cycle_phase()

    cdef void _reset_mode(self) noexcept:
        if not self.full_bw_reached:
            self.mode = BBR_STARTUP
        else:
            self._reset_probe_bw_mode()

    # ---- long-term (policer) bandwidth ----
    cdef void _reset_lt_bw_sampling_interval(self) noexcept:
        self.lt_last_stamp = self.delivered_mstamp // 1000000
        self.lt_last_delivered = self.delivered
        self.lt_last_lost = self.lost
        self.lt_rtt_cnt = 0

    cdef void _reset_lt_bw_sampling(self) noexcept:
        self.lt_bw = 0
        self.lt_use_bw = False
        self.lt_is_sampling = False
        self._reset_lt_bw_sampling_interval()

    cdef void _lt_bw_interval_done(self, TcpSender s, int64_t bw) noexcept:
        cdef int64_t diff
        if self.lt_bw:
            diff = bw - self.lt_bw if bw > self.lt_bw else self.lt_bw - bw
            if (diff * BBR_UNIT <= (BBR_UNIT // 8) * self.lt_bw
                    or self._rate_bytes_per_sec(s, diff, BBR_UNIT) <= 4000 // 8):
                self.lt_bw = (bw + self.lt_bw) >> 1
                self.lt_use_bw = True
                self.pacing_gain = BBR_UNIT
                self.lt_rtt_cnt = 0
                return
        self.lt_bw = bw
        self._reset_lt_bw_sampling_interval()

    cdef void _lt_bw_sampling(self, TcpSender s, int64_t losses, bint app_limited) noexcept:
        cdef int64_t lost, delivered, t
        if not self.lt_enabled:
            return
        if self.lt_use_bw:
            if self.mode == BBR_PROBE_BW and self.round_start:
                self.lt_rtt_cnt += 1
                if self.lt_rtt_cnt >= self.lt_bw_max_rtts:
                    self._reset_lt_bw_sampling()
                    self._reset_probe_bw_mode()
            return
        if not self.lt_is_sampling:
            if not losses:
                return
            self._reset_lt_bw_sampling_interval()
            self.lt_is_sampling = True
        if app_limited:
            self._reset_lt_bw_sampling()
            return
        if self.round_start:
            self.lt_rtt_cnt += 1
        if self.lt_rtt_cnt < BBR_LT_INTVL_MIN_RTTS:
            return
        if self.lt_rtt_cnt > 4 * BBR_LT_INTVL_MIN_RTTS:
            self._reset_lt_bw_sampling()
            return
        if not losses:
            return
        lost = self.lost - self.lt_last_lost
        delivered = self.delivered - self.lt_last_delivered
        if not delivered or (lost << BBR_SCALE) < self.lt_loss_thresh * delivered:
            return
        t = self.delivered_mstamp // 1000000 - self.lt_last_stamp
        if t < 1:
            return
        t *= 1000
        self._lt_bw_interval_done(s, delivered * BW_UNIT // t)

    # ---- the model ----
    cdef void _update_bw(self, TcpSender s, AckSample* a, int64_t now) noexcept:
        cdef int64_t bw
        self.round_start = False
        if self.rs_delivered < 0 or self.rs_interval_us <= 0:
            return
        if self.rs_prior_delivered >= self.next_rtt_delivered:
            self.next_rtt_delivered = self.delivered
            self.rtt_cnt += 1
            self.round_start = True
            self.packet_conservation = False
        self._lt_bw_sampling(s, a.losses, self.rs_app_limited)
        bw = self.rs_delivered * BW_UNIT // self.rs_interval_us
        if not self.rs_app_limited or bw >= self._max_bw():
            minmax_running_max(self.bw, self.bw_rtts, self.rtt_cnt, bw)

    cdef void _update_ack_aggregation(self, TcpSender s, AckSample* a, int64_t now) noexcept:
        cdef int64_t epoch_us, expected, extra
        if (not self.extra_acked_enabled or a.acked_sacked <= 0 or self.rs_delivered < 0
                or self.rs_interval_us <= 0):
            return
        if self.round_start:
            self.extra_acked_win_rtts = min(0x1F, self.extra_acked_win_rtts + 1)
            if self.extra_acked_win_rtts >= BBR_EXTRA_ACKED_WIN_RTTS:
                self.extra_acked_win_rtts = 0
                self.extra_acked_win_idx = 1 - self.extra_acked_win_idx
                self.extra_acked[self.extra_acked_win_idx] = 0
        epoch_us = self.delivered_mstamp // 1000 - self.ack_epoch_mstamp
        if epoch_us < 0:
            epoch_us = 0
        expected = self._bw() * epoch_us // BW_UNIT
        if self.ack_epoch_acked <= expected or self.ack_epoch_acked + a.acked_sacked >= (1 << 20):
            self.ack_epoch_acked = 0
            self.ack_epoch_mstamp = self.delivered_mstamp // 1000
            expected = 0
        self.ack_epoch_acked = min(0xFFFFF, self.ack_epoch_acked + a.acked_sacked)
        extra = self.ack_epoch_acked - expected
        if extra > <int64_t>s.cwnd:
            extra = <int64_t>s.cwnd
        if extra > self.extra_acked[self.extra_acked_win_idx]:
            self.extra_acked[self.extra_acked_win_idx] = extra

    cdef void _check_full_bw_reached(self) noexcept:
        cdef int64_t thresh
        if self.full_bw_reached or not self.round_start or self.rs_app_limited:
            return
        thresh = self.full_bw * self.full_bw_thresh >> BBR_SCALE
        if self._max_bw() >= thresh:
            self.full_bw = self._max_bw()
            self.full_bw_cnt = 0
            return
        self.full_bw_cnt += 1
        self.full_bw_reached = self.full_bw_cnt >= self.full_bw_cnt_max

    cdef void _check_drain(self, TcpSender s, int64_t in_flight, int64_t now) noexcept:
        if self.mode == BBR_STARTUP and self.full_bw_reached:
            self.mode = BBR_DRAIN
            s.ssthresh = <double>self._inflight(s, self._max_bw(), BBR_UNIT)
        if (self.mode == BBR_DRAIN and self._packets_in_net_at_edt(s, in_flight, now)
                <= self._inflight(s, self._max_bw(), BBR_UNIT)):
            self._reset_probe_bw_mode()

    cdef void _check_probe_rtt_done(self, TcpSender s, int64_t now) noexcept:
        if not (self.probe_rtt_done_stamp and self._jiffies(s, now) > self.probe_rtt_done_stamp):
            return
        self.min_rtt_stamp = self._jiffies(s, now)
        if self.prior_cwnd > <int64_t>s.cwnd:
            s.cwnd = <double>self.prior_cwnd
        self._reset_mode()

    cdef void _update_min_rtt(self, TcpSender s, AckSample* a, int64_t now) noexcept:
        cdef int64_t jif = self._jiffies(s, now), rtt_us = a.rtt // 1000 if a.rtt >= 0 else -1
        cdef bint expired = jif > self.min_rtt_stamp + self.min_rtt_win_s * self._hz(s) // 1000000
        if rtt_us >= 0 and (rtt_us < self.min_rtt_us or expired):
            self.min_rtt_us = rtt_us
            self.min_rtt_stamp = jif
        if self.probe_rtt_ms > 0 and expired and not self.idle_restart and self.mode != BBR_PROBE_RTT:
            self.mode = BBR_PROBE_RTT
            self._save_cwnd(s)
            self.probe_rtt_done_stamp = 0
        if self.mode == BBR_PROBE_RTT:
            self.app_limited = self.delivered + a.in_flight if self.delivered + a.in_flight > 0 else 1
            if not self.probe_rtt_done_stamp and a.in_flight <= self.cwnd_min_target:
                self.probe_rtt_done_stamp = jif + (self.probe_rtt_ms * self._hz(s) + 999) // 1000
                self.probe_rtt_round_done = False
                self.next_rtt_delivered = self.delivered
            elif self.probe_rtt_done_stamp:
                if self.round_start:
                    self.probe_rtt_round_done = True
                if self.probe_rtt_round_done:
                    self._check_probe_rtt_done(s, now)
        if self.rs_delivered > 0:
            self.idle_restart = False

    cdef void _update_gains(self) noexcept:
        if self.mode == BBR_STARTUP:
            self.pacing_gain = self.high_gain
            self.cur_cwnd_gain = self.high_gain
        elif self.mode == BBR_DRAIN:
            self.pacing_gain = self.drain_gain
            self.cur_cwnd_gain = self.high_gain
        elif self.mode == BBR_PROBE_BW:
            self.pacing_gain = BBR_UNIT if self.lt_use_bw else self._cycle_gain(self.cycle_idx)
            self.cur_cwnd_gain = self.cwnd_gain
        else:
            self.pacing_gain = BBR_UNIT
            self.cur_cwnd_gain = BBR_UNIT

    cdef inline int64_t _cycle_gain(self, int idx) noexcept:
        if idx == 0:
            return self.probe_gain
        if idx == 1:
            return self.drain_probe_gain
        return BBR_UNIT

    # ---- loss events from the recovery ----
    cdef double ssthresh_on_loss(self, TcpSender s) except? -1:
        """bbr_ssthresh: remember cwnd for after recovery; ssthresh stays."""
        self._save_cwnd(s)
        return s.ssthresh

    cdef int on_loss(self, TcpSender s, bint timeout, int64_t now) except -1:
        """bbr_set_state(TCP_CA_Loss) on a timeout: a round ends, Startup's full-bw count restarts."""
        if timeout:
            self.prev_ca_state = CA_LOSS
            self.full_bw = 0
            self.round_start = True
            self._lt_bw_sampling(s, 1, False)

    cdef double undo_cwnd(self, TcpSender s) except? -1:
        self.full_bw = 0
        self.full_bw_cnt = 0
        self._reset_lt_bw_sampling()
        return s.cwnd

    # ---- Python access (tests, timelines) ----
    LOG_COLUMNS = ("t_ns", "mode", "cycle_idx", "pacing_gain", "cwnd_gain", "cwnd", "pacing_rate",
                   "bw", "full_bw", "full_bw_cnt", "rtt_cnt", "min_rtt_us", "in_flight",
                   "round_start")

    def events(self):
        """The state log (``record``): rows of LOG_COLUMNS; gains in 1/256, bw in segments per
        microsecond << 24, pacing_rate in bytes/s."""
        return list(self.log)

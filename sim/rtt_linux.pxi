# Linux's RTT estimator and timer granularity, shared by the Linux sender and the request-mode
# client. Written after net/ipv4/tcp_input.c (tcp_rtt_estimator, __tcp_set_rto) and
# kernel/time/timer.c (calc_wheel_index): microsecond integer arithmetic as the kernel does it.

ctypedef struct LinuxRtt:
    int64_t srtt8          # 8 * smoothed RTT, us (0: no sample yet)
    int64_t mdev4          # 4 * mean deviation, us (mdev_us)
    int64_t mdev_max       # largest mdev4 in the current window of data, us
    int64_t rttvar         # us; never below rto_min (RFC 6298's 4*RTTVAR with the floor inside)
    int64_t rtt_seq        # segment index: rttvar decays once this is acknowledged


cdef inline void lrtt_reset(LinuxRtt* e) noexcept:
    memset(e, 0, sizeof(LinuxRtt))


cdef void lrtt_sample(LinuxRtt* e, int64_t m, int64_t rto_min_us, int64_t snd_una,
                      int64_t snd_nxt) noexcept:
    """Feed one RTT sample ``m`` (us, > 0): gains 1/8 and 1/4, Eifel-style smaller gain when the
    RTT falls, rttvar = max(mdev over the last window of data, rto_min)."""
    cdef int64_t srtt = e.srtt8
    if srtt != 0:
        m -= srtt >> 3
        srtt += m
        if m < 0:
            m = -m
            m -= e.mdev4 >> 2
            if m > 0:
                m >>= 3
        else:
            m -= e.mdev4 >> 2
        e.mdev4 += m
        if e.mdev4 > e.mdev_max:
            e.mdev_max = e.mdev4
            if e.mdev_max > e.rttvar:
                e.rttvar = e.mdev_max
        if snd_una > e.rtt_seq:
            if e.mdev_max < e.rttvar:
                e.rttvar -= (e.rttvar - e.mdev_max) >> 2
            e.rtt_seq = snd_nxt
            e.mdev_max = rto_min_us
    else:
        srtt = m << 3
        e.mdev4 = m << 1
        e.rttvar = e.mdev4 if e.mdev4 > rto_min_us else rto_min_us
        e.mdev_max = e.rttvar
        e.rtt_seq = snd_nxt
    e.srtt8 = srtt if srtt > 1 else 1


cdef inline int64_t jiffies_ns(int64_t ns, int64_t tick) noexcept:
    """usecs_to_jiffies: a duration rounded up to whole jiffies (``tick`` ns), in ns."""
    return (ns + tick - 1) // tick * tick


cdef inline int64_t lrtt_rto(LinuxRtt* e, int64_t tick, int64_t max_rto) noexcept:
    """__tcp_set_rto + tcp_bound_rto: srtt + rttvar in jiffies, at most max_rto (ns)."""
    cdef int64_t r = jiffies_ns(((e.srtt8 >> 3) + e.rttvar) * 1000, tick)
    return r if r < max_rto else max_rto


cdef int64_t wheel_expiry(int64_t now, int64_t delay, int64_t tick, int64_t phase) noexcept:
    """When a kernel timer armed at ``now`` for ``delay`` ns (whole jiffies) fires: the timer
    wheel counts from the current jiffy and rounds the expiry up to its level's granularity
    (8^level jiffies; level from the distance: < 63, < 504, < 4032 ... jiffies), so it never
    fires early (kernel/time/timer.c calc_index). ``phase`` (ns, in [0, tick)): where the host's
    jiffies begin relative to simulated time."""
    cdef int64_t clk = (now + phase) // tick
    cdef int64_t d = (delay + tick - 1) // tick
    cdef int64_t gran = 1, start = 63
    while d >= start and gran < 16777216:
        gran *= 8
        start *= 8
    return ((clk + d) // gran + 1) * gran * tick - phase

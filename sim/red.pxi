# RED (Floyd & Jacobson 1993). On each arrival the average queue is updated,
#   avg <- (1-w_q)·avg + w_q·q                when the queue is busy,
#   avg <- (1-w_q)^m·avg, m = idle/s          after an idle period (s = mean_pktsize·8/rate),
# then: avg < min_th: accept; min_th <= avg < max_th: p_b = max_p·(avg-min_th)/(max_th-min_th)
# (byte mode: p_b·size/mean_pktsize), p_a = p_b/(1 - count·p_b), drop with probability p_a;
# gentle: max_th <= avg < 2·max_th: p_b = max_p + (1-max_p)·(avg-max_th)/max_th; beyond: drop.
# wait (ns-2's wait_): p_a = 0 while count·p_b < 1, p_b/(2 - count·p_b) while < 2, then 1.
# Queue length q and thresholds are in packets (packet mode) or in bytes/mean_pktsize (byte mode).
# count = arrivals since the last drop, restarted when avg crosses min_th; as in Floyd's ns-2
# code, no RED drop while the queue holds at most one packet. A full buffer (limit) drops regardless.

cdef class RED(Queue):
    cdef public double min_th, max_th, max_p, w_q, mean_pktsize
    cdef public bint byte_mode, gentle, wait
    cdef readonly double avg
    cdef readonly int64_t count
    cdef readonly int64_t early_drops, forced_drops
    cdef bint idle, crossed
    cdef int64_t idle_since
    cdef Rng rng

    def __init__(self, int64_t limit_pkts=0, int64_t limit_bytes=0, double min_th=5,
                 double max_th=15, double max_p=0.1, double w_q=0.002, bint byte_mode=False,
                 bint gentle=False, double mean_pktsize=1000, rng_state=None, bint wait=False):
        Queue.__init__(self, limit_pkts, limit_bytes)
        self.min_th = min_th
        self.max_th = max_th
        self.max_p = max_p
        self.w_q = w_q
        self.byte_mode = byte_mode
        self.gentle = gentle
        self.mean_pktsize = mean_pktsize
        self.wait = wait
        self.count = 0
        self.idle = True
        if rng_state is not None:
            rng_seed(&self.rng, rng_state)

    cdef double avg_len(self) noexcept:
        return self.avg

    cdef bint enqueue(self, Packet* p, int64_t now) except -1:
        cdef double q, m, pb, pa, s
        if self.byte_mode:
            q = self.len_bytes / self.mean_pktsize
        else:
            q = <double>self.len_pkts
        if self.idle and self.len_pkts == 0:
            s = self.mean_pktsize * 8e9 / self.link.rate_bps
            m = (now - self.idle_since) / s
            self.avg *= pow(1.0 - self.w_q, m)
            self.idle = False
        else:
            self.avg = (1.0 - self.w_q) * self.avg + self.w_q * q
        pa = 0.0
        self.count += 1
        if self.avg < self.min_th or self.len_pkts <= 1:
            # as in Floyd's ns-2 code: no drop below min_th or into a (nearly) empty queue
            self.crossed = False
        elif not self.gentle and self.avg >= self.max_th or self.avg >= 2.0 * self.max_th:
            pa = 1.0
        elif not self.crossed:
            # avg just crossed min_th: restart the count (ns-2 edv_.old)
            self.crossed = True
            self.count = 1
        else:
            if self.avg < self.max_th:
                pb = self.max_p * (self.avg - self.min_th) / (self.max_th - self.min_th)
            else:
                pb = self.max_p + (1.0 - self.max_p) * (self.avg - self.max_th) / self.max_th
            if self.byte_mode:
                pb = pb * p.size / self.mean_pktsize
            if self.wait:
                # ns-2's wait_: no drop before 1/p_b arrivals, uniform over the next 1/p_b
                if self.count * pb < 1.0:
                    pa = 0.0
                elif self.count * pb < 2.0:
                    pa = pb / (2.0 - self.count * pb)
                else:
                    pa = 1.0
            elif self.count * pb >= 1.0:
                pa = 1.0
            else:
                pa = pb / (1.0 - self.count * pb)
        if pa > 0.0 and (pa >= 1.0 or rng_uniform(&self.rng) < pa):
            self.count = 0
            self.early_drops += 1
            self.drop(p, now)
            return False
        if self.full_for(p):
            self.count = 0
            self.forced_drops += 1
            self.drop(p, now)
            return False
        self.fifo_in(p)
        return True

    cdef Packet* dequeue(self, int64_t now) except? NULL:
        cdef Packet* p = self.fifo_out()
        if self.len_pkts == 0 and not self.idle:
            self.idle = True
            self.idle_since = now
        return p

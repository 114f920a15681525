# RED (Floyd & Jacobson 1993), as ns-2.35's REDQueue (red.cc) computes it. On each arrival the
# average queue is updated,
#   avg <- (1-w_q)·avg + w_q·q                      when the queue was not idle,
#   avg <- (1-w_q)^(m+1)·avg + w_q·q, m = int(idle·ptc)   after an idle period,
# where ptc = rate/(8·mean_pktsize) packets/s and the idle clock starts when the transmitter
# finishes the last packet and finds the queue empty (ns-2 sets idletime_ in deque() returning
# no packet, i.e. at the end of that transmission, not when the packet left the queue); an
# arrival while that last packet is still on the transmitter ends the idleness.
# Then: avg < min_th: accept; min_th <= avg < max_th: p_b = max_p·(avg-min_th)/(max_th-min_th),
# p_a = p_b/(1 - count·p_b), drop with probability p_a; gentle: max_th <= avg < 2·max_th:
# p_b = max_p + (1-max_p)·(avg-max_th)/max_th; beyond: drop.
# wait (ns-2's wait_): p_a = 0 while count·p_b < 1, p_b/(2 - count·p_b) while < 2, then 1.
# Byte mode (ns-2 bytes_ + queue_in_bytes_): q, thresholds and count are in bytes/mean_pktsize
# (count = int(count_bytes / mean_pktsize)), and p_a (after the count and wait adjustment) is
# scaled by size/mean_pktsize.
# count = arrivals since the last drop, restarted when avg crosses min_th; as in ns-2, no early
# drop unless the queue holds more than one unit of what it counts: more than one packet in
# packet mode, more than one byte (any packet) in byte mode. A full buffer (limit) drops
# regardless.

cdef class RED(Queue):
    cdef public double min_th, max_th, max_p, w_q, mean_pktsize
    cdef public bint byte_mode, gentle, wait
    cdef readonly double avg
    cdef readonly int64_t count, count_bytes
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
        self.count_bytes = 0
        self.idle = True
        if rng_state is not None:
            rng_seed(&self.rng, rng_state)

    cdef double avg_len(self) noexcept:
        return self.avg

    cdef bint enqueue(self, Packet* p, int64_t now) except -1:
        cdef double q, pb, pa, count
        cdef int64_t m = 0
        if self.byte_mode:
            q = self.len_bytes / self.mean_pktsize
        else:
            q = <double>self.len_pkts
        if self.idle and now >= self.idle_since:
            # ns-2: pretend m = int(ptc·idle) packets arrived to the empty queue
            m = <int64_t>((now - self.idle_since) * 1e-9 * self.link.rate_bps
                          / (8.0 * self.mean_pktsize))
        self.idle = False
        self.avg = pow(1.0 - self.w_q, <double>(m + 1)) * self.avg + self.w_q * q
        pa = 0.0
        self.count += 1
        self.count_bytes += p.size
        if self.avg < self.min_th or (self.len_bytes < 2 if self.byte_mode else self.len_pkts <= 1):
            # as in ns-2: no early drop below min_th or into a (nearly) empty queue
            self.crossed = False
        elif not self.gentle and self.avg >= self.max_th or self.avg >= 2.0 * self.max_th:
            pa = 1.0
        elif not self.crossed:
            # avg just crossed min_th: restart the count (ns-2 edv_.old)
            self.crossed = True
            self.count = 1
            self.count_bytes = p.size
        else:
            if self.avg < self.max_th:
                pb = self.max_p * (self.avg - self.min_th) / (self.max_th - self.min_th)
            else:
                pb = self.max_p + (1.0 - self.max_p) * (self.avg - self.max_th) / self.max_th
            count = <double>self.count
            if self.byte_mode:
                count = <double>(<int64_t>(self.count_bytes / self.mean_pktsize))
            if self.wait:
                # ns-2's wait_: no drop before 1/p_b arrivals, uniform over the next 1/p_b
                if count * pb < 1.0:
                    pa = 0.0
                elif count * pb < 2.0:
                    pa = pb / (2.0 - count * pb)
                else:
                    pa = 1.0
            elif count * pb >= 1.0:
                pa = 1.0
            else:
                pa = pb / (1.0 - count * pb)
            if self.byte_mode and pa < 1.0:
                pa = pa * p.size / self.mean_pktsize
        if pa > 0.0 and (pa >= 1.0 or rng_uniform(&self.rng) < pa):
            self.count = 0
            self.count_bytes = 0
            self.early_drops += 1
            self.drop(p, now)
            return False
        if self.full_for(p):
            self.count = 0
            self.count_bytes = 0
            self.forced_drops += 1
            self.drop(p, now)
            return False
        self.fifo_in(p)
        return True

    cdef Packet* dequeue(self, int64_t now) except? NULL:
        cdef Packet* p = self.fifo_out()
        if p != NULL and self.len_pkts == 0:
            # idle from the end of this packet's transmission unless another arrives before
            self.idle = True
            self.idle_since = now + <int64_t>(p.size * 8e9 / self.link.rate_bps + 0.5)
        return p

# Links: one direction, one Queue, a transmitter of ``rate_bps`` and a propagation delay.
# Optional shaping: ``overhead`` bytes counted per packet beyond its IP bytes (HTB counts the
# Ethernet header), and a token bucket of ``burst`` bytes filled at ``rate_bps``: the head packet
# leaves at ``line_bps`` as soon as the bucket is not negative and takes its bytes from it (HTB:
# a class may send while its tokens are >= 0), so up to ``burst`` bytes pass at line rate.
#
# send(): entry into the queue (the queue may drop); when the transmitter is free the head packet
# is dequeued and occupies it for size*8/rate; then it propagates for ``delay`` and arrives at the
# far node. Optional random loss happens on the wire, so the packet has used capacity and shows in
# the link's pcap and series.

cdef enum:
    LINK_TX_DONE = 1
    LINK_ARRIVE = 2


# Delay line: arrivals on a link are scheduled in (t, seq) order (busy_until only grows and the
# delay is fixed), so only the earliest one needs to sit in the simulator's heap (event arg 1);
# the rest wait here with the sequence number they got when scheduled, and each enters the heap
# when its predecessor is popped. The event order is exactly that of one heap with all of them;
# the heap just stays small. An arrival earlier than the line's tail gets its own event (arg 0).
ctypedef struct WireEntry:
    int64_t t
    uint64_t seq
    Packet* pkt


@cython.final
cdef class Link(Component):
    cdef readonly int32_t id
    cdef readonly str name
    cdef readonly int32_t src, dst          # node ids
    cdef Node dst_node
    cdef readonly double rate_bps
    cdef double ns_per_byte
    cdef readonly double line_bps               # token bucket: the rate packets leave at
    cdef double line_ns_per_byte
    cdef readonly int32_t overhead              # bytes counted per packet beyond p.size
    cdef readonly double burst                  # token-bucket depth, bytes (0: no bucket)
    cdef double tokens                          # bytes in the bucket at tb_t (may be < 0)
    cdef int64_t tb_t
    cdef readonly int64_t delay             # ns
    cdef readonly Queue queue
    cdef readonly int64_t busy_until        # the transmitter is free from this time on
    cdef bint tx_pending                    # a TX_DONE wake-up is scheduled
    cdef bint resume_due                    # the transmitter frees at busy_until with no wake-up
    cdef uint64_t resume_seq                # the number that wake-up would have had
    cdef readonly double loss_p
    cdef Rng rng
    cdef PcapWriter pcap
    # counters
    cdef readonly int64_t arrivals, arrival_bytes     # offered to the queue
    cdef readonly int64_t departures, departure_bytes  # transmitted
    cdef readonly int64_t lost, lost_bytes            # random loss on the wire
    cdef readonly int64_t delivered, delivered_bytes  # reached the far node
    cdef readonly int64_t on_wire                     # propagating now
    cdef readonly int64_t busy_ns                     # transmitter busy time
    cdef WireEntry* wire                              # delay line (ring), see WireEntry
    cdef Py_ssize_t wire_cap, wire_head, wire_n
    cdef bint wire_active                             # a line event (arg 1) is in the heap
    cdef int64_t wire_last_t                          # arrival time of the line's last packet
    cdef double q_area_pkts, q_area_bytes             # integral of queue length over time
    cdef int64_t q_last_t
    cdef readonly int64_t q_max_pkts, q_max_bytes
    # time series (monitored links only)
    cdef int64_t bin_ns
    cdef Py_ssize_t nbins
    cdef int64_t* ser

    def __init__(self, int id, str name, Node src, Node dst, double rate_bps, int64_t delay,
                 Queue queue, double loss_p=0.0, rng_state=None, double line_bps=0.0,
                 double burst=0.0, int overhead=0):
        self.id = id
        self.name = name
        self.src = src.id
        self.dst = dst.id
        self.dst_node = dst
        self.rate_bps = rate_bps
        self.ns_per_byte = 8e9 / rate_bps
        self.delay = delay
        self.queue = queue
        queue.link = self
        self.loss_p = loss_p
        if rng_state is not None:
            rng_seed(&self.rng, rng_state)
        self.overhead = overhead
        self.burst = burst if line_bps > 0 else 0.0
        self.tokens = self.burst
        self.line_bps = line_bps
        if line_bps > 0:
            self.line_ns_per_byte = 8e9 / line_bps

    def __dealloc__(self):
        cdef Py_ssize_t i
        free(self.ser)
        if self.wire != NULL:
            for i in range(self.wire_n):
                pkt_free(self.wire[(self.wire_head + i) & (self.wire_cap - 1)].pkt)
            free(self.wire)

    def attach(self, Simulator sim):
        self.sim = sim
        self.queue.sim = sim
        sim.keep.append(self)
        sim.links_list.append(self)
        self.queue.attached()

    def monitor(self, int64_t bin_ns, int64_t duration_ns):
        """Record a time series (arrivals, departures, drops per bin of ``bin_ns``)."""
        self.bin_ns = bin_ns
        self.nbins = duration_ns // bin_ns + 1
        free(self.ser)
        self.ser = <int64_t*>calloc(self.nbins * 5, sizeof(int64_t))
        if self.ser == NULL:
            raise MemoryError()

    def set_pcap(self, PcapWriter w):
        self.pcap = w

    cdef inline Py_ssize_t _bin(self, int64_t now) noexcept:
        cdef Py_ssize_t b = now // self.bin_ns
        return b if b < self.nbins else self.nbins - 1

    cdef inline void _q_integrate(self, int64_t now) noexcept:
        cdef int64_t dt = now - self.q_last_t
        if dt > 0:
            self.q_area_pkts += <double>dt * self.queue.len_pkts
            self.q_area_bytes += <double>dt * self.queue.len_bytes
            self.q_last_t = now

    cdef int send(self, Packet* p, int64_t now) except -1:
        """A packet arrives at this link's queue."""
        cdef int64_t d0 = 0
        self.arrivals += 1
        self.arrival_bytes += p.size
        if self.ser != NULL:
            self.ser[5 * self._bin(now)] += p.size
            self.ser[5 * self._bin(now) + 1] += 1
            d0 = self.queue.drop_pkts
        self._q_integrate(now)
        p.t_enq = now
        self.queue.enqueue(p, now)
        if self.queue.len_pkts > self.q_max_pkts:
            self.q_max_pkts = self.queue.len_pkts
        if self.queue.len_bytes > self.q_max_bytes:
            self.q_max_bytes = self.queue.len_bytes
        if self.ser != NULL:
            self.ser[5 * self._bin(now) + 4] += self.queue.drop_pkts - d0
        self._poke(now)

    cdef inline int _poke(self, int64_t now) except -1:
        """Transmit now if the transmitter is free, else make sure it is woken when it frees.

        As in ns-2, a transmitter frees by an event of its own, numbered when the transmission
        began (ns-2's link schedules its queue's resume then, whether or not a packet waits). We
        schedule that wake-up only if a packet waits, but a packet offered at the very nanosecond
        the transmitter frees, by an event ordered before that wake-up would have been (an ACK
        arrival, say), waits for it: so two links freeing at the same instant start their next
        packets in the order their previous ones began, as in ns-2."""
        if self.tx_pending:
            return 0
        if now > self.busy_until or (now == self.busy_until
                                     and (not self.resume_due or self.sim.after(self.resume_seq))):
            self._start_tx(now)
        elif self.queue.len_pkts > 0:
            self.tx_pending = True
            if now == self.busy_until:
                self.sim.schedule_numbered(now, self.resume_seq, self, LINK_TX_DONE, NULL, 0)
            else:
                self.sim.schedule(self.busy_until, self, LINK_TX_DONE, NULL, 0)

    cdef int _start_tx(self, int64_t now) except -1:
        # The packet's whole life on this link is scheduled at once: it occupies the transmitter
        # until busy_until and arrives at busy_until + delay. A wake-up (TX_DONE) event exists
        # only while packets wait, so uncongested links cost one event per packet.
        self._q_integrate(now)
        cdef Packet* p
        cdef int64_t tx
        if self.burst > 0:
            self.tokens += (now - self.tb_t) / self.ns_per_byte
            if self.tokens > self.burst:
                self.tokens = self.burst
            self.tb_t = now
            if self.tokens < 0:
                # the shaper holds the head packet until the bucket is refilled to zero
                if self.queue.len_pkts > 0:
                    self.busy_until = now + <int64_t>ceil(-self.tokens * self.ns_per_byte)
                    self.tx_pending = True
                    self.sim.schedule(self.busy_until, self, LINK_TX_DONE, NULL, 0)
                return 0
        p = self.queue.dequeue(now)
        if p == NULL:
            return 0
        if self.burst > 0:
            tx = <int64_t>((p.size + self.overhead) * self.line_ns_per_byte + 0.5)
            self.tokens -= p.size + self.overhead
            # busy time is counted at the shaped rate: utilization of the shaper
            self.busy_ns += <int64_t>((p.size + self.overhead) * self.ns_per_byte + 0.5)
        else:
            tx = <int64_t>((p.size + self.overhead) * self.ns_per_byte + 0.5)
            self.busy_ns += tx
        self.busy_until = now + tx
        self.departures += 1
        self.departure_bytes += p.size
        if self.ser != NULL:
            self.ser[5 * self._bin(now) + 2] += p.size
            self.ser[5 * self._bin(now) + 3] += 1
        if self.pcap is not None:
            self.pcap.write(p, now)
        if self.loss_p > 0.0 and rng_uniform(&self.rng) < self.loss_p:
            # lost on the wire: it used the transmitter but never arrives
            self.lost += 1
            self.lost_bytes += p.size
            self.sim.drop(p)
        else:
            self.on_wire += 1
            self._wire_add(self.busy_until + self.delay, p)
        self.resume_due = self.queue.len_pkts == 0
        if self.resume_due:
            self.resume_seq = self.sim.take_seq()
        else:
            self.tx_pending = True
            self.sim.schedule(self.busy_until, self, LINK_TX_DONE, NULL, 0)

    cdef int _wire_add(self, int64_t t, Packet* p) except -1:
        """Schedule the arrival of ``p`` at ``t`` (takes a sequence number like schedule())."""
        cdef uint64_t seq = self.sim.take_seq()
        cdef WireEntry* nw
        cdef Py_ssize_t i, cap
        if not self.wire_active:
            self.wire_active = True
            self.wire_last_t = t
            return self.sim.push(t, seq, self, LINK_ARRIVE, p, 1)
        if t < self.wire_last_t:
            return self.sim.push(t, seq, self, LINK_ARRIVE, p, 0)
        if self.wire_n == self.wire_cap:
            cap = max(64, 2 * self.wire_cap)
            nw = <WireEntry*>malloc(cap * sizeof(WireEntry))
            if nw == NULL:
                raise MemoryError()
            for i in range(self.wire_n):
                nw[i] = self.wire[(self.wire_head + i) & (self.wire_cap - 1)]
            free(self.wire)
            self.wire = nw
            self.wire_cap = cap
            self.wire_head = 0
        nw = &self.wire[(self.wire_head + self.wire_n) & (self.wire_cap - 1)]
        nw.t = t
        nw.seq = seq
        nw.pkt = p
        self.wire_n += 1
        self.wire_last_t = t
        return 0

    cdef int kick(self, int64_t now) except -1:
        """Start transmitting if idle and the queue has a packet (for disciplines that hold packets)."""
        self._poke(now)

    cdef int handle(self, int32_t kind, Packet* p, int64_t arg, int64_t now) except -1:
        cdef WireEntry e
        if kind == LINK_TX_DONE:
            self.tx_pending = False
            self._start_tx(now)
        elif kind == LINK_ARRIVE:
            if arg == 1:
                if self.wire_n > 0:
                    e = self.wire[self.wire_head]
                    self.wire_head = (self.wire_head + 1) & (self.wire_cap - 1)
                    self.wire_n -= 1
                    self.sim.push(e.t, e.seq, self, LINK_ARRIVE, e.pkt, 1)
                else:
                    self.wire_active = False
            self.on_wire -= 1
            self.delivered += 1
            self.delivered_bytes += p.size
            self.dst_node.receive(p, now)

    @property
    def busy(self):
        return self.sim is not None and self.sim.now < self.busy_until

    # ---- results ----
    def finish(self, int64_t now):
        self._q_integrate(now)

    def stats(self, int64_t now):
        """Counters and time averages up to ``now`` (ns)."""
        self._q_integrate(now)
        q = self.queue
        return {
            "name": self.name, "rate_bps": self.rate_bps, "delay_s": self.delay * 1e-9,
            "arrivals": self.arrivals, "arrival_bytes": self.arrival_bytes,
            "departures": self.departures, "departure_bytes": self.departure_bytes,
            "queue_drops": q.drop_pkts, "queue_drop_bytes": q.drop_bytes,
            "lost": self.lost, "lost_bytes": self.lost_bytes,
            "delivered": self.delivered, "delivered_bytes": self.delivered_bytes,
            "on_wire": self.on_wire,
            "queue_pkts": q.len_pkts, "queue_bytes": q.len_bytes,
            "mean_queue_pkts": self.q_area_pkts / now if now > 0 else 0.0,
            "mean_queue_bytes": self.q_area_bytes / now if now > 0 else 0.0,
            "max_queue_pkts": self.q_max_pkts, "max_queue_bytes": self.q_max_bytes,
            "busy_s": self.busy_ns * 1e-9,
            "limit_pkts": q.limit_pkts, "limit_bytes": q.limit_bytes,
        }

    def packets_by_flow(self):
        """{(flow, dir): packets} waiting in this link's queue (packets being transmitted or
        propagating are in the simulator's pending events)."""
        return self.queue.packets_by_flow()

    def series(self):
        """(bin_ns, dict of numpy arrays) or None when the link is not monitored."""
        import numpy as np
        if self.ser == NULL:
            return None
        cdef int64_t[:, ::1] view = <int64_t[:self.nbins, :5]>self.ser
        a = np.array(view, copy=True)
        return self.bin_ns, {"arrival_bytes": a[:, 0], "arrival_packets": a[:, 1],
                             "bytes": a[:, 2], "packets": a[:, 3], "drops": a[:, 4]}

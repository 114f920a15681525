# Queue disciplines: the base class every discipline subclasses, and DropTail.
#
# Contract (see sim/README.md):
#   enqueue(p, now) takes ownership of p: it stores it (return True) or calls self.drop(p, now)
#     (return False). A push-out discipline may instead drop another packet with self.drop().
#   dequeue(now) returns the next packet to transmit or NULL.
#   len_pkts / len_bytes must equal what is stored: use count_in()/count_out() when keeping
#     packets in your own structures (the fifo helpers below do it for the built-in FIFO).
#   self.link gives the link (rate_bps, delay, id) and self.sim the simulator (now, flow tables).

cdef class Queue:
    cdef readonly Link link
    cdef Simulator sim
    cdef readonly int64_t len_pkts, len_bytes
    cdef readonly int64_t limit_pkts     # 0 = no packet limit
    cdef readonly int64_t limit_bytes    # 0 = no byte limit
    cdef readonly int64_t enq_pkts, enq_bytes, deq_pkts, deq_bytes, drop_pkts, drop_bytes
    cdef PktFifo fifo                    # the built-in FIFO (subclasses may ignore it)

    def __init__(self, int64_t limit_pkts=0, int64_t limit_bytes=0):
        self.limit_pkts = limit_pkts
        self.limit_bytes = limit_bytes

    def __dealloc__(self):
        fifo_free_all(&self.fifo)

    def attached(self):
        """Called once the queue has its link and simulator (override to size per-link state)."""
        pass

    # ---- accounting helpers for subclasses ----
    cdef inline void count_in(self, Packet* p) noexcept:
        self.len_pkts += 1
        self.len_bytes += p.size
        self.enq_pkts += 1
        self.enq_bytes += p.size

    cdef inline void count_out(self, Packet* p) noexcept:
        self.len_pkts -= 1
        self.len_bytes -= p.size
        self.deq_pkts += 1
        self.deq_bytes += p.size

    cdef void drop(self, Packet* p, int64_t now) noexcept:
        """Drop ``p`` (not stored in the queue): count it against the queue and its flow, free it."""
        self.drop_pkts += 1
        self.drop_bytes += p.size
        self.sim.drop(p)

    cdef void drop_stored(self, Packet* p, int64_t now) noexcept:
        """Drop a packet that was stored and is already unlinked from the discipline's structure."""
        self.len_pkts -= 1
        self.len_bytes -= p.size
        self.drop(p, now)

    cdef inline bint full_for(self, Packet* p) noexcept:
        """True when storing ``p`` would exceed the packet or byte limit."""
        return ((self.limit_pkts > 0 and self.len_pkts + 1 > self.limit_pkts) or
                (self.limit_bytes > 0 and self.len_bytes + p.size > self.limit_bytes))

    cdef inline void fifo_in(self, Packet* p) noexcept:
        fifo_push(&self.fifo, p)
        self.count_in(p)

    cdef inline Packet* fifo_out(self) noexcept:
        cdef Packet* p = fifo_pop(&self.fifo)
        if p != NULL:
            self.count_out(p)
        return p

    # ---- the interface ----
    cdef bint enqueue(self, Packet* p, int64_t now) except -1:
        if self.full_for(p):
            self.drop(p, now)
            return False
        self.fifo_in(p)
        return True

    cdef Packet* dequeue(self, int64_t now) except? NULL:
        return self.fifo_out()

    cdef double avg_len(self) noexcept:
        """Length reported in queue samples next to the instantaneous one (RED: its EWMA)."""
        return <double>self.len_pkts

    def packets_by_flow(self):
        """{(flow, dir): packets stored}. Disciplines that keep packets outside ``self.fifo``
        override this (it backs the conservation checks)."""
        out = {}
        cdef Packet* p = self.fifo.head
        while p != NULL:
            key = (p.flow, p.dir)
            out[key] = out.get(key, 0) + 1
            p = p.next
        return out

    def counters(self):
        return {"len_pkts": self.len_pkts, "len_bytes": self.len_bytes, "enq_pkts": self.enq_pkts,
                "deq_pkts": self.deq_pkts, "drop_pkts": self.drop_pkts, "drop_bytes": self.drop_bytes}


cdef class DropTail(Queue):
    """FIFO that drops arrivals when ``limit_pkts`` packets or ``limit_bytes`` bytes are stored."""
    pass


cdef class DropList(Queue):
    """DropTail that also drops the packets whose 1-based arrival index at this queue is listed
    (ns-2's ErrorModel/List), counting data packets (payload > 0) only, or every packet
    (``all_packets``): deterministic losses for tests and examples."""
    cdef int64_t* drops
    cdef Py_ssize_t ndrops, next_drop
    cdef bint all_packets
    cdef readonly int64_t data_arrivals

    def __init__(self, list drop, int64_t limit_pkts=0, int64_t limit_bytes=0,
                 bint all_packets=False):
        self.limit_pkts = limit_pkts
        self.limit_bytes = limit_bytes
        self.all_packets = all_packets
        idx = sorted(set(int(i) for i in drop))
        self.ndrops = len(idx)
        self.drops = <int64_t*>malloc(max(1, self.ndrops) * sizeof(int64_t))
        for i, v in enumerate(idx):
            self.drops[i] = v

    def __dealloc__(self):
        free(self.drops)

    cdef bint enqueue(self, Packet* p, int64_t now) except -1:
        if p.payload > 0 or self.all_packets:
            self.data_arrivals += 1
            if self.next_drop < self.ndrops and self.drops[self.next_drop] == self.data_arrivals:
                self.next_drop += 1
                self.drop(p, now)
                return False
        return Queue.enqueue(self, p, now)

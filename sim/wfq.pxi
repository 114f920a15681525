# Classful fair scheduling (Wu & Nikolaidis 2002, section 3) and discipline wrappers.
#
# ClassfulQueue: N per-class sub-queues (any Queue that stores packets in its built-in FIFO,
# e.g. DropTail or RED, each typically with 1/N of the buffer) served by Deficit Round Robin
# (Shreedhar & Varghese 1996) in place of the paper's WFQ: DRR gives backlogged classes
# bandwidth in proportion to their quanta to within one packet per round, is work-conserving
# (an idle class leaves the round at once, so its share goes to the backlogged ones) and
# costs O(1) per packet.  Quanta follow a two-level weight model: classes belong to groups
# (the lifetime classes: short / long), a group's weight is split equally among its *backlogged*
# classes (the paper: "the bandwidth pools within the lifetime classes are equally shared across
# connections of the same lifetime class but with different RTTs"), and the short/long group
# weights come from a ShortLongSplit (fixed 60/40 or DAS).  Without a classifier, packets are
# sorted by ``p.cls`` (the scenario's class tag) and ``weights`` gives one group per class.
#
# Wrappers put a per-packet drop decision in front of any inner queue and mirror its counters:
# FairShareQueue (per-flow scheduled losses of long-lived flows, fairshare.pxi) and
# PerturbQueue (APM/CAPM/K-based drops, capm.pxi).


cdef class ClassfulQueue(Queue):
    cdef readonly int n_classes, n_groups
    cdef readonly FlowClassifier classifier
    cdef readonly ShortLongSplit split
    cdef readonly list subqueues
    cdef readonly double quantum_bytes
    cdef PyObject** sub                # borrowed from self.subqueues
    cdef int* group                    # class -> group
    cdef double* group_weight
    cdef int* group_active             # backlogged classes per group
    cdef double* quantum
    cdef double* deficit
    cdef char* fresh                   # class owes a quantum at its next turn
    cdef char* in_ring
    cdef int* ring                     # circular list of backlogged classes (DRR active list)
    cdef int ring_head, ring_n
    cdef int64_t* class_deq_bytes

    def __init__(self, list subqueues, FlowClassifier classifier=None, weights=None, groups=None,
                 ShortLongSplit split=None, double quantum_bytes=1500.0):
        cdef int c
        Queue.__init__(self)
        n = len(subqueues)
        if n == 0:
            raise ValueError("a classful queue needs at least one sub-queue")
        if classifier is not None and classifier.n_classes != n:
            raise ValueError(f"classifier has {classifier.n_classes} classes, got {n} sub-queues")
        self.n_classes = n
        self.subqueues = list(subqueues)
        self.classifier = classifier
        self.split = split
        self.quantum_bytes = quantum_bytes
        if groups is None:
            if classifier is not None:
                groups = [c // classifier.n_rtt for c in range(n)]
            else:
                groups = list(range(n))
        groups = [int(g) for g in groups]
        if len(groups) != n or min(groups) < 0:
            raise ValueError("one non-negative group per class")
        self.n_groups = max(groups) + 1
        if weights is None:
            if split is not None and self.n_groups == 2:
                weights = [split.short_share, 1.0 - split.short_share]
            else:
                weights = [1.0] * self.n_groups
        weights = [float(w) for w in weights]
        if len(weights) != self.n_groups or min(weights) <= 0:
            raise ValueError(f"need {self.n_groups} positive group weights, got {weights}")
        self.sub = <PyObject**> malloc(n * sizeof(PyObject*))
        self.group = <int*> malloc(n * sizeof(int))
        self.quantum = <double*> malloc(n * sizeof(double))
        self.deficit = <double*> malloc(n * sizeof(double))
        self.fresh = <char*> malloc(n)
        self.in_ring = <char*> malloc(n)
        self.ring = <int*> malloc(n * sizeof(int))
        self.class_deq_bytes = <int64_t*> malloc(n * sizeof(int64_t))
        self.group_weight = <double*> malloc(self.n_groups * sizeof(double))
        self.group_active = <int*> malloc(self.n_groups * sizeof(int))
        for c in range(n):
            if not isinstance(subqueues[c], Queue):
                raise TypeError("sub-queues must be simulator Queue objects")
            self.sub[c] = <PyObject*> subqueues[c]
            self.group[c] = groups[c]
            self.deficit[c] = 0.0
            self.fresh[c] = 1
            self.in_ring[c] = 0
            self.class_deq_bytes[c] = 0
            self.limit_pkts += (<Queue> subqueues[c]).limit_pkts
            self.limit_bytes += (<Queue> subqueues[c]).limit_bytes
        for c in range(self.n_groups):
            self.group_weight[c] = weights[c]
            self.group_active[c] = 0
        self.ring_head = 0
        self.ring_n = 0
        self._requantum()

    def __dealloc__(self):
        free(self.sub); free(self.group); free(self.quantum); free(self.deficit); free(self.fresh)
        free(self.in_ring); free(self.ring); free(self.class_deq_bytes); free(self.group_weight)
        free(self.group_active)

    def attached(self):
        for q in self.subqueues:
            (<Queue> q).link = self.link
            (<Queue> q).sim = self.sim
            q.attached()

    cdef void _requantum(self) noexcept:
        """Quanta ∝ effective class weights (group weight / backlogged classes of the group)."""
        cdef int c, g, k
        cdef double w, wmin = 1e300
        for c in range(self.n_classes):
            g = self.group[c]
            k = self.group_active[g] if self.group_active[g] > 0 else 1
            w = self.group_weight[g] / k
            self.quantum[c] = w
            if self.in_ring[c] and w < wmin:
                wmin = w
        if wmin == 1e300:
            return
        for c in range(self.n_classes):
            self.quantum[c] = self.quantum_bytes * self.quantum[c] / wmin

    cdef inline void _activate(self, int c) noexcept:
        self.ring[(self.ring_head + self.ring_n) % self.n_classes] = c
        self.ring_n += 1
        self.in_ring[c] = 1
        self.fresh[c] = 1
        self.deficit[c] = 0.0
        self.group_active[self.group[c]] += 1
        self._requantum()

    cdef inline void _deactivate_head(self) noexcept:
        cdef int c = self.ring[self.ring_head]
        self.ring_head = (self.ring_head + 1) % self.n_classes
        self.ring_n -= 1
        self.in_ring[c] = 0
        self.deficit[c] = 0.0
        self.group_active[self.group[c]] -= 1
        self._requantum()

    cdef void set_short_share(self, double share) noexcept:
        self.group_weight[0] = share
        self.group_weight[1] = 1.0 - share
        self._requantum()

    cdef int class_of(self, Packet* p) except -1:
        cdef int c
        if self.classifier is not None:
            if not self.classifier.knows_rtt(p.flow):
                # the paper's rttlookup: the flow's propagation RTT from the scenario
                self.classifier.set_rtt(p.flow, self.sim.flow_base_rtt[p.flow])
            c = self.classifier.classify(p.flow, p.conn)
        else:
            c = p.cls
        if c < 0 or c >= self.n_classes:
            c = self.n_classes - 1
        return c

    cdef bint enqueue(self, Packet* p, int64_t now) except -1:
        cdef int c = self.class_of(p)
        cdef int32_t size = p.size
        cdef Queue q = <Queue> self.sub[c]
        cdef bint ok
        if self.split is not None and self.classifier is not None:
            if self.split.observe(self.classifier.lifetime_of_class(c), size, now):
                self.set_short_share(self.split.short_share)
        p.user = c
        ok = q.enqueue(p, now)
        if not ok:
            self.drop_pkts += 1
            self.drop_bytes += size
            return False
        self.len_pkts += 1
        self.len_bytes += size
        self.enq_pkts += 1
        self.enq_bytes += size
        if not self.in_ring[c]:
            self._activate(c)
        return True

    cdef Packet* dequeue(self, int64_t now) except? NULL:
        cdef int c
        cdef Queue q
        cdef Packet* p
        while self.ring_n > 0:
            c = self.ring[self.ring_head]
            q = <Queue> self.sub[c]
            if q.len_pkts == 0:
                self._deactivate_head()
                continue
            if self.fresh[c]:
                self.deficit[c] += self.quantum[c]
                self.fresh[c] = 0
            if q.fifo.head != NULL and q.fifo.head.size > self.deficit[c]:
                # turn over: to the back of the round, with a new quantum next time
                self.ring_head = (self.ring_head + 1) % self.n_classes
                self.ring[(self.ring_head + self.ring_n - 1) % self.n_classes] = c
                self.fresh[c] = 1
                continue
            p = q.dequeue(now)
            if p == NULL:
                self._deactivate_head()
                continue
            self.deficit[c] -= p.size
            self.class_deq_bytes[c] += p.size
            self.len_pkts -= 1
            self.len_bytes -= p.size
            self.deq_pkts += 1
            self.deq_bytes += p.size
            if q.len_pkts == 0:
                self._deactivate_head()
            return p
        return NULL

    cdef double avg_len(self) noexcept:
        return <double> self.len_pkts

    def class_bytes(self):
        """Bytes dequeued per class so far."""
        return [self.class_deq_bytes[c] for c in range(self.n_classes)]

    def weights(self):
        """Current group weights (short/long split after DAS updates)."""
        return [self.group_weight[g] for g in range(self.n_groups)]


cdef class _DropWrapper(Queue):
    """A per-packet drop decision in front of ``inner``; counters mirror the inner queue's."""
    cdef readonly Queue inner
    cdef readonly int64_t own_drops

    def __init__(self, Queue inner):
        Queue.__init__(self, inner.limit_pkts, inner.limit_bytes)
        self.inner = inner

    def attached(self):
        self.inner.link = self.link
        self.inner.sim = self.sim
        self.inner.attached()

    cdef inline void _sync(self) noexcept:
        cdef Queue q = self.inner
        self.len_pkts = q.len_pkts
        self.len_bytes = q.len_bytes
        self.enq_pkts = q.enq_pkts
        self.enq_bytes = q.enq_bytes
        self.deq_pkts = q.deq_pkts
        self.deq_bytes = q.deq_bytes

    cdef bint wants_drop(self, Packet* p, int64_t now) except -1:
        return False

    cdef bint enqueue(self, Packet* p, int64_t now) except -1:
        cdef int64_t d0 = self.inner.drop_pkts, b0 = self.inner.drop_bytes
        cdef bint ok
        if self.wants_drop(p, now):
            self.own_drops += 1
            self.drop(p, now)
            return False
        ok = self.inner.enqueue(p, now)
        self.drop_pkts += self.inner.drop_pkts - d0
        self.drop_bytes += self.inner.drop_bytes - b0
        self._sync()
        return ok

    cdef Packet* dequeue(self, int64_t now) except? NULL:
        cdef Packet* p = self.inner.dequeue(now)
        self._sync()
        return p

    cdef double avg_len(self) noexcept:
        return self.inner.avg_len()


cdef class FairShareQueue(_DropWrapper):
    """FairShare (fairshare.pxi) in front of ``inner``: a connection becomes long-lived after
    ``threshold`` packets and is then regulated against ``long_share`` of the link rate; the
    sender's next connection starts short again."""
    cdef readonly FairShare fairshare
    cdef readonly FlowClassifier lifetime
    cdef readonly double long_share, beta

    def __init__(self, Queue inner, int threshold=50, double long_share=1.0, double beta=0.1):
        _DropWrapper.__init__(self, inner)
        if not 0.0 < long_share <= 1.0:
            raise ValueError("long_share must be in (0, 1]")
        self.lifetime = FlowClassifier(max(threshold, 0))
        self.long_share = long_share
        self.beta = beta

    def attached(self):
        _DropWrapper.attached(self)
        self.fairshare = FairShare(self.link.rate_bps * self.long_share, self.beta)

    cdef bint wants_drop(self, Packet* p, int64_t now) except -1:
        cdef Py_ssize_t f = p.flow
        if p.dir != DIR_FWD:
            return False
        if self.fairshare.is_long(f):
            if self.fairshare.long_conn(f) == p.conn:
                return self.fairshare.arrival(f, p.size, now)
            self.fairshare.end_long_flow(f)
        if self.lifetime.threshold == 0 or self.lifetime.classify(f, p.conn) >= self.lifetime.n_rtt:
            self.fairshare.init_long_flow(f, self.sim.flow_base_rtt[f], p.size, now, p.conn)
        return False


cdef class PerturbQueue(_DropWrapper):
    """APM / CAPM / K-based drops (capm.pxi) in front of ``inner``."""
    cdef readonly Perturber perturber

    def __init__(self, Queue inner, Perturber perturber):
        _DropWrapper.__init__(self, inner)
        self.perturber = perturber

    cdef bint wants_drop(self, Packet* p, int64_t now) except -1:
        if p.dir != DIR_FWD:
            return False
        return self.perturber.arrival(p.cls, now)


def drive_enqueue(Queue q, int flow, int size, int64_t now, int cls=0, int conn=0):
    """Offer one bare forward data packet (of connection ``conn``) to ``q`` without an event
    loop (discipline tests); ``q`` must be attached to a link of a simulator that has ``flow``.
    True if stored."""
    cdef Packet* p = pkt_alloc()
    p.flow = flow
    p.conn = conn
    p.size = size
    p.payload = size
    p.cls = cls
    p.dir = DIR_FWD
    p.proto = PROTO_UDP
    return q.enqueue(p, now)


def drive_dequeue(Queue q, int64_t now):
    """Take the next packet from ``q`` (discipline tests): (flow, size) or None."""
    cdef Packet* p = q.dequeue(now)
    if p == NULL:
        return None
    out = (p.flow, p.size)
    pkt_free(p)
    return out

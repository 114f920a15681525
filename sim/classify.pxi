# Flow classification for classful queues (Wu & Nikolaidis 2002, section 2).
#
# Lifetime: every flow starts short; once the router has seen ``threshold`` packets of it the
# flow is long from its next packet on (the paper's threshold is 50 packets).  RTT: the flow's
# round-trip time (seconds, given by the scenario as the paper's ``rttlookup``) falls into one
# of ``len(rtt_bounds) + 1`` classes split at the sorted boundaries.  Both together give the
# paper's SIX (2 lifetime × 3 RTT) classes.  A flow (one sender) may open several connections
# one after another; the router sees each as a new flow, so the count restarts when the
# packet's connection number changes.  Class index = lifetime * n_rtt + rtt class, so
# classes 0 .. n_rtt-1 are the short ones; lifetime disabled (threshold 0) -> one lifetime class.


cdef class FlowClassifier:
    cdef readonly int threshold        # packets; 0 = no lifetime classification
    cdef readonly int n_rtt            # RTT classes (1 = no RTT classification)
    cdef readonly int n_life           # lifetime classes (1 or 2)
    cdef readonly int n_classes
    cdef double* bounds                # RTT class boundaries, seconds, ascending
    cdef int64_t* seen                 # per flow: packets seen so far (current connection)
    cdef int* conn                     # per flow: connection those packets belong to
    cdef double* rtt                   # per flow: RTT in seconds (-1 = unknown)
    cdef Py_ssize_t cap

    def __cinit__(self, int threshold=0, rtt_bounds=()):
        cdef Py_ssize_t i
        bounds = sorted(float(b) for b in rtt_bounds)
        if threshold < 0:
            raise ValueError("lifetime threshold must be >= 0 packets")
        self.threshold = threshold
        self.n_life = 2 if threshold > 0 else 1
        self.n_rtt = len(bounds) + 1
        self.n_classes = self.n_life * self.n_rtt
        self.bounds = <double*> realloc(NULL, max(1, len(bounds)) * sizeof(double))
        for i in range(len(bounds)):
            self.bounds[i] = bounds[i]
        self.seen = NULL
        self.conn = NULL
        self.rtt = NULL
        self.cap = 0

    def __dealloc__(self):
        free(self.bounds)
        free(self.seen)
        free(self.conn)
        free(self.rtt)

    cdef void _ensure(self, Py_ssize_t flow):
        cdef Py_ssize_t new_cap, i
        if flow < self.cap:
            return
        new_cap = max(64, 2 * self.cap, flow + 1)
        self.seen = <int64_t*> realloc(self.seen, new_cap * sizeof(int64_t))
        self.conn = <int*> realloc(self.conn, new_cap * sizeof(int))
        self.rtt = <double*> realloc(self.rtt, new_cap * sizeof(double))
        if self.seen == NULL or self.rtt == NULL or self.conn == NULL:
            raise MemoryError()
        memset(&self.seen[self.cap], 0, (new_cap - self.cap) * sizeof(int64_t))
        memset(&self.conn[self.cap], 0, (new_cap - self.cap) * sizeof(int))
        for i in range(self.cap, new_cap):
            self.rtt[i] = -1.0
        self.cap = new_cap

    cpdef void set_rtt(self, Py_ssize_t flow, double rtt_s):
        """Record the RTT (seconds) the router attributes to ``flow``."""
        self._ensure(flow)
        self.rtt[flow] = rtt_s

    cdef inline bint knows_rtt(self, Py_ssize_t flow):
        return flow < self.cap and self.rtt[flow] >= 0.0

    cdef inline int rtt_class(self, Py_ssize_t flow):
        # unknown RTT (never set) counts as the shortest class
        cdef int k = 0
        cdef double r = self.rtt[flow]
        while k < self.n_rtt - 1 and r >= self.bounds[k]:
            k += 1
        return k

    cdef int classify(self, Py_ssize_t flow, int conn=0):
        """Count one packet of connection ``conn`` of ``flow``; return its class index."""
        cdef int life = 0
        self._ensure(flow)
        if conn != self.conn[flow]:
            self.conn[flow] = conn
            self.seen[flow] = 0
        self.seen[flow] += 1
        if self.threshold > 0 and self.seen[flow] > self.threshold:
            life = 1
        return life * self.n_rtt + self.rtt_class(flow)

    cpdef int class_of(self, Py_ssize_t flow):
        """Class the next packet of ``flow`` would get (without counting it)."""
        cdef int life = 0
        self._ensure(flow)
        if self.threshold > 0 and self.seen[flow] >= self.threshold:
            life = 1
        return life * self.n_rtt + self.rtt_class(flow)

    cpdef int lifetime_of_class(self, int cls):
        """0 for a short-lived class, 1 for a long-lived one."""
        return cls // self.n_rtt

    cpdef int64_t packets_seen(self, Py_ssize_t flow):
        self._ensure(flow)
        return self.seen[flow]

    def count(self, Py_ssize_t flow, int conn=0):
        """Python access to :meth:`classify` (tests): count a packet, return its class."""
        return self.classify(flow, conn)

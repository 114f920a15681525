# FairShare: per-flow scheduled losses for long-lived flows (Wu & Nikolaidis 2002, Appendix,
# Figures 14-16).  A flow enters with init_long_flow (demand = C_L, share = maxmin); tick runs
# once per RTT of the flow: m = bytes seen in the last RTT / RTT, the flow is flagged when its
# share is below its demand and m exceeds avg2peak(share) = 4/3 share (Reno's peak window is
# 4/3 of its mean), the demand is an EWMA of m with weight beta, and shares are recomputed
# max-min.  The pseudo-code recomputes only when the demands exceed C_L and otherwise keeps
# stale shares; we recompute every tick, which then gives every flow its demand (nobody is
# flagged), the intent of max-min without stale shares flagging a flow after others left.  A flagged flow loses one arriving packet, at most one
# per RTT.  Rates are bytes/s, times int64 ns.
#
# Membership follows the connection: the paper's "TCP flow starting to send data through the
# router is initially assumed to be short lived ... after a period of time, if the flow is still
# active, it is upgraded to long lived" (Wu & Nikolaidis, Appendix) is about one TCP connection;
# a sender that opens a new connection starts short again (``end_long_flow``), as the lifetime
# classifier of the classful queues does.
#
# Ticks run lazily: a flow's due ticks are caught up when its packets arrive, and every
# ``sweep`` (its smallest RTT) all flows are caught up, so a flow that went silent decays its
# demand (m = 0 ticks) and frees its share for the others as max-min requires.
from libc.stdlib cimport qsort


cdef int _cmp_double(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*> a)[0]
    cdef double y = (<const double*> b)[0]
    return (x > y) - (x < y)


cdef class FairShare:
    cdef readonly double capacity_Bps  # C_L, bytes/s for the long-lived pool
    cdef readonly double beta          # EWMA weight of the demand estimator
    cdef readonly int64_t drops        # scheduled losses imposed
    cdef Py_ssize_t cap, n_long
    cdef int* members                  # long-lived flow ids
    cdef char* active                  # per flow: initialised as long-lived
    cdef int* conn                     # per flow: the connection that is long-lived
    cdef int64_t* rtt_ns
    cdef int64_t* next_tick
    cdef int64_t* dropevent
    cdef double* count                 # bytes since the last tick
    cdef double* demand
    cdef double* share
    cdef char* flag
    cdef double* scratch
    cdef int64_t sweep_ns, next_sweep

    def __cinit__(self, double capacity_bps, double beta=0.1):
        if capacity_bps <= 0 or not 0.0 < beta <= 1.0:
            raise ValueError("FairShare needs capacity > 0 and 0 < beta <= 1")
        self.capacity_Bps = capacity_bps / 8.0
        self.beta = beta
        self.cap = 0
        self.n_long = 0
        self.drops = 0
        self.sweep_ns = 0
        self.next_sweep = 0
        self.members = NULL
        self.active = NULL
        self.conn = NULL
        self.rtt_ns = NULL
        self.next_tick = NULL
        self.dropevent = NULL
        self.count = NULL
        self.demand = NULL
        self.share = NULL
        self.flag = NULL
        self.scratch = NULL

    def __dealloc__(self):
        free(self.members); free(self.active); free(self.conn); free(self.rtt_ns); free(self.next_tick)
        free(self.dropevent); free(self.count); free(self.demand); free(self.share)
        free(self.flag); free(self.scratch)

    cdef void _ensure(self, Py_ssize_t flow):
        cdef Py_ssize_t n, old = self.cap
        if flow < self.cap:
            return
        n = max(64, 2 * self.cap, flow + 1)
        self.members = <int*> realloc(self.members, n * sizeof(int))
        self.active = <char*> realloc(self.active, n)
        self.conn = <int*> realloc(self.conn, n * sizeof(int))
        self.rtt_ns = <int64_t*> realloc(self.rtt_ns, n * sizeof(int64_t))
        self.next_tick = <int64_t*> realloc(self.next_tick, n * sizeof(int64_t))
        self.dropevent = <int64_t*> realloc(self.dropevent, n * sizeof(int64_t))
        self.count = <double*> realloc(self.count, n * sizeof(double))
        self.demand = <double*> realloc(self.demand, n * sizeof(double))
        self.share = <double*> realloc(self.share, n * sizeof(double))
        self.flag = <char*> realloc(self.flag, n)
        self.scratch = <double*> realloc(self.scratch, n * sizeof(double))
        if (self.scratch == NULL or self.flag == NULL or self.share == NULL
                or self.conn == NULL):
            raise MemoryError()
        memset(&self.active[old], 0, n - old)
        memset(&self.flag[old], 0, n - old)
        self.cap = n

    cdef void maxmin(self):
        """share <- maxmin(demand, C_L) over the long-lived flows (progressive filling)."""
        cdef Py_ssize_t k, n = self.n_long
        cdef double remaining = self.capacity_Bps, level = 0.0, total = 0.0
        if n == 0:
            return
        for k in range(n):
            self.scratch[k] = self.demand[self.members[k]]
            total += self.scratch[k]
        if total <= self.capacity_Bps:
            level = 1e300
        else:
            qsort(self.scratch, n, sizeof(double), _cmp_double)
            for k in range(n):
                level = remaining / (n - k)
                if self.scratch[k] >= level:
                    break
                remaining -= self.scratch[k]
        for k in range(n):
            self.share[self.members[k]] = min(self.demand[self.members[k]], level)

    cpdef void init_long_flow(self, Py_ssize_t flow, double rtt_s, int size, int64_t now,
                              int conn=0):
        """Figure 14: start regulating connection ``conn`` of ``flow`` (RTT from the scenario's
        rttlookup)."""
        self._ensure(flow)
        if self.active[flow]:
            return
        self.active[flow] = 1
        self.conn[flow] = conn
        self.members[self.n_long] = <int> flow
        self.n_long += 1
        self.rtt_ns[flow] = max(<int64_t> (rtt_s * 1e9), 1)
        self.count[flow] = size
        self.demand[flow] = self.capacity_Bps
        self.flag[flow] = 0
        self.dropevent[flow] = -(1LL << 62)
        self.maxmin()
        if self.sweep_ns == 0 or self.rtt_ns[flow] < self.sweep_ns:
            self.sweep_ns = self.rtt_ns[flow]
            self.next_sweep = now + self.sweep_ns
        self.next_tick[flow] = now
        self.tick(flow, now)

    cpdef void end_long_flow(self, Py_ssize_t flow):
        """Stop regulating ``flow`` (its long-lived connection is over); shares are recomputed."""
        cdef Py_ssize_t k
        if not self.is_long(flow):
            return
        for k in range(self.n_long):
            if self.members[k] == flow:
                self.members[k] = self.members[self.n_long - 1]
                break
        self.n_long -= 1
        self.active[flow] = 0
        self.flag[flow] = 0
        self.maxmin()

    cpdef int long_conn(self, Py_ssize_t flow):
        """The connection of ``flow`` that is long-lived (-1 if none)."""
        return self.conn[flow] if self.is_long(flow) else -1

    cdef void tick(self, Py_ssize_t i, int64_t now):
        """Figure 15 for flow ``i``: run every tick that is due by ``now``."""
        cdef double rtt_s = self.rtt_ns[i] * 1e-9, m
        cdef int64_t idle
        while self.next_tick[i] <= now:
            m = self.count[i] / rtt_s
            self.count[i] = 0.0
            self.flag[i] = self.share[i] < self.demand[i] and m > 4.0 / 3.0 * self.share[i]
            self.demand[i] = m * self.beta + self.demand[i] * (1.0 - self.beta)
            self.maxmin()
            self.next_tick[i] += self.rtt_ns[i]
            if self.next_tick[i] <= now:
                # silent for whole RTTs: the remaining ticks all see m = 0; do them at once
                idle = (now - self.next_tick[i]) // self.rtt_ns[i] + 1
                self.flag[i] = 0
                self.demand[i] *= pow(1.0 - self.beta, <double> idle)
                self.next_tick[i] += idle * self.rtt_ns[i]
                self.maxmin()

    cdef void catch_up(self, int64_t now):
        cdef Py_ssize_t k
        if self.sweep_ns == 0 or now < self.next_sweep:
            return
        for k in range(self.n_long):
            self.tick(self.members[k], now)
        self.next_sweep = now + self.sweep_ns

    cdef bint arrival(self, Py_ssize_t flow, int size, int64_t now):
        """Figure 16: True if this packet of a long-lived flow is to be dropped."""
        self.catch_up(now)
        self.tick(flow, now)
        if self.flag[flow] and self.dropevent[flow] + self.rtt_ns[flow] < now:
            self.dropevent[flow] = now
            self.drops += 1
            return True
        self.count[flow] += size
        return False

    cpdef bint is_long(self, Py_ssize_t flow):
        return flow < self.cap and self.active[flow] != 0

    def offer(self, Py_ssize_t flow, int size, int64_t now):
        """Python access to :meth:`arrival` for an initialised flow (tests)."""
        if not self.is_long(flow):
            raise KeyError(flow)
        return self.arrival(flow, size, now)

    def state(self, Py_ssize_t flow):
        """(demand, share, flag) of a long-lived flow, rates in bytes/s."""
        if not self.is_long(flow):
            raise KeyError(flow)
        return self.demand[flow], self.share[flow], bool(self.flag[flow])

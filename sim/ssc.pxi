# SSC: selective slope control, the large time scale module of TCP-MT (Park & Tuan 2000, sec. 3).
#
# SSCCore is plain state + arithmetic (no simulator types), so it is unit-testable on its own:
#   block(x_bits, gamma)  every T_L: level map -> CondProb update (O(1)) -> L2hat = E[L2|L1]
#                         -> metacontrol of A -> xi = schedule(L2hat)
#   on_timeout(cwnd) / ssthresh_for(default): the slow-start coupling (cwnd remembered per level).
#
# Level map (reversed meaning, sec. 3.3): X = bits the connection sent in the last T_L. High X means
# much available bandwidth = LOW contention, so level 1 = least contended, level h = most. The map is
# defined by h - 1 ascending edges in bits: L(X) = h - (number of edges below X). The paper leaves the
# map's normalization open ("normalized contention levels"); three are offered:
#   norm="quantile" (default): the edges are the k/h empirical quantiles of all blocks so far, so the
#       levels are (close to) equiprobable. At every block this is exactly the offline map
#       traceflow.stats.levels.level_map(x[:i+1], method="quantile", reverse=True) -- the map of Fig. 1 and
#       of `traceflow levels` -- so an a-priori table and the online table index the same levels.
#       A heavy-tailed X cannot crowd most blocks into one level, as it does with min/max bounds.
#   norm="running": h equal-width bins between the running min and max of X (a value on an edge goes
#       up, as floor(h (X - lo) / (hi - lo)) does).
#   norm="fixed": given edges (e.g. an a-priori table's) or equal-width bins on a given [lo, hi].
# Quantile and given edges: a value equal to an edge takes the more contended level, so a run of
# empty blocks (a timeout's backoff) stays at level h.
#
# CondProb is h x (h+1): [l][l'] counts transitions L1=l -> L2=l', [l][h] is h_l (their row total).
# L2hat = E[L2 | L1] from the row of the current level; an empty row predicts L2hat = L1
# (persistence, what E[L2|L1] degenerates to under strong LRD, sec. 5.5).

from bisect import insort as _insort
import numpy as _np

cdef enum:
    SSC_QUANTILE = 0
    SSC_RUNNING = 1
    SSC_FIXED = 2

_SSC_NORMS = {"quantile": SSC_QUANTILE, "running": SSC_RUNNING, "fixed": SSC_FIXED}

cdef enum:
    SSC_LINEAR = 0
    SSC_THRESHOLD = 1
    SSC_NONLINEAR = 2

_SSC_SCHEDULES = {"linear": SSC_LINEAR, "threshold": SSC_THRESHOLD, "nonlinear": SSC_NONLINEAR}


cdef class SSCCore:
    """State of one connection's SSC module; units: x in bits per block, gamma in bits per block."""

    cdef public int h
    cdef public double a, A, nu, theta, lo, hi
    cdef public bint meta, learn, enabled
    cdef public int L1
    cdef public double L2hat, xi
    cdef public long nblocks
    cdef int sched, prev_level, norm
    cdef bint _have_bounds, _floor_ties
    cdef list _seen
    cdef double[::1] _edges
    cdef double direction
    cdef long long[:, ::1] _table
    cdef double[::1] _meta_A, _meta_g, _cwnd_mem
    cdef unsigned char[::1] _meta_seen, _cwnd_seen

    def __init__(self, int h=8, double a=1.0, double A=1.0, str schedule="linear", double theta=8.0,
                 bint meta=False, double nu=0.05, str norm="quantile", double lo=0.0, double hi=0.0,
                 edges=None, table=None, bint learn=True, bint enabled=True):
        if h < 2:
            raise ValueError("h must be >= 2")
        if schedule not in _SSC_SCHEDULES:
            raise ValueError(f"unknown schedule {schedule!r} (linear, threshold, nonlinear)")
        if norm not in _SSC_NORMS:
            raise ValueError(f"unknown norm {norm!r} (quantile, running, fixed)")
        if edges is not None:
            edges = _np.asarray(edges, dtype=_np.float64)
            if norm != "fixed" or edges.shape != (h - 1,) or _np.any(_np.diff(edges) < 0):
                raise ValueError(f"edges need norm='fixed' and {h - 1} ascending values")
        elif norm == "fixed" and not hi > lo:
            raise ValueError("fixed normalization needs hi > lo (or edges)")
        if A < a:
            raise ValueError("A must be >= a")
        self.h, self.a, self.theta, self.nu = h, a, theta, nu
        # A(0) = a under metacontrol (sec. 3.5); the given A when A is fixed.
        self.A = a if meta else A
        self.sched = _SSC_SCHEDULES[schedule]
        self.meta, self.learn, self.enabled = meta, learn, enabled
        self.norm = _SSC_NORMS[norm]
        self.lo, self.hi = (lo, hi) if norm == "fixed" else (0.0, 0.0)
        self._seen = []
        self._edges = _np.zeros(h - 1)
        self._floor_ties = edges is None and norm != "quantile"
        if edges is not None:
            _np.asarray(self._edges)[:] = edges
        elif norm == "fixed":
            self._uniform_edges()
        self._have_bounds = norm == "fixed"
        t = _np.zeros((h, h + 1), dtype=_np.int64)
        if table is not None:
            t[...] = _np.asarray(table, dtype=_np.int64)
        self._table = t
        self._meta_A = _np.zeros(h + 1)
        self._meta_g = _np.zeros(h + 1)
        self._meta_seen = _np.zeros(h + 1, dtype=_np.uint8)
        self._cwnd_mem = _np.zeros(h + 1)
        self._cwnd_seen = _np.zeros(h + 1, dtype=_np.uint8)
        self.prev_level = 0
        self.nblocks = 0
        self.L1 = 0
        self.L2hat = 0.0
        self.xi = a
        self.direction = 1.0  # explore upward first: A starts at its floor a

    @property
    def table(self):
        """The CondProb count table (a copy), h x (h+1)."""
        return _np.array(self._table)

    @property
    def edges(self):
        """The level map's h - 1 edges in bits per block (level h below the first, 1 above the last)."""
        return _np.array(self._edges)

    cdef void _uniform_edges(self):
        cdef int k
        for k in range(1, self.h):
            self._edges[k - 1] = self.lo + (self.hi - self.lo) * k / self.h

    cdef void _quantile_edges(self):
        # numpy's default ("linear") quantile of the sorted blocks seen so far, at k/h, k = 1..h-1
        cdef list v = self._seen
        cdef Py_ssize_t n = len(v), i
        cdef double pos, frac
        cdef int k
        for k in range(1, self.h):
            pos = (n - 1) * (<double>k / self.h)
            i = <Py_ssize_t>floor(pos)
            frac = pos - i
            if i + 1 < n:
                self._edges[k - 1] = <double>v[i] + frac * (<double>v[i + 1] - <double>v[i])
            else:
                self._edges[k - 1] = <double>v[i]

    cpdef int level(self, double x):
        """Contention level of a block that carried x bits (updates a learned map first)."""
        cdef int up = 0
        if self.norm == SSC_QUANTILE:
            _insort(self._seen, x)
            self._quantile_edges()
        elif self.norm == SSC_RUNNING:
            if not self._have_bounds:
                self.lo = x
                self.hi = x
                self._have_bounds = True
            elif x < self.lo:
                self.lo = x
            elif x > self.hi:
                self.hi = x
            if self.hi <= self.lo:
                return (self.h + 1) // 2
            self._uniform_edges()
        if self._floor_ties:
            while up < self.h - 1 and self._edges[up] <= x:
                up += 1
        else:
            while up < self.h - 1 and self._edges[up] < x:
                up += 1
        return self.h - up

    cpdef double predict(self, int l1):
        """E[L2 | L1 = l1] from CondProb (l1 itself when the row is empty)."""
        cdef long long n = self._table[l1 - 1, self.h]
        cdef double s = 0.0
        cdef int j
        if n <= 0:
            return <double>l1
        for j in range(self.h):
            s += (j + 1) * <double>self._table[l1 - 1, j]
        return s / n

    cpdef double schedule(self, double l2hat):
        """Aggressiveness eps(L2hat): decreasing in L2hat; linear: eps(1) = A, eps(h) = a."""
        if self.sched == SSC_LINEAR:
            return (self.A - self.a) / (self.h - 1) * (self.h - l2hat) + self.a
        if self.sched == SSC_THRESHOLD:
            return self.A if l2hat <= self.theta else self.a
        return self.h / l2hat

    cpdef double metacontrol(self, int l1, double gamma):
        """One step of the symmetric control of A (sec. 3.5); returns the new A (>= a).

        gamma is the throughput of the block just observed (at level l1, under the current A).
        The sign of d gamma / d A is taken against the latest earlier block of the same level;
        without one (or when A did not move since), A keeps moving in its last direction.
        """
        cdef double dA, dg, step = self.direction
        if self._meta_seen[l1]:
            dA = self.A - self._meta_A[l1]
            dg = gamma - self._meta_g[l1]
            if dA != 0.0:
                if dg * dA > 0.0:
                    step = 1.0
                elif dg * dA < 0.0:
                    step = -1.0
        self._meta_A[l1] = self.A
        self._meta_g[l1] = gamma
        self._meta_seen[l1] = 1
        self.direction = step
        self.A += self.nu * step
        if self.A < self.a:
            self.A = self.a
            self.direction = 1.0
        return self.A

    cpdef double block(self, double x, double gamma):
        """End of a T_L block: x bits sent, gamma bits delivered. Returns xi for the next block."""
        cdef int l1 = self.level(x)
        if self.learn and self.prev_level > 0:
            self._table[self.prev_level - 1, l1 - 1] += 1
            self._table[self.prev_level - 1, self.h] += 1
        self.prev_level = l1
        self.nblocks += 1
        self.L1 = l1
        self.L2hat = self.predict(l1)
        if self.enabled:
            if self.meta:
                self.metacontrol(l1, gamma)
            self.xi = self.schedule(self.L2hat)
        else:
            self.xi = self.a
        return self.xi

    cpdef void on_timeout(self, double cwnd):
        """Slow-start coupling: remember the window at a timeout under the current level L1."""
        if self.L1 > 0:
            self._cwnd_mem[self.L1] = cwnd
            self._cwnd_seen[self.L1] = 1

    cpdef double ssthresh_for(self, double default):
        """ssthresh <- cwnd(L2hat) (nearest level), or ``default`` when none was remembered."""
        cdef int l = <int>floor(self.L2hat + 0.5)
        if self.L1 == 0 or not self.enabled or l < 1 or l > self.h or not self._cwnd_seen[l]:
            return default
        return self._cwnd_mem[l]


cdef class SSCHook(SenderHook):
    """TCP-MT: couples an SSCCore to any TcpSender through the SenderHook interface.

    Every ``period`` ns (T_L) the block's bits sent (X, payload incl. retransmissions) and bits
    acknowledged (gamma, reliable throughput) go to ``core.block``; the returned slope becomes the
    sender's ``xi`` when ``ca`` (congestion-avoidance coupling). With ``ss`` (slow-start coupling)
    a timeout records the window in force before it under the current level and sets
    ``ssthresh <- cwnd(L2hat)``. The window in force is the congestion control's
    ``window_in_force``: cwnd outside recovery, the cut window (not cwnd inflated by duplicate
    ACKs) during fast recovery, at most rwnd; the hook samples it at every send and ACK, so at a
    timeout it holds the last value before the sender's reset. ``warmup`` ns after the first
    connection the core is enabled (short-connection Cases II/III; 0 = enabled from the start
    unless ``core.enabled`` is False).
    ``active=False`` is the "off" mode: the module only observes and traces, never writes the
    sender, so the run is the plain flavor's run.
    """

    cdef public SSCCore core
    cdef public bint ca, ss, active, record
    cdef public int64_t warmup
    cdef int64_t t_first, sent_bytes, acked_bytes
    cdef double last_cwnd
    cdef bint started
    cdef list _t, _x, _gamma, _l1, _l2hat, _xi, _A, _timeouts

    def __init__(self, SSCCore core, int64_t period, bint ca=True, bint ss=True,
                 int64_t warmup=0, bint active=True, bint record=True):
        if period <= 0:
            raise ValueError("SSC period must be positive")
        self.core = core
        self.period = period
        self.ca, self.ss, self.active, self.record = ca, ss, active, record
        self.warmup = warmup
        if warmup > 0:
            core.enabled = False
        self._t, self._x, self._gamma, self._l1, self._l2hat, self._xi, self._A = (
            [], [], [], [], [], [], [])
        self._timeouts = []

    cdef int on_conn_start(self, TcpSender s, int64_t now) except -1:
        if not self.started:
            self.started = True
            self.t_first = now
        self.last_cwnd = s.cc.window_in_force(s)

    cdef int on_send(self, TcpSender s, int64_t nbytes, bint retx, int64_t now) except -1:
        self.sent_bytes += nbytes
        self.last_cwnd = s.cc.window_in_force(s)

    cdef int on_ack(self, TcpSender s, int64_t acked_bytes, int64_t now) except -1:
        self.acked_bytes += acked_bytes
        self.last_cwnd = s.cc.window_in_force(s)

    cdef int on_timeout(self, TcpSender s, int64_t now) except -1:
        # the sender already cut cwnd to 1: the window in force is the last one observed
        cdef double own = s.ssthresh
        self.core.on_timeout(self.last_cwnd)
        if self.active and self.ss:
            s.ssthresh = self.core.ssthresh_for(s.ssthresh)
        if self.record:
            self._timeouts.append((now, self.core.L1, self.last_cwnd, own, s.ssthresh))

    cdef int on_timer(self, TcpSender s, int64_t now) except -1:
        cdef double xi
        if self.warmup > 0 and not self.core.enabled and now - self.t_first >= self.warmup:
            self.core.enabled = True
        xi = self.core.block(8.0 * self.sent_bytes, 8.0 * self.acked_bytes)
        if self.active and self.ca:
            s.xi = xi
        if self.record:
            self._t.append(now)
            self._x.append(8.0 * self.sent_bytes)
            self._gamma.append(8.0 * self.acked_bytes)
            self._l1.append(self.core.L1)
            self._l2hat.append(self.core.L2hat)
            self._xi.append(s.xi)
            self._A.append(self.core.A)
        self.sent_bytes = 0
        self.acked_bytes = 0

    def trace(self):
        """Per-block trace: t (ns, block end), x and gamma (bits in the block), L1, L2hat, xi, A."""
        return {"t": _np.array(self._t, dtype=_np.int64), "x": _np.array(self._x),
                "gamma": _np.array(self._gamma), "L1": _np.array(self._l1, dtype=_np.int64),
                "L2hat": _np.array(self._l2hat), "xi": _np.array(self._xi),
                "A": _np.array(self._A)}

    def timeouts(self):
        """Per-timeout record: t (ns), L1, the window in force remembered (segments), the
        flavor's own new ssthresh and the ssthresh after the slow-start coupling."""
        a = _np.array(self._timeouts, dtype=_np.float64).reshape(-1, 5)
        return {"t": a[:, 0].astype(_np.int64), "L1": a[:, 1].astype(_np.int64), "window": a[:, 2],
                "ssthresh_flavor": a[:, 3], "ssthresh": a[:, 4]}

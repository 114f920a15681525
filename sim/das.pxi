# Bandwidth split between the short-lived and the long-lived classes (Wu & Nikolaidis 2002,
# sections 3-4).  Fixed: the short classes get ``short_share`` of the link (paper: 60 %).
# DAS (dynamic allocation scheme): every ``period`` the short classes' offered load (bytes that
# arrived for them, dropped ones included, over link capacity x period) is smoothed by an EWMA
# and the short share becomes ``headroom`` x that demand, clipped so the long classes keep at
# least ``min_long`` (paper: 10 %) and the short ones at least ``min_short``.  The paper leaves
# DAS's estimator to its reference [28]; the EWMA, headroom and floor here are our choices.


cdef class ShortLongSplit:
    cdef readonly double short_share   # fraction of the link for all short classes together
    cdef readonly bint dynamic
    cdef readonly double min_long, min_short, headroom, alpha
    cdef readonly int64_t period_ns
    cdef readonly double demand        # smoothed short-class offered load (fraction of link)
    cdef readonly int64_t updates
    cdef double capacity_Bps
    cdef double short_bytes
    cdef int64_t next_ns

    def __cinit__(self, double short_share=0.6, bint dynamic=False, double period_s=1.0,
                  double min_long=0.1, double min_short=0.05, double headroom=1.1,
                  double alpha=0.5, double capacity_bps=1e6):
        if not 0.0 < short_share < 1.0:
            raise ValueError("short_share must be in (0, 1)")
        if not 0.0 <= min_long < 1.0 or not 0.0 <= min_short < 1.0 - min_long:
            raise ValueError("need 0 <= min_short < 1 - min_long")
        if period_s <= 0 or capacity_bps <= 0 or not 0.0 < alpha <= 1.0:
            raise ValueError("period, capacity must be > 0 and alpha in (0, 1]")
        self.dynamic = dynamic
        self.min_long = min_long
        self.min_short = min_short
        self.headroom = headroom
        self.alpha = alpha
        self.period_ns = <int64_t> (period_s * 1e9)
        self.capacity_Bps = capacity_bps / 8.0
        self.short_share = self._clip(short_share) if dynamic else short_share
        self.demand = short_share / headroom
        self.short_bytes = 0.0
        self.next_ns = self.period_ns
        self.updates = 0

    cdef inline double _clip(self, double share):
        return min(max(share, self.min_short), 1.0 - self.min_long)

    cdef bint observe(self, int lifetime, int size, int64_t now):
        """Account one arriving packet (``lifetime`` 0 = short); True when the split changed."""
        cdef double load
        cdef bint changed = False
        if not self.dynamic:
            return False
        while now >= self.next_ns:
            load = self.short_bytes / (self.capacity_Bps * self.period_ns * 1e-9)
            self.demand = self.alpha * load + (1.0 - self.alpha) * self.demand
            self.short_share = self._clip(self.headroom * self.demand)
            self.short_bytes = 0.0
            self.next_ns += self.period_ns
            self.updates += 1
            changed = True
        if lifetime == 0:
            self.short_bytes += size
        return changed

    def feed(self, int lifetime, int size, int64_t now):
        """Python access to :meth:`observe` (tests)."""
        return self.observe(lifetime, size, now)

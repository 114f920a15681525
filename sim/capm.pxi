# Perturbation droppers (Kalantari & Shayman, sections III-V), placed in front of any queue.
#
# * APM: at time t0 drop the next D arriving packets of an aggregate.
# * CAPM: router i drops r_i(t) = A_i s_i(t) packets/s, s_i the code's rectangular chips of
#   length T_c (eqs. 3, 6), repeated every N*T_c when ``periodic``.  Several signatures (several
#   "routers") can act on one link, and droppers on different links act independently.  Drops
#   are paced deterministically: each signature accrues credit = the exact integral of r_i over
#   the time since the previous arrival; a packet of its aggregate is dropped when the credit
#   reaches one.  Credit is capped at ``max_credit`` so an aggregate that falls silent does not
#   receive a burst of drops when it resumes.
# * K-based fair dropping (section V): each aggregate a has a drop probability p_a (eqs. 15-17,
#   computed by traceflow.models.capm.fair_drop_probabilities); the coin comes from the queue's Rng.
#   As in the paper's experiment they are computed once, from the aggregates' demands: eqs.
#   (16)-(17) on lambda = (10468, 9094) pkt/s, K = (77.3, 588.1) and p = 4 % give its p1 = 0.067,
#   p2 = 0.010 (kalantari...txt:227-234).
# * Per-aggregate arrival counts per ``count_bin_s`` for aggregates 0..count_aggregates-1: the
#   matched filter of eq. 13 reads the tested aggregate's rate, not the link's total
#   (``arrival_counts()``).
#
# Aggregates are the flows' class tags (``cls`` of the traffic group, carried in every packet);
# a signature or APM aggregate of -1 means "every packet".


cdef class Perturber:
    cdef readonly int n_sig, n_apm, n_agg
    cdef readonly double max_credit
    cdef int max_chips
    cdef double* prefix                # n_sig x (max_chips + 1): ones among the first j chips
    cdef char* chips                   # n_sig x max_chips
    cdef int* n_chips
    cdef double* chip_s
    cdef double* start_s
    cdef double* amp
    cdef char* periodic
    cdef int* sig_agg
    cdef double* credit
    cdef double* last_cum
    cdef int64_t* sig_drops
    cdef int64_t* apm_t
    cdef int* apm_left
    cdef int* apm_agg
    cdef int64_t* apm_drops
    cdef double* agg_p
    cdef int64_t* agg_drops
    cdef readonly int n_count
    cdef int64_t count_bin_ns, count_cap
    cdef int64_t* counts               # n_count x count_cap arrivals per bin
    cdef Rng rng

    def __cinit__(self, signatures=(), apm=(), drop_probability=(),
                  double max_credit=2.0, rng_state=None, int count_aggregates=0,
                  double count_bin_s=0.0):
        cdef int i, j
        signatures = list(signatures)
        apm = list(apm)
        self.n_sig = len(signatures)
        self.n_apm = len(apm)
        self.max_credit = max_credit
        self.max_chips = max([len(s["code"]) for s in signatures] or [1])
        n = max(self.n_sig, 1)
        self.prefix = <double*> malloc(n * (self.max_chips + 1) * sizeof(double))
        self.chips = <char*> malloc(n * self.max_chips)
        self.n_chips = <int*> malloc(n * sizeof(int))
        self.chip_s = <double*> malloc(n * sizeof(double))
        self.start_s = <double*> malloc(n * sizeof(double))
        self.amp = <double*> malloc(n * sizeof(double))
        self.periodic = <char*> malloc(n)
        self.sig_agg = <int*> malloc(n * sizeof(int))
        self.credit = <double*> malloc(n * sizeof(double))
        self.last_cum = <double*> malloc(n * sizeof(double))
        self.sig_drops = <int64_t*> malloc(n * sizeof(int64_t))
        for i, s in enumerate(signatures):
            code = [int(c) for c in s["code"]]
            if not code or any(c not in (0, 1) for c in code):
                raise ValueError("a CAPM code is a non-empty sequence of 0/1 chips")
            if float(s["chip_s"]) <= 0 or float(s.get("amplitude", 0.0)) < 0:
                raise ValueError("CAPM chip time must be > 0 and amplitude >= 0")
            self.n_chips[i] = len(code)
            self.prefix[i * (self.max_chips + 1)] = 0.0
            for j in range(len(code)):
                self.chips[i * self.max_chips + j] = code[j]
                self.prefix[i * (self.max_chips + 1) + j + 1] = \
                    self.prefix[i * (self.max_chips + 1) + j] + code[j]
            self.chip_s[i] = float(s["chip_s"])
            self.start_s[i] = float(s.get("start_s", 0.0))
            self.amp[i] = float(s.get("amplitude", 0.0))
            self.periodic[i] = bool(s.get("periodic", True))
            self.sig_agg[i] = int(s.get("aggregate", -1))
            self.credit[i] = 0.0
            self.last_cum[i] = 0.0
            self.sig_drops[i] = 0
        n = max(self.n_apm, 1)
        self.apm_t = <int64_t*> malloc(n * sizeof(int64_t))
        self.apm_left = <int*> malloc(n * sizeof(int))
        self.apm_agg = <int*> malloc(n * sizeof(int))
        self.apm_drops = <int64_t*> malloc(n * sizeof(int64_t))
        for i, (t_s, count, agg) in enumerate(apm):
            self.apm_t[i] = <int64_t> (float(t_s) * 1e9)
            self.apm_left[i] = int(count)
            self.apm_agg[i] = int(agg)
            self.apm_drops[i] = 0
        probs = [float(p) for p in drop_probability]
        if any(not 0.0 <= p <= 1.0 for p in probs):
            raise ValueError("drop probabilities must be in [0, 1]")
        self.n_agg = len(probs)
        self.agg_p = <double*> malloc(max(self.n_agg, 1) * sizeof(double))
        self.agg_drops = <int64_t*> malloc(max(self.n_agg, 1) * sizeof(int64_t))
        for i in range(self.n_agg):
            self.agg_p[i] = probs[i]
            self.agg_drops[i] = 0
        self.n_count = count_aggregates
        self.count_bin_ns = <int64_t> (count_bin_s * 1e9)
        self.count_cap = 0
        self.counts = NULL
        if self.n_count > 0 and self.count_bin_ns <= 0:
            raise ValueError("counting arrivals per aggregate needs count_bin_s > 0")
        if rng_state is None:
            import numpy
            rng_state = numpy.random.SeedSequence(1).generate_state(4, numpy.uint64)
        rng_seed(&self.rng, rng_state)

    def __dealloc__(self):
        free(self.prefix); free(self.chips); free(self.n_chips); free(self.chip_s)
        free(self.start_s); free(self.amp); free(self.periodic); free(self.sig_agg)
        free(self.credit); free(self.last_cum); free(self.sig_drops); free(self.apm_t)
        free(self.apm_left); free(self.apm_agg); free(self.apm_drops); free(self.agg_p)
        free(self.agg_drops); free(self.counts)

    cdef int _count(self, int agg, int64_t now) except -1:
        cdef int64_t b = now // self.count_bin_ns, cap, i
        cdef int64_t* grown
        if b >= self.count_cap:
            cap = max(b + 1, 2 * self.count_cap, 1024)
            grown = <int64_t*> malloc(self.n_count * cap * sizeof(int64_t))
            if grown == NULL:
                raise MemoryError()
            memset(grown, 0, self.n_count * cap * sizeof(int64_t))
            for i in range(self.n_count):        # rows are aggregates
                if self.count_cap:
                    memcpy(&grown[i * cap], &self.counts[i * self.count_cap],
                           self.count_cap * sizeof(int64_t))
            free(self.counts)
            self.counts = grown
            self.count_cap = cap
        self.counts[agg * self.count_cap + b] += 1
        return 0



    cdef double cumulative(self, int i, double t):
        """Drops signature ``i`` asks for over [start, t]: A * ∫ s_i."""
        cdef double u = t - self.start_s[i], tc = self.chip_s[i], period, rem
        cdef int n = self.n_chips[i], j
        cdef double* pre = &self.prefix[i * (self.max_chips + 1)]
        cdef double periods = 0.0
        if u <= 0.0:
            return 0.0
        period = n * tc
        if u >= period:
            if not self.periodic[i]:
                return self.amp[i] * pre[n] * tc
            periods = <double> (<int64_t> (u / period))
            u -= periods * period
        j = min(<int> (u / tc), n - 1)
        rem = u - j * tc
        return self.amp[i] * ((periods * pre[n] + pre[j]) * tc + self.chips[i * self.max_chips + j] * rem)

    cdef bint arrival(self, int agg, int64_t now) except -1:
        """True if the packet of aggregate ``agg`` arriving at ``now`` is to be dropped."""
        cdef int i
        cdef double t = now * 1e-9, c
        cdef bint drop = False
        if 0 <= agg < self.n_count:
            self._count(agg, now)
        for i in range(self.n_apm):
            if self.apm_left[i] > 0 and now >= self.apm_t[i] and (self.apm_agg[i] < 0 or self.apm_agg[i] == agg):
                self.apm_left[i] -= 1
                self.apm_drops[i] += 1
                return True
        for i in range(self.n_sig):
            c = self.cumulative(i, t)
            self.credit[i] = min(self.credit[i] + c - self.last_cum[i], self.max_credit)
            self.last_cum[i] = c
            if not drop and self.credit[i] >= 1.0 and (self.sig_agg[i] < 0 or self.sig_agg[i] == agg):
                self.credit[i] -= 1.0
                self.sig_drops[i] += 1
                drop = True
        if drop:
            return True
        if agg < self.n_agg and self.agg_p[agg] > 0.0:
            if rng_uniform(&self.rng) < self.agg_p[agg]:
                self.agg_drops[agg] += 1
                return True
        return False

    def offer(self, int aggregate, int64_t now):
        """Python access to :meth:`arrival` (tests)."""
        return self.arrival(aggregate, now)

    def arrival_counts(self):
        """Arrivals per aggregate (rows 0..count_aggregates-1) per ``count_bin_s`` bin from t = 0
        (int64 array; bins after the last arrival are absent)."""
        import numpy
        out = numpy.zeros((self.n_count, self.count_cap), dtype=numpy.int64)
        cdef int64_t i, b
        for i in range(self.n_count):
            for b in range(self.count_cap):
                out[i, b] = self.counts[i * self.count_cap + b]
        return out

    def drop_counts(self):
        """Drops so far: {"signature": [...], "apm": [...], "aggregate": [...]}."""
        return {"signature": [self.sig_drops[i] for i in range(self.n_sig)],
                "apm": [self.apm_drops[i] for i in range(self.n_apm)],
                "aggregate": [self.agg_drops[i] for i in range(self.n_agg)]}

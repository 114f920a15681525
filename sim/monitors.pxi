# Periodic queue sampler: every ``period`` ns, for each watched link, record the instantaneous
# queue length (packets, bytes) and the discipline's averaged length (Queue.avg_len: RED's EWMA).

cdef class QueueSampler(Component):
    cdef PyObject** links
    cdef Py_ssize_t nlinks
    cdef list keep_links
    cdef int64_t period
    cdef int64_t* t
    cdef int32_t* link
    cdef int64_t* pkts
    cdef int64_t* nbytes
    cdef double* avg
    cdef Py_ssize_t n, cap

    def __init__(self, list links, int64_t period):
        self.keep_links = list(links)
        self.nlinks = len(links)
        self.links = <PyObject**>malloc(max(1, self.nlinks) * sizeof(PyObject*))
        for i, l in enumerate(self.keep_links):
            self.links[i] = <PyObject*>l
        self.period = period

    def __dealloc__(self):
        free(self.links)
        free(self.t)
        free(self.link)
        free(self.pkts)
        free(self.nbytes)
        free(self.avg)

    def start(self, int64_t at=0):
        self.sim.schedule_side(at, self, 1, NULL, 0)

    cdef int _grow(self) except -1:
        self.cap = max(1024, 2 * self.cap)
        self.t = <int64_t*>realloc(self.t, self.cap * sizeof(int64_t))
        self.link = <int32_t*>realloc(self.link, self.cap * sizeof(int32_t))
        self.pkts = <int64_t*>realloc(self.pkts, self.cap * sizeof(int64_t))
        self.nbytes = <int64_t*>realloc(self.nbytes, self.cap * sizeof(int64_t))
        self.avg = <double*>realloc(self.avg, self.cap * sizeof(double))
        if self.t == NULL or self.link == NULL or self.pkts == NULL or self.nbytes == NULL \
                or self.avg == NULL:
            raise MemoryError()

    cdef int handle(self, int32_t kind, Packet* p, int64_t arg, int64_t now) except -1:
        cdef Py_ssize_t i
        cdef Link l
        for i in range(self.nlinks):
            if self.n == self.cap:
                self._grow()
            l = <Link>self.links[i]
            self.t[self.n] = now
            self.link[self.n] = l.id
            self.pkts[self.n] = l.queue.len_pkts
            self.nbytes[self.n] = l.queue.len_bytes
            self.avg[self.n] = l.queue.avg_len()
            self.n += 1
        self.sim.schedule_side(now + self.period, self, 1, NULL, 0)

    def samples(self):
        import numpy as np
        n = self.n
        out = {"t": np.empty(n, np.int64), "link": np.empty(n, np.int32),
               "packets": np.empty(n, np.int64), "bytes": np.empty(n, np.int64),
               "avg": np.empty(n, np.float64)}
        cdef Py_ssize_t i
        for i in range(n):
            out["t"][i] = self.t[i]
            out["link"][i] = self.link[i]
            out["packets"][i] = self.pkts[i]
            out["bytes"][i] = self.nbytes[i]
            out["avg"][i] = self.avg[i]
        return out

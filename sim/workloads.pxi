# Applications that drive the transports (no Python call per packet or per transfer).
#   InfiniteApp   greedy TCP transfer / greedy UDP from ``start``
#   FileApp       request -> transfer -> idle (exponential) cycles; sizes presampled (Pareto,
#                 exponential, empirical), continued with the C RNG if the run outlasts them
#   PoissonApp    packets handed to TCP (app-limited) or UDP at Poisson times
#   OnOffApp      uniform on/idle periods; each on period is a new TCP connection / UDP burst
#   ScheduledApp  transfers at given times (trace-driven flows)
#   SessionApp    a closed-loop client: each transfer a think time after the previous one ended

cdef enum:
    APP_EV_START = 1
    APP_EV_REQUEST = 2
    APP_EV_PACKET = 3
    APP_EV_OFF = 4

cdef enum:
    DIST_PARETO = 0
    DIST_EXPONENTIAL = 1
    DIST_EMPIRICAL = 2
    DIST_FIXED = 3


cdef class App(Component):
    cdef public TcpSender tcp
    cdef public UdpSource udp
    cdef public Rng rng
    cdef readonly int64_t requests, requested_bytes

    def set_rng(self, state):
        rng_seed(&self.rng, state)

    def start(self, int64_t at):
        self.sim.schedule(at, self, APP_EV_START, NULL, 0)

    cdef int transfer_done(self, int32_t flow, int64_t now) except -1:
        """The receiver has the whole transfer (TCP) / the sender sent its last packet (UDP)."""
        pass

    cdef int sender_done(self, TcpSender s, int64_t now) except -1:
        """The TCP sender got the last ACK of a transfer."""
        pass

    cdef int _begin(self, int64_t nbytes, int64_t now, int64_t req=-1) except -1:
        """Start a transfer of ``nbytes``; ``req`` >= 0: request mode (TCP only)."""
        self.requests += 1
        if nbytes > 0:
            self.requested_bytes += nbytes
        if self.tcp is not None:
            self.tcp.start_transfer(nbytes, now, req)
        else:
            self.udp.offer_transfer(nbytes, now)


cdef class InfiniteApp(App):
    cdef int handle(self, int32_t kind, Packet* p, int64_t arg, int64_t now) except -1:
        if self.tcp is not None:
            self.requests += 1
            self.tcp.start_transfer(-1, now)
        else:
            self.udp.set_greedy(True)
            self.udp._kick(now)


cdef class FileApp(App):
    cdef double* sizes
    cdef Py_ssize_t nsizes, idx
    cdef public int dist
    cdef public double alpha, k, mean
    cdef double* emp
    cdef Py_ssize_t nemp
    cdef public int64_t idle_mean          # ns
    cdef public bint first_idle            # start with an idle period (desynchronises clients)
    # The self-similarity paper's ns agents (park-kim-crovella-1997...txt:111-113): a file of X
    # bytes is q = ceil(X/M) full packets (``pad_last``), and the client's idle period follows
    # the transfer's completion at the server, its last ACK (``idle_after_ack``); by default the
    # last segment carries the remainder and the idle period starts at delivery.
    cdef public bint pad_last
    cdef public bint idle_after_ack

    def __dealloc__(self):
        free(self.sizes)
        free(self.emp)

    def set_sizes(self, double[::1] sizes):
        free(self.sizes)
        self.nsizes = sizes.shape[0]
        self.sizes = <double*>malloc(max(1, self.nsizes) * sizeof(double))
        for i in range(self.nsizes):
            self.sizes[i] = sizes[i]
        self.idx = 0

    def set_empirical(self, double[::1] values):
        free(self.emp)
        self.nemp = values.shape[0]
        self.emp = <double*>malloc(max(1, self.nemp) * sizeof(double))
        for i in range(self.nemp):
            self.emp[i] = values[i]

    @property
    def used(self):
        """Number of presampled sizes consumed."""
        return self.idx

    cdef int64_t _next_size(self) noexcept:
        cdef double x
        if self.idx < self.nsizes:
            x = self.sizes[self.idx]
        elif self.dist == DIST_PARETO:
            x = rng_pareto(&self.rng, self.alpha, self.k)
        elif self.dist == DIST_EXPONENTIAL:
            x = rng_exponential(&self.rng, self.mean)
        elif self.dist == DIST_EMPIRICAL and self.nemp > 0:
            x = self.emp[<Py_ssize_t>(rng_uniform(&self.rng) * self.nemp)]
        else:
            x = self.mean
        self.idx += 1
        x = floor(x + 0.5)
        return <int64_t>(x if x >= 1.0 else 1.0)

    cdef int handle(self, int32_t kind, Packet* p, int64_t arg, int64_t now) except -1:
        cdef int64_t x, mss
        if kind == APP_EV_START and self.first_idle:
            self._idle(now)
        elif self.pad_last and self.tcp is not None:
            # the request (X bytes) counts as asked; the wire carries ceil(X/M) full segments
            x = self._next_size()
            mss = self.tcp.mss
            self.requests += 1
            self.requested_bytes += x
            self.tcp.start_transfer((x + mss - 1) // mss * mss, now)
        else:
            self._begin(self._next_size(), now)

    cdef int _idle(self, int64_t now) except -1:
        cdef int64_t d = <int64_t>rng_exponential(&self.rng, <double>self.idle_mean)
        self.sim.schedule(now + d, self, APP_EV_REQUEST, NULL, 0)

    cdef int transfer_done(self, int32_t flow, int64_t now) except -1:
        if not self.idle_after_ack or self.tcp is None:
            self._idle(now)

    cdef int sender_done(self, TcpSender s, int64_t now) except -1:
        if self.idle_after_ack:
            self._idle(now)


cdef class PoissonApp(App):
    cdef public int64_t mean_gap               # ns between packets
    cdef int64_t supplied

    cdef int handle(self, int32_t kind, Packet* p, int64_t arg, int64_t now) except -1:
        if kind == APP_EV_START and self.tcp is not None:
            # the connection opens with nothing to send: each packet is handed over at its
            # Poisson time (ns-2's Application/Traffic/Exponential calling sendmsg), none at start
            self.requests += 1
            self.tcp.start_transfer(-1, now, -1, 0)
        elif kind == APP_EV_PACKET:
            if self.tcp is not None:
                self.supplied += 1
                self.tcp.app_limit(self.supplied, now)
            else:
                self.udp.offer(1, now)
        self.sim.schedule(now + <int64_t>rng_exponential(&self.rng, <double>self.mean_gap), self,
                          APP_EV_PACKET, NULL, 0)


cdef class OnOffApp(App):
    """Alternating on and off periods (uniform lengths). TCP: a new connection per on period,
    or with ``persistent`` one connection throughout whose off periods only stop the release of
    new data (ns-2's FTP stop: ``advance`` to the highest segment sent; start: unlimited again)."""
    cdef public int64_t on_lo, on_hi, off_lo, off_hi   # ns, uniform on [lo, hi]
    cdef public bint persistent

    cdef inline bint _open(self) noexcept:
        return self.tcp.state != TCP_IDLE and self.tcp.n_seg == INFINITE_SEGS

    cdef inline int64_t _uniform(self, int64_t lo, int64_t hi) noexcept:
        return lo + <int64_t>(rng_uniform(&self.rng) * (hi - lo))

    cdef int handle(self, int32_t kind, Packet* p, int64_t arg, int64_t now) except -1:
        if kind == APP_EV_START or kind == APP_EV_REQUEST:
            self.requests += 1
            if self.tcp is not None:
                if self.persistent and self._open():
                    if (self.tcp.snd_una >= self.tcp.snd_max
                            and now - self.tcp.last_ack_t >= self.tcp._rto_value()):
                        # ns-2 (tcp.cc timeout(), slow_start_restart_, restart_bugfix_): the
                        # retransmission timer armed by the last ACK expires with nothing
                        # outstanding and sets cwnd to one segment, ssthresh kept
                        self.tcp.cwnd = self.tcp.init_cwnd
                    self.tcp.app_limit(INFINITE_SEGS, now)
                else:
                    self.tcp.start_transfer(-1, now)
            else:
                self.udp.set_greedy(True)
                self.udp._kick(now)
            self.sim.schedule(now + self._uniform(self.on_lo, self.on_hi), self, APP_EV_OFF,
                              NULL, 0)
        elif kind == APP_EV_OFF:
            if self.tcp is not None and self.persistent and self._open():
                self.tcp.app_limit(max(self.tcp.snd_max, self.tcp.snd_una), now)
            elif self.tcp is not None:
                # A flow still queued behind the source's previous one (not yet all acked) never
                # started, and its on period is over: drop it. Left queued, it would start later
                # and send until the next on period's end, keeping the source on through its off
                # time (50 sources with 0-0.15 s on periods then sent 2.2x ns-2's FTP start/stop).
                self.tcp.pending = [x for x in self.tcp.pending if x[0] >= 0]
                self.tcp.app_close(now)
            else:
                self.udp.set_greedy(False)
            self.sim.schedule(now + self._uniform(self.off_lo, self.off_hi), self,
                              APP_EV_REQUEST, NULL, 0)


cdef class ScheduledApp(App):
    """Transfers of given sizes at given times (a trace's flows); queued if one is still open.
    With ``requests`` (bytes, >= 0) each transfer is in request mode: the receiving end opens
    the connection and sends that many bytes first."""
    cdef int64_t* times     # ns: absolute start times (SessionApp: think times)
    cdef int64_t* nbytes
    cdef int64_t* reqs
    cdef Py_ssize_t n

    def __dealloc__(self):
        free(self.times)
        free(self.nbytes)
        free(self.reqs)

    def set_schedule(self, int64_t[::1] times, int64_t[::1] nbytes, requests=None):
        free(self.times)
        free(self.nbytes)
        free(self.reqs)
        self.n = times.shape[0]
        self.times = <int64_t*>malloc(max(1, self.n) * sizeof(int64_t))
        self.nbytes = <int64_t*>malloc(max(1, self.n) * sizeof(int64_t))
        self.reqs = <int64_t*>malloc(max(1, self.n) * sizeof(int64_t))
        for i in range(self.n):
            self.times[i] = times[i]
            self.nbytes[i] = nbytes[i]
            self.reqs[i] = -1 if requests is None else requests[i]

    def start(self, int64_t at=0):
        for i in range(self.n):
            self.sim.schedule(self.times[i], self, APP_EV_REQUEST, NULL, i)

    cdef int handle(self, int32_t kind, Packet* p, int64_t arg, int64_t now) except -1:
        self._begin(self.nbytes[arg], now, self.reqs[arg])


cdef class SessionApp(ScheduledApp):
    """A closed-loop client session: transfer 0 starts ``times[0]`` ns after ``start``, transfer
    i ``times[i]`` ns (its think time) after the receiver had the whole of transfer i - 1 (in
    request mode: the response and the server's FIN, when the client reads end-of-file). So a
    slow transfer delays every later one, and the session ends after its last transfer."""
    cdef Py_ssize_t ended

    def start(self, int64_t at=0):
        self.ended = 0
        if self.n > 0:
            self.sim.schedule(at + self.times[0], self, APP_EV_REQUEST, NULL, 0)

    cdef int transfer_done(self, int32_t flow, int64_t now) except -1:
        self.ended += 1
        if self.ended < self.n:
            self.sim.schedule(now + self.times[self.ended], self, APP_EV_REQUEST, NULL,
                              self.ended)

# UDP: an open-loop sender with a backlog of packets, sent no closer together than ``spacing`` ns
# (paced; 0 = as fast as the application offers them), and a counting sink.
# Applications offer packets (Poisson, CBR, greedy) or whole transfers (file workloads over UDP).

cdef enum:
    UDP_EV_SEND = 1
    UDP_EV_INJECT = 2

cdef enum:
    SIZE_FIXED = 0
    SIZE_EXPONENTIAL = 1


cdef class UdpSource(Agent):
    cdef public int32_t mss, hdr
    cdef public int64_t spacing            # minimum inter-packet spacing, ns
    cdef public int size_dist              # SIZE_FIXED: hdr + mss; SIZE_EXPONENTIAL: IP size ~ Exp(mean_size)
    cdef public double mean_size
    cdef public int64_t extra_delay
    cdef public App app
    cdef Rng rng
    cdef Node node_obj
    cdef readonly int32_t dst_node, dst_agent
    cdef readonly int64_t backlog          # packets waiting (unlimited when greedy)
    cdef readonly bint greedy
    cdef int64_t next_ok                   # earliest time the next packet may leave
    cdef bint send_pending
    cdef readonly int64_t seqno
    cdef int64_t xfer_left                 # bytes left in the current transfer (-1: plain packets)
    cdef Py_ssize_t xfer
    cdef list pending

    def __init__(self, Node node, int flow, int dst_node, int mss=1000, int hdr=28,
                 int64_t spacing=0, rng_state=None):
        self.node_obj = node
        self.node = node.id
        self.flow = flow
        self.dst_node = dst_node
        self.mss = mss
        self.hdr = hdr
        self.spacing = spacing
        self.mean_size = mss + hdr
        self.xfer_left = -1
        self.xfer = -1
        self.pending = []
        if rng_state is not None:
            rng_seed(&self.rng, rng_state)

    def connect(self, int dst_agent):
        self.dst_agent = dst_agent

    def set_greedy(self, bint on):
        self.greedy = on

    cdef int offer(self, int64_t npkts, int64_t now) except -1:
        self.backlog += npkts
        self._kick(now)

    cdef int offer_transfer(self, int64_t nbytes, int64_t now) except -1:
        """Send ``nbytes`` as ceil(nbytes/mss) packets (one transfer; queued behind others)."""
        if self.xfer_left > 0:
            self.pending.append(nbytes)
            return 0
        self.xfer = self.sim.new_transfer(self.flow, 0, nbytes, now)
        self.xfer_left = nbytes if nbytes > 0 else 1
        self.backlog += (self.xfer_left + self.mss - 1) // self.mss
        self._kick(now)

    cdef int _kick(self, int64_t now) except -1:
        if self.send_pending or (self.backlog <= 0 and not self.greedy):
            return 0
        self.send_pending = True
        self.sim.schedule(now if now >= self.next_ok else self.next_ok, self, UDP_EV_SEND,
                          NULL, 0)

    cdef int handle(self, int32_t kind, Packet* p, int64_t arg, int64_t now) except -1:
        if kind == UDP_EV_INJECT:
            self.node_obj.receive(p, now)
            return 0
        self.send_pending = False
        if self.backlog <= 0 and not self.greedy:
            return 0
        self._send_one(now)
        self.next_ok = now + self.spacing
        self._kick(now)

    cdef int _send_one(self, int64_t now) except -1:
        cdef Packet* p = pkt_alloc()
        cdef double s
        cdef TransferRec* tr
        p.flow = self.flow
        p.src = self.node
        p.dst = self.dst_node
        p.dst_agent = self.dst_agent
        p.proto = PROTO_UDP
        p.dir = DIR_FWD
        p.cls = self.sim.flow_class[self.flow]
        p.seq = self.seqno
        self.seqno += 1
        p.t_created = now
        p.ts = now
        if self.size_dist == SIZE_EXPONENTIAL:
            s = floor(rng_exponential(&self.rng, self.mean_size) + 0.5)
            p.size = <int32_t>(s if s >= 1.0 else 1.0)
            p.payload = p.size - self.hdr if p.size > self.hdr else 0
        else:
            p.payload = self.mss
            if self.xfer_left > 0 and self.xfer_left < self.mss:
                p.payload = <int32_t>self.xfer_left
            p.size = self.hdr + p.payload
        if not self.greedy:
            self.backlog -= 1
        if self.xfer_left > 0:
            tr = &self.sim.transfers[self.xfer]
            tr.bytes_sent += p.payload
            tr.pkts_sent += 1
            self.xfer_left -= p.payload
            if self.xfer_left <= 0:
                p.flags = F_FIN
                tr.end = now
                self.sim.flows[self.flow].completed += 1
                self.xfer_left = -1
                if self.app is not None:
                    self.app.transfer_done(self.flow, now)
                if self.pending:
                    self.offer_transfer(self.pending.pop(0), now)
        self.sim.count_sent(p)
        if self.extra_delay > 0:
            self.sim.schedule(now + self.extra_delay, self, UDP_EV_INJECT, p, 0)
        else:
            self.node_obj.receive(p, now)


cdef class UdpSink(Agent):
    """Counts what arrives (the simulator's flow table holds the counters); goodput = payload."""

    def __init__(self, Node node, int flow):
        self.node = node.id
        self.flow = flow

    cdef int recv(self, Packet* p, int64_t now) except -1:
        self.sim.flows[p.flow].goodput_bytes += p.payload
        pkt_free(p)

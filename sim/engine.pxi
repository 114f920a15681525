# Event engine: int64-ns clock, binary heap of C structs.
#
# Events at the same nanosecond: side events first (observers and periodic hooks,
# ``schedule_side``: FIFO, numbered in a sequence of their own, so adding one leaves the order of
# the others unchanged), then packet arrivals at the far end of a link (``push``), then every
# other event; within each group in the order they were scheduled (FIFO).
# Arrivals go before the transmitter wake-ups and timers of the same instant,
# which is what FIFO gives in the usual case (an arrival is scheduled a propagation delay ahead, a
# wake-up or a timer less far ahead) and what keeps the packet-for-packet ns-2 oracles of
# tests/sim exact. History: while the background's first segments were 40 bytes too long (the
# fault tcp.ns2_bare_first removes), FIFO ties let the TCP-MT set-up's plain Reno take 6.8 Mb/s
# and ~100 timeouts where ns-2's took 5.0 and 636, and arrivals in a pseudo-random order hid the
# fault; with the segments right, FIFO agrees better than the shuffle (2000 s, seeds 1-2:
# 4.97 / 5.04 Mb/s and 638 / 619 timeouts, shuffled 4.83 / 4.86 and 686 / 677, ns-2 5.00 / 5.01
# and 636 / 636; tests/sim/test_tcpmt_ns2.py). A transmitter that frees with nothing waiting has
# no wake-up event, but the number one would have had (taken when its transmission began) still
# orders a packet offered at that instant (sim/link.pxi _poke, after()).

cimport cython

ctypedef struct Event:
    int64_t t
    uint64_t key            # order at equal t: KEY_SIDE, KEY_ARRIVAL, KEY_MAIN
    uint64_t seq            # then FIFO
    PyObject* obj
    Packet* pkt
    int64_t arg
    int32_t kind


cdef enum:
    KEY_SIDE = 0
    KEY_ARRIVAL = 1

cdef uint64_t KEY_MAIN = 0xffffffffffffffffULL


cdef inline bint _ev_less(Event* a, Event* b) noexcept:
    return a.t < b.t or (a.t == b.t and (a.key < b.key or (a.key == b.key and a.seq < b.seq)))


cdef class Component:
    """Anything that receives events. Subclasses override ``handle``."""
    cdef Simulator sim

    cdef int handle(self, int32_t kind, Packet* p, int64_t arg, int64_t now) except -1:
        pass


ctypedef struct FlowStat:
    int64_t sent[2]         # packets put into the network, per direction (DIR_FWD data, DIR_REV acks)
    int64_t sent_bytes[2]
    int64_t recv[2]         # packets that reached their destination agent
    int64_t recv_bytes[2]
    int64_t drop[2]         # packets dropped anywhere (queues, random loss, no route)
    int64_t drop_bytes[2]
    int64_t retx            # retransmitted data packets
    int64_t timeouts
    int64_t fast_retx       # loss-recovery episodes (fast retransmits)
    int64_t loss_probes     # tail loss probes sent
    int64_t goodput_bytes   # unique payload bytes delivered in order
    int64_t transfers       # transfers started
    int64_t completed       # transfers completed


ctypedef struct TransferRec:
    int32_t flow
    int32_t conn
    int64_t size            # bytes requested by the application
    int64_t start           # ns
    int64_t end             # ns, -1 if not completed
    int64_t bytes_sent      # payload bytes transmitted, retransmissions included (W_k)
    int64_t pkts_sent
    int64_t retx
    int64_t timeouts
    int64_t probes          # tail loss probes
    int64_t request         # request mode: bytes the client sent first (0: none)
    int64_t response        # request mode: ns the server started its response, -1 if not


@cython.final
cdef class Simulator:
    """Event loop plus the global tables (flows, transfers) every component writes into."""
    cdef Event* heap
    cdef Py_ssize_t nheap, capheap
    cdef uint64_t seqno
    cdef uint64_t side_seqno
    cdef uint64_t cur_key, cur_seq  # order of the event being handled (at ``now``)
    cdef readonly int64_t now
    cdef readonly int64_t events
    cdef list keep                  # strong refs: components, nodes, links, agents
    cdef list nodes_list
    cdef list links_list
    cdef PyObject** agent_ptr       # agent id -> Agent (borrowed, NULL when retired)
    cdef Py_ssize_t nagents, capagents
    cdef list agents_list
    cdef FlowStat* flows
    cdef int32_t* flow_class
    cdef double* flow_base_rtt      # seconds, propagation RTT of the flow's path (+ extra delay)
    cdef Py_ssize_t nflows, capflows
    cdef TransferRec* transfers
    cdef Py_ssize_t ntransfers, captransfers
    cdef readonly int64_t drops_noroute

    def __cinit__(self):
        global _pool_uid
        _pool_uid = 0          # packet uids (pcap IP ids) count from 0 in every run
        self.capheap = 1024
        self.heap = <Event*>malloc(self.capheap * sizeof(Event))
        self.keep = []
        self.nodes_list = []
        self.links_list = []
        self.agents_list = []

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.heap != NULL:
            for i in range(self.nheap):
                if self.heap[i].pkt != NULL:
                    pkt_free(self.heap[i].pkt)
            free(self.heap)
        free(self.agent_ptr)
        free(self.flows)
        free(self.flow_class)
        free(self.flow_base_rtt)
        free(self.transfers)

    # ---- scheduling ----
    cdef inline uint64_t take_seq(self) noexcept:
        """The next number of the main sequence (an event's place among those at its instant),
        for an event scheduled later with it (:meth:`push`, :meth:`schedule_numbered`)."""
        cdef uint64_t seq = self.seqno
        self.seqno += 1
        return seq

    cdef inline int schedule(self, int64_t t, Component c, int32_t kind, Packet* p,
                             int64_t arg) except -1:
        return self._insert(t, KEY_MAIN, self.take_seq(), c, kind, p, arg)

    cdef inline int schedule_numbered(self, int64_t t, uint64_t seq, Component c, int32_t kind,
                                      Packet* p, int64_t arg) except -1:
        """Schedule an event whose sequence number was taken earlier (:meth:`take_seq`)."""
        return self._insert(t, KEY_MAIN, seq, c, kind, p, arg)

    cdef int schedule_side(self, int64_t t, Component c, int32_t kind, Packet* p,
                           int64_t arg) except -1:
        """Schedule an observer's or a periodic hook's event: first among the events at ``t``
        (FIFO among side events), without taking a number from the main sequence."""
        cdef uint64_t seq = self.side_seqno
        self.side_seqno += 1
        return self._insert(t, KEY_SIDE, seq, c, kind, p, arg)

    cdef inline bint after(self, uint64_t seq) noexcept:
        """Whether the event being handled comes after a main event at ``now`` numbered ``seq``."""
        return self.cur_key == KEY_MAIN and self.cur_seq > seq

    cdef inline int push(self, int64_t t, uint64_t seq, Component c, int32_t kind, Packet* p,
                         int64_t arg) except -1:
        """Insert a link arrival whose sequence number was taken when it was scheduled (Link
        delay lines)."""
        return self._insert(t, KEY_ARRIVAL, seq, c, kind, p, arg)

    cdef int _insert(self, int64_t t, uint64_t key, uint64_t seq, Component c, int32_t kind,
                     Packet* p, int64_t arg) except -1:
        cdef Py_ssize_t i, parent
        cdef Event ev
        if self.nheap == self.capheap:
            self.capheap *= 2
            self.heap = <Event*>realloc(self.heap, self.capheap * sizeof(Event))
            if self.heap == NULL:
                raise MemoryError()
        ev.t = t
        ev.key = key
        ev.seq = seq
        ev.obj = <PyObject*>c
        ev.pkt = p
        ev.arg = arg
        ev.kind = kind
        i = self.nheap
        self.nheap += 1
        while i > 0:
            parent = (i - 1) >> 1
            if _ev_less(&ev, &self.heap[parent]):
                self.heap[i] = self.heap[parent]
                i = parent
            else:
                break
        self.heap[i] = ev
        return 0

    cdef inline void _pop(self, Event* out) noexcept:
        cdef Py_ssize_t i = 0, child, n
        cdef Event last
        out[0] = self.heap[0]
        self.nheap -= 1
        n = self.nheap
        if n == 0:
            return
        last = self.heap[n]
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            if child + 1 < n and _ev_less(&self.heap[child + 1], &self.heap[child]):
                child += 1
            if _ev_less(&self.heap[child], &last):
                self.heap[i] = self.heap[child]
                i = child
            else:
                break
        self.heap[i] = last

    def run(self, int64_t until, object callback=None, int64_t every=0):
        """Process events with time < ``until`` (ns). ``callback(now_ns)`` every ``every`` ns."""
        cdef Event ev
        cdef int64_t next_cb = every if (callback is not None and every > 0) else until + 1
        while self.nheap > 0 and self.heap[0].t < until:
            self._pop(&ev)
            self.now = ev.t
            self.cur_key = ev.key
            self.cur_seq = ev.seq
            self.events += 1
            if ev.t >= next_cb:
                callback(ev.t)
                while next_cb <= ev.t:
                    next_cb += every
            (<Component>ev.obj).handle(ev.kind, ev.pkt, ev.arg, ev.t)
        self.now = until
        if callback is not None:
            callback(until)

    def pending_events(self):
        cdef Link l
        cdef Py_ssize_t n = self.nheap
        for l in self.links_list:
            n += l.wire_n
        return n

    def packets_in_events(self):
        """Packets referenced by pending events (on the wire, in delay lines), per flow and direction."""
        cdef Py_ssize_t i
        out = {}
        for i in range(self.nheap):
            if self.heap[i].pkt != NULL:
                key = (self.heap[i].pkt.flow, self.heap[i].pkt.dir)
                out[key] = out.get(key, 0) + 1
        cdef Link l
        cdef Packet* q
        for l in self.links_list:
            for i in range(l.wire_n):
                q = l.wire[(l.wire_head + i) & (l.wire_cap - 1)].pkt
                key = (q.flow, q.dir)
                out[key] = out.get(key, 0) + 1
        return out

    # ---- registration (Python, at build time) ----
    cpdef int add_flow(self, int cls, double base_rtt) except -1:
        if self.nflows == self.capflows:
            self.capflows = max(16, 2 * self.capflows)
            self.flows = <FlowStat*>realloc(self.flows, self.capflows * sizeof(FlowStat))
            self.flow_class = <int32_t*>realloc(self.flow_class, self.capflows * sizeof(int32_t))
            self.flow_base_rtt = <double*>realloc(self.flow_base_rtt, self.capflows * sizeof(double))
            if self.flows == NULL or self.flow_class == NULL or self.flow_base_rtt == NULL:
                raise MemoryError()
        memset(&self.flows[self.nflows], 0, sizeof(FlowStat))
        self.flow_class[self.nflows] = cls
        self.flow_base_rtt[self.nflows] = base_rtt
        self.nflows += 1
        return self.nflows - 1

    def set_flow_base_rtt(self, int flow, double rtt):
        self.flow_base_rtt[flow] = rtt

    cpdef int add_agent(self, Agent a) except -1:
        if self.nagents == self.capagents:
            self.capagents = max(16, 2 * self.capagents)
            self.agent_ptr = <PyObject**>realloc(self.agent_ptr, self.capagents * sizeof(PyObject*))
            if self.agent_ptr == NULL:
                raise MemoryError()
        self.agent_ptr[self.nagents] = <PyObject*>a
        self.agents_list.append(a)
        self.keep.append(a)
        a.sim = self
        a.agent_id = <int32_t>self.nagents
        self.nagents += 1
        return a.agent_id

    def add_node(self, Node n):
        n.sim = self
        self.keep.append(n)
        self.nodes_list.append(n)

    def add_component(self, Component c):
        c.sim = self
        self.keep.append(c)

    cdef Py_ssize_t new_transfer(self, int32_t flow, int32_t conn, int64_t size, int64_t now) except -1:
        if self.ntransfers == self.captransfers:
            self.captransfers = max(64, 2 * self.captransfers)
            self.transfers = <TransferRec*>realloc(self.transfers,
                                                   self.captransfers * sizeof(TransferRec))
            if self.transfers == NULL:
                raise MemoryError()
        cdef TransferRec* r = &self.transfers[self.ntransfers]
        memset(r, 0, sizeof(TransferRec))
        r.flow = flow
        r.conn = conn
        r.size = size
        r.start = now
        r.end = -1
        r.response = -1
        self.flows[flow].transfers += 1
        self.ntransfers += 1
        return self.ntransfers - 1

    # ---- packet movement ----
    cdef inline void count_sent(self, Packet* p) noexcept:
        cdef FlowStat* f = &self.flows[p.flow]
        f.sent[p.dir] += 1
        f.sent_bytes[p.dir] += p.size

    cdef void drop(self, Packet* p) noexcept:
        """Account a dropped packet to its flow and free it."""
        cdef FlowStat* f = &self.flows[p.flow]
        f.drop[p.dir] += 1
        f.drop_bytes[p.dir] += p.size
        pkt_free(p)

    cdef int deliver(self, Packet* p, int64_t now) except -1:
        """Hand a packet that reached its destination node to its agent (which frees it)."""
        cdef FlowStat* f = &self.flows[p.flow]
        f.recv[p.dir] += 1
        f.recv_bytes[p.dir] += p.size
        cdef PyObject* a = self.agent_ptr[p.dst_agent] if p.dst_agent < self.nagents else NULL
        if a == NULL:
            pkt_free(p)
        else:
            (<Agent>a).recv(p, now)

    # ---- results (Python) ----
    def flow_stats(self):
        """Per-flow counters as a dict of numpy arrays."""
        import numpy as np
        n = self.nflows
        cols = {k: np.zeros(n, np.int64) for k in (
            "sent_pkts", "sent_bytes", "recv_pkts", "recv_bytes", "drop_pkts", "drop_bytes",
            "ack_sent_pkts", "ack_recv_pkts", "ack_drop_pkts", "retransmits", "timeouts",
            "fast_retransmits", "loss_probes", "goodput_bytes", "transfers", "completed")}
        cls = np.zeros(n, np.int32)
        rtt = np.zeros(n, np.float64)
        cdef Py_ssize_t i
        cdef FlowStat* f
        for i in range(n):
            f = &self.flows[i]
            cols["sent_pkts"][i] = f.sent[0]
            cols["sent_bytes"][i] = f.sent_bytes[0]
            cols["recv_pkts"][i] = f.recv[0]
            cols["recv_bytes"][i] = f.recv_bytes[0]
            cols["drop_pkts"][i] = f.drop[0]
            cols["drop_bytes"][i] = f.drop_bytes[0]
            cols["ack_sent_pkts"][i] = f.sent[1]
            cols["ack_recv_pkts"][i] = f.recv[1]
            cols["ack_drop_pkts"][i] = f.drop[1]
            cols["retransmits"][i] = f.retx
            cols["timeouts"][i] = f.timeouts
            cols["fast_retransmits"][i] = f.fast_retx
            cols["loss_probes"][i] = f.loss_probes
            cols["goodput_bytes"][i] = f.goodput_bytes
            cols["transfers"][i] = f.transfers
            cols["completed"][i] = f.completed
            cls[i] = self.flow_class[i]
            rtt[i] = self.flow_base_rtt[i]
        cols["cls"] = cls
        cols["base_rtt"] = rtt
        return cols

    def transfer_records(self):
        import numpy as np
        n = self.ntransfers
        names = ("flow", "conn", "size", "start", "end", "bytes_sent", "pkts_sent", "retransmits",
                 "timeouts", "loss_probes", "request", "response")
        cols = {k: np.zeros(n, np.int64) for k in names}
        cdef Py_ssize_t i
        cdef TransferRec* r
        for i in range(n):
            r = &self.transfers[i]
            cols["flow"][i] = r.flow
            cols["conn"][i] = r.conn
            cols["size"][i] = r.size
            cols["start"][i] = r.start
            cols["end"][i] = r.end
            cols["bytes_sent"][i] = r.bytes_sent
            cols["pkts_sent"][i] = r.pkts_sent
            cols["retransmits"][i] = r.retx
            cols["timeouts"][i] = r.timeouts
            cols["loss_probes"][i] = r.probes
            cols["request"][i] = r.request
            cols["response"][i] = r.response
        return cols

    @property
    def links(self):
        return list(self.links_list)

    @property
    def nodes(self):
        return list(self.nodes_list)

    @property
    def agents(self):
        return list(self.agents_list)


cdef class Agent(Component):
    """An endpoint attached to a node: TCP sender/sink, UDP source/sink."""
    cdef readonly int32_t agent_id
    cdef readonly int32_t node
    cdef readonly int32_t flow

    cdef int recv(self, Packet* p, int64_t now) except -1:
        pkt_free(p)


@cython.final
cdef class Node(Component):
    """A host or router with a static routing table (destination node -> outgoing Link)."""
    cdef readonly int32_t id
    cdef readonly str name
    cdef PyObject** route
    cdef Py_ssize_t nroute

    def __init__(self, int id, str name):
        self.id = id
        self.name = name

    def __dealloc__(self):
        free(self.route)

    def set_routes(self, list links_by_dst):
        """``links_by_dst[d]``: the Link to forward packets for node ``d`` on, or None."""
        free(self.route)
        self.nroute = len(links_by_dst)
        self.route = <PyObject**>malloc(max(1, self.nroute) * sizeof(PyObject*))
        for i, l in enumerate(links_by_dst):
            self.route[i] = NULL if l is None else <PyObject*>l

    cdef int receive(self, Packet* p, int64_t now) except -1:
        cdef PyObject* l
        if p.dst == self.id:
            self.sim.deliver(p, now)
            return 0
        l = self.route[p.dst] if p.dst < self.nroute else NULL
        if l == NULL:
            self.sim.drops_noroute += 1
            self.sim.drop(p)
        else:
            (<Link>l).send(p, now)

# Packets (C structs from a pool), per-component random streams.
#
# A Packet is never a Python object: it is allocated from blocks that never move, linked through
# ``next`` on the free list and in FIFO queues, and freed exactly once (delivered or dropped).

cdef enum:
    F_FIN = 0x01
    F_SYN = 0x02
    F_RST = 0x04
    F_PSH = 0x08
    F_ACK = 0x10
    # simulator-only bits above the 8 TCP flag bits (the pcap writes flags & 0xff)
    F_XOPT = 0x100      # header bytes and pcap fields from this packet's own TCP options below
    F_TSOPT = 0x200     # ... carrying the timestamps option
    F_SACKOK = 0x400    # ... a SYN carrying SACK-permitted
    F_CLIREV = 0x800    # ... of a connection the receiving end (DIR_REV) opened (request mode)

cdef enum:
    PROTO_TCP = 6
    PROTO_UDP = 17

cdef enum:
    DIR_FWD = 0     # data direction of a flow (sender -> receiver)
    DIR_REV = 1     # acknowledgements / control back to the sender

ctypedef struct Packet:
    int64_t uid         # creation order within the run
    int64_t seq         # TCP data: segment index within the connection; UDP: packet number
    int64_t ack         # TCP ACK: next expected segment index (cumulative)
    int64_t ts          # data: sender timestamp (ns); ACK: echo of the timestamp of the segment acked
    int64_t ack_bytes   # TCP ACK: bytes acknowledged (relative; +1 once the FIN is acked), for pcap
    int64_t t_created   # ns
    int64_t t_enq       # ns, time this packet entered its current queue
    int32_t flow        # flow id (row of the flows table)
    int32_t conn        # connection (transfer) number within the flow
    int32_t src         # source node id
    int32_t dst         # destination node id
    int32_t dst_agent   # agent id that receives it at ``dst``
    int32_t size        # bytes at the IP layer (header + payload)
    int32_t payload     # transport payload bytes
    int32_t cls         # class tag (flow's class; classifiers may rewrite it)
    uint16_t flags      # TCP flags (F_*)
    uint8_t proto       # PROTO_TCP / PROTO_UDP
    uint8_t dir         # DIR_FWD / DIR_REV
    uint8_t retx        # data: 1 if a retransmission; ACK: echo (Karn's rule)
    uint8_t ecn         # reserved (0)
    int64_t tsecr       # F_XOPT: time (ns) of the packet whose timestamp this one echoes, 0: none
    uint32_t tcp_seq    # F_XOPT: TCP sequence number relative to the sender's ISN (SYN = 0)
    uint32_t tcp_ack    # F_XOPT: acknowledgment number relative to the peer's ISN
    uint32_t sack[8]    # SACK blocks [left, right) relative to the data sender's ISN, most
                        # recent first (a D-SACK block, if any, first)
    uint8_t nsack       # number of SACK blocks
    int64_t user        # scratch for disciplines (e.g. virtual finish time, sub-queue id)
    double user_f       # scratch for disciplines
    Packet* next        # FIFO / free-list link


# ---- packet pool (module level: blocks are reused across runs) ----

cdef enum:
    POOL_BLOCK = 4096

cdef Packet* _pool_free = NULL
cdef Packet** _pool_blocks = NULL
cdef Py_ssize_t _pool_nblocks = 0
cdef int64_t _pool_live = 0        # packets allocated and not yet freed
cdef int64_t _pool_uid = 0


cdef Packet* pkt_alloc() except NULL:
    global _pool_free, _pool_blocks, _pool_nblocks, _pool_live, _pool_uid
    cdef Packet* blk
    cdef Py_ssize_t i
    if _pool_free == NULL:
        blk = <Packet*>malloc(POOL_BLOCK * sizeof(Packet))
        _pool_blocks = <Packet**>realloc(_pool_blocks, (_pool_nblocks + 1) * sizeof(Packet*))
        if blk == NULL or _pool_blocks == NULL:
            raise MemoryError()
        _pool_blocks[_pool_nblocks] = blk
        _pool_nblocks += 1
        for i in range(POOL_BLOCK - 1):
            blk[i].next = &blk[i + 1]
        blk[POOL_BLOCK - 1].next = NULL
        _pool_free = blk
    cdef Packet* p = _pool_free
    _pool_free = p.next
    memset(p, 0, sizeof(Packet))
    p.uid = _pool_uid
    _pool_uid += 1
    _pool_live += 1
    return p


cdef inline void pkt_free(Packet* p) noexcept:
    global _pool_free, _pool_live
    p.next = _pool_free
    _pool_free = p
    _pool_live -= 1


def pool_live():
    """Packets currently allocated (in queues, on links, in delay lines)."""
    return _pool_live


# ---- FIFO of packets (used by DropTail, RED and by sub-queues of classful schedulers) ----

ctypedef struct PktFifo:
    Packet* head
    Packet* tail
    int64_t n
    int64_t bytes


cdef inline void fifo_push(PktFifo* q, Packet* p) noexcept:
    p.next = NULL
    if q.tail == NULL:
        q.head = p
    else:
        q.tail.next = p
    q.tail = p
    q.n += 1
    q.bytes += p.size


cdef inline Packet* fifo_pop(PktFifo* q) noexcept:
    cdef Packet* p = q.head
    if p != NULL:
        q.head = p.next
        if q.head == NULL:
            q.tail = NULL
        q.n -= 1
        q.bytes -= p.size
        p.next = NULL
    return p


cdef inline Packet* fifo_pop_tail(PktFifo* q) noexcept:
    """Remove the last packet (O(n); for push-out disciplines)."""
    cdef Packet* p = q.head
    cdef Packet* prev = NULL
    if p == NULL:
        return NULL
    while p.next != NULL:
        prev = p
        p = p.next
    if prev == NULL:
        q.head = NULL
    else:
        prev.next = NULL
    q.tail = prev
    q.n -= 1
    q.bytes -= p.size
    return p


cdef void fifo_free_all(PktFifo* q) noexcept:
    cdef Packet* p = fifo_pop(q)
    while p != NULL:
        pkt_free(p)
        p = fifo_pop(q)


# ---- random numbers: xoshiro256** per component, seeded from numpy SeedSequence ----

ctypedef struct Rng:
    uint64_t s0
    uint64_t s1
    uint64_t s2
    uint64_t s3


cdef inline uint64_t _rotl(uint64_t x, int k) noexcept:
    return (x << k) | (x >> (64 - k))


cdef inline uint64_t rng_next(Rng* r) noexcept:
    cdef uint64_t result = _rotl(r.s1 * 5, 7) * 9
    cdef uint64_t t = r.s1 << 17
    r.s2 ^= r.s0
    r.s3 ^= r.s1
    r.s1 ^= r.s2
    r.s0 ^= r.s3
    r.s2 ^= t
    r.s3 = _rotl(r.s3, 45)
    return result


cdef inline double rng_uniform(Rng* r) noexcept:
    """Uniform on (0, 1): never exactly 0 or 1."""
    return ((rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0)


cdef inline double rng_exponential(Rng* r, double mean) noexcept:
    return -log(rng_uniform(r)) * mean


cdef inline double rng_pareto(Rng* r, double alpha, double k) noexcept:
    return k * pow(rng_uniform(r), -1.0 / alpha)


cdef void rng_seed(Rng* r, object state):
    """``state``: 4 uint64 words from ``numpy.random.SeedSequence.generate_state(4, numpy.uint64)``."""
    r.s0 = <uint64_t>int(state[0])
    r.s1 = <uint64_t>int(state[1])
    r.s2 = <uint64_t>int(state[2])
    r.s3 = <uint64_t>int(state[3])
    if r.s0 == 0 and r.s1 == 0 and r.s2 == 0 and r.s3 == 0:
        r.s0 = 1

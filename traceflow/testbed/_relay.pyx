# cython: language_level=3
"""The delay relay's event loop in C: one direction of the router, frames held until due.

Frames are read from an AF_PACKET socket on the input interface together with their kernel receive
timestamp (``SO_TIMESTAMPNS``), so the time a frame waits for this process to be scheduled does not
add to its delay. Each frame's due time is that timestamp plus the one-way delay of its client
address. All delays of one client are equal, so one FIFO per delay keeps frames in due order with
O(1) work per frame (no heap needed). The loop sleeps in ``ppoll`` until ``spin_ns`` before the
earliest due time, then spins on the clock for the rest: wake-up latency of a timer is tens of µs
on a loaded machine, the spin makes the send time exact to the clock's resolution. Frames leave by
``sendto`` on an AF_PACKET socket of the output interface *through its qdisc* (no
PACKET_QDISC_BYPASS), so a shaped interface still shapes and drops them.

Times are integer nanoseconds (CLOCK_MONOTONIC for the schedule; kernel timestamps are
CLOCK_REALTIME and are converted with an offset read each batch).
"""
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy

cdef extern from "<time.h>" nogil:
    ctypedef long time_t
    cdef struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(int clk, timespec *ts)
    int CLOCK_MONOTONIC
    int CLOCK_REALTIME

cdef extern from "<errno.h>" nogil:
    int errno

cdef extern from "<poll.h>" nogil:
    cdef struct pollfd:
        int fd
        short events
        short revents
    short POLLIN
    int ppoll(pollfd *fds, unsigned long nfds, const timespec *tmo, const void *sigmask)

cdef extern from "<sys/uio.h>" nogil:
    cdef struct iovec:
        void *iov_base
        size_t iov_len

cdef extern from "<sys/socket.h>" nogil:
    ctypedef unsigned int socklen_t
    cdef struct sockaddr:
        pass
    cdef struct msghdr:
        void *msg_name
        socklen_t msg_namelen
        iovec *msg_iov
        size_t msg_iovlen
        void *msg_control
        size_t msg_controllen
        int msg_flags
    cdef struct cmsghdr:
        socklen_t cmsg_len
        int cmsg_level
        int cmsg_type
    cmsghdr *CMSG_FIRSTHDR(msghdr *m)
    cmsghdr *CMSG_NXTHDR(msghdr *m, cmsghdr *c)
    unsigned char *CMSG_DATA(cmsghdr *c)
    int socket(int domain, int type, int protocol)
    int bind(int fd, const sockaddr *addr, socklen_t len)
    int setsockopt(int fd, int level, int name, const void *value, socklen_t len)
    ssize_t recvmsg(int fd, msghdr *m, int flags)
    ssize_t sendto(int fd, const void *buf, size_t n, int flags, const sockaddr *addr, socklen_t len)
    int AF_PACKET
    int SOCK_RAW
    int SOL_SOCKET
    int SO_RCVBUFFORCE
    int SO_SNDBUFFORCE
    int SO_TIMESTAMPNS
    int SCM_TIMESTAMPNS
    int MSG_DONTWAIT
    int MSG_TRUNC

cdef extern from "<linux/if_packet.h>" nogil:
    cdef struct sockaddr_ll:
        unsigned short sll_family
        unsigned short sll_protocol
        int sll_ifindex
        unsigned short sll_hatype
        unsigned char sll_pkttype
        unsigned char sll_halen
        unsigned char sll_addr[8]
    int SOL_PACKET
    int PACKET_IGNORE_OUTGOING

cdef extern from "<net/if.h>" nogil:
    unsigned int if_nametoindex(const char *name)

cdef extern from "<arpa/inet.h>" nogil:
    unsigned short htons(unsigned short v)

cdef extern from "<sys/mman.h>" nogil:
    int mlockall(int flags)
    int MCL_CURRENT
    int MCL_FUTURE

cdef extern from "<sys/prctl.h>" nogil:
    int prctl(int option, unsigned long arg, ...)
    int PR_SET_TIMERSLACK

cdef extern from "<unistd.h>" nogil:
    ssize_t read(int fd, void *buf, size_t n)
    int close(int fd)

DEF ETH_P_IP = 0x0800
DEF ETH_HLEN = 14
DEF HIST_BIN_NS = 10000      # lateness histogram: 10 µs bins ...
DEF HIST_BINS = 1001         # ... up to 10 ms, the last bin holds everything later
DEF BATCH = 64               # frames read per wake-up before the due list is looked at again


cdef struct Fifo:
    int64_t delay_ns
    int64_t *due
    int *length
    uint8_t *frames          # capacity slots of slot_bytes each
    long head
    long count
    long capacity
    long peak


cdef inline int64_t _now(int clk) noexcept nogil:
    cdef timespec ts
    clock_gettime(clk, &ts)
    return <int64_t>ts.tv_sec * 1000000000 + ts.tv_nsec


cdef int _grow(Fifo *q, int slot_bytes) noexcept nogil:
    """Double the capacity of ``q`` keeping its frames in order; 0 on success, -1 if out of memory."""
    cdef long cap = q.capacity * 2 if q.capacity else 1024
    cdef int64_t *due = <int64_t *>malloc(cap * sizeof(int64_t))
    cdef int *length = <int *>malloc(cap * sizeof(int))
    cdef uint8_t *frames = <uint8_t *>malloc(cap * slot_bytes)
    cdef long i, j
    if due == NULL or length == NULL or frames == NULL:
        free(due)
        free(length)
        free(frames)
        return -1
    for i in range(q.count):
        j = (q.head + i) % q.capacity
        due[i] = q.due[j]
        length[i] = q.length[j]
        memcpy(frames + i * slot_bytes, q.frames + j * slot_bytes, q.length[j])
    free(q.due)
    free(q.length)
    free(q.frames)
    q.due, q.length, q.frames = due, length, frames
    q.head, q.capacity = 0, cap
    return 0


def realtime_priority(int priority):
    """Lock memory, zero timer slack and ask for SCHED_FIFO ``priority`` (needs root).

    Returns the scheduling policy obtained: "fifo", or "other" when the kernel refused.
    """
    import os

    mlockall(MCL_CURRENT | MCL_FUTURE)
    prctl(PR_SET_TIMERSLACK, 1)
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except OSError:
        return "other"
    return "fifo"


def _open(str in_dev, str out_dev):
    """(rx fd on in_dev: incoming IPv4 frames with timestamps, tx fd, out_dev's ifindex)."""
    cdef int one = 1, size = 16 << 20
    cdef sockaddr_ll ll
    cdef int rx, tx
    cdef bytes name_in = in_dev.encode(), name_out = out_dev.encode()
    cdef int in_index = if_nametoindex(name_in), out_index = if_nametoindex(name_out)
    if in_index == 0 or out_index == 0:
        raise OSError(f"no interface {in_dev if in_index == 0 else out_dev}")
    rx = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_IP))
    # protocol 0: the sending socket receives nothing
    tx = socket(AF_PACKET, SOCK_RAW, 0)
    if rx < 0 or tx < 0:
        raise OSError(errno, "AF_PACKET socket (needs root)")
    ll.sll_family = AF_PACKET
    ll.sll_protocol = htons(ETH_P_IP)
    ll.sll_ifindex = in_index
    if bind(rx, <sockaddr *>&ll, sizeof(ll)) != 0:
        raise OSError(errno, f"bind {in_dev}")
    # frames this router sends out of in_dev (the other direction's relay) are not ours to relay
    setsockopt(rx, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one))
    setsockopt(rx, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one))
    # bursts of a whole window must not overflow while the loop spins on an earlier frame
    setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size))
    setsockopt(tx, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size))
    return rx, tx, out_index


def run(str in_dev, str out_dev, bytes mac_header, int key_offset, int peer_offset,
        bytes peer_ip, list delays, int mtu, long spin_ns, int control_fd):
    """Relay IPv4 frames from ``in_dev`` to ``out_dev`` until ``control_fd`` reaches EOF.

    ``mac_header``: the 12 bytes (destination, source MAC) written over each frame's.
    A frame is relayed when the 4 bytes at ``peer_offset`` equal ``peer_ip`` and the 4 bytes at
    ``key_offset`` are one of the client addresses in ``delays`` (a list of (4-byte address,
    one-way delay in ns)); it is sent at its receive time + that delay. ``mtu``: IP MTU (larger
    frames are dropped and counted). ``spin_ns``: how long before a due time to stop sleeping.

    Returns a dict of counters: relayed, ignored (other addresses), oversize, send_errors,
    peak_queue (most frames held at once), lateness_hist: counts of (send time − due time) and
    rx_delay_hist: counts of (time this loop read the frame − kernel receive time), both in
    10 µs bins from 0, the last bin open-ended.
    """
    if len(mac_header) != 12 or len(peer_ip) != 4 or not delays:
        raise ValueError("mac_header must be 12 bytes, peer_ip 4 bytes, delays non-empty")
    rx, tx, out_index = _open(in_dev, out_dev)
    cdef int rx_fd = rx, tx_fd = tx
    cdef int n_q = len(delays)
    cdef int slot = ((mtu + ETH_HLEN + 63) // 64) * 64
    cdef Fifo *queues = <Fifo *>malloc(n_q * sizeof(Fifo))
    cdef uint8_t *keys = <uint8_t *>malloc(n_q * 4)
    cdef long *hist = <long *>malloc(HIST_BINS * sizeof(long))
    cdef long *rx_hist = <long *>malloc(HIST_BINS * sizeof(long))
    cdef uint8_t *buf = <uint8_t *>malloc(slot + 64)
    cdef uint8_t header[12]
    cdef uint8_t peer[4]
    cdef char control[256]
    cdef sockaddr_ll dst
    cdef iovec iov
    cdef msghdr msg
    cdef cmsghdr *cm
    cdef timespec *stamp
    cdef timespec tmo
    cdef pollfd fds[2]
    cdef long relayed = 0, ignored = 0, oversize = 0, send_errors = 0
    cdef long i, k, late
    cdef int q, nfds, found, stop = 0
    cdef ssize_t got
    cdef int64_t now, nxt, offset, stamp_ns, read_at
    cdef Fifo *f
    cdef char sink[64]
    if queues == NULL or keys == NULL or hist == NULL or rx_hist == NULL or buf == NULL:
        raise MemoryError()
    for q in range(n_q):
        address, delay = delays[q]
        memcpy(keys + 4 * q, <const char *>address, 4)
        queues[q].delay_ns = delay
        queues[q].due = NULL
        queues[q].length = NULL
        queues[q].frames = NULL
        queues[q].head = queues[q].count = queues[q].capacity = queues[q].peak = 0
        if _grow(&queues[q], slot) != 0:
            raise MemoryError()
    memcpy(header, <const char *>mac_header, 12)
    memcpy(peer, <const char *>peer_ip, 4)
    for i in range(HIST_BINS):
        hist[i] = rx_hist[i] = 0
    dst.sll_family = AF_PACKET
    dst.sll_protocol = htons(ETH_P_IP)
    dst.sll_ifindex = out_index
    dst.sll_halen = 6
    memcpy(dst.sll_addr, header, 6)
    fds[0].fd = rx_fd
    fds[0].events = POLLIN
    fds[1].fd = control_fd
    fds[1].events = POLLIN
    with nogil:
        while not stop:
            # 1. send every frame that is due
            now = _now(CLOCK_MONOTONIC)
            nxt = -1
            for q in range(n_q):
                f = &queues[q]
                while f.count and f.due[f.head] <= now:
                    if sendto(tx_fd, f.frames + f.head * slot, f.length[f.head], 0,
                              <sockaddr *>&dst, sizeof(dst)) < 0:
                        send_errors += 1        # ENOBUFS: the output qdisc dropped it
                    else:
                        relayed += 1
                    late = (_now(CLOCK_MONOTONIC) - f.due[f.head]) // HIST_BIN_NS
                    hist[late if late < HIST_BINS else HIST_BINS - 1] += 1
                    f.head = (f.head + 1) % f.capacity
                    f.count -= 1
                    now = _now(CLOCK_MONOTONIC)
                if f.count and (nxt < 0 or f.due[f.head] < nxt):
                    nxt = f.due[f.head]
            # 2. close to a due time: spin instead of sleeping (wake-up latency is the error)
            if nxt >= 0 and nxt - now <= spin_ns:
                continue
            # 3. sleep until a frame arrives, the control pipe closes or spin_ns before due
            if nxt < 0:
                nfds = ppoll(fds, 2, NULL, NULL)
            else:
                tmo.tv_sec = (nxt - now - spin_ns) // 1000000000
                tmo.tv_nsec = (nxt - now - spin_ns) % 1000000000
                nfds = ppoll(fds, 2, &tmo, NULL)
            if nfds <= 0:
                continue
            if fds[1].revents:
                if read(control_fd, sink, sizeof(sink)) <= 0:
                    stop = 1
            if not fds[0].revents:
                continue
            # 4. read what arrived, stamp each frame with its due time
            read_at = _now(CLOCK_MONOTONIC)
            offset = _now(CLOCK_REALTIME) - read_at
            for k in range(BATCH):
                iov.iov_base = buf
                iov.iov_len = slot + 64
                msg.msg_name = NULL
                msg.msg_namelen = 0
                msg.msg_iov = &iov
                msg.msg_iovlen = 1
                msg.msg_control = control
                msg.msg_controllen = sizeof(control)
                msg.msg_flags = 0
                got = recvmsg(rx_fd, &msg, MSG_DONTWAIT | MSG_TRUNC)
                if got < 0:
                    break
                if got > mtu + ETH_HLEN:
                    oversize += 1
                    continue
                if got < ETH_HLEN + 20 or memcmp(buf + peer_offset, peer, 4) != 0:
                    ignored += 1
                    continue
                found = -1
                for q in range(n_q):
                    if memcmp(buf + key_offset, keys + 4 * q, 4) == 0:
                        found = q
                        break
                if found < 0:
                    ignored += 1
                    continue
                stamp_ns = -1
                cm = CMSG_FIRSTHDR(&msg)
                while cm != NULL:
                    if cm.cmsg_level == SOL_SOCKET and cm.cmsg_type == SCM_TIMESTAMPNS:
                        stamp = <timespec *>CMSG_DATA(cm)
                        stamp_ns = <int64_t>stamp.tv_sec * 1000000000 + stamp.tv_nsec - offset
                    cm = CMSG_NXTHDR(&msg, cm)
                if stamp_ns >= 0:
                    # clamp: the two clock reads of the offset can put a fresh frame a little < 0
                    late = max(0, (read_at - stamp_ns) // HIST_BIN_NS)
                    rx_hist[late if late < HIST_BINS else HIST_BINS - 1] += 1
                f = &queues[found]
                if f.count == f.capacity and _grow(f, slot) != 0:
                    send_errors += 1
                    continue
                i = (f.head + f.count) % f.capacity
                memcpy(f.frames + i * slot, buf, got)
                memcpy(f.frames + i * slot, header, 12)
                f.length[i] = got
                f.due[i] = (stamp_ns if stamp_ns >= 0 else _now(CLOCK_MONOTONIC)) + f.delay_ns
                f.count += 1
                if f.count > f.peak:
                    f.peak = f.count
    peak = max(queues[q].peak for q in range(n_q))
    for q in range(n_q):
        free(queues[q].due)
        free(queues[q].length)
        free(queues[q].frames)
    free(queues)
    free(keys)
    free(buf)
    out = dict(relayed=relayed, ignored=ignored, oversize=oversize, send_errors=send_errors,
               peak_queue=peak, lateness_hist=[hist[i] for i in range(HIST_BINS)],
               rx_delay_hist=[rx_hist[i] for i in range(HIST_BINS)])
    free(hist)
    free(rx_hist)
    close(rx_fd)
    close(tx_fd)
    return out

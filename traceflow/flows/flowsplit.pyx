"""The sequential core of :mod:`traceflow.flows`: connection splitting, sequence space, handshake.

Why a kernel: three rules are genuinely sequential. (1) A SYN starts a new connection when its ISN
differs from the base sequence number of its direction *in the current connection*, and that base
is reset by the split itself (recursive, so no exact closed form as window expressions). (2) The
handshake is an ordered chain of events (SYN → SYN/ACK → final ACK → first data → second data),
each defined relative to the previous one. (3) Sequence analysis carries running per-direction
state (unwrapped sequence number, highest byte sent). One O(n) pass in capture order with state
per endpoint pair does all three; as Polars window expressions over a sorted table the same work
took ~10x longer, and the sort alone (a gather of every column) cost more than this whole pass.
Counting (packets, bytes per direction) stays in Polars group-by aggregations.
"""
import numpy as np

from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

cdef uint16_t FIN = 0x01
cdef uint16_t SYN = 0x02
cdef uint16_t RST = 0x04
cdef uint16_t ACK = 0x10


cdef inline uint64_t _mix(uint64_t x) nogil:
    # splitmix64 finalizer
    x ^= x >> 30
    x *= 0xbf58476d1ce4e5b9ULL
    x ^= x >> 27
    x *= 0x94d049bb133111ebULL
    x ^= x >> 31
    return x


cdef inline bint _src_first(uint64_t s_hi, uint64_t s_lo, uint16_t sp,
                            uint64_t d_hi, uint64_t d_lo, uint16_t dp) nogil:
    # the endpoint pair's "a" side is the smaller (address, port)
    if s_hi != d_hi:
        return s_hi < d_hi
    if s_lo != d_lo:
        return s_lo < d_lo
    return sp <= dp


def pair_ids(const uint64_t[:] src_hi, const uint64_t[:] src_lo, const uint64_t[:] dst_hi,
             const uint64_t[:] dst_lo, const uint16_t[:] sport, const uint16_t[:] dport,
             const uint8_t[:] proto):
    """Number the unordered endpoint pairs 0, 1, ... in order of first appearance.

    Addresses are 16-byte addresses as big-endian uint64 halves. Returns ``(gid, fwd)``: int64
    pair id per packet and uint8 direction, 1 when the packet is sent by the pair's smaller
    (address, port) endpoint. An open-addressing hash table keyed by the whole pair (compared
    exactly, so hash collisions cannot merge pairs).
    """
    cdef Py_ssize_t n = src_hi.shape[0], i, j, k
    cdef uint64_t cap = 1024, mask, h, a_hi, a_lo, b_hi, b_lo, ka_hi, ka_lo, kb_hi, kb_lo
    cdef uint16_t pa, pb, kpa, kpb
    while cap < 2 * <uint64_t>n:
        cap <<= 1
    mask = cap - 1
    slots_arr = np.full(cap, -1, dtype=np.int64)     # slot -> first packet of the pair
    ids_arr = np.empty(n, dtype=np.int64)
    fwd_arr = np.empty(n, dtype=np.uint8)
    cdef int64_t[:] slots = slots_arr
    cdef int64_t[:] ids = ids_arr
    cdef uint8_t[:] fwd = fwd_arr
    cdef int64_t n_pairs = 0
    with nogil:
        for i in range(n):
            fwd[i] = _src_first(src_hi[i], src_lo[i], sport[i], dst_hi[i], dst_lo[i], dport[i])
            if fwd[i]:
                a_hi, a_lo, pa, b_hi, b_lo, pb = (src_hi[i], src_lo[i], sport[i],
                                                  dst_hi[i], dst_lo[i], dport[i])
            else:
                a_hi, a_lo, pa, b_hi, b_lo, pb = (dst_hi[i], dst_lo[i], dport[i],
                                                  src_hi[i], src_lo[i], sport[i])
            h = _mix(a_hi ^ _mix(a_lo ^ _mix(b_hi ^ _mix(b_lo ^ (
                (<uint64_t>pa << 24) | (<uint64_t>pb << 8) | proto[i])))))
            j = h & mask
            while True:
                k = slots[j]
                if k < 0:
                    slots[j] = i
                    ids[i] = n_pairs
                    n_pairs += 1
                    break
                if fwd[k]:
                    ka_hi, ka_lo, kpa, kb_hi, kb_lo, kpb = (src_hi[k], src_lo[k], sport[k],
                                                            dst_hi[k], dst_lo[k], dport[k])
                else:
                    ka_hi, ka_lo, kpa, kb_hi, kb_lo, kpb = (dst_hi[k], dst_lo[k], dport[k],
                                                            src_hi[k], src_lo[k], sport[k])
                if (ka_hi == a_hi and ka_lo == a_lo and kpa == pa and kb_hi == b_hi
                        and kb_lo == b_lo and kpb == pb and proto[k] == proto[i]):
                    ids[i] = ids[k]
                    break
                j = (j + 1) & mask
    return ids_arr, fwd_arr


def split_connections(const int64_t[:] gid, const int64_t[:] ts,
                      const uint8_t[:] fwd, const uint8_t[:] is_tcp, const uint16_t[:] flags,
                      const uint32_t[:] seq, const int64_t[:] payload, int64_t idle_ns):
    """Split packets (in capture order) into connections and extract per-connection events.

    ``gid[i]`` numbers the endpoint pair of packet i (0 .. n_pairs-1, see :func:`pair_ids`);
    ``fwd[i]`` its direction (0/1) within the pair; ``payload[i]`` the transport payload length;
    ``idle_ns`` the idle timeout in nanoseconds.

    A connection of a pair ends before packet i when the gap to the pair's previous packet
    exceeds ``idle_ns`` (unless packet i's timestamp is a lone glitch: the pair's next packet
    jumps back by more than ``idle_ns``), or when i is a TCP SYN (without ACK) whose sequence
    number differs from the base sequence number of its direction in the connection (the ISN of
    an earlier SYN, else the first seen sequence number minus one). A retransmitted SYN (same
    ISN) stays. Connections are numbered 0, 1, ... in the order of their first packets.

    Returns ``(packets, conns)``, dicts of NumPy arrays.

    Per packet: ``conn`` int64; ``rel`` int64 sequence number relative to the first packet of its
    direction in the connection, unwrapped by signed 32-bit steps (0 for non-TCP); ``retrans``
    uint8, the segment occupies sequence space (SYN, payload, FIN) starting below the highest
    sequence number already sent in its direction; ``new_bytes`` int64, payload bytes above
    everything sent before in its direction; ``irregular`` uint8, the payload starts above the
    highest byte sent (a hole a later segment may fill) or below the lowest, so summing
    ``new_bytes`` may undercount the direction's coverage.

    Per connection: ``first``, ``last`` int64 indices of its first and last packet; ``cause``
    uint8 why it starts (0 first of its pair, 1 idle gap, 2 new ISN);
    ``last_of_pair`` uint8; ``client_fwd`` int8 direction of the client (sender of the first SYN
    without ACK, else receiver of the first SYN/ACK, else -1 = first sender); handshake event
    times ``t_syn``, ``t_synack``, ``t_ack``, ``t_data1``, ``t_data2`` (int64 ns, -1 = none):
    the client's first SYN, the server's first SYN/ACK, the final ACK (the client's first ACK
    without SYN/RST after the server's SYN/ACK, or after the SYN if no SYN/ACK was seen), and
    the first two packets with payload after it, in either direction.
    """
    cdef Py_ssize_t n = ts.shape[0], i, j
    cdef int64_t n_pairs = 0
    for i in range(n):
        if gid[i] + 1 > n_pairs:
            n_pairs = gid[i] + 1
    packets = {name: np.zeros(n, dtype=dt) for name, dt in [
        ("conn", np.int64), ("rel", np.int64), ("retrans", np.uint8),
        ("new_bytes", np.int64), ("irregular", np.uint8)]}
    cdef int64_t[:] conn = packets["conn"]
    cdef int64_t[:] rel = packets["rel"]
    cdef uint8_t[:] retrans = packets["retrans"]
    cdef int64_t[:] new_bytes = packets["new_bytes"]
    cdef uint8_t[:] irregular = packets["irregular"]

    # next packet of the same pair (for the timestamp-glitch rule)
    nxt_arr = np.full(n, -1, dtype=np.int64)
    later_arr = np.full(n_pairs, -1, dtype=np.int64)
    cdef int64_t[:] nxt = nxt_arr
    cdef int64_t[:] later = later_arr
    for i in range(n - 1, -1, -1):
        nxt[i] = later[gid[i]]
        later[gid[i]] = i

    # per pair: current connection, last timestamp
    cur_arr = np.full(n_pairs, -1, dtype=np.int64)
    pts_arr = np.zeros(n_pairs, dtype=np.int64)
    cdef int64_t[:] cur = cur_arr
    cdef int64_t[:] pair_ts = pts_arr

    # per connection (grown as needed)
    cdef int64_t capacity = max(1024, n_pairs)
    conns = _conn_arrays(capacity)
    cdef int64_t[:] t_syn = conns["t_syn"]
    cdef int64_t[:] t_sa = conns["t_synack"]
    cdef int64_t[:] t_ack = conns["t_ack"]
    cdef int64_t[:] t_d1 = conns["t_data1"]
    cdef int64_t[:] t_d2 = conns["t_data2"]
    cdef uint8_t[:] cause = conns["cause"]
    cdef int8_t[:] client = conns["client_fwd"]
    cdef int64_t[:] first = conns["first"]
    cdef int64_t[:] last = conns["last"]
    # per direction of a pair's current connection, indexed [2 * pair + direction]
    dir_state = {name: np.zeros(2 * n_pairs, dtype=dt) for name, dt in [
        ("seen", np.uint8), ("base", np.uint32), ("last_seq", np.uint32), ("pos", np.int64),
        ("occ_set", np.uint8), ("occ_max", np.int64), ("data_set", np.uint8),
        ("data_lo", np.int64), ("data_hi", np.int64)]}
    cdef uint8_t[:] seen = dir_state["seen"]
    cdef uint32_t[:] base = dir_state["base"]
    cdef uint32_t[:] last_seq = dir_state["last_seq"]
    cdef int64_t[:] dpos = dir_state["pos"]
    cdef uint8_t[:] occ_set = dir_state["occ_set"]
    cdef int64_t[:] occ_max = dir_state["occ_max"]
    cdef uint8_t[:] data_set = dir_state["data_set"]
    cdef int64_t[:] data_lo = dir_state["data_lo"]
    cdef int64_t[:] data_hi = dir_state["data_hi"]

    cdef int64_t n_conns = 0, c, g, k, r, start, end, occupied, t
    cdef uint8_t d, why
    cdef uint16_t f
    cdef bint split, syn_only, synack, is_client
    for i in range(n):
        g = gid[i]
        d = fwd[i] & 1
        f = flags[i]
        t = ts[i]
        c = cur[g]
        split = False
        if c < 0:
            split = True
            why = 0
        else:
            if t - pair_ts[g] > idle_ns:
                j = nxt[i]
                # A lone timestamp far ahead of both neighbours is a clock glitch, not an idle
                # period: keep the packet, and measure the next gap from before it.
                if not (j >= 0 and ts[j] < t - idle_ns):
                    split = True
                    why = 1
            elif (is_tcp[i] and (f & (SYN | ACK)) == SYN and seen[2 * g + d]
                  and seq[i] != base[2 * g + d]):
                split = True
                why = 2
        if split:
            if n_conns == capacity:
                capacity *= 2
                conns = _conn_arrays(capacity, conns)
                t_syn, t_sa, t_ack = conns["t_syn"], conns["t_synack"], conns["t_ack"]
                t_d1, t_d2 = conns["t_data1"], conns["t_data2"]
                cause, client = conns["cause"], conns["client_fwd"]
                first, last = conns["first"], conns["last"]
            c = n_conns
            n_conns += 1
            cur[g] = c
            cause[c] = why
            first[c] = i
            seen[2 * g] = seen[2 * g + 1] = 0
            occ_set[2 * g] = occ_set[2 * g + 1] = 0
            data_set[2 * g] = data_set[2 * g + 1] = 0
        if split or t - pair_ts[g] <= idle_ns:
            pair_ts[g] = t
        conn[i] = c
        last[c] = i
        if not is_tcp[i]:
            continue

        # sequence space of direction d
        k = 2 * g + d
        if not seen[k]:
            seen[k] = 1
            base[k] = seq[i] if f & SYN else <uint32_t>(seq[i] - 1)
            dpos[k] = 0
        else:
            dpos[k] += <int32_t>(seq[i] - last_seq[k])
        last_seq[k] = seq[i]
        r = dpos[k]
        rel[i] = r
        occupied = payload[i] + (1 if f & SYN else 0) + (1 if f & FIN else 0)
        if occupied > 0:
            if occ_set[k] and r < occ_max[k]:
                retrans[i] = 1
            if not occ_set[k] or r + occupied > occ_max[k]:
                occ_max[k] = r + occupied
            occ_set[k] = 1
        if payload[i] > 0:
            start = r + (1 if f & SYN else 0)
            end = start + payload[i]
            if not data_set[k]:
                data_lo[k] = start
                data_hi[k] = end
                data_set[k] = 1
                new_bytes[i] = payload[i]
            else:
                if start > data_hi[k] or start < data_lo[k]:
                    irregular[i] = 1
                    if start < data_lo[k]:
                        data_lo[k] = start
                if end > data_hi[k]:
                    new_bytes[i] = end - (start if start > data_hi[k] else data_hi[k])
                    data_hi[k] = end

        # handshake events
        syn_only = (f & (SYN | ACK)) == SYN
        synack = (f & (SYN | ACK)) == (SYN | ACK)
        if client[c] < 0:
            if syn_only:
                client[c] = d
            elif synack:
                client[c] = 1 - d
        is_client = client[c] == d
        if syn_only and is_client:
            if t_syn[c] < 0:
                t_syn[c] = t
        elif synack and client[c] >= 0 and not is_client:
            if t_sa[c] < 0:
                t_sa[c] = t
        elif (is_client and t_ack[c] < 0 and (f & (SYN | ACK | RST)) == ACK
              and (t_sa[c] >= 0 or t_syn[c] >= 0)):
            t_ack[c] = t
            continue
        if payload[i] > 0 and t_ack[c] >= 0:
            if t_d1[c] < 0:
                t_d1[c] = t
            elif t_d2[c] < 0:
                t_d2[c] = t

    conns = {name: values[:n_conns] for name, values in conns.items()}
    last_of_pair = np.zeros(n_conns, dtype=np.uint8)
    last_of_pair[cur_arr[cur_arr >= 0]] = 1
    conns["last_of_pair"] = last_of_pair
    return packets, conns


def _conn_arrays(capacity, old=None):
    """Per-connection output arrays of ``capacity`` rows (copying ``old`` into them)."""
    arrays = {name: np.full(capacity, -1, dtype=np.int64) for name in
              ["t_syn", "t_synack", "t_ack", "t_data1", "t_data2"]}
    arrays.update({name: np.zeros(capacity, dtype=np.int64) for name in ["first", "last"]})
    arrays["cause"] = np.zeros(capacity, dtype=np.uint8)
    arrays["client_fwd"] = np.full(capacity, -1, dtype=np.int8)
    if old is not None:
        for name, values in old.items():
            arrays[name][:len(values)] = values
    return arrays

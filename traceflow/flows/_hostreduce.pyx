# cython: language_level=3
"""Per-packet kernels of the end-host inference (:mod:`traceflow.flows.hosts`).

Both take the TCP packets of whole connections with their rows of one connection contiguous and
in time order (``conn``, ``ts`` sorted, stable), as int64 / uint8 / float64 arrays; a null is -1
in integer arrays and NaN in float arrays. They replace windows and group-bys over every packet
that the Polars versions ran several times per connection batch (issue 17: one loop, no sort
beyond the caller's).
"""
import numpy as np

cimport numpy as cnp
from libc.math cimport NAN, isnan
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, qsort, realloc

cnp.import_array()

cdef int64_t MOD = 1 << 32
cdef int64_t HALF = 1 << 31
cdef int64_t FIN = 0x01, SYN = 0x02, RST = 0x04, ACK = 0x10


cdef struct Seg:
    int64_t rel_seq
    Py_ssize_t row


cdef struct Timeout:
    int64_t conn, ts, rel_seq, nth
    double since_tx, srtt, last_rx, prev_tx


cdef int _by_seq(const void *a, const void *b) noexcept nogil:
    # (rel_seq, row): a stable sort of the data segments by sequence number
    cdef const Seg *x = <const Seg *>a
    cdef const Seg *y = <const Seg *>b
    if x.rel_seq != y.rel_seq:
        return -1 if x.rel_seq < y.rel_seq else 1
    return -1 if x.row < y.row else (1 if x.row > y.row else 0)


cdef inline int64_t _mod(int64_t x) noexcept nogil:
    # Python's (floor) modulo, as Polars' %: the C one keeps the sign
    cdef int64_t r = x % MOD
    return r + MOD if r < 0 else r


def orient(const int64_t[::1] conn, const uint8_t[::1] side, const int64_t[::1] flags,
           const int64_t[::1] seq, const int64_t[::1] ack, const int64_t[::1] payload):
    """``(fwd, sender, rel_seq, rel_ack)`` of every packet (see :func:`hosts.connections`):
    ``side`` tells a packet's direction; the client is the side of the connection's first SYN
    without ACK, else of its first packet. The data sender is the direction that carried more
    payload; sequence numbers count from its first SYN's + 1, else from its first data segment."""
    cdef Py_ssize_t n = conn.shape[0], s = 0, e, i
    fwd_a = np.empty(n, np.uint8)
    sender_a = np.empty(n, np.uint8)
    rel_seq_a = np.empty(n, np.int64)
    rel_ack_a = np.empty(n, np.int64)
    cdef uint8_t[::1] fwd = fwd_a, sender = sender_a
    cdef int64_t[::1] rel_seq = rel_seq_a, rel_ack = rel_ack_a
    cdef int client, sfwd
    cdef int64_t c2s, s2c, isn_f, isn_r, data_f, data_r, base
    with nogil:
        while s < n:
            e = s + 1
            while e < n and conn[e] == conn[s]:
                e += 1
            client = -1
            for i in range(s, e):
                if flags[i] & SYN and not flags[i] & ACK:
                    client = side[i]
                    break
            if client < 0:
                client = side[s]
            c2s = s2c = 0
            isn_f = isn_r = data_f = data_r = -1
            for i in range(s, e):
                fwd[i] = side[i] == client
                if fwd[i]:
                    c2s += payload[i]
                    if flags[i] & SYN and isn_f < 0:
                        isn_f = seq[i]
                    if payload[i] > 0 and data_f < 0:
                        data_f = seq[i]
                else:
                    s2c += payload[i]
                    if flags[i] & SYN and isn_r < 0:
                        isn_r = seq[i]
                    if payload[i] > 0 and data_r < 0:
                        data_r = seq[i]
            sfwd = c2s > s2c
            base = (isn_f if sfwd else isn_r)
            base = base + 1 if base >= 0 else (data_f if sfwd else data_r)
            for i in range(s, e):
                sender[i] = fwd[i] == sfwd
                rel_seq[i] = _mod(seq[i] - base) if sender[i] and base >= 0 else -1
                rel_ack[i] = (_mod(ack[i] - base) if not sender[i] and flags[i] & ACK and base >= 0
                              else -1)
            s = e
    return fwd_a.view(bool), sender_a.view(bool), rel_seq_a, rel_ack_a


def reduce(const int64_t[::1] conn, const int64_t[::1] ts, const double[::1] ts_s,
           const int64_t[::1] flags,
           const int64_t[::1] seq, const uint8_t[::1] fwd, const uint8_t[::1] sender,
           const int64_t[::1] rel_seq,
           const int64_t[::1] rel_ack, const int64_t[::1] payload, const int64_t[::1] ip_len,
           const int64_t[::1] window, const int64_t[::1] mss, const int64_t[::1] wscale,
           const int64_t[::1] sack, const uint8_t[::1] has_tsval, int quick_segments,
           double timer_slack):
    """The per-connection facts :func:`hosts.reduce_connections` keeps (their definitions: the
    module docstring of :mod:`traceflow.flows.hosts`): a dict of arrays, one row per connection
    (-1 / NaN where a connection has none) unless said otherwise. Timeouts are looked for only
    in connections whose sender sent a segment ending at or below the highest byte it had sent."""
    cdef Py_ssize_t n = conn.shape[0], s = 0, e, i, j, k, c = 0, nc = 0, npt = 0, ngap = 0
    cdef Py_ssize_t longest = 0, n_data_rows = 0, n_syn = 0
    with nogil:
        while s < n:                  # count the connections, data segments and SYNs
            e = s + 1
            while e < n and conn[e] == conn[s]:
                e += 1
            nc += 1
            longest = max(longest, e - s)
            s = e
        for i in range(n):
            n_data_rows += sender[i] != 0 and payload[i] > 0
            n_syn += (flags[i] & SYN) != 0
    out = {name: np.full(nc, NAN) for name in (
        "t_syn", "t_synack", "t_ack", "request", "response", "close", "t_ack1")}
    out.update({name: np.full(nc, -1, np.int64) for name in (
        "conn", "sender_is_server", "mss", "max_payload", "n_data", "header", "win", "both",
        "sack", "ts", "wscale", "total", "exchanges")})
    cdef double[::1] t_syn = out["t_syn"], t_synack = out["t_synack"], t_ack = out["t_ack"]
    cdef double[::1] request = out["request"], response = out["response"], close = out["close"]
    cdef double[::1] t_ack1 = out["t_ack1"]
    cdef int64_t[::1] conn_o = out["conn"], sis = out["sender_is_server"], mss_o = out["mss"]
    cdef int64_t[::1] max_payload = out["max_payload"], n_data = out["n_data"]
    cdef int64_t[::1] header = out["header"], win_o = out["win"], both_o = out["both"]
    cdef int64_t[::1] sack_o = out["sack"], ts_o = out["ts"], wscale_o = out["wscale"]
    cdef int64_t[::1] total = out["total"], exchanges = out["exchanges"]
    # first-flight points (at most one per data segment) and SYN gaps (one per SYN)
    p_conn_a = np.empty(n_data_rows, np.int64)
    p_ts_a = np.empty(n_data_rows, np.float64)
    p_top_a = np.empty(n_data_rows, np.int64)
    p_ack1_a = np.empty(n_data_rows, np.float64)
    gaps_a = np.empty(n_syn, np.float64)
    cdef int64_t[::1] p_conn = p_conn_a, p_top = p_top_a
    cdef double[::1] p_ts = p_ts_a, p_ack1 = p_ack1_a, gaps = gaps_a
    # timeouts (hosts._timeouts), scratch of one connection: its data segments by sequence
    # number, their copies and previous transmissions, its RTT samples and retransmission
    # candidates; the timeouts found (few) in a growing array
    segs_a = np.empty(longest * sizeof(Seg), np.uint8)
    cdef Seg *segs = <Seg *><void *>cnp.PyArray_DATA(segs_a)
    copies_a = np.empty(longest, np.int64)
    prev_tx_a = np.empty(longest, np.float64)
    samp_t_a = np.empty(longest + 1, np.float64)
    samp_v_a = np.empty(longest + 1, np.float64)
    cand_a = np.empty((4, longest), np.float64)       # row, una, highest end before, last receive
    cdef int64_t[::1] copies = copies_a
    cdef double[::1] prev_tx = prev_tx_a, samp_t = samp_t_a, samp_v = samp_v_a
    cdef double[:, ::1] cand = cand_a
    cdef Timeout *found = NULL
    cdef Timeout *grown
    cdef Py_ssize_t room = 0
    cdef Py_ssize_t nseg, a, b, nsamp, ncand, nto = 0, first_to, lo, hi
    cdef int64_t una, una_prev, prev_max, nth
    cdef double last_rx, hand_t, hand_m, srtt, t
    cdef int hand_in, resending
    cdef int64_t spa[4]
    cdef int64_t f, end, top, prev_top, scale, w, quick, kk, prev_ack, runs
    cdef Py_ssize_t first = 0
    cdef int pending, ncopy
    cdef double pend_ts = 0
    cdef int64_t pend_top = 0
    cdef double ack_t, req_first, req_last, resp_first, resp_last, fin_t
    cdef int seen_f, seen_r, sack_all, ts_all, requester, last_fwd
    spa[0] = spa[1] = spa[2] = spa[3] = 0
    s = 0
    with nogil:
        while s < n:
            e = s + 1
            while e < n and conn[e] == conn[s]:
                e += 1
            conn_o[c] = conn[s]
            # handshake legs, MSS, options and application times
            ack_t = req_first = req_last = resp_first = resp_last = fin_t = NAN
            scale = -2
            seen_f = seen_r = 0
            sack_all = ts_all = 1
            for i in range(s, e):
                f = flags[i]
                if f & SYN:
                    if not f & ACK and isnan(t_syn[c]):
                        t_syn[c] = ts_s[i]
                    if f & ACK and isnan(t_synack[c]):
                        t_synack[c] = ts_s[i]
                    if mss[i] >= 0 and (mss_o[c] < 0 or mss[i] < mss_o[c]):
                        mss_o[c] = mss[i]
                    # both directions' SYNs carry SACK-permitted / Timestamps
                    if fwd[i]:
                        seen_f = 1
                    else:
                        seen_r = 1
                    if sack[i] != 1:
                        sack_all = 0
                    if not has_tsval[i]:
                        ts_all = 0
                    if not sender[i] and scale == -2:
                        scale = wscale[i]      # the receiver's first SYN's (-1: none given)
                elif fwd[i] and f & ACK and isnan(t_ack[c]):
                    t_ack[c] = ts_s[i]
                if sender[i] and sis[c] < 0:
                    sis[c] = not fwd[i]
                if fwd[i]:
                    if payload[i] > 0:
                        if isnan(req_first):
                            req_first = ts_s[i]
                        req_last = ts_s[i]
                    elif (f & (SYN | ACK)) == ACK and isnan(ack_t):
                        ack_t = ts_s[i]
                else:
                    if payload[i] > 0:
                        if isnan(resp_first):
                            resp_first = ts_s[i]
                        if isnan(resp_last) or ts_s[i] > resp_last:
                            resp_last = ts_s[i]
                    if f & FIN and isnan(fin_t):
                        fin_t = ts_s[i]
            if req_first > ack_t:
                request[c] = req_first - ack_t
            if resp_first > req_last:
                response[c] = resp_first - req_last
            close[c] = fin_t - resp_last
            if seen_f and seen_r:
                both_o[c] = 1
                sack_o[c] = sack_all
                ts_o[c] = ts_all
                wscale_o[c] = scale if scale >= 0 else -1
            # the receiver's largest window: windows in SYN segments are never scaled (RFC 7323)
            scale = scale if scale >= 0 else 0
            for i in range(s, e):
                if not sender[i] and not flags[i] & RST:
                    w = window[i] if flags[i] & SYN else window[i] << scale
                    if w > win_o[c]:
                        win_o[c] = w
            # the data sender's segments: largest, first flight, segments per ACK, resending
            k = 0
            for i in range(s, e):
                if rel_ack[i] > 0 and rel_ack[i] < HALF:
                    t_ack1[c] = ts_s[i]
                    break
            for i in range(s, e):
                if sender[i] and payload[i] > 0:
                    k += 1
                    if payload[i] > max_payload[c]:
                        max_payload[c] = payload[i]
            if k:
                n_data[c] = 3 if k > 3 else k
                for i in range(s, e):
                    if sender[i] and payload[i] == max_payload[c]:
                        header[c] = ip_len[i] - payload[i]
                        break
            top = -1
            kk = 0
            resending = 0
            quick = -1
            pending = 0                     # the last point before the first data ACK
            for i in range(s, e):
                if not (sender[i] and payload[i] > 0) or rel_seq[i] < 0:
                    continue
                end = rel_seq[i] + payload[i]
                prev_top = top
                if end > top:
                    top = end
                if end <= prev_top:
                    resending = 1
                # new data: beyond the highest byte sent before (the first: beyond 0)
                if end > (prev_top if prev_top >= 0 else 0):
                    spa[2] += 1
                    if kk == quick_segments - 1:
                        quick = end
                    if kk >= quick_segments:
                        spa[0] += 1
                    kk += 1
                if isnan(t_ack1[c]):
                    continue
                if ts_s[i] < t_ack1[c]:
                    pending = 1
                    pend_ts, pend_top = ts_s[i], top
                elif top > prev_top:        # the highest byte sent grows after the first ACK
                    p_conn[npt], p_ts[npt], p_top[npt], p_ack1[npt] = conn[s], ts_s[i], top, t_ack1[c]
                    npt += 1
            if pending:
                p_conn[npt], p_ts[npt], p_top[npt], p_ack1[npt] = conn[s], pend_ts, pend_top, t_ack1[c]
                npt += 1
            if not isnan(t_ack1[c]) and top >= 0:
                total[c] = top
            prev_ack = 0
            for i in range(s, e):
                if rel_ack[i] < 0 or payload[i] != 0:
                    continue
                if rel_ack[i] > prev_ack and rel_ack[i] < HALF:
                    spa[3] += 1
                    if quick >= 0 and rel_ack[i] > quick:
                        spa[1] += 1
                prev_ack = rel_ack[i]
            # exchanges (sessions.exchanges_per_connection): runs of payload from the requester
            requester = -1
            last_fwd = -1
            for i in range(s, e):
                if payload[i] > 0:
                    if requester < 0:
                        requester = fwd[i]
                        exchanges[c] = 0
                    if fwd[i] == requester and fwd[i] != last_fwd:
                        exchanges[c] += 1
                    last_fwd = fwd[i]
            # SYN gaps: the second copy of each SYN / SYN-ACK (same ISN) after the first
            for i in range(s, e):
                if not flags[i] & SYN:
                    continue
                ncopy = 0
                for j in range(s, i):
                    if flags[j] & SYN and fwd[j] == fwd[i] and seq[j] == seq[i]:
                        ncopy += 1
                        first = j
                if ncopy == 1:
                    gaps[ngap] = ts_s[i] - ts_s[first]
                    ngap += 1
            if resending:
                # the data segments by (rel_seq, time): how often each was sent, and when before
                nseg = 0
                for i in range(s, e):
                    if sender[i] and payload[i] > 0:
                        segs[nseg].rel_seq = rel_seq[i]
                        segs[nseg].row = i
                        nseg += 1
                qsort(segs, nseg, sizeof(Seg), _by_seq)
                a = 0
                while a < nseg:
                    b = a + 1
                    while b < nseg and segs[b].rel_seq == segs[a].rel_seq:
                        b += 1
                    for j in range(a, b):
                        copies[segs[j].row - s] = b - a
                        prev_tx[segs[j].row - s] = ts_s[segs[j - 1].row] if j > a else NAN
                    a = b
                # the sender's RTT samples: the handshake round trip that spans it, then each
                # ACK advancing the cumulative ACK past a segment sent once (Karn)
                hand_t = t_ack[c] if sis[c] == 1 else t_synack[c]
                hand_m = (t_synack[c] - t_syn[c]) + (t_ack[c] - t_synack[c])
                hand_in = isnan(hand_t) or isnan(hand_m)      # (no sample to insert)
                nsamp = ncand = 0
                una = 0
                prev_max = -1
                last_rx = NAN
                for i in range(s, e):
                    if sender[i]:
                        if payload[i] <= 0:
                            continue
                        end = rel_seq[i] + payload[i]
                        if prev_max >= 0 and end <= prev_max:
                            cand[0, ncand] = i
                            cand[1, ncand] = una
                            cand[2, ncand] = prev_max
                            cand[3, ncand] = last_rx
                            ncand += 1
                        if end > prev_max:
                            prev_max = end
                        continue
                    una_prev = una
                    if flags[i] & ACK and 0 <= rel_ack[i] < HALF:
                        if rel_ack[i] > una:
                            una = rel_ack[i]
                        if una > una_prev:
                            lo, hi = 0, nseg
                            while lo < hi:
                                k = (lo + hi) // 2
                                if segs[k].rel_seq < una_prev:
                                    lo = k + 1
                                else:
                                    hi = k
                            if lo < nseg and segs[lo].rel_seq == una_prev and copies[segs[lo].row - s] == 1:
                                if not hand_in and hand_t <= ts_s[i]:
                                    samp_t[nsamp], samp_v[nsamp] = hand_t, hand_m
                                    nsamp += 1
                                    hand_in = 1
                                samp_t[nsamp], samp_v[nsamp] = ts_s[i], ts_s[i] - ts_s[segs[lo].row]
                                nsamp += 1
                    last_rx = ts_s[i]
                if not hand_in:
                    samp_t[nsamp], samp_v[nsamp] = hand_t, hand_m
                    nsamp += 1
                # smoothed RTT after each sample (RFC 6298, gain 1/8, as Polars' ewm_mean)
                for k in range(1, nsamp):
                    samp_v[k] = samp_v[k - 1] + (samp_v[k] - samp_v[k - 1]) * 0.125
                # the timeouts: a go-back retransmission, not a tail-loss probe, after a
                # silence of the receiver longer than SRTT plus timer slack
                first_to = nto
                k = -1                  # the last sample at or before the candidate
                for j in range(ncand):
                    i = <Py_ssize_t>cand[0, j]
                    t = ts_s[i]
                    while k + 1 < nsamp and samp_t[k + 1] <= t:
                        k += 1
                    if k < 0:
                        continue
                    srtt = samp_v[k]
                    end = rel_seq[i] + payload[i]
                    if rel_seq[i] != <int64_t>cand[1, j]:
                        continue
                    if end == <int64_t>cand[2, j] and cand[2, j] - cand[1, j] > payload[i]:
                        continue
                    if not t - cand[3, j] > srtt + timer_slack:
                        continue
                    nth = 1
                    for a in range(first_to, nto):
                        if found[a].rel_seq == rel_seq[i]:
                            nth += 1
                    if nto == room:
                        room = 2 * room + 64
                        grown = <Timeout *>realloc(found, room * sizeof(Timeout))
                        if grown == NULL:
                            with gil:
                                free(found)
                                raise MemoryError()
                        found = grown
                    found[nto] = Timeout(conn[s], ts[i], rel_seq[i], nth, t - prev_tx[i - s], srtt,
                                         cand[3, j], prev_tx[i - s])
                    nto += 1
            c += 1
            s = e
    out["spa"] = np.array([spa[0], spa[1], spa[2], spa[3]], dtype=np.int64)
    # copies of what was found, not views: a part kept for the whole capture would keep the
    # buffer sized for every data segment / SYN alive
    out["points"] = (p_conn_a[:npt].copy(), p_ts_a[:npt].copy(), p_top_a[:npt].copy(),
                     p_ack1_a[:npt].copy())
    out["syn_gaps"] = gaps_a[:ngap].copy()
    out["timeouts"] = timeouts = {name: np.empty(nto, np.int64) for name in (
        "conn", "ts", "rel_seq", "nth")}
    timeouts.update({name: np.empty(nto, np.float64) for name in (
        "since_tx", "srtt", "last_rx", "prev_tx")})
    cdef int64_t[::1] to_conn = timeouts["conn"], to_ts = timeouts["ts"]
    cdef int64_t[::1] to_seq = timeouts["rel_seq"], to_nth = timeouts["nth"]
    cdef double[::1] to_since = timeouts["since_tx"], to_srtt = timeouts["srtt"]
    cdef double[::1] to_rx = timeouts["last_rx"], to_ptx = timeouts["prev_tx"]
    for a in range(nto):
        to_conn[a], to_ts[a], to_seq[a], to_nth[a] = (found[a].conn, found[a].ts, found[a].rel_seq,
                                                      found[a].nth)
        to_since[a], to_srtt[a] = found[a].since_tx, found[a].srtt
        to_rx[a], to_ptx[a] = found[a].last_rx, found[a].prev_tx
    free(found)
    return out

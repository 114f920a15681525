# Classic (ns-2 one-way TCP) loss recovery, selected per flavor by ``cc.recovery``:
#   Tahoe    fast retransmit on 3 dupacks, then slow start from cwnd 1 (go-back-N)
#   Reno     fast retransmit + fast recovery (cwnd = W/2 + 3, +1 per dupack; ssthresh = floor(W/2));
#            the first new ACK ends recovery with cwnd = W/2 unrounded, as ns-2's slowdown()
#   NewReno  RFC 6582: a partial ACK retransmits the next hole and stays in recovery
# Timeouts go back N with exponential backoff. RTT: one timed segment per RTT (Karn) feeds
# Jacobson/Karels, or every ACK's timestamp echo (rtt_per_ack); congestion control and hooks
# get per-ACK samples.


cdef class ClassicRecovery(RecoveryOps):
    def __init__(self):
        self.name = "classic"

    cdef int on_ack(self, TcpSender s, Packet* p, int64_t now) except -1:
        cdef int64_t ack = p.ack, newly
        cdef bint valid_sample = not p.retx and p.ts > 0
        if ack > s.snd_una:
            newly = ack - s.snd_una
            if valid_sample:
                s._rtt_sample(now - p.ts, now)
            if s.rtt_seq >= 0 and ack > s.rtt_seq:
                if not s.rtt_per_ack:
                    s._rto_update(now - s.rtt_ts, s.rtt_ts)
                s.rtt_seq = -1
            self._new_ack(s, ack, newly, now)
        elif ack == s.snd_una and s.snd_max > s.snd_una:
            self._dup_ack(s, now)

    cdef int _new_ack(self, TcpSender s, int64_t ack, int64_t newly, int64_t now) except -1:
        cdef int64_t acked_bytes = newly * s.mss
        cdef int rec = s.cc.recovery
        if ack >= s.n_seg:
            acked_bytes = (s.n_seg - s.snd_una - 1) * s.mss + s.last_payload
        if s.in_recovery:
            if rec == RECOVERY_NEWRENO and ack < s.recover:
                # partial ACK: retransmit the next hole, deflate by the amount acked, stay
                s.snd_una = ack
                if s.snd_nxt < ack:
                    s.snd_nxt = ack
                s.cwnd = s.cwnd - newly + 1.0
                if s.cwnd < 1.0:
                    s.cwnd = 1.0
                s.retransmit(ack, now)
                # RFC 6582 / ns-2's default (newreno_changes1_): only the first partial ACK restarts
                # the timer, so a window with many losses falls back to a timeout instead of
                # recovering one segment per RTT
                if not s.partial_acked:
                    s.partial_acked = True
                    s._timer_set(now + s._rto_value(), TMR_RTO)
                if s.hook is not None:
                    s.hook.on_ack(s, acked_bytes, now)
                s.send_much(now)
                return 0
            s.in_recovery = False
            # the cut window stays in force (ns-2: dupwnd_ = 0, cwnd_ untouched), or less if
            # NewReno's partial ACKs deflated below it
            if s.cwnd > s.recovery_cwnd:
                s.cwnd = s.recovery_cwnd
        # window growth on every new ACK, including the one that ends fast recovery (as ns-2)
        s.cc.on_ack(s, newly, now)
        s.snd_una = ack
        s.dupacks = 0
        if s.snd_nxt < ack:
            s.snd_nxt = ack
        if s.hook is not None:
            s.hook.on_ack(s, acked_bytes, now)
        if s.snd_una >= s.n_seg:
            s._all_acked(now)
            return 0
        if s.snd_una < s.snd_max or s.cwnd < 1.0:
            # as ns-2 newtimer(): a window below one segment sends nothing, so the timer must run
            s._timer_set(now + s._rto_value(), TMR_RTO)
        else:
            s._timer_stop()
        s.send_much(now)

    cdef int _dup_ack(self, TcpSender s, int64_t now) except -1:
        cdef int rec = s.cc.recovery
        if rec == RECOVERY_CC:
            return s.cc.on_dupack(s, now)
        s.dupacks += 1
        if s.in_recovery:
            s.cwnd += 1.0
            s.send_much(now)
            return 0
        if s.dupacks < 3:
            if s.limited_transmit:
                s._send_one_new(now)
            return 0
        if s.dupacks != 3:
            return 0
        if s.snd_una <= s.recover:
            # the ACK does not cover everything outstanding at the last loss event (RFC 6582
            # step 2, ns-2 bug_fix_): these dupacks may come from go-back-N duplicates
            return 0
        s.sim.flows[s.flow].fast_retx += 1
        s.ssthresh = s.cc.ssthresh_on_loss(s)
        s.recovery_cwnd = s.cc.cwnd_on_fast_loss(s)
        s.recover = s.snd_max
        s.cc.on_loss(s, False, now)
        if s.hook is not None:
            s.hook.on_loss(s, now)
        if rec == RECOVERY_TAHOE:
            s.cwnd = 1.0
            s.snd_nxt = s.snd_una
            s.dupacks = 0
            s._timer_set(now + s._rto_value(), TMR_RTO)
            s.send_much(now)
        else:
            # the window is cut before the retransmission leaves (ns-2's dupack_action: slowdown,
            # then output), so hooks sampling at the send see the cut window
            s.cwnd = s.recovery_cwnd + 3.0
            s.in_recovery = True
            s.partial_acked = False
            s.retransmit(s.snd_una, now)
            s._timer_set(now + s._rto_value(), TMR_RTO)
            s.send_much(now)

    cdef int on_timer(self, TcpSender s, int kind, int64_t now) except -1:
        s._count_timeout()
        if s.backoff < 64:
            s.backoff *= 2
        s._ns2_backoff()
        if s.state != TCP_ESTABLISHED or (s.snd_una >= s.snd_max and s.cwnd >= 1.0):
            return 0
        if s.in_recovery and s.cwnd > s.recovery_cwnd:
            # halve the window in force, not the one inflated by dupacks (ns-2 keeps the inflation
            # apart, in dupwnd_, and clears it before the timeout's slowdown)
            s.cwnd = s.recovery_cwnd
        s.ssthresh = s.cc.ssthresh_on_loss(s)
        s.cwnd = 1.0
        s.in_recovery = False
        s.dupacks = 0
        s.recover = s.snd_max
        s.snd_nxt = s.snd_una          # go back N
        s.cc.on_loss(s, True, now)
        if s.hook is not None:
            s.hook.on_timeout(s, now)
        s.send_much(now)
        if not s.rto_armed:
            s._timer_set(now + s._rto_value(), TMR_RTO)

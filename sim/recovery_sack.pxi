# Linux's loss recovery with SACK (net/ipv4/tcp_input.c tcp_ack / tcp_fastretrans_alert,
# tcp_recovery.c, tcp_output.c, tcp_timer.c), the default of current Linux:
#   scoreboard   per outstanding segment: SACKed, lost, retransmitted (RFC 6675's pipe is
#                in_flight = outstanding - (sacked + lost) + retransmitted)
#   RACK         (RFC 8985) a segment is lost when one sent after it was delivered and it is
#                older than the newest delivered segment's RTT plus a reordering window
#                (min_rtt / 4, 0 once three segments are SACKed or in recovery, while no
#                reordering was seen); a timer re-checks segments still inside the window
#   TLP          (RFC 8985 7) in the open state, a probe 2 SRTT after the last transmission
#                (+ rto_min when one segment is out, 2 ms otherwise), before the RTO: new data,
#                or the last segment again; an ACK beyond a retransmitted probe means a loss
#                (cwnd reduction)
#   PRR          (RFC 6937, PRR-SSRB) sets cwnd during recovery from what was delivered
#   RTO          marks every unSACKed segment lost (save those sent within the RACK window),
#                cwnd = in_flight + 1, exponential backoff; F-RTO (RFC 5682) sends new data
#                on the first ACK after a timeout to tell a spurious timeout
#   undo         (timestamps: the echo predates the first retransmission; D-SACKs for every
#                retransmission) restores cwnd and ssthresh
# Segment indices throughout; SACK blocks arrive as relative sequence numbers.

cdef enum:
    SB_SACKED = 1        # TCPCB_SACKED_ACKED
    SB_RETRANS = 2       # TCPCB_SACKED_RETRANS: retransmitted, counted in retrans_out
    SB_LOST = 4          # TCPCB_LOST
    SB_EVER = 8          # TCPCB_EVER_RETRANS

cdef enum:
    CA_OPEN = 0
    CA_DISORDER = 1
    CA_CWR = 2
    CA_RECOVERY = 3
    CA_LOSS = 4

cdef enum:
    FLAG_DATA = 0x01
    FLAG_SND_UNA_ADVANCED = 0x02
    FLAG_DATA_ACKED = 0x04
    FLAG_RETRANS_DATA_ACKED = 0x08
    FLAG_DATA_SACKED = 0x10
    FLAG_ORIG_SACK_ACKED = 0x20
    FLAG_DSACKING_ACK = 0x40
    FLAG_DSACK_TLP = 0x80
    FLAG_SET_XMIT_TIMER = 0x100
    FLAG_LOST_RETRANS = 0x200

cdef enum:
    REXMIT_NONE = 0
    REXMIT_LOST = 1
    REXMIT_NEW = 2

cdef enum:
    TCP_REORDERING = 3
    TCP_TIMEOUT_MIN = 2              # jiffies added to the RACK timer
    TCP_TIMEOUT_MIN_NS = 2000000     # TLP's allowance with more than one segment out


cdef class SackRack(RecoveryOps):
    cdef public bint frto_enabled
    cdef public bint rack                # RACK loss detection (else RFC 6675 dupthresh marking)
    # scoreboard ring, index seg & (cap - 1), valid for snd_una <= seg < snd_max
    cdef uint8_t* sb
    cdef int64_t* xmit
    cdef int64_t cap
    cdef readonly int64_t sacked_out, lost_out, retrans_out
    cdef readonly int ca_state
    cdef int64_t high_seq, fack
    cdef int64_t prr_delivered, prr_out
    cdef int64_t delivered, lost
    cdef double prior_ssthresh
    cdef int64_t undo_marker             # -1: no undo possible
    cdef int64_t undo_retrans            # retransmissions not yet D-SACKed (-1: none)
    cdef int64_t retrans_stamp           # ns of the first retransmission of this episode
    cdef bint frto
    cdef int64_t retransmits             # consecutive RTOs without progress (icsk_retransmits)
    cdef int64_t rack_mstamp, rack_end, rack_rtt
    cdef bint rack_advanced, reord_seen
    cdef int64_t reordering
    cdef int64_t tlp_high                # -1: no probe outstanding
    cdef bint tlp_retrans
    cdef uint32_t last_blocks[8]         # the previous ACK's SACK blocks (skip re-marking)
    cdef int last_n
    cdef int64_t ack_tsecr               # the ACK being processed: its timestamp echo (ns)

    def __init__(self, bint frto=True, bint rack=True):
        self.name = "sack_rack"
        self.frto_enabled = frto
        self.rack = rack

    def __dealloc__(self):
        free(self.sb)
        free(self.xmit)

    cdef int on_start(self, TcpSender s, int64_t now) except -1:
        self.sacked_out = self.lost_out = self.retrans_out = 0
        self.ca_state = CA_OPEN
        self.high_seq = self.fack = 0
        self.prr_delivered = self.prr_out = 0
        self.delivered = self.lost = 0
        self.prior_ssthresh = 0
        self.undo_marker = -1
        self.undo_retrans = -1
        self.retrans_stamp = 0
        self.frto = False
        self.retransmits = 0
        self.rack_mstamp = self.rack_end = self.rack_rtt = 0
        self.rack_advanced = self.reord_seen = False
        self.reordering = TCP_REORDERING
        self.tlp_high = -1
        self.tlp_retrans = False
        self.last_n = 0
        if self.sb == NULL:
            self._grow(s, 64)

    cdef int _grow(self, TcpSender s, int64_t need) except -1:
        """Make the ring hold ``need`` outstanding segments, keeping snd_una..snd_max."""
        cdef int64_t newcap = max(64, self.cap), seg
        cdef uint8_t* nsb
        cdef int64_t* nx
        while newcap < need:
            newcap *= 2
        nsb = <uint8_t*>calloc(newcap, 1)
        nx = <int64_t*>calloc(newcap, sizeof(int64_t))
        if nsb == NULL or nx == NULL:
            raise MemoryError()
        if self.sb != NULL:
            for seg in range(s.snd_una, s.snd_max):
                nsb[seg & (newcap - 1)] = self.sb[seg & (self.cap - 1)]
                nx[seg & (newcap - 1)] = self.xmit[seg & (self.cap - 1)]
        free(self.sb)
        free(self.xmit)
        self.sb = nsb
        self.xmit = nx
        self.cap = newcap

    # ---- scoreboard helpers ----
    cdef inline uint8_t* _f(self, int64_t seg) noexcept:
        return &self.sb[seg & (self.cap - 1)]

    cdef inline int64_t in_flight(self, TcpSender s) noexcept:
        return (s.snd_max - s.snd_una) - (self.sacked_out + self.lost_out) + self.retrans_out

    cdef inline void _mark_lost(self, int64_t seg) noexcept:
        cdef uint8_t* f = self._f(seg)
        if f[0] & SB_RETRANS:
            f[0] &= ~SB_RETRANS            # a retransmission lost again
            self.retrans_out -= 1
        if not (f[0] & SB_LOST):
            f[0] |= SB_LOST
            self.lost_out += 1
            self.lost += 1

    cdef int _transmit(self, TcpSender s, int64_t seg, bint retx, int64_t now) except -1:
        """Send a segment and record it (new data extends the scoreboard)."""
        cdef uint8_t* f
        if not retx:
            if seg - s.snd_una + 1 > self.cap:
                self._grow(s, seg - s.snd_una + 1)
            self.sb[seg & (self.cap - 1)] = 0
        else:
            f = self._f(seg)
            f[0] |= SB_EVER
            if not self.retrans_stamp:
                self.retrans_stamp = now
            if self.undo_retrans < 0:
                self.undo_retrans = 0
            self.undo_retrans += 1
        self.xmit[seg & (self.cap - 1)] = now
        s._send_seg(seg, now)
        if not retx:
            s.snd_nxt = seg + 1
            s.snd_max = seg + 1

    cdef int _retransmit(self, TcpSender s, int64_t seg, int64_t now) except -1:
        """tcp_retransmit_skb: counted in retrans_out until SACKed, ACKed or lost again."""
        cdef uint8_t* f = self._f(seg)
        self._transmit(s, seg, True, now)
        f[0] |= SB_RETRANS
        self.retrans_out += 1

    # ---- sending (tcp_xmit_retransmit_queue, tcp_write_xmit) ----
    cdef int output(self, TcpSender s, int64_t now) except -1:
        if s.state != TCP_ESTABLISHED:
            return 0
        self._xmit_lost(s, now, False)
        self._write_xmit(s, now, False)

    cdef int _xmit_lost(self, TcpSender s, int64_t now, bint in_reo) except -1:
        """Retransmit the segments marked lost, in order, while cwnd allows; retransmitting the
        head restarts the RTO (unless the RACK timer is running)."""
        cdef int64_t seg
        cdef uint8_t fl
        cdef bint rearm = False
        if s.snd_max == s.snd_una or self.lost_out == 0:
            return 0
        for seg in range(s.snd_una, s.snd_max):
            if <int64_t>s.window() - self.in_flight(s) <= 0 or self.retrans_out >= self.lost_out:
                break
            fl = self._f(seg)[0]
            if not (fl & SB_LOST) or fl & (SB_SACKED | SB_RETRANS):
                continue
            if s.pacing and s.pace_wait(now):
                break
            self._retransmit(s, seg, now)
            if self.ca_state == CA_RECOVERY or self.ca_state == CA_CWR:
                self.prr_out += 1
            if seg == s.snd_una and not in_reo and not (s.rto_armed and s.tmr_kind == TMR_REO):
                rearm = True
        if rearm:
            s._ktimer(s.rto, TMR_RTO, now)

    cdef int _write_xmit(self, TcpSender s, int64_t now, bint probe) except -1:
        """New data within cwnd (in_flight < cwnd) and the receiver window; ``probe``: one
        segment regardless of cwnd (a tail loss probe)."""
        cdef int64_t limit = s.avail if s.avail < s.n_seg else s.n_seg, sent = 0
        cdef int64_t prior_packets = s.snd_max - s.snd_una
        cdef bint limited = False
        if limit > s.snd_una + s.rwnd:
            limit = s.snd_una + s.rwnd
        while s.snd_max < limit:
            if s.pacing and not probe and s.pace_wait(now):
                break
            if self.in_flight(s) >= s.window():
                if not probe or sent > 0:
                    limited = True
                    break
            self._transmit(s, s.snd_max, False, now)
            sent += 1
            if probe:
                break
        limited = limited or self.in_flight(s) >= s.window()
        if sent > 0 or limited:
            s.cwnd_validate(limited)
        if sent == 0:
            return 0
        if self.ca_state == CA_RECOVERY or self.ca_state == CA_CWR:
            self.prr_out += sent
        if prior_packets == 0 or (s.rto_armed and s.tmr_kind == TMR_TLP):
            self._rearm_rto(s, now, prior_packets > 0)
        if not probe:
            self._schedule_probe(s, False, now)
        return sent

    # ---- timers ----
    cdef int _rearm_rto(self, TcpSender s, int64_t now, bint from_head) except -1:
        """tcp_rearm_rto: the RTO counts from the head's transmission when it replaces a
        TLP / RACK timer (``from_head``), else from now."""
        cdef int64_t rto = s.rto, delta
        if s.snd_max == s.snd_una:
            s._timer_stop()
            return 0
        if from_head:
            delta = self.xmit[s.snd_una & (self.cap - 1)] + s.rto - now
            rto = delta if delta > 1000 else 1000
        s._ktimer(rto, TMR_RTO, now)

    cdef bint _schedule_probe(self, TcpSender s, bint advancing_rto, int64_t now) except -1:
        """tcp_schedule_loss_probe: PTO = 2 SRTT + (rto_min if one segment is out, else 2 ms),
        1 s without an RTT sample, never later than the RTO."""
        cdef int64_t out = s.snd_max - s.snd_una, pto, rto_delta
        if out == 0 or (self.ca_state != CA_OPEN and self.ca_state != CA_CWR):
            return False
        if s.have_rtt:
            pto = jiffies_ns((s.lrtt.srtt8 >> 2) * 1000 + (s.min_rto if out == 1 else TCP_TIMEOUT_MIN_NS), s.tick)
        else:
            pto = s.init_rto
        if advancing_rto:
            rto_delta = s.rto
        else:
            rto_delta = self.xmit[s.snd_una & (self.cap - 1)] + s.rto - now
        if rto_delta > 0:
            rto_delta = jiffies_ns(rto_delta, s.tick)
            if rto_delta < pto:
                pto = rto_delta
        s._ktimer(pto, TMR_TLP, now)
        return True

    cdef int on_timer(self, TcpSender s, int kind, int64_t now) except -1:
        if s.state != TCP_ESTABLISHED or s.snd_max == s.snd_una:
            return 0
        if kind == TMR_TLP:
            self._send_probe(s, now)
        elif kind == TMR_REO:
            self._reo_timeout(s, now)
        else:
            self._rto(s, now)

    cdef int _send_probe(self, TcpSender s, int64_t now) except -1:
        """tcp_send_loss_probe: new data if the receiver window allows, else the last segment
        again; the RTO then restarts from now (from the head's transmission if none was sent)."""
        if self.tlp_high >= 0:
            return self._rearm_rto(s, now, True)
        self.tlp_retrans = False
        if s.snd_max < s.n_seg and s.snd_max < s.avail and s.snd_max < s.snd_una + s.rwnd:
            self._write_xmit(s, now, True)
        else:
            self._transmit(s, s.snd_max - 1, True, now)
            self.tlp_retrans = True
        self.tlp_high = s.snd_max
        s.sim.flows[s.flow].loss_probes += 1
        s.sim.transfers[s.xfer].probes += 1
        self._rearm_rto(s, now, False)

    cdef int _rto(self, TcpSender s, int64_t now) except -1:
        """tcp_retransmit_timer: enter Loss, retransmit the head, back off."""
        s._count_timeout()
        self._enter_loss(s, now)
        self._retransmit(s, s.snd_una, now)
        self.retransmits += 1
        if s.hook is not None:
            s.hook.on_timeout(s, now)
        s.rto = s.rto * 2 if s.rto * 2 < s.max_rto else s.max_rto
        s._ktimer(s.rto, TMR_RTO, now)

    cdef int _enter_loss(self, TcpSender s, int64_t now) except -1:
        cdef bint new_recovery = self.ca_state < CA_RECOVERY
        cdef int64_t seg
        cdef uint8_t fl
        # tcp_timeout_mark_lost: every unSACKed segment, save those RACK still waits for
        for seg in range(s.snd_una, s.snd_max):
            fl = self._f(seg)[0]
            if fl & SB_SACKED:
                continue
            if (self.rack and seg != s.snd_una
                    and self.rack_rtt - (now - self.xmit[seg & (self.cap - 1)]) > 0):
                continue
            self._mark_lost(seg)
        if (self.ca_state <= CA_DISORDER or self.high_seq <= s.snd_una
                or (self.ca_state == CA_LOSS and self.retransmits == 0)):
            self.prior_ssthresh = self._current_ssthresh(s)
            s.prior_cwnd = s.cwnd
            s.ssthresh = s.cc.ssthresh_on_loss(s)
            self._init_undo(s)
        s.cwnd = <double>(self.in_flight(s) + 1)
        s.cwnd_cnt = 0
        self.ca_state = CA_LOSS
        s.cc.on_loss(s, True, now)
        self.high_seq = s.snd_max
        self.frto = self.frto_enabled and (new_recovery or self.retransmits > 0)

    cdef int _reo_timeout(self, TcpSender s, int64_t now) except -1:
        """tcp_rack_reo_timeout: the reordering window has passed."""
        cdef int64_t prior = self.in_flight(s), lost0 = self.lost
        self._rack_detect(s, now)
        if prior != self.in_flight(s):
            if self.ca_state != CA_RECOVERY:
                self._enter_recovery(s, now)
                s.sim.flows[s.flow].fast_retx += 1
                if not s.cc.cong_control:
                    self._cwnd_reduction(s, 1, self.lost - lost0, 0)
            self._xmit_lost(s, now, True)
        if not (s.rto_armed and s.tmr_kind == TMR_RTO):
            self._rearm_rto(s, now, True)

    # ---- RACK (tcp_recovery.c) ----
    cdef inline int64_t _reo_wnd(self, TcpSender s) noexcept:
        cdef int64_t w
        if not self.reord_seen:
            if self.ca_state >= CA_RECOVERY or self.sacked_out >= self.reordering:
                return 0
        w = s.min_rtt // 4 if s.min_rtt > 0 else 0
        return w if w < <int64_t>s.srtt else <int64_t>s.srtt

    cdef void _rack_advance(self, uint8_t fl, int64_t end, int64_t xmit, int64_t now,
                            int64_t min_rtt) noexcept:
        cdef int64_t rtt = now - xmit
        if fl & SB_EVER and (min_rtt < 0 or rtt < min_rtt):
            return      # the original may have been delivered, not the retransmission
        self.rack_advanced = True
        self.rack_rtt = rtt
        if xmit > self.rack_mstamp or (xmit == self.rack_mstamp and end > self.rack_end):
            self.rack_mstamp = xmit
            self.rack_end = end

    cdef int64_t _rack_detect(self, TcpSender s, int64_t now) except? -1:
        """Mark lost every segment sent before the newest delivered one by more than RACK's
        RTT plus the reordering window; returns the longest wait of the others (ns, 0: none)."""
        cdef int64_t seg, x, remaining, wait = 0, reo = self._reo_wnd(s)
        cdef uint8_t fl
        for seg in range(s.snd_una, s.snd_max):
            fl = self._f(seg)[0]
            if fl & SB_SACKED or (fl & SB_LOST and not (fl & SB_RETRANS)):
                continue
            x = self.xmit[seg & (self.cap - 1)]
            if not (self.rack_mstamp > x or (self.rack_mstamp == x and self.rack_end > seg + 1)):
                continue
            remaining = self.rack_rtt + reo - (now - x)
            if remaining <= 0:
                self._mark_lost(seg)
            elif remaining > wait:
                wait = remaining
        return wait

    cdef bint _rack_mark_lost(self, TcpSender s, int64_t now) except -1:
        cdef int64_t wait
        if not self.rack_advanced:
            return False
        self.rack_advanced = False
        wait = self._rack_detect(s, now)
        if wait > 0:
            s._ktimer(jiffies_ns(wait, s.tick) + TCP_TIMEOUT_MIN * s.tick, TMR_REO, now)
        return wait > 0

    # ---- ACK processing (tcp_ack) ----
    cdef int on_ack(self, TcpSender s, Packet* p, int64_t now) except -1:
        cdef int64_t ack = p.ack, prior_una = s.snd_una, seg, prior_fack, reord
        cdef int64_t first_ackt = -1, last_ackt = -1, seq_rtt = -1, ca_rtt = -1, sack_rtt = -1
        cdef int64_t prior_delivered = self.delivered, prior_lost = self.lost, acked_bytes = 0
        cdef int64_t first_sackt = -1, last_sackt = -1, num_dupack = 0, x, pkts_acked = 0
        cdef int flag = 0, rexmit = REXMIT_NONE
        cdef uint8_t fl
        cdef AckSample a
        if ack < prior_una or ack > s.snd_max:
            return 0
        a.prior_in_flight = self.in_flight(s)
        self.ack_tsecr = p.tsecr
        if p.flags & F_FIN:
            flag |= FLAG_DATA               # a FIN takes sequence space: not a duplicate
        if ack > prior_una:
            flag |= FLAG_SND_UNA_ADVANCED
            self.retransmits = 0
        prior_fack = self.fack if self.sacked_out > 0 else prior_una
        if p.nsack > 0 and s.snd_max > prior_una:
            flag |= self._sacktag(s, p, prior_una, now, &first_sackt, &last_sackt)
        # tcp_clean_rtx_queue
        reord = s.snd_max
        for seg in range(prior_una, ack):
            fl = self._f(seg)[0]
            x = self.xmit[seg & (self.cap - 1)]
            if fl & (SB_RETRANS | SB_EVER):
                if fl & SB_RETRANS:
                    self.retrans_out -= 1
                flag |= FLAG_RETRANS_DATA_ACKED
            elif not (fl & SB_SACKED):
                last_ackt = x
                if first_ackt < 0:
                    first_ackt = x
                if seg < reord:
                    reord = seg
                if seg + 1 <= self.high_seq:
                    flag |= FLAG_ORIG_SACK_ACKED
            if fl & SB_SACKED:
                self.sacked_out -= 1
            else:
                self.delivered += 1
                self._rack_advance(fl, seg + 1, x, now, s.min_rtt)
                if s.cc.cong_control:
                    s.cc.on_delivered(s, seg, False, now)
            if fl & SB_LOST:
                self.lost_out -= 1
            pkts_acked += 1
            acked_bytes += s._payload(seg)
        if ack > prior_una:
            flag |= FLAG_DATA_ACKED
            s.snd_una = ack
            if s.snd_nxt < ack:
                s.snd_nxt = ack
        if self.sacked_out == 0 or self.fack < s.snd_una:
            self.fack = s.snd_una
        if first_ackt >= 0 and not (flag & FLAG_RETRANS_DATA_ACKED):
            seq_rtt = now - first_ackt
            ca_rtt = now - last_ackt
        if first_sackt >= 0:
            sack_rtt = now - first_sackt
            ca_rtt = now - last_sackt
        # tcp_ack_update_rtt: ACK timing first, then SACK timing, then the timestamp echo
        if seq_rtt < 0:
            seq_rtt = sack_rtt
        if seq_rtt < 0 and flag & FLAG_DATA_ACKED:
            seq_rtt = ca_rtt = s._ts_rtt(p, now)
        if seq_rtt >= 0:
            s._rtt_linux(seq_rtt, ca_rtt, now)
        if flag & FLAG_DATA_ACKED:
            flag |= FLAG_SET_XMIT_TIMER
            if reord < prior_fack:
                self._reordering(prior_fack - reord)
        elif (seq_rtt >= 0 and sack_rtt >= 0 and s.snd_max > s.snd_una
              and sack_rtt > now - self.xmit[s.snd_una & (self.cap - 1)]):
            flag |= FLAG_SET_XMIT_TIMER
        if ca_rtt >= 0 and pkts_acked + (self.delivered - prior_delivered) > 0:
            s.cc.on_rtt(s, ca_rtt, now)
        if self.tlp_high >= 0:
            self._tlp_ack(s, ack, flag)
        if not (flag & (FLAG_DATA | FLAG_DATA_ACKED)) or flag & (FLAG_DATA_SACKED | FLAG_DSACKING_ACK) \
                or self.ca_state != CA_OPEN:
            if not (flag & (FLAG_SND_UNA_ADVANCED | FLAG_DATA | FLAG_DSACKING_ACK)):
                num_dupack = 1
            rexmit = self._fastretrans_alert(s, num_dupack, &flag, now)
        if flag & FLAG_SET_XMIT_TIMER:
            if not self._schedule_probe(s, True, now):
                self._rearm_rto(s, now, s.rto_armed and s.tmr_kind != TMR_RTO)
        # tcp_cong_control: the congestion control's own (BBR), else PRR in CWR / Recovery, else
        # growth on newly delivered data
        if s.cc.cong_control:
            a.acked_sacked = self.delivered - prior_delivered
            a.losses = self.lost - prior_lost
            a.delivered = self.delivered
            a.lost = self.lost
            a.rtt = ca_rtt
            a.in_flight = self.in_flight(s)
            a.ca_state = self.ca_state
            s.cc.on_ack_sample(s, &a, now)
        elif self.ca_state == CA_CWR or self.ca_state == CA_RECOVERY:
            self._cwnd_reduction(s, self.delivered - prior_delivered, self.lost - prior_lost, flag)
        elif flag & FLAG_DATA_ACKED:
            s.cc.on_ack(s, self.delivered - prior_delivered, now)
        if s.hook is not None and acked_bytes > 0:
            s.hook.on_ack(s, acked_bytes, now)
        if s.snd_una >= s.n_seg:
            s._all_acked(now)
            return 0
        # tcp_xmit_recovery, then tcp_data_snd_check
        if rexmit == REXMIT_NEW:
            self._write_xmit(s, now, False)
            if s.snd_max > self.high_seq:
                return 0
            self.frto = False
        if rexmit != REXMIT_NONE:
            self._xmit_lost(s, now, False)
        self._write_xmit(s, now, False)

    cdef void _reordering(self, int64_t dist) noexcept:
        """tcp_check_sack_reordering: a hole filled by an original transmission."""
        self.reord_seen = True
        if dist + 1 > self.reordering:
            self.reordering = dist + 1 if dist + 1 < 300 else 300

    cdef int _sacktag(self, TcpSender s, Packet* p, int64_t prior_una, int64_t now,
                      int64_t* first_sackt, int64_t* last_sackt) except -1:
        """tcp_sacktag_write_queue: mark SACKed segments; detect a D-SACK (RFC 2883: the first
        block below the cumulative ACK or inside the second block)."""
        cdef int flag = 0, i, j, start = 0
        cdef int64_t a, b, seg, x
        cdef uint8_t* f
        cdef bint same
        a = s._seg_at(p.sack[0])
        b = s._seg_at(p.sack[1])
        if a < p.ack or (p.nsack > 1 and a >= s._seg_at(p.sack[2]) and b <= s._seg_at(p.sack[3])):
            flag |= FLAG_DSACKING_ACK
            start = 1
            self.delivered += 1                # a spurious retransmission was delivered
            for seg in range(a, b):
                # a D-SACKed retransmission was spurious: undo once all of them were
                if (self.undo_marker >= 0 and seg >= self.undo_marker and self.undo_retrans > 0
                        and (seg < prior_una or self._f(seg)[0] & SB_EVER)):
                    self.undo_retrans -= 1
            if self.tlp_high >= 0 and self.tlp_retrans and a < self.tlp_high <= b:
                flag |= FLAG_DSACK_TLP
        for i in range(start, p.nsack):
            # a block the previous ACK carried as well has nothing new
            same = False
            for j in range(self.last_n):
                if self.last_blocks[2 * j] == p.sack[2 * i] and self.last_blocks[2 * j + 1] == p.sack[2 * i + 1]:
                    same = True
                    break
            if same:
                continue
            a = s._seg_at(p.sack[2 * i])
            b = s._seg_at(p.sack[2 * i + 1])
            if a < prior_una:
                a = prior_una
            if b > s.snd_max:
                b = s.snd_max
            for seg in range(a, b):
                f = self._f(seg)
                if f[0] & SB_SACKED:
                    continue
                x = self.xmit[seg & (self.cap - 1)]
                self._rack_advance(f[0], seg + 1, x, now, s.min_rtt)
                if f[0] & SB_RETRANS:
                    f[0] &= ~SB_RETRANS
                    self.retrans_out -= 1
                elif not (f[0] & SB_EVER):
                    if seg < self.fack:
                        self._reordering(self.fack - seg)
                    if seg + 1 <= self.high_seq:
                        flag |= FLAG_ORIG_SACK_ACKED
                    if first_sackt[0] < 0:
                        first_sackt[0] = x
                    last_sackt[0] = x
                if f[0] & SB_LOST:
                    f[0] &= ~SB_LOST
                    self.lost_out -= 1
                f[0] |= SB_SACKED
                self.sacked_out += 1
                self.delivered += 1
                if s.cc.cong_control:
                    s.cc.on_delivered(s, seg, True, now)
                flag |= FLAG_DATA_SACKED
                if seg + 1 > self.fack:
                    self.fack = seg + 1
        self.last_n = p.nsack
        for i in range(2 * p.nsack):
            self.last_blocks[i] = p.sack[i]
        return flag

    # ---- the state machine (tcp_fastretrans_alert) ----
    cdef int _fastretrans_alert(self, TcpSender s, int64_t num_dupack, int* flag,
                                int64_t now) except -1:
        cdef int rexmit = REXMIT_NONE
        cdef bint fast_rexmit = False
        cdef bint do_lost = num_dupack > 0 or (flag[0] & FLAG_DATA_SACKED and self._force_fast_retransmit(s))
        if s.snd_max == s.snd_una:
            self.sacked_out = 0
        if self.ca_state == CA_OPEN:
            self.retrans_stamp = 0
        elif s.snd_una >= self.high_seq:
            if self.ca_state == CA_CWR:
                if s.snd_una != self.high_seq:
                    self._end_cwnd_reduction(s)
                    self.ca_state = CA_OPEN
            elif self.ca_state == CA_RECOVERY:
                if self._try_undo_recovery(s):
                    return REXMIT_NONE
                self._end_cwnd_reduction(s)
        if self.ca_state == CA_RECOVERY:
            if flag[0] & FLAG_SND_UNA_ADVANCED:
                if self._try_undo_partial(s):
                    return REXMIT_NONE
                do_lost = self._force_fast_retransmit(s)
            if self._try_undo_dsack(s):
                self._try_keep_open(s)
            self._identify_loss(s, flag, now)
            if self.ca_state != CA_RECOVERY:
                if not self._time_to_recover():
                    return REXMIT_NONE
                self._enter_recovery(s, now)
        else:
            if self.ca_state == CA_LOSS:
                rexmit = self._process_loss(s, flag[0], num_dupack, now)
                self._identify_loss(s, flag, now)
                if not (self.ca_state == CA_OPEN or flag[0] & FLAG_LOST_RETRANS):
                    return rexmit
            if self.ca_state <= CA_DISORDER:
                self._try_undo_dsack(s)
            self._identify_loss(s, flag, now)
            if not self._time_to_recover():
                self._try_to_open(s)
                return rexmit
            self._enter_recovery(s, now)
            fast_rexmit = True
            s.sim.flows[s.flow].fast_retx += 1
            if s.hook is not None:
                s.hook.on_loss(s, now)
        if not self.rack and do_lost:
            self._update_scoreboard(s, fast_rexmit)
        return REXMIT_LOST

    cdef inline bint _time_to_recover(self) noexcept:
        """The loss is proven (RACK), or (without RACK) more than ``reordering`` dupACKs."""
        return self.lost_out > 0 or (not self.rack and self.sacked_out + 1 > self.reordering)

    cdef inline bint _force_fast_retransmit(self, TcpSender s) noexcept:
        """SACKs reach more than ``reordering`` segments beyond snd_una."""
        return self.fack > s.snd_una + self.reordering

    cdef void _update_scoreboard(self, TcpSender s, bint fast_rexmit) noexcept:
        """Without RACK (RFC 6675 IsLost, tcp_mark_head_lost): from the head, every unSACKed
        segment with at least ``reordering`` SACKed segments above it is lost; on entering
        recovery the head at least."""
        cdef int64_t packets = self.sacked_out - self.reordering, cnt = 0, seg
        cdef uint8_t fl
        for seg in range(s.snd_una, s.snd_max):
            fl = self._f(seg)[0]
            if fl & SB_SACKED:
                cnt += 1
            if packets >= 0:
                if cnt > packets:
                    break
            elif not fast_rexmit or seg > s.snd_una:
                break
            if not (fl & (SB_LOST | SB_SACKED)):
                self._mark_lost(seg)

    cdef int _identify_loss(self, TcpSender s, int* flag, int64_t now) except -1:
        cdef int64_t prior = self.retrans_out
        if s.snd_max == s.snd_una:
            return 0
        if self.rack and self._rack_mark_lost(s, now):
            flag[0] &= ~FLAG_SET_XMIT_TIMER
        if prior > self.retrans_out:
            flag[0] |= FLAG_LOST_RETRANS

    cdef inline double _current_ssthresh(self, TcpSender s) noexcept:
        """tcp_current_ssthresh: in a reduction ssthresh, else max(ssthresh, 3/4 cwnd)."""
        if self.ca_state == CA_CWR or self.ca_state == CA_RECOVERY:
            return s.ssthresh
        return max(s.ssthresh, floor(s.cwnd * 0.75))

    cdef void _init_undo(self, TcpSender s) noexcept:
        self.undo_marker = s.snd_una
        self.undo_retrans = self.retrans_out if self.retrans_out > 0 else -1

    cdef int _init_cwnd_reduction(self, TcpSender s, int64_t now) except -1:
        self.high_seq = s.snd_max
        self.tlp_high = -1
        s.cwnd_cnt = 0
        s.prior_cwnd = s.cwnd
        self.prr_delivered = 0
        self.prr_out = 0
        s.ssthresh = s.cc.ssthresh_on_loss(s)
        s.cc.on_loss(s, False, now)

    cdef int _enter_recovery(self, TcpSender s, int64_t now) except -1:
        self.prior_ssthresh = 0
        self._init_undo(s)
        if self.ca_state != CA_CWR and self.ca_state != CA_RECOVERY:
            self.prior_ssthresh = self._current_ssthresh(s)
            self._init_cwnd_reduction(s, now)
        self.ca_state = CA_RECOVERY

    cdef int _cwnd_reduction(self, TcpSender s, int64_t newly_acked_sacked, int64_t newly_lost,
                             int flag) except -1:
        """PRR (RFC 6937): sndcnt proportional to the delivered data while in_flight exceeds
        ssthresh, else slow start toward ssthresh (PRR-SSRB: +1 when the ACK advanced without
        a new loss); at least one segment right after entering recovery."""
        cdef int64_t sndcnt, delta = <int64_t>s.ssthresh - self.in_flight(s)
        cdef int64_t prior = <int64_t>s.prior_cwnd
        if newly_acked_sacked <= 0 or prior <= 0:
            return 0
        self.prr_delivered += newly_acked_sacked
        if delta < 0:
            sndcnt = (<int64_t>s.ssthresh * self.prr_delivered + prior - 1) // prior - self.prr_out
        else:
            sndcnt = self.prr_delivered - self.prr_out
            if sndcnt < newly_acked_sacked:
                sndcnt = newly_acked_sacked
            if flag & FLAG_SND_UNA_ADVANCED and newly_lost == 0:
                sndcnt += 1
            if sndcnt > delta:
                sndcnt = delta
        if sndcnt < 0 or (sndcnt == 0 and self.prr_out == 0):
            sndcnt = 0 if self.prr_out else 1
        s.cwnd = <double>(self.in_flight(s) + sndcnt)

    cdef void _end_cwnd_reduction(self, TcpSender s) noexcept:
        if s.ssthresh < 1e9 and (self.ca_state == CA_CWR or self.undo_marker >= 0):
            s.cwnd = s.ssthresh

    cdef void _try_keep_open(self, TcpSender s) noexcept:
        cdef int state = CA_OPEN
        if self.sacked_out + self.lost_out > 0 or self._any_retrans(s):
            state = CA_DISORDER
        if self.ca_state != state:
            self.ca_state = state
            self.high_seq = s.snd_max

    cdef void _try_to_open(self, TcpSender s) noexcept:
        if not self._any_retrans(s):
            self.retrans_stamp = 0
        if self.ca_state != CA_CWR:
            self._try_keep_open(s)

    cdef inline bint _any_retrans(self, TcpSender s) noexcept:
        """tcp_any_retrans_done: retransmissions out, or the head was ever retransmitted."""
        return self.retrans_out > 0 or (s.snd_una < s.snd_max and self._f(s.snd_una)[0] & SB_EVER)

    cdef int _process_loss(self, TcpSender s, int flag, int64_t num_dupack, int64_t now) except -1:
        """tcp_process_loss (F-RTO, RFC 5682 with SACK)."""
        cdef bint recovered = s.snd_una >= self.high_seq
        if flag & FLAG_SND_UNA_ADVANCED and self._try_undo_loss(s, False):
            return REXMIT_NONE
        if self.frto:
            if flag & FLAG_ORIG_SACK_ACKED and self._try_undo_loss(s, True):
                return REXMIT_NONE
            if s.snd_max > self.high_seq:
                if flag & FLAG_DATA_SACKED or num_dupack:
                    self.frto = False          # the loss was real
            elif flag & FLAG_SND_UNA_ADVANCED and not recovered:
                self.high_seq = s.snd_max
                if s.snd_max < s.n_seg and s.snd_max < s.avail and s.snd_max < s.snd_una + s.rwnd:
                    return REXMIT_NEW
                self.frto = False
        if recovered:
            self._try_undo_recovery(s)
            return REXMIT_NONE
        return REXMIT_LOST

    # ---- undo (timestamps, D-SACK) ----
    cdef bint _packet_delayed(self, TcpSender s) noexcept:
        """The ACK's timestamp echo predates the first retransmission: the original arrived."""
        return (self.retrans_stamp > 0 and s.ts_opt and self.ack_tsecr > 0
                and self.ack_tsecr // 1000000 < self.retrans_stamp // 1000000)

    cdef inline bint _may_undo(self, TcpSender s) noexcept:
        return self.undo_marker >= 0 and (self.undo_retrans == 0 or self._packet_delayed(s))

    cdef void _undo_cwnd_reduction(self, TcpSender s, bint unmark_loss) noexcept:
        cdef int64_t seg
        if unmark_loss:
            for seg in range(s.snd_una, s.snd_max):
                self._f(seg)[0] &= ~SB_LOST
            self.lost_out = 0
        if self.prior_ssthresh > 0:
            s.cwnd = s.cc.undo_cwnd(s)
            if self.prior_ssthresh > s.ssthresh:
                s.ssthresh = self.prior_ssthresh
        self.undo_marker = -1
        self.rack_advanced = True

    cdef bint _try_undo_recovery(self, TcpSender s) except -1:
        if self._may_undo(s):
            self._undo_cwnd_reduction(s, False)
        self.ca_state = CA_OPEN
        return False

    cdef bint _try_undo_dsack(self, TcpSender s) except -1:
        if self.undo_marker >= 0 and self.undo_retrans == 0:
            self._undo_cwnd_reduction(s, False)
            return True
        return False

    cdef bint _try_undo_partial(self, TcpSender s) except -1:
        if self.undo_marker >= 0 and self._packet_delayed(s):
            self._reordering(1)
            if self.retrans_out > 0:
                return True
            if not self._any_retrans(s):
                self.retrans_stamp = 0
            self._undo_cwnd_reduction(s, True)
            self._try_keep_open(s)
        return False

    cdef bint _try_undo_loss(self, TcpSender s, bint frto_undo) except -1:
        if frto_undo or self._may_undo(s):
            self._undo_cwnd_reduction(s, True)
            self.retransmits = 0
            self.ca_state = CA_OPEN
            return True
        return False

    cdef int _tlp_ack(self, TcpSender s, int64_t ack, int flag) except -1:
        """tcp_process_tlp_ack: did the probe repair a loss?"""
        if ack < self.tlp_high:
            return 0
        if not self.tlp_retrans or flag & FLAG_DSACK_TLP:
            self.tlp_high = -1
        elif ack > self.tlp_high:
            # the original was lost and the probe repaired it: reduce the window
            self._init_cwnd_reduction(s, s.sim.now)
            self.ca_state = CA_CWR
            self._end_cwnd_reduction(s)
            self._try_keep_open(s)
        elif not (flag & (FLAG_SND_UNA_ADVANCED | FLAG_DATA | FLAG_DATA_ACKED | FLAG_DATA_SACKED)):
            self.tlp_high = -1

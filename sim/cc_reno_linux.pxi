# Linux's "reno" congestion control (net/ipv4/tcp_cong.c tcp_reno_cong_avoid, tcp_reno_ssthresh):
# integer windows; slow start adds every newly delivered segment (appropriate byte counting, up
# to ssthresh), congestion avoidance one segment per window of ACKed segments; the window grows
# only while the sender is cwnd-limited; on loss ssthresh = max(cwnd / 2, 2). Loss recovery
# (SACK, RACK-TLP, PRR) is the RecoveryOps' business.


cdef class RenoLinux(CongestionOps):
    def __init__(self):
        self.recovery = RECOVERY_NEWRENO
        self.name = "reno"

    cdef int on_ack(self, TcpSender s, int64_t newly, int64_t now) except -1:
        if not s.is_cwnd_limited():
            return 0
        if s.cwnd < s.ssthresh:
            newly = self.slow_start(s, newly)
            if newly <= 0:
                return 0
        self.cong_avoid_ai(s, <int64_t>s.cwnd, newly)

    cdef double ssthresh_on_loss(self, TcpSender s) except? -1:
        cdef double w = floor(s.cwnd / 2.0)
        return w if w > 2.0 else 2.0

    cdef double cwnd_on_fast_loss(self, TcpSender s) except? -1:
        # integer windows: classic recovery (recovery = "classic") holds the new ssthresh
        return s.ssthresh

# Loss recovery interface (like ns-3's TcpRecoveryOps, widened to loss detection): what a sender
# does with each ACK (duplicate, partial, SACK), when its retransmission timer fires, and what it
# sends when the window allows. Window growth stays in the CongestionOps (cc.pxi); a recovery
# calls it (on_ack for growth, ssthresh_on_loss / on_loss at a loss event, undo_cwnd).
# Implementations: ClassicRecovery (recovery_classic.pxi: ns-2 Tahoe / Reno / NewReno dupack
# recovery and go-back-N timeouts) and SackRack (recovery_sack.pxi: Linux's SACK scoreboard,
# RACK-TLP and PRR). Registered by name in scenario_tcp.py (register_recovery). The timer kinds
# (TMR_RTO / TMR_TLP / TMR_REO) are in tcp.pxi.

cdef class RecoveryOps:
    cdef readonly str name

    cdef int on_start(self, TcpSender s, int64_t now) except -1:
        """A new connection; cwnd/ssthresh were just reset."""
        pass

    cdef int on_ack(self, TcpSender s, Packet* p, int64_t now) except -1:
        """An ACK of the data direction (the sender frees ``p`` afterwards)."""
        pass

    cdef int on_timer(self, TcpSender s, int kind, int64_t now) except -1:
        """The sender's timer of kind TMR_* expired."""
        pass

    cdef int output(self, TcpSender s, int64_t now) except -1:
        """Send whatever the windows allow (new data, and retransmissions if any are due)."""
        s.send_much(now)

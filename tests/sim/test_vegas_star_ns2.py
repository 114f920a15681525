"""Poisson-fed Vegas and Reno clients through one gateway, packet for packet against ns-2 (issue 18).

As tests/sim/test_poisson_star_ns2.py (tests/sim/ns2/ns2.py star_departures runs both simulators
on the same Poisson times and the same ns-2 tick phases and lists the gateway's departures), with
Vegas clients in Feng & Tinnakornsrisuphap's parameters (replays/burst_bg20.toml: 1500-byte
packets on the wire for both flavors, no limited transmit, ns-2's RTO ticks):

- Feng's set-up itself for 20 s: 20 Reno background and 60 Vegas clients, 50 Mb/s bottleneck,
  49 waiting places, 10 ms tick; client i's link i ns longer. All FENG_DEPARTURES departures agree
  to the microsecond of ns-2's trace. In ns-2's variable trace of that run the Vegas clients make
  16 slow-start exits (cwnd -= cwnd/8; the first at 1.3 s), 124 Diff > beta decreases, 1107
  retransmissions on the fine-grained timeout (before the third duplicate ACK, or on one of the
  first new ACKs after a retransmission), 943 on the third duplicate ACK and 243 coarse timeouts.
  (Measured further: 387681 departures, to 93.8 s of Feng's 200, agree; then two clients' packets
  reach the gateway at one instant, and ns-2 takes the one scheduled later first.)
- 8 Reno and 12 Vegas clients on 10 Mb/s with 10 waiting places, 0.1 ms tick, 20 s, links i x
  1.3 us longer: all MIXED_DEPARTURES agree (115 coarse timeouts, 150 fine-grained and 150
  third-duplicate-ACK retransmissions, 48 Diff decreases, a slow-start exit at 17.1 s).

What this pins, found by this comparison: resending the segment being timed does not stop its
timing in Vegas (ns-2's output() has no Karn check; only reset_rtx_timer() clears rtt_active_).
Before, a segment that Vegas's new-ACK check "retransmits" before it was ever sent, and that
send_much then sends again, lost its timing, so its ACK did not end the timer's backoff: a client
waited 0.8 s where ns-2 timed out after 0.2 s (20 Vegas clients on 10 Mb/s: first difference at
6.06 s). With tick phases of our own instead of ns-2's (feng_star.tcl tick_phases=) the first
difference was a timeout one 0.1 ms tick apart (1.2 s).

The per-client offsets are there because of ties. With identical links, ACK-clocked packets of
different clients reach the gateway at exactly the same instant, and packets reach a full buffer
exactly as the transmitter frees (all times sit on the lattice of transmission times). Ours orders
equal times by when the events were scheduled (ns-2's rule for equal times, CalendarScheduler::
insert); ns-2's double clock orders many of them by rounding instead (e.g. a departure before an
arrival at a full buffer that was scheduled 25 ms earlier). 1 ns per client orders them by time
in both (nothing physical changes) and makes exact ties rare, not impossible. The offset is on
the client's link, as ns-2's: as a delay line in front of the host (our extra_delay) the gateway
arrival is scheduled later than in ns-2, and the first tie (43.9 s) went the other way.
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).with_name("ns2")))
from ns2 import available, first_difference, star_departures  # noqa: E402

FENG_DEPARTURES = 80608
MIXED_DEPARTURES = 15923

pytestmark = pytest.mark.skipif(not available(), reason="needs ns-2 ('ns' on PATH: apt-get install ns2)")


def test_feng_background_with_vegas_matches_ns2_packet_for_packet(tmp_path):
    ours, ref = star_departures(tmp_path, ["Reno"] * 20 + ["Vegas"] * 60, bneck_bps=50e6,
                                limit=49, duration=20.0, seed=3, step=1e-9, tick=0.01)
    k = first_difference(ours, ref)
    assert k is None, (k, ours[max(0, k - 3):k + 3], ref[max(0, k - 3):k + 3])
    assert len(ours) == len(ref) == FENG_DEPARTURES


def test_reno_and_vegas_departures_match_ns2_packet_for_packet(tmp_path):
    ours, ref = star_departures(tmp_path, ["Reno"] * 8 + ["Vegas"] * 12, bneck_bps=10e6,
                                limit=10, duration=20.0, seed=3, step=1.3e-6, tick=1e-4)
    k = first_difference(ours, ref)
    assert k is None, (k, ours[max(0, k - 3):k + 3], ref[max(0, k - 3):k + 3])
    assert len(ours) == len(ref) == MIXED_DEPARTURES

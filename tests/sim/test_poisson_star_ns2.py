"""Poisson-fed Reno clients through one gateway, packet for packet against ns-2 (issue 18).

Feng & Tinnakornsrisuphap's star (replays/burst_bg20.toml) shrunk to 17 clients on a 10 Mb/s
bottleneck with a 10-packet buffer, so that losses, fast retransmits and limited transmit come
within 2 s. ns-2 (tests/sim/ns2/feng_star.tcl) hands its agents the packets at the times our
clients' Poisson draws give (``sched_dir``), so both simulators see the same offered traffic, and
the gateway's departures (time, client, segment) are compared one by one.

Client i's link is i us longer in both (ns-2's ``step``, our ``topology.links``): ns-2
ordered some packets meeting at one instant against its FIFO rule, likely from how its
double-precision clock rounds sums of delays, which an integer clock cannot follow, so the
comparison avoids exact ties (their order is refereed statistically, by the Feng comparisons).

What this pins, each found by this comparison:
- a Poisson client's connection opens with nothing to send: each packet leaves at its Poisson
  time (the first departure was 2-30 ms early: one segment went out at the start, so every
  client ran one packet ahead of its application; before that fix the very first departure
  differs);
- limited transmit sends only while at most cwnd + dupacks segments are outstanding (ns-2's
  send_one(), RFC 3042): after a Reno partial ACK it sent new data where ns-2 waits.
All 1156 departures of the 2 s agree, to the microsecond of ns-2's trace. Both simulators take
the same per-connection tick phases (ns-2's random boot_time_, written by feng_star.tcl's
tick_phases=), without which a retransmission timeout can come a tick apart.
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).with_name("ns2")))
from ns2 import available, first_difference, star_departures  # noqa: E402

CLIENTS, RATE, DURATION, SEED, STEP = 17, 10e6, 2.0, 3, 1e-6

pytestmark = pytest.mark.skipif(not available(), reason="needs ns-2 ('ns' on PATH: apt-get install ns2)")


def test_gateway_departures_match_ns2_packet_for_packet(tmp_path):
    ours, ref = star_departures(tmp_path, ["Reno"] * CLIENTS, bneck_bps=RATE, limit=10,
                                duration=DURATION, seed=SEED, step=STEP, tick=1e-4,
                                limited_transmit=True)
    k = first_difference(ours, ref)
    assert k is None, (k, ours[max(0, k - 3):k + 3], ref[max(0, k - 3):k + 3])
    assert len(ours) == len(ref) > 1000

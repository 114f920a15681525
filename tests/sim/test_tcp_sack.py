"""Receiver SACK blocks against RFC 2018 section 5 and RFC 2883, and the header bytes of a
Linux segment against a real Linux capture.

RFC 2018 5 sends eight 500-byte segments from sequence number 5000; our relative sequence
numbers start at 1, so the RFC's 5000 is our 1 (offset 4999). The bottleneck (1 Mbit/s) spaces
the segments 4.3 ms apart, more than Linux's SACK compression delay (at most 1 ms), so every
out-of-order segment is answered by its own ACK, as in the RFC's tables.
"""
import dpkt
import pytest

from tcpwire import acks, data, one_flow

OFFSET = 4999       # RFC 2018's first sequence number 5000 is our relative 1


def _acks_of_first_flight(segs, n):
    """The ACKs that answer the first ``n`` data segments (before any retransmission)."""
    out = []
    for a in acks(segs):
        if a["ack"] == 1 and not a["sacks"]:
            continue                      # the handshake's ACK
        out.append(a)
        if len(out) == n:
            break
    return out


def _rfc(blocks):
    return [(left - OFFSET, right - OFFSET) for left, right in blocks]


def test_rfc2018_case2_first_segment_lost(tmp_path):
    # a ninth segment (sent later) carries the FIN, which would count in a block's right edge
    _, segs = one_flow(tmp_path, size=4500, mss=500, rate=1e6, drop=[1],
                       tcp={"init_cwnd": 8})
    assert [s["seq"] for s in data(segs)[:8]] == [1 + 500 * i for i in range(8)]
    got = _acks_of_first_flight(segs, 7)
    # RFC 2018 5, case 2: every ACK acknowledges 5000 and SACKs 5500 up to the newest segment
    expected = [(5000, [(5500, right)]) for right in range(6000, 9001, 500)]
    assert [(a["ack"], a["sacks"]) for a in got] == [(ack - OFFSET, _rfc(b)) for ack, b in expected]


def test_rfc2018_case3_every_other_segment_lost(tmp_path):
    _, segs = one_flow(tmp_path, size=4500, mss=500, rate=1e6, drop=[2, 4, 6, 8],
                       tcp={"init_cwnd": 8})
    got = _acks_of_first_flight(segs, 4)
    # RFC 2018 5, case 3: the most recently received block first
    expected = [(5500, []),
                (5500, [(6000, 6500)]),
                (5500, [(7000, 7500), (6000, 6500)]),
                (5500, [(8000, 8500), (7000, 7500), (6000, 6500)])]
    assert [(a["ack"], a["sacks"]) for a in got] == [(ack - OFFSET, _rfc(b)) for ack, b in expected]


def test_dsack_reports_the_duplicate_below_the_cumulative_ack(tmp_path):
    # RFC 2883 4.1.1: both ACKs of a two-segment flight are lost; the sender's retransmission
    # (here Linux's tail loss probe of the last segment) arrives twice, and the receiver's ACK
    # acknowledges everything with the duplicate as its first SACK block, below the ACK. The
    # last segment carries the FIN, which takes one sequence number after the 1000 data bytes.
    _, segs = one_flow(tmp_path, size=1000, mss=500, drop_rev=[2, 3])
    sent = data(segs)
    assert len(sent) == 3 and sent[2]["seq"] == sent[1]["seq"] == 501   # one retransmission
    assert sent[2]["flags"] & dpkt.tcp.TH_FIN
    final = [a for a in acks(segs) if a["sacks"]]
    assert len(final) == 1
    assert final[0]["ack"] == 1002 and final[0]["sacks"] == [(501, 1002)]


def test_headers_match_a_linux_capture(tmp_path):
    # sizes of segments in ../shared/datasets/testbed (MSS 988, timestamps, SACK), as tshark
    # shows them: SYN and SYN-ACK 60 bytes, pure ACK 52, full data 1040, an ACK with n SACK
    # blocks 52 + 4 + 8 n (64, 72, 80)
    _, segs = one_flow(tmp_path, size=988 * 8, mss=988, rate=1e6, drop=[2, 4, 6],
                       tcp={"init_cwnd": 8})
    syns = [s for s in segs if s["flags"] & dpkt.tcp.TH_SYN]
    assert [s["ip_len"] for s in syns] == [60, 60]
    assert {s["ip_len"] for s in data(segs)} == {1040}
    for a in acks(segs):
        assert a["ip_len"] == 52 + (4 + 8 * len(a["sacks"]) if a["sacks"] else 0)
    assert {len(a["sacks"]) for a in acks(segs)} >= {0, 1, 2}
    assert all(s["tsval"] > 0 or s["t"] < 0.001 for s in segs)


@pytest.mark.parametrize("timestamps, blocks", [(True, 3), (False, 4)])
def test_at_most_three_blocks_with_timestamps_else_four(tmp_path, timestamps, blocks):
    # 40 option bytes: timestamps (12) leave room for 3 blocks (4 + 8 n), without them 4
    _, segs = one_flow(tmp_path, size=500 * 12, mss=500, rate=1e6, drop=[2, 4, 6, 8, 10],
                       tcp={"init_cwnd": 12, "timestamps": timestamps})
    assert max(len(a["sacks"]) for a in acks(segs)) == blocks

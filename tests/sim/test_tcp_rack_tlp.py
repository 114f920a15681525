"""RACK-TLP (RFC 8985) and RFC 6675 loss marking as the linux profile implements them, timed
on a 100 ms path (100 Mbit/s, so the RTT samples are 100.0-100.7 ms) with deterministic drops.

Linux's clock for these timers is the jiffy (4 ms at HZ = 250) and its timer wheel fires a
timer of d jiffies at the tick after jiffy ``now + d`` (kernel/time/timer.c calc_index), so a
timer of duration D fires between D and D + 2 jiffies after it was armed (later for timers of
63 jiffies or more, which the wheel rounds to 8 jiffies).
"""
import dpkt

from tcpwire import acks, data, one_flow

JIFFY = 0.004
REACT = 5e-6        # an ACK's time in the capture to the sender's reaction: the access link


def _transfer(res):
    return res.transfers.select(["loss_probes", "timeouts", "retransmits"]).to_pylist()[0]


def _ack_times(segs):
    return [a["t"] for a in acks(segs)]


def test_tlp_probes_the_tail_two_srtt_after_the_last_ack(tmp_path):
    # the last two segments of a 10-segment flight are lost: no ACK comes back for them
    res, segs = one_flow(tmp_path, size=10_000, drop=[9, 10])
    sent = data(segs)
    last_ack = [a for a in acks(segs) if a["ack"] == 8001][0]["t"]
    probe = sent[10]
    # RFC 8985 7.2: PTO = 2 SRTT (SRTT ~ 100.1 ms); Linux adds TCP_TIMEOUT_MIN (2 ms) when
    # more than one segment is outstanding; with no new data the probe resends the last one
    assert probe["seq"] == 9001 and probe["flags"] & dpkt.tcp.TH_FIN
    assert 0.2022 <= probe["t"] - last_ack <= 0.2043 + 2 * JIFFY
    # RFC 8985 7.4.2: the probe's SACK lets RACK mark the earlier tail segment lost at once
    sack = [a for a in acks(segs) if a["sacks"]][0]
    assert sent[11]["seq"] == 8001 and sent[11]["t"] - sack["t"] < REACT
    tr = _transfer(res)
    assert tr["loss_probes"] == 1 and tr["timeouts"] == 0 and tr["retransmits"] == 2


def test_one_segment_in_flight_waits_for_a_delayed_ack_and_never_beyond_the_rto(tmp_path):
    # RFC 8985 7.2: with FlightSize 1 the PTO adds WCDelAckT (Linux: rto_min, 200 ms), and
    # PTO = min(PTO, RTO); here RTO = SRTT + rttvar = 100 + 200 ms < 2 SRTT + 200 ms. 300 ms
    # are 75 jiffies, which the timer wheel rounds up to a multiple of 8 jiffies (32 ms).
    res, segs = one_flow(tmp_path, size=2_000, drop=[2])
    sent = data(segs)
    last_ack = [a for a in acks(segs) if a["ack"] == 1001][0]["t"]
    assert sent[2]["seq"] == 1001
    assert 0.300 <= sent[2]["t"] - last_ack <= 0.300 + 8 * JIFFY + 2 * JIFFY
    tr = _transfer(res)
    assert tr["loss_probes"] == 1 and tr["timeouts"] == 0


def test_rack_waits_a_quarter_min_rtt_for_reordering(tmp_path):
    # RFC 8985 6.2: one segment is SACKed above a hole sent at the same time: the hole may be
    # reordered, so RACK waits min_rtt / 4 (25 ms) before marking it (Linux: the RACK timer,
    # rounded up to jiffies, + TCP_TIMEOUT_MIN = 2 jiffies, fired by the wheel)
    _, segs = one_flow(tmp_path, size=10_000, drop=[9])
    sack = [a for a in acks(segs) if a["sacks"]][0]
    retx = [s for s in data(segs) if s["seq"] == 8001][1]
    wait = retx["t"] - sack["t"]
    assert 0.025 <= wait <= 0.028 + 2 * JIFFY + 2 * JIFFY


def test_rack_marks_at_once_with_three_segments_sacked(tmp_path):
    # with three segments SACKed (Linux: sacked_out >= tp->reordering, 3) the reordering
    # window is 0: the hole is retransmitted on the third SACK, not before
    _, segs = one_flow(tmp_path, size=10_000, drop=[5])
    sacks = [a for a in acks(segs) if a["sacks"]]
    retx = [s for s in data(segs) if s["seq"] == 4001][1]
    assert sacks[1]["t"] < retx["t"] and retx["t"] - sacks[2]["t"] < REACT


def _sacked_above(ack, seq):
    return sum((right - max(left, seq + 1000)) // 1000
               for left, right in ack["sacks"] if right > seq + 1000)


def _trigger(segs, seq):
    """The ACK after which the second transmission of ``seq`` left."""
    retx = [s for s in data(segs) if s["seq"] == seq][1]
    return [a for a in acks(segs) if a["t"] <= retx["t"]][-1]


def test_rfc6675_islost_needs_three_sacked_above_where_rack_does_not(tmp_path):
    # segments 1 and 5 (0-based) of a 20-segment flight are lost; in recovery PRR lets one
    # retransmission out per ACK or two. RFC 6675 IsLost(5) holds once 3 segments above it
    # are SACKed; RACK (reordering window 0 in recovery) marks it as soon as any segment sent
    # after it is SACKed, so it goes out with fewer SACKed above it.
    kw = dict(size=20_000, rate=2e6, rtt=0.2, drop=[2, 6])
    _, dupthresh = one_flow(tmp_path / "6675", **kw, tcp={"init_cwnd": 20, "rack": False})
    _, rack = one_flow(tmp_path / "rack", **kw, tcp={"init_cwnd": 20})
    seq = 5001
    assert _sacked_above(_trigger(dupthresh, seq), seq) == 3
    before = [a for a in acks(dupthresh) if a["t"] < _trigger(dupthresh, seq)["t"]][-1]
    assert _sacked_above(before, seq) < 3
    assert _sacked_above(_trigger(rack, seq), seq) < 3


def test_nextseg_retransmits_the_holes_in_order_before_new_data(tmp_path):
    # RFC 6675 NextSeg: rule 1 (the lowest lost hole) before rule 2 (new data)
    _, segs = one_flow(tmp_path, size=40_000, rate=2e6, rtt=0.2, drop=[2, 4, 6],
                       tcp={"init_cwnd": 20})
    sent = data(segs)
    first_retx = next(i for i, s in enumerate(sent) if s["seq"] < max(x["seq"] for x in sent[:i] or [s]))
    later = [s["seq"] for s in sent[first_retx:] if s["seq"] in (1001, 3001, 5001) or s["seq"] > 20_000]
    assert later[:3] == [1001, 3001, 5001]

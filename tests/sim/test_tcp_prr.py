"""Proportional Rate Reduction against RFC 6937 section 5's examples.

The RFC's set-up: bulk data, AIMD (Reno), cwnd = FlightSize = 20 segments, so ssthresh = 10
at the start of recovery; two new segments (limited transmit) on the first two duplicate ACKs,
then the retransmission. Its tables show, per ACK of the first round trip, what is sent:
'N' new data, 'R' a retransmission. We run that flight (IW 20, Linux Reno) through a 2 Mbit/s
bottleneck (one ACK per segment, 4.2 ms apart) on a 200 ms path, and read the sender's response
to each ACK from its capture.
"""
from tcpwire import one_flow


def _sent_per_ack(segs, n):
    """What the sender sent after each of the first ``n`` ACKs from the first duplicate on."""
    top, rows, cur, started = 0, [], None, False
    for s in segs:
        if not s["fwd"]:
            if s["sacks"] or started:
                started = True
                if cur is not None:
                    rows.append(cur)
                cur = ""
            continue
        if s["len"] == 0:
            continue
        if cur is not None:
            cur += "N" if s["seq"] >= top else "R"
        top = max(top, s["seq"] + s["len"])
    return rows[:n]


def _flight(tmp_path, drop):
    _, segs = one_flow(tmp_path, size=60_000, rate=2e6, rtt=0.2, drop=drop,
                       tcp={"init_cwnd": 20})
    return segs


def test_single_loss_sends_one_segment_per_two_acks(tmp_path):
    # RFC 6937 5, one loss (segment 0), PRR row for ACKs 1..18:
    #   sent: N N R . N . N . N . N . N . N . N .
    # ssthresh / RecoverFS = 1/2: after the fast retransmit, one new segment per two ACKs
    expected = ["N", "N", "R"] + ["", "N"] * 7 + [""]
    assert _sent_per_ack(_flight(tmp_path, [1]), 18) == expected


def test_burst_of_fifteen_losses_sends_one_retransmission_per_ack(tmp_path):
    # RFC 6937 5, segments 0..14 lost, ACKs 15..19: "N N R R R" (PRR-CRB: in flight is far
    # below ssthresh, but no ACK advances snd_una, so Linux's PRR stays conservative, one
    # segment per segment delivered)
    assert _sent_per_ack(_flight(tmp_path, list(range(1, 16))), 5) == ["N", "N", "R", "R", "R"]

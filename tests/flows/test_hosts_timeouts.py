"""Minimum RTO from true timeouts only.

Oracle: the testbed's senders are one Linux 6.18 kernel (rto_min 200 ms, HZ = 250) in every run,
so every run must give the same estimate. Linux arms RTO = SRTT + max(RTTVAR, rto_min) and converts
it to jiffies rounding up (<= 1 jiffy = 4 ms); the timer wheel fires up to one more jiffy late at
these timeouts (level 0, 1-jiffy granularity, below 64 jiffies). So the interval from a segment's
previous transmission to its timeout, less SRTT, is at least rto_min and its low quantile is
rto_min + [0, 8 ms], up to the few ms by which the SRTT rebuilt from the capture differs from the
kernel's: estimates within [197, 212] ms and within 8 ms (2 jiffies) of each other.
"""
import pyarrow as pa
import polars as pl
import pytest

from conftest import shared_path
from traceflow.flows.hosts import _reduced, _timeouts, connections, infer_hosts
from traceflow.pcap.schema import PACKET_SCHEMA

RUNS = ["devcubic", "rtt3dev", *(pytest.param(r, marks=pytest.mark.slow) for r in ("alpha1.35", "dev10m"))]
_EST = {}


@pytest.mark.parametrize("run", RUNS)
def test_same_kernel_same_rto_floor(run):
    from traceflow.pcap.reader import read_packets

    h = infer_hosts(read_packets(shared_path("testbed", run, "server_side.pcap.gz")))
    print(f"\n{run}: min RTO {h.min_rto_s * 1e3:.1f} ms from {h.rto_samples} timeouts, "
          f"back-off x{h.rto_backoff:.2f}, initial RTO {h.initial_rto_s:.3f} s")
    assert 0.197 <= h.min_rto_s <= 0.212
    assert h.rto_samples >= 100
    # successive timeouts of one segment double (RFC 6298 5.5); the first interval can exceed the
    # RTO by up to an RTT (its timer armed by a later ACK), which pulls the ratio below 2
    assert 1.7 <= h.rto_backoff <= 2.1
    _EST[run] = h.min_rto_s
    assert max(_EST.values()) - min(_EST.values()) <= 0.008


A = b"\0" * 10 + b"\xff\xff" + bytes([10, 0, 0, 1])     # server (data sender)
B = b"\0" * 10 + b"\xff\xff" + bytes([10, 0, 0, 2])     # client
MS = 1_000_000
SEG = 1000


def _conn(rows, c, t, events):
    """One connection: handshake of RTT 50 ms, then ``events``: ("tx", dt_ms, seg index) for a
    data segment of the server, ("ack", dt_ms, acked segments) for a client ACK."""
    cport, isn, cisn = 40000 + c, 1000 * c, 7 * c
    base = dict(ip_version=4, proto=6, window=500)

    def pkt(t, src, dst, sp, dp, flags, seq, ack, plen):
        rows.append(dict(base, ts=t, src=src, dst=dst, sport=sp, dport=dp, tcp_flags=flags,
                         seq=seq % 2**32, ack=ack % 2**32, payload_len=plen, ip_len=40 + plen))
    pkt(t, B, A, cport, 80, 0x02, cisn, 0, 0)
    pkt(t + MS // 100, A, B, 80, cport, 0x12, isn, cisn + 1, 0)
    pkt(t + 50 * MS, B, A, cport, 80, 0x10, cisn + 1, isn + 1, 0)
    t += 50 * MS
    for kind, dt, k in events:
        if kind == "tx":
            pkt(t + dt * MS, A, B, 80, cport, 0x10, isn + 1 + k * SEG, cisn + 1, SEG)
        else:
            pkt(t + dt * MS, B, A, cport, 80, 0x10, cisn + 1, isn + 1 + k * SEG, 0)


def _timeouts_of(events_by_conn):
    rows = []
    for c, events in enumerate(events_by_conn):
        _conn(rows, c, c * 10**10, events)
    df = connections(pa.Table.from_pylist(rows, schema=PACKET_SCHEMA))
    return _timeouts(_reduced(df))


FLIGHT = [("tx", 0.01 * k, k) for k in range(5)]


def test_rack_and_fast_retransmissions_are_not_timeouts():
    # segment 0 lost: the ACKs of the later segments (duplicates) arrive after ~50 ms, RACK or
    # fast retransmit resends it 2 ms later, its ACK covers all
    rack = FLIGHT + [("ack", 50 + k, 0) for k in range(4)] + [("tx", 55, 0), ("ack", 105, 5)]
    # tail-loss probe: segments 3 and 4 lost, the probe resends the last one (4) after 2 SRTT
    tlp = FLIGHT + [("ack", 50 + k, k + 1) for k in range(3)] + [("tx", 150, 4), ("ack", 200, 3),
                                                                 ("tx", 201, 3), ("ack", 251, 5)]
    assert _timeouts_of([rack, tlp]).height == 0


def test_timeouts_back_off_and_give_the_floor():
    # the whole flight lost: silence, go-back to segment 0 at SRTT + 200 ms, again after twice
    # that (back-off), then the ACK and the rest resent
    rto = FLIGHT + [("tx", 250, 0), ("tx", 750, 0), ("ack", 800, 1), ("tx", 800.1, 1),
                    ("ack", 850, 5)]
    t = _timeouts_of([rto] * 3)
    assert t.height == 6 and sorted(t["nth"].to_list()) == [1, 1, 1, 2, 2, 2]
    first = t.filter(pl.col("nth") == 1)
    assert (first["since_tx"] - first["srtt"]).to_list() == pytest.approx([0.2] * 3, abs=1e-3)
    second = t.filter(pl.col("nth") == 2)
    assert second["since_tx"].to_list() == pytest.approx([0.5] * 3)

"""End-host inference on the real-Linux testbed (MSS 1000, IW 10, rto_min 200 ms, SACK,
timestamps, window scale 10 (the default tcp_rmem), delayed ACKs after quick-ACK mode) and on
synthetic packet sequences."""
import polars as pl
import pyarrow as pa
import pytest

from conftest import shared_path
from traceflow.flows.hosts import connections, infer_hosts
from traceflow.pcap.schema import PACKET_SCHEMA

# The first 300 s of the 900 s testbed run keep the test short (thousands of connections).
SPAN_NS = 300 * 10**9


def _testbed(side):
    from traceflow.pcap.reader import read_packets

    df = pl.from_arrow(read_packets(shared_path("testbed", "alpha1.35", f"{side}_side.pcap.gz")))
    t0 = df["ts"].cast(pl.Int64).min()
    return df.filter(pl.col("ts").cast(pl.Int64) < t0 + SPAN_NS)


@pytest.fixture(scope="module")
def server():
    return _testbed("server")


@pytest.fixture(scope="module")
def client():
    return _testbed("client")


def test_sender_side_capture(server):
    h = infer_hosts(server)
    assert h.vantage == "sender"
    assert h.mss == 1000
    assert h.segment_size == 988          # MSS minus the 12-byte timestamp option
    assert h.header_bytes == 52
    assert h.initial_window == 10         # Linux initial window
    assert h.initial_window_observable
    assert h.initial_window_flows > 100
    assert 0.197 <= h.min_rto_s <= 0.212  # Linux rto_min 200 ms (+ <= 2 jiffies of timer slack)
    assert h.rto_samples > 50
    assert 1.8 <= h.rto_backoff <= 2.2    # RFC 6298 5.5: the RTO doubles
    assert abs(h.initial_rto_s - 1.0) < 0.03   # SYN/ACKs retransmitted after Linux's 1 s
    assert h.delayed_ack is True          # after quick-ACK mode, ACKs cover two segments
    assert h.sack is True and h.timestamps is True and h.window_scale == 10
    assert h.receiver_window == 68 << 10  # largest scaled window advertised by the clients


def test_receiver_side_capture(client):
    h = infer_hosts(client)
    assert h.vantage == "receiver"
    assert h.mss == 1000 and h.segment_size == 988
    # Behind the bottleneck the first flight cannot be timed, but its segments echo the request's
    # timestamp and the first ACK's TSval marks the segments it released: Linux's 10 segments
    assert h.initial_window_observable and h.initial_window == 10
    assert h.quality["initial_window"].startswith("ok: ")
    # behind the queue the first copy of a segment dropped there is never seen: no timeout can be
    # timed, so no floor is claimed (fit a sender-side capture with --hosts-from)
    assert h.min_rto_s is None and h.rto_samples == 0
    assert abs(h.initial_rto_s - 1.0) < 0.03
    assert h.delayed_ack is True and h.sack is True and h.timestamps is True


def _packets(rows):
    cols = {n: [] for n in PACKET_SCHEMA.names}
    for r in rows:
        for n in cols:
            cols[n].append(r.get(n))
    return pa.table(cols, schema=PACKET_SCHEMA)


def _synthetic(iw, delack, n_conn=8, seg=1000, rtt_ns=50_000_000, size=40):
    """Sender-side view of ``n_conn`` transfers of ``size`` segments with slow start from ``iw``."""
    a, b = b"\0" * 10 + b"\xff\xff" + bytes([10, 0, 0, 1]), b"\0" * 10 + b"\xff\xff" + bytes([10, 0, 0, 2])
    rows = []
    for c in range(n_conn):
        t = c * 10**10
        cport, isn, cisn = 40000 + c, 1000 * c, 5 + 7777 * c
        base = dict(ip_version=4, proto=6, caplen=60, wirelen=60, iface=0, linktype=1, ttl=64,
                    frag_offset=0, more_frags=False, window=512)
        def pkt(t, src, dst, sp, dp, flags, seq, ack, plen, **kw):
            rows.append(dict(base, ts=t, src=src, dst=dst, sport=sp, dport=dp, tcp_flags=flags,
                             seq=seq % 2**32, ack=ack % 2**32, payload_len=plen, ip_len=40 + plen, **kw))
        pkt(t, b, a, cport, 80, 0x02, cisn, 0, 0, mss=seg, wscale=7)
        pkt(t + 10, a, b, 80, cport, 0x12, isn, cisn + 1, 0, mss=seg, wscale=7)
        t += rtt_ns
        pkt(t, b, a, cport, 80, 0x10, cisn + 1, isn + 1, 0)
        nxt, acked, cwnd = 0, 0, iw
        t += 10
        while acked < size:
            burst = min(cwnd - (nxt - acked), size - nxt)
            for _ in range(burst):
                pkt(t, a, b, 80, cport, 0x10, isn + 1 + nxt * seg, cisn + 1, seg)
                nxt += 1
                t += 1000
            t += rtt_ns
            step = 2 if delack else 1
            while acked < nxt:
                acked = min(acked + step, nxt)
                pkt(t, b, a, cport, 80, 0x10, cisn + 1, isn + 1 + acked * seg, 0)
                t += 1000
                cwnd += 1
            t += 10
    return _packets(rows)


@pytest.mark.parametrize("iw, delack", [(1, False), (3, True), (10, False), (4, True)])
def test_synthetic_initial_window_and_delack(iw, delack):
    h = infer_hosts(_synthetic(iw, delack))
    assert h.vantage == "sender"
    assert h.initial_window == iw
    assert h.initial_window_flows == 8
    assert h.delayed_ack is delack
    assert h.segment_size == 1000 and h.mss == 1000
    assert h.receiver_window == 512 << 7


def test_connections_split_port_reuse():
    t = _synthetic(2, False, n_conn=2)
    df = pl.from_arrow(t)
    # Give the second connection the first one's client port: still two connections (new ISN).
    port = df["sport"].to_numpy().copy()
    dport = df["dport"].to_numpy().copy()
    port[port == 40001], dport[dport == 40001] = 40000, 40000
    df = df.with_columns(sport=pl.Series(port, dtype=pl.UInt16), dport=pl.Series(dport, dtype=pl.UInt16))
    conns = connections(df)
    assert conns["conn"].n_unique() == 2


def test_empty_input():
    h = infer_hosts(_packets([]))
    assert h.mss is None and h.initial_window is None and h.vantage == "unknown"


def test_application_delays(server, client):
    """The client's think time between its handshake ACK and its request is the spacing of two
    of its own packets: the same seen before and after the bottleneck (the reverse path is not
    queued). The server's delays are claimed only next to it."""
    s, c = infer_hosts(server), infer_hosts(client)
    assert 0 < s.request_delay_s < 0.005
    assert abs(s.request_delay_s - c.request_delay_s) < 5e-5
    assert 0 < s.response_delay_s < 0.005 and 0 <= s.close_delay_s < 0.005
    assert c.response_delay_s is None and c.close_delay_s is None

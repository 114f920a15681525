"""Exact bottleneck loss from captures before and after the queue, against the qdisc's own drop
counter (params.json of each real-Linux testbed run: bfifo "Sent N pkt (dropped D ...)")."""
import json
import re

import polars as pl
import pytest

from conftest import shared_path
from traceflow.flows.queue_loss import queue_loss

RUNS = ["devcubic", "rtt3dev", *(pytest.param(r, marks=pytest.mark.slow) for r in ("alpha1.35", "dev10m"))]


def _packets(run, side):
    from traceflow.pcap.reader import read_packets

    return pl.from_arrow(read_packets(shared_path("testbed", run, f"{side}_side.pcap.gz")))


@pytest.mark.parametrize("run", RUNS)
def test_lost_packets_equal_the_qdisc_drops(run):
    stats = json.loads(shared_path("testbed", run, "params.json").read_text())["qdisc_stats"]
    m = re.search(r"bfifo.*?Sent \d+ bytes (\d+) pkt \(dropped (\d+)", stats, re.S)
    sent, dropped = int(m[1]), int(m[2])
    q = queue_loss(_packets(run, "server"), _packets(run, "client"))
    print(f"\n{run}: lost {q.lost} of {q.arrived} (qdisc: dropped {dropped} of {sent + dropped}); "
          f"data segments {q.data_lost} of {q.data_arrived}")
    # every drop found, none invented; the arrivals miss only the last seconds (margin)
    assert q.lost == dropped
    assert 0 <= sent + dropped - q.arrived <= 0.002 * (sent + dropped)
    assert q.data_lost <= q.lost and q.data_rate > q.rate      # drops hit data segments most


def test_retransmission_estimate_misses_losses():
    """After the queue, counting retransmissions misses retransmissions whose original was
    dropped upstream of the capture: the estimate is below the exact loss of data segments."""
    from traceflow.flows import flows

    client = _packets("devcubic", "client")
    q = queue_loss(_packets("devcubic", "server"), client)
    fl = flows(client)
    seg = fl.select(d=pl.when(pl.col("app_bytes_s2c") > pl.col("app_bytes_c2s"))
                    .then(pl.col("packets_s2c")).otherwise(pl.col("packets_c2s")).sum(),
                    r=pl.col("retransmissions").sum())
    estimate = seg["r"][0] / seg["d"][0]
    assert estimate < q.data_rate - 0.05


def test_timestamps_absent_still_counts_copies():
    """Without the timestamp option two copies of a segment share a key: matched as a multiset."""
    from traceflow.pcap.schema import PACKET_SCHEMA
    import pyarrow as pa

    a, b = b"\0" * 10 + b"\xff\xff" + bytes([10, 0, 0, 1]), b"\0" * 10 + b"\xff\xff" + bytes([10, 0, 0, 2])
    rows = []

    def pkt(t, src, dst, sp, dp, flags, seq, ack, plen):
        rows.append(dict(ts=t, src=src, dst=dst, sport=sp, dport=dp, tcp_flags=flags, seq=seq,
                         ack=ack, payload_len=plen, ip_len=40 + plen, proto=6, ip_version=4,
                         window=100))
    pkt(0, b, a, 5000, 80, 0x02, 10, 0, 0)
    pkt(1, a, b, 80, 5000, 0x12, 99, 11, 0)
    pkt(2, b, a, 5000, 80, 0x10, 11, 100, 0)
    for k in range(3):
        pkt(3 + k, a, b, 80, 5000, 0x10, 100 + 1000 * k, 11, 1000)
    pkt(10, a, b, 80, 5000, 0x10, 1100, 11, 1000)          # the retransmission of segment 2
    before = pa.Table.from_pylist(rows, schema=PACKET_SCHEMA)
    # segment 2's first copy was dropped: the after capture holds it once
    after = pa.Table.from_pylist([r for i, r in enumerate(rows) if i != 4], schema=PACKET_SCHEMA)
    q = queue_loss(before, after, margin_s=0)
    assert (q.lost, q.data_lost, q.data_arrived) == (1, 1, 4)

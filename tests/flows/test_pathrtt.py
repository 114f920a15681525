"""Passive path RTT (traceflow.flows.pathrtt, traceflow.flows.rttsample): the sampling rules on
hand-built exchanges whose one-way delays are known, and batch-by-batch operation on real
captures."""
import ipaddress

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from conftest import shared_path

from traceflow.flows import flows, flows_with_rtt_samples
from traceflow.pcap.schema import ACK, FIN, PACKET_SCHEMA, PSH, SYN
from traceflow.flows.rttsample import BATCH_COLUMNS, RttSampler

MS = 1_000_000
CLIENT, SERVER = "10.0.0.1", "10.9.0.2"
ISN_C, ISN_S, SEG = 100, 500, 1000


def _row(t_ns, client_sends, flags, seq, ack, payload, tsval, tsecr):
    src, dst = (CLIENT, SERVER) if client_sends else (SERVER, CLIENT)
    ports = (40000, 80) if client_sends else (80, 40000)
    hdr = 20 + 20 + (12 if tsval is not None else 0)
    return {"ts": t_ns, "caplen": 14 + hdr, "wirelen": 14 + hdr + payload, "iface": 0,
            "linktype": 1, "ip_version": 4, "src": ipaddress.IPv6Address(f"::ffff:{src}").packed,
            "dst": ipaddress.IPv6Address(f"::ffff:{dst}").packed, "ip_len": hdr + payload,
            "ttl": 64, "proto": 6, "frag_offset": 0, "more_frags": False, "sport": ports[0],
            "dport": ports[1], "tcp_flags": flags, "seq": seq, "ack": ack, "window": 1000,
            "payload_len": payload, "tsval": tsval, "tsecr": tsecr}


def capture(events, c_to_v, v_to_s, timestamps):
    """What a capture point V sees of host-side ``events`` (ms at the sending host: time,
    client sends?, flags, seq, ack, payload, TSval, TSecr): each packet passes V ``c_to_v`` ms
    after the client sends it, or ``v_to_s`` ms after the server does."""
    rows = []
    for t, by_client, flags, seq, ack, payload, tsval, tsecr in events:
        seen = t + (c_to_v if by_client else v_to_s)
        ts = (tsval, tsecr) if timestamps else (None, None)
        rows.append(_row(round(seen * MS), by_client, flags, seq, ack, payload, *ts))
    rows.sort(key=lambda r: r["ts"])                      # stable: sending order on ties
    return pa.table({n: [r.get(n) for r in rows] for n in PACKET_SCHEMA.names},
                    schema=PACKET_SCHEMA)


def download(one_way, lost=False):
    """A request, four response segments and the close, between hosts ``one_way`` ms apart
    (every packet answered at once). ``lost``: segment 2 is lost after the capture point,
    the client sends two duplicate ACKs and the server retransmits it (new TSval)."""
    d = one_way
    end = ISN_S + 1 + 4 * SEG
    ev = [(0, True, SYN, ISN_C, 0, 0, 1000, 0),
          (d, False, SYN | ACK, ISN_S, ISN_C + 1, 0, 5000, 1000),
          (2 * d, True, ACK, ISN_C + 1, ISN_S + 1, 0, 1020, 5000),
          (2 * d, True, PSH | ACK, ISN_C + 1, ISN_S + 1, 100, 1020, 5000)]
    ev += [(3 * d, False, ACK, ISN_S + 1 + k * SEG, ISN_C + 101, SEG, 5020, 1020)
           for k in range(4)]
    if lost:
        ev += [(4 * d, True, ACK, ISN_C + 101, ISN_S + 1 + SEG, 0, 1040, 5020)] * 3
        ev += [(5 * d, False, ACK, ISN_S + 1 + SEG, ISN_C + 101, SEG, 5050, 1040),
               (6 * d, True, ACK, ISN_C + 101, end, 0, 1060, 5050)]
        return ev
    ev += [(4 * d, True, ACK, ISN_C + 101, ISN_S + 1 + 2 * SEG, 0, 1040, 5020),
           (4 * d, True, ACK, ISN_C + 101, end, 0, 1040, 5020),
           (5 * d, False, FIN | ACK, end, ISN_C + 101, 0, 5040, 1040),
           (6 * d, True, FIN | ACK, ISN_C + 101, end + 1, 0, 1060, 5040),
           (7 * d, False, ACK, end + 1, ISN_C + 102, 0, 5060, 1060)]
    return ev


VANTAGES = [(3, 7), (0, 10), (10, 0)]   # mid-path, at the client, at the server (ms one way)


@pytest.mark.parametrize("c_to_v,v_to_s", VANTAGES)
@pytest.mark.parametrize("timestamps", [True, False])
def test_halves_sum_to_the_path_rtt_at_every_vantage_point(c_to_v, v_to_s, timestamps):
    table, samples = flows_with_rtt_samples(
        capture(download(c_to_v + v_to_s), c_to_v, v_to_s, timestamps))
    r = table.row(0, named=True)
    # every exchange is answered at once: each half is exactly twice its one-way delay
    assert r["rtt_min"] == pytest.approx(0.020) and r["rtt_handshake"] == pytest.approx(0.020)
    assert r["rtt_median"] == pytest.approx(0.020) and r["rtt_p90"] == pytest.approx(0.020)
    # sequence numbers: SYN, SYN/ACK, request, 2 ACKs of 2 segments each, the two FINs;
    # timestamps: the first echoes of the same segments, but the ACK of segments 3-4 echoes
    # segment 1's TSval (closed already), and the client's pure ACK (TSval 1040) opens nothing
    n_samples = 6 if timestamps else 7
    assert r["rtt_samples"] == samples.height == n_samples
    halves = samples.group_by("half").agg(lo=pl.col("rtt").min(), hi=pl.col("rtt").max())
    want = {"client": 2 * c_to_v / 1e3, "server": 2 * v_to_s / 1e3}
    assert halves.height == 2
    for h in halves.iter_rows(named=True):
        assert h["lo"] == pytest.approx(want[h["half"]], abs=1e-9)
        assert h["hi"] == pytest.approx(want[h["half"]], abs=1e-9)
    assert samples["path_rtt"].to_list() == pytest.approx([0.020] * n_samples)
    assert samples["connection"].unique().to_list() == [r["flow_id"]]
    assert (samples["frame"] > samples["opening_frame"]).all()


@pytest.mark.parametrize("timestamps,client_samples", [(True, 2), (False, 2)])
def test_karn_rule_and_timestamps_after_a_loss(timestamps, client_samples):
    """Segment 2 is lost beyond the capture point and retransmitted after duplicate ACKs.
    Sequence numbers: the ACK that the retransmission releases covers segments 3 and 4 sent
    two round trips earlier, so it yields no sample (Karn); timestamps: the retransmission opens
    no sample either (Karn's rule for timestamps, as the module says), so both rules time the
    handshake and the first response segment only."""
    c_to_v, v_to_s = 3, 7
    _, samples = flows_with_rtt_samples(
        capture(download(10, lost=True), c_to_v, v_to_s, timestamps))
    client = samples.filter(pl.col("half") == "client")["rtt"]
    server = samples.filter(pl.col("half") == "server")["rtt"]
    assert client.len() == client_samples
    assert client.to_list() == pytest.approx([0.006] * client_samples)
    assert server.to_list() == pytest.approx([0.014] * server.len()) and server.len() >= 2


def test_first_echo_only_and_unechoed_tsvals_dropped():
    """A TSval echoed again (duplicate ACKs) gives one sample; TSvals a host never echoes
    (RFC 7323 echoes the segment at the left edge) are dropped by the next echo; the
    retransmission's TSval opens nothing."""
    events = download(10, lost=True)
    _, samples = flows_with_rtt_samples(capture(events, 3, 7, True))
    echoes_of_5020 = sum(1 for e in events if e[1] and e[7] == 5020)
    assert echoes_of_5020 == 3                            # one ACK, two duplicates
    assert samples.filter(pl.col("half") == "client").height == 2


def _kernel_batch(path):
    """The per-packet columns the flows pass hands the sampler, for a whole capture."""
    from traceflow.flows.flowsplit import FlowSplitter, StreamClock
    from traceflow.flows.table import _ip_packets, _kernel_frame
    from traceflow.pcap.reader import read_packets

    df = _kernel_frame(_ip_packets(pl.from_arrow(read_packets(path)), 1))
    cols = {c: df[c].to_numpy() for c in df.columns}
    cols["sweep"] = StreamClock(300 * 10**9).sweeps(cols["ts"], df.height)
    cols["pos"] = np.arange(df.height)
    used, out = FlowSplitter(300 * 10**9).feed(cols, True, df.height)
    assert used == df.height
    return {**cols, **out}


@pytest.mark.parametrize("name", ["slips_test-cc-capture-1.pcap", "ppa_ftp-crack.pcap"])
def test_batch_by_batch_equals_one_pass(name):
    """The sampler keeps only per-connection state: cutting the packet stream anywhere gives
    the same samples (a capture with timestamps, one without)."""
    batch = _kernel_batch(shared_path("captures", name))
    n = batch["ts"].size
    one = RttSampler(300 * 10**9).feed(batch)
    assert one["rtt"].size > 1000
    cuts = np.sort(np.random.default_rng(7).choice(np.arange(1, n), 40, replace=False))
    pieces = RttSampler(300 * 10**9)
    parts = [pieces.feed({k: v[a:b] for k, v in batch.items()})
             for a, b in zip([0, *cuts], [*cuts, n])]
    for key in one:
        assert np.array_equal(np.concatenate([p[key] for p in parts]), one[key]), key
    assert set(BATCH_COLUMNS) <= set(batch)
    # each sample column owns exactly its rows: a view of the kernel's batch-long array kept
    # the whole of it alive for as long as a flow stream held its open connections' samples
    for key, values in one.items():
        assert values.base is None and values.nbytes == values.size * values.itemsize, key
    assert one["rtt"].size < n


def test_partitions_and_reruns_give_identical_rtt_columns():
    from traceflow.pcap.reader import read_packets

    packets = read_packets(shared_path("captures", "pcapplusplus_example.pcap"))
    whole = flows(packets).select("flow_id", "rtt_samples", "rtt_min", "rtt_median", "rtt_p90")
    assert whole["rtt_min"].drop_nulls().len() > 20
    parts = flows(packets, partitions=3).select(whole.columns)
    assert parts.equals(whole) and flows(packets).select(whole.columns).equals(whole)

"""Ingest of the real captures: counts against tshark, and the two decoders against each other."""
import json

import pyarrow.compute as pc
import pytest
from conftest import CAPTURES, FORMATS, REFERENCE, shared_path

from traceflow.errors import InputFormatError
from traceflow.pcap.reader import ReadStats, read_packets


def _reference_files():
    if not REFERENCE.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason="needs ../shared/datasets/reference"))]
    refs = sorted(REFERENCE.glob("*.packets.json")) + sorted((REFERENCE / "formats").glob("*.packets.json"))
    return [pytest.param(p, id=p.name[:-len(".packets.json")]) for p in refs]


def _captures():
    files = sorted(p for d in (CAPTURES, FORMATS) if d.exists() for p in d.iterdir() if p.suffix != ".tsv")
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason="needs ../shared/datasets"))]
    return [pytest.param(p, id=p.name) for p in files]


# Where our counts differ from tshark's, and why.  Values are what we count instead.
EXPECTED_DIFFERENCES = {
    "arkime_v6.pcap": ({"udp": 50},
                       "tshark also counts the UDP headers quoted inside 13 ICMPv6 error messages; "
                       "our row describes the outer packet (proto 58)"),
    "libtrace_complex.pcapng": ({"packets": 5},
                                "tshark 4.0 shows the file's 3 pcapng custom blocks (0x0BAD/0x40000BAD) "
                                "as 'data' frames; they are not packets and are skipped"),
}
# Files tshark reads that we reject by design, and why.
EXPECTED_REJECTS = {
    "libtrace_100_packets.erf": "Endace ERF container, not pcap/pcapng (unknown magic)",
    "libtrace_large_legacy.gz": "legacy DAG/ERF container, not pcap/pcapng (unknown magic)",
    "zeek_trunc-hdr.pcap": "its record's captured length 8 exceeds the file's snapshot length 1: "
                           "malformed input by the issue's rules (tshark tolerates it)",
}


def count(table, stats):
    """Counts comparable to tshark's: frames (decoded + unsupported link types), frames with an
    IPv4/IPv6 header, TCP/UDP datagrams (first fragments only, as tshark reassembles)."""
    version, proto = table.column("ip_version"), table.column("proto")
    first = pc.equal(table.column("frag_offset"), 0)

    def n(mask):
        return int(pc.sum(pc.fill_null(mask, False).cast("int64")).as_py() or 0)

    return {"packets": table.num_rows + sum(stats.unsupported_linktypes.values()),
            "ipv4": n(pc.equal(version, 4)), "ipv6": n(pc.equal(version, 6)),
            "tcp": n(pc.and_(pc.equal(proto, 6), first)), "udp": n(pc.and_(pc.equal(proto, 17), first))}


@pytest.mark.parametrize("ref", _reference_files())
def test_counts_match_tshark(ref):
    name = ref.name[:-len(".packets.json")]
    sub = "formats" if ref.parent.name == "formats" else "captures"
    path = shared_path(sub, name)
    tshark = json.loads(ref.read_text())
    expected = {k: tshark.get(k, 0) for k in ("packets", "ipv4", "ipv6", "tcp", "udp")}
    if name in EXPECTED_REJECTS:
        with pytest.raises(InputFormatError):
            read_packets(path)
        return
    stats = ReadStats()
    got = count(read_packets(path, stats=stats), stats)
    if name in EXPECTED_DIFFERENCES:
        ours, reason = EXPECTED_DIFFERENCES[name]
        assert all(expected[k] != v for k, v in ours.items()), f"difference gone: {reason}"
        expected.update(ours)
    assert got == expected


@pytest.mark.parametrize("path", _captures())
def test_fast_equals_dpkt_reference(path):
    try:
        fast = read_packets(path, decoder="fast")
    except InputFormatError as exc:
        with pytest.raises(InputFormatError) as ref_exc:
            read_packets(path, decoder="dpkt")
        assert str(ref_exc.value) == str(exc)
        return
    ref = read_packets(path, decoder="dpkt")
    assert fast.schema == ref.schema and fast.num_rows == ref.num_rows
    for name in fast.column_names:
        assert fast.column(name).equals(ref.column(name)), name


def test_real_capture_fields():
    """Spot checks on a real handshake: SYN options and IPv4-mapped addresses."""
    table = read_packets(shared_path("captures", "sanders_tcp_handshake.pcapng"))
    syn = table.filter(pc.equal(table.column("tcp_flags"), 0x02)).to_pylist()[0]
    assert syn["ip_version"] == 4 and syn["src"][:12] == b"\x00" * 10 + b"\xff\xff"
    assert syn["mss"] is not None and syn["payload_len"] == 0 and syn["ack"] == 0
    assert table.column("ts").cast("int64").to_pylist() == sorted(table.column("ts").cast("int64").to_pylist())


def test_testbed_snaplen_bytes():
    """The testbed captures have snaplen 96: bytes come from ip_len, never from caplen."""
    path = shared_path("testbed", "alpha1.35", "client_side.pcap.gz")
    stats = ReadStats()
    table = read_packets(path, stats=stats)
    assert stats.compression == "gzip" and table.num_rows == stats.records > 10_000
    assert pc.max(table.column("caplen")).as_py() <= 96
    assert pc.max(table.column("ip_len")).as_py() == 1040            # the run's MTU
    tcp = table.filter(pc.equal(table.column("proto"), 6))
    headers = pc.subtract(tcp.column("ip_len"), tcp.column("payload_len"))
    assert pc.min(headers).as_py() >= 40 and pc.max(headers).as_py() <= 60 + 60


def test_streaming_memory_is_bounded():
    """Iterating batches of a 70 MB capture keeps traced (NumPy/Python) memory far below its size."""
    import tracemalloc

    from traceflow.pcap.reader import iter_batches

    path = shared_path("testbed", "dev10m", "server_side.pcap.gz")
    stats = ReadStats()
    tracemalloc.start()
    try:
        rows = sum(b.num_rows for b in iter_batches(path, batch_size=16384, stats=stats))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert rows == stats.records and stats.bytes > 50e6
    assert peak < 16e6, peak


TSHARK_FIELDS = {  # tshark field -> (our column, applies to)
    "frame.time_epoch": ("ts", "all"), "ip.len": ("ip_len", "ipv4"), "tcp.srcport": ("sport", "tcp"),
    "tcp.dstport": ("dport", "tcp"), "tcp.seq_raw": ("seq", "tcp"), "tcp.ack_raw": ("ack", "tcp"),
    "tcp.flags": ("tcp_flags", "tcp"), "tcp.window_size_value": ("window", "tcp"),
    "tcp.len": ("payload_len", "tcp"), "tcp.options.mss_val": ("mss", "tcp"),
    "tcp.options.wscale.shift": ("wscale", "tcp"), "tcp.options.timestamp.tsval": ("tsval", "tcp"),
    "tcp.options.timestamp.tsecr": ("tsecr", "tcp"), "udp.srcport": ("sport", "udp"),
    "udp.dstport": ("dport", "udp"), "icmp.type": (None, "icmp"), "icmpv6.type": (None, "icmp"),
}


@pytest.mark.slow
@pytest.mark.parametrize("sub,name", [("captures", p.name) for p in sorted(CAPTURES.glob("*.pcap*"))]
                         + [("formats", n) for n in ("arkime_v6.pcap", "libtrace_sll.pcap.gz",
                                                     "libtrace_ip-in-mpls.pcap.gz", "zeek_llc.pcap",
                                                     "pcapplusplus_four_ipv6_http_streams.pcap")])
def test_fields_match_tshark(sub, name):
    """Per-packet header fields equal tshark's (outer headers; ICMP-quoted headers ignored)."""
    import subprocess
    from decimal import Decimal

    from conftest import require_tool

    tshark = require_tool("tshark")
    path = shared_path(sub, name)
    table = read_packets(path)
    cmd = [tshark, "-r", str(path), "-T", "fields", "-E", "occurrence=f", "-o", "ip.defragment:FALSE",
           "-o", "ipv6.defragment:FALSE", "-o", "tcp.desegment_tcp_streams:FALSE"]
    for f in TSHARK_FIELDS:
        cmd += ["-e", f]
    lines = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(lines) == table.num_rows
    ts = table.column("ts").cast("int64").to_pylist()
    compared = 0
    for i, (row, line) in enumerate(zip(table.to_pylist(), lines)):
        values = dict(zip(TSHARK_FIELDS, line.split("\t")))
        if values["icmp.type"] or values["icmpv6.type"]:
            continue
        kind = {6: "tcp", 17: "udp"}.get(row["proto"]) if row["frag_offset"] == 0 else None
        for field, text in values.items():
            column, applies = TSHARK_FIELDS[field]
            if not text or column is None or applies not in ("all", kind, f"ipv{row['ip_version']}"):
                continue
            ours = ts[i] if column == "ts" else row[column]
            theirs = int(Decimal(text) * 10**9) if column == "ts" else int(text, 0)
            assert ours == theirs, (i, field, ours, theirs)
            compared += 1
    assert compared > table.num_rows

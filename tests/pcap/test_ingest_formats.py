"""Ingest of synthetic captures with known contents: containers, link types, headers, options.

Every check runs against both decoders (fast Cython and dpkt reference).  The byte builders here are
also used by test_ingest_errors.py.
"""
import gzip
import struct

import pyarrow as pa
import pytest

from traceflow.pcap.reader import ReadStats, iter_batches, read_packets
from traceflow.pcap.schema import ACK, PACKET_SCHEMA, SYN

DECODERS = ["fast", "dpkt"]
MAPPED = b"\x00" * 10 + b"\xff\xff"
A4, B4 = bytes([10, 0, 0, 1]), bytes([192, 168, 1, 2])
A6 = bytes.fromhex("20010db8000000000000000000000001")
B6 = bytes.fromhex("20010db8000000000000000000000002")
T0 = 1_700_000_000_123_456_000  # ns


# --- builders ---------------------------------------------------------------------------------

def tcp(sport=1234, dport=80, seq=1000, ack=0, flags=SYN, win=65535, options=b"", payload=b""):
    options += b"\x00" * (-len(options) % 4)
    off = (20 + len(options)) // 4
    return struct.pack(">HHIIBBHHH", sport, dport, seq, ack, off << 4, flags, win, 0, 0) + options + payload


def udp(sport=5353, dport=53, payload=b"x" * 10):
    return struct.pack(">HHHH", sport, dport, 8 + len(payload), 0) + payload


def ipv4(payload, proto=6, src=A4, dst=B4, ttl=64, frag_off=0, mf=False, options=b"", total_len=None):
    ihl = (20 + len(options)) // 4
    total = 20 + len(options) + len(payload) if total_len is None else total_len
    flags = (0x2000 if mf else 0) | (frag_off // 8)
    return struct.pack(">BBHHHBBH4s4s", 0x40 | ihl, 0, total, 7, flags, ttl, proto, 0, src, dst) + options + payload


def ipv6(payload, nh=6, ext=b"", src=A6, dst=B6, hlim=33):
    return struct.pack(">IHBB16s16s", 0x60000000, len(ext) + len(payload), nh, hlim, src, dst) + ext + payload


def eth(payload, ethertype=0x0800, tags=()):
    out = b"\x02" * 6 + b"\x04" * 6
    for tpid, vid in tags:
        out += struct.pack(">HH", tpid, vid)
    return out + struct.pack(">H", ethertype) + payload


def pcap_file(frames, linktype=1, big=False, nanos=False, snaplen=65535):
    """frames: (ts_ns, bytes) or (ts_ns, bytes, wirelen); truncated to snaplen like a capture."""
    e = ">" if big else "<"
    out = struct.pack(e + "IHHiIII", 0xA1B23C4D if nanos else 0xA1B2C3D4, 2, 4, 0, 0, snaplen, linktype)
    for ts, frame, *wire in frames:
        wirelen = wire[0] if wire else len(frame)
        frame = frame[:snaplen]
        frac = ts % 10**9 if nanos else ts % 10**9 // 1000
        out += struct.pack(e + "IIII", ts // 10**9, frac, len(frame), wirelen) + frame
    return out


def block(btype, body, big=False):
    e = ">" if big else "<"
    body += b"\x00" * (-len(body) % 4)
    n = len(body) + 12
    return struct.pack(e + "II", btype, n) + body + struct.pack(e + "I", n)


def shb(big=False):
    e = ">" if big else "<"
    return block(0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1), big)


def option(code, value, big=False):
    e = ">" if big else "<"
    return struct.pack(e + "HH", code, len(value)) + value + b"\x00" * (-len(value) % 4)


def idb(linktype, tsresol=None, tsoffset=None, snaplen=0, big=False):
    e = ">" if big else "<"
    opts = b""
    if tsresol is not None:
        opts += option(9, bytes([tsresol]), big)
    if tsoffset is not None:
        opts += option(14, struct.pack(e + "q", tsoffset), big)
    if opts:
        opts += option(0, b"", big)
    return block(1, struct.pack(e + "HHI", linktype, 0, snaplen) + opts, big)


def epb(iface, units, frame, wirelen=None, big=False):
    e = ">" if big else "<"
    wirelen = len(frame) if wirelen is None else wirelen
    return block(6, struct.pack(e + "IIIII", iface, units >> 32, units & 0xFFFFFFFF, len(frame), wirelen)
                 + frame, big)


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def rows(path, decoder, **kw):
    table = read_packets(path, decoder=decoder, **kw)
    assert table.schema == PACKET_SCHEMA
    return table.to_pylist()


# --- headers ----------------------------------------------------------------------------------

@pytest.mark.parametrize("decoder", DECODERS)
def test_tcp_syn_options_over_qinq(tmp_path, decoder):
    opts = (b"\x02\x04\x05\xb4" + b"\x01\x03\x03\x07" + b"\x04\x02"
            + b"\x08\x0a" + struct.pack(">II", 111, 222))
    frame = eth(ipv4(tcp(options=opts)), tags=[(0x88A8, 100), (0x8100, 200)])
    (r,) = rows(write(tmp_path, "q.pcap", pcap_file([(T0, frame)])), decoder)
    assert r["vlan"] == 100 and r["ip_version"] == 4 and r["ttl"] == 64 and r["proto"] == 6
    assert r["src"] == MAPPED + A4 and r["dst"] == MAPPED + B4
    assert (r["sport"], r["dport"], r["seq"], r["ack"], r["window"]) == (1234, 80, 1000, 0, 65535)
    assert r["tcp_flags"] == SYN
    assert (r["mss"], r["wscale"], r["sack_ok"], r["tsval"], r["tsecr"]) == (1460, 7, True, 111, 222)
    assert r["ip_len"] == 20 + 20 + 20 and r["payload_len"] == 0
    assert r["ts"].timestamp() * 1e9 == pytest.approx(T0, abs=1000)


@pytest.mark.parametrize("decoder", DECODERS)
def test_snaplen_truncation_keeps_header_lengths(tmp_path, decoder):
    """snaplen 96 (as the testbed): ip_len and payload_len still come from the headers."""
    frame = eth(ipv4(tcp(flags=ACK, ack=5, payload=b"p" * 1000, options=b"\x01\x01\x08\x0a" + b"\0" * 8)))
    data = pcap_file([(T0, frame)], snaplen=96)
    (r,) = rows(write(tmp_path, "t.pcap", data), decoder)
    assert (r["caplen"], r["wirelen"]) == (96, len(frame))
    assert r["ip_len"] == 20 + 32 + 1000 and r["payload_len"] == 1000
    assert r["tcp_flags"] == ACK and r["tsval"] == 0 and r["mss"] is None and r["sack_ok"] is None


@pytest.mark.parametrize("decoder", DECODERS)
def test_ipv4_fragments_and_options(tmp_path, decoder):
    first = ipv4(udp(payload=b"a" * 100), proto=17, mf=True, options=b"\x01\x01\x01\x00")
    second = ipv4(b"b" * 64, proto=17, frag_off=1480)
    path = write(tmp_path, "f.pcap", pcap_file([(T0, eth(first)), (T0 + 1000, eth(second))]))
    r1, r2 = rows(path, decoder)
    assert (r1["sport"], r1["dport"], r1["more_frags"], r1["frag_offset"]) == (5353, 53, True, 0)
    assert r1["payload_len"] == 100 and r1["ip_len"] == 24 + 108
    assert (r2["proto"], r2["frag_offset"], r2["more_frags"]) == (17, 1480, False)
    assert r2["sport"] is None and r2["dport"] is None and r2["payload_len"] is None


@pytest.mark.parametrize("decoder", DECODERS)
def test_ipv6_extension_headers_and_fragments(tmp_path, decoder):
    hbh = bytes([60, 0]) + b"\x01\x04\x00\x00\x00\x00"          # next: destination options
    dst = bytes([44, 0]) + b"\x01\x04\x00\x00\x00\x00"          # next: fragment
    frag_first = struct.pack(">BBHI", 6, 0, 0 | 1, 99)          # offset 0, M=1, next TCP
    frag_later = struct.pack(">BBHI", 6, 0, 1232 | 0, 99)       # offset 1232, last
    seg = tcp(flags=SYN | ACK, seq=7, ack=9, payload=b"z" * 30)
    p1 = ipv6(seg, nh=0, ext=hbh + dst + frag_first)
    p2 = ipv6(b"q" * 40, nh=0, ext=hbh + dst + frag_later)
    path = write(tmp_path, "v6.pcap", pcap_file([(T0, eth(p1, 0x86DD)), (T0, eth(p2, 0x86DD))]))
    r1, r2 = rows(path, decoder)
    assert r1["ip_version"] == 6 and r1["src"] == A6 and r1["ttl"] == 33 and r1["proto"] == 6
    assert (r1["sport"], r1["seq"], r1["ack"], r1["tcp_flags"]) == (1234, 7, 9, SYN | ACK)
    assert r1["ip_len"] == 40 + 24 + 20 + 30 and r1["payload_len"] == 30 and r1["more_frags"] is True
    assert (r2["proto"], r2["frag_offset"], r2["sport"]) == (6, 1232, None)


@pytest.mark.parametrize("decoder", DECODERS)
def test_link_layers(tmp_path, decoder):
    """Each supported link type carries the same TCP packet to the same decoded row."""
    pkt = ipv4(tcp(flags=ACK, payload=b"d" * 5))
    mpls = struct.pack(">I", (16 << 12) | 0x40) + struct.pack(">I", (17 << 12) | 0x140)
    snap = b"\xaa\xaa\x03\x00\x00\x00\x08\x00"
    cases = {
        "mpls": (1, eth(mpls + pkt, 0x8847)),
        "llc-snap": (1, b"\x02" * 6 + b"\x04" * 6 + struct.pack(">H", len(snap + pkt)) + snap + pkt),
        "pppoe": (1, eth(struct.pack(">BBHHH", 0x11, 0, 1, len(pkt) + 2, 0x0021) + pkt, 0x8864)),
        "sll": (113, struct.pack(">HHH8sH", 0, 1, 6, b"\x02" * 8, 0x0800) + pkt),
        "sll2": (276, struct.pack(">HHiHBB8s", 0x0800, 0, 1, 1, 0, 6, b"\x02" * 8) + pkt),
        "raw101": (101, pkt), "raw12": (12, pkt), "ipv4-228": (228, pkt),
        "null-le": (0, struct.pack("<I", 2) + pkt), "null-be": (0, struct.pack(">I", 2) + pkt),
        "loop": (108, struct.pack(">I", 2) + pkt),
        "hdlc": (104, b"\x0f\x00\x08\x00" + pkt),
        "fddi": (10, b"\x50" + b"\x02" * 12 + snap + pkt),
        "ipnet": (226, bytes([1, 2]) + b"\x00" * 22 + pkt),
        "nflog": (239, bytes([2, 0, 0, 0]) + struct.pack("<HH", 8, 1) + b"\0" * 4
                  + struct.pack("<HH", 4 + len(pkt), 9) + pkt),
        "pktap": (258, struct.pack("<II", 108, 1) + b"\x00" * 100 + eth(pkt)),
        "ipoib": (242, b"\x00" * 40 + b"\x08\x00\x00\x00" + pkt),
    }
    for name, (linktype, frame) in cases.items():
        (r,) = rows(write(tmp_path, f"{name}.pcap", pcap_file([(T0, frame)], linktype=linktype)), decoder)
        assert r["linktype"] == linktype, name
        got = (r["ip_version"], r["src"], r["sport"], r["dport"], r["tcp_flags"], r["payload_len"])
        assert got == (4, MAPPED + A4, 1234, 80, ACK, 5), name


@pytest.mark.parametrize("decoder", DECODERS)
def test_non_ip_and_unsupported_linktypes(tmp_path, decoder):
    arp = eth(b"\x00\x01\x08\x00\x06\x04\x00\x01" + b"\x00" * 20, 0x0806)
    (r,) = rows(write(tmp_path, "arp.pcap", pcap_file([(T0, arp)])), decoder)
    assert r["ip_version"] is None and r["proto"] is None and r["caplen"] == len(arp)
    stats = ReadStats()
    table = read_packets(write(tmp_path, "r.pcap", pcap_file([(T0, b"\0" * 30)] * 3, linktype=127)),
                         decoder=decoder, stats=stats)
    assert table.num_rows == 0 and stats.unsupported_linktypes == {127: 3} and stats.records == 3


# --- containers -------------------------------------------------------------------------------

@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("big,nanos", [(False, False), (True, False), (False, True), (True, True)])
def test_pcap_byte_orders_and_resolutions(tmp_path, decoder, big, nanos):
    ts = [T0 + 789, T0 + 2_000_000_001]
    path = write(tmp_path, "x.pcap", pcap_file([(t, eth(ipv4(udp(), 17))) for t in ts], big=big, nanos=nanos))
    table = read_packets(path, decoder=decoder)
    got = table.column("ts").cast(pa.int64()).to_pylist()
    assert got == (ts if nanos else [t // 1000 * 1000 for t in ts])
    assert table.column("sport").to_pylist() == [5353, 5353]


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("big", [False, True])
def test_pcapng_interfaces_resolutions_offsets(tmp_path, decoder, big):
    """Several interfaces with their own link type, if_tsresol (decimal and binary) and
    if_tsoffset; unknown and custom blocks in between are skipped silently."""
    pkt = ipv4(udp(), 17)
    data = (shb(big) + idb(1, big=big)                            # default µs
            + idb(101, tsresol=9, big=big)                        # ns, raw IP
            + idb(113, tsresol=0x80 | 20, tsoffset=1000, big=big)  # 2^-20 s, +1000 s
            + idb(1, tsresol=3, big=big)                          # ms
            + block(0x0BAD, b"\x00\x00\x7e\xd9custom", big) + block(0x12345, b"unknown", big)
            + epb(0, 1_700_000_000_123_456, eth(pkt), big=big)
            + epb(1, 1_700_000_000_123_456_789, pkt, big=big)
            + block(5, b"\x00" * 12, big)                         # interface statistics
            + epb(2, (1_700_000_000 << 20) + (1 << 19), struct.pack(">HHH8sH", 0, 1, 6, b"\0" * 8, 0x800) + pkt,
                  big=big)
            + epb(3, 1_700_000_000_123, eth(pkt), big=big))
    stats = ReadStats()
    table = read_packets(write(tmp_path, "m.pcapng", data), decoder=decoder, stats=stats)
    assert table.column("iface").to_pylist() == [0, 1, 2, 3]
    assert table.column("linktype").to_pylist() == [1, 101, 113, 1]
    assert table.column("ts").cast(pa.int64()).to_pylist() == [
        1_700_000_000_123_456_000, 1_700_000_000_123_456_789, 1_700_001_000_500_000_000,
        1_700_000_000_123_000_000]
    assert table.column("sport").to_pylist() == [5353] * 4
    assert stats.interfaces == 4 and stats.skipped_records == 0


@pytest.mark.parametrize("decoder", DECODERS)
def test_pcapng_sections_change_byte_order(tmp_path, decoder):
    pkt = eth(ipv4(udp(), 17))
    data = shb(False) + idb(1) + epb(0, 5, pkt) + shb(True) + idb(1, tsresol=9, big=True) + epb(0, 7, pkt, big=True)
    table = read_packets(write(tmp_path, "s.pcapng", data), decoder=decoder)
    assert table.column("ts").cast(pa.int64()).to_pylist() == [5000, 7]


@pytest.mark.parametrize("decoder", DECODERS)
def test_gzip_and_zstd_by_magic(tmp_path, decoder):
    zstd = pytest.importorskip("zstandard")
    frames = [(T0 + i * 1000, eth(ipv4(tcp(seq=i, payload=b"x" * i)))) for i in range(50)]
    raw = pcap_file(frames)
    plain = read_packets(write(tmp_path, "p.pcap", raw), decoder=decoder)
    # names say nothing: the format is recognised by magic
    gz = read_packets(write(tmp_path, "capture.bin", gzip.compress(raw)), decoder=decoder)
    zs = read_packets(write(tmp_path, "capture.dat", zstd.ZstdCompressor().compress(raw)), decoder=decoder)
    assert plain.num_rows == 50 and plain.equals(gz) and plain.equals(zs)
    assert plain.column("seq").to_pylist() == list(range(50))


@pytest.mark.parametrize("decoder", DECODERS)
def test_batches_stream_in_order(tmp_path, decoder):
    frames = [(T0 + i, eth(ipv4(tcp(seq=i)))) for i in range(100)]
    path = write(tmp_path, "b.pcap", pcap_file(frames))
    batches = list(iter_batches(path, decoder=decoder, batch_size=7))
    assert [b.num_rows for b in batches] == [7] * 14 + [2]
    assert pa.Table.from_batches(batches).equals(read_packets(path, decoder=decoder))


def test_chunk_boundaries(tmp_path, monkeypatch):
    """Records that straddle read chunks decode the same as with one big read."""
    import traceflow.pcap.reader as reader

    frames = [(T0 + i, eth(ipv4(tcp(seq=i, payload=b"y" * (i % 50))))) for i in range(300)]
    path = write(tmp_path, "c.pcap", pcap_file(frames))
    whole = read_packets(path)
    monkeypatch.setattr(reader, "CHUNK", 37)
    assert read_packets(path, batch_size=11).equals(whole)

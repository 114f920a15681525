"""The Arrow schema of the packets table (the contract between ingest and every analytic).

Time is integer nanoseconds end to end. Addresses are 16-byte binaries (IPv4 as IPv4-mapped
``::ffff:a.b.c.d``). ``ip_len`` comes from the IP header (IPv4 total length; IPv6 payload length
+ 40), so snaplen-truncated captures still count bytes right; ``payload_len`` is the transport
payload length derived from ``ip_len`` (not from the captured bytes). Fields that do not apply to a
packet are null (e.g. ports of ICMP or of non-first fragments, TCP options that are absent).
"""
import pyarrow as pa

PACKET_FIELDS = [
    ("ts", pa.timestamp("ns")),        # capture timestamp
    ("caplen", pa.uint32()),           # bytes captured
    ("wirelen", pa.uint32()),          # original length on the wire
    ("iface", pa.uint16()),            # pcapng interface index (0 for pcap)
    ("linktype", pa.uint16()),         # DLT/LINKTYPE of the record
    ("vlan", pa.uint16()),             # outermost 802.1Q/802.1ad VLAN id, null if untagged
    ("ip_version", pa.uint8()),        # 4 or 6; null for non-IP packets
    ("src", pa.binary(16)),
    ("dst", pa.binary(16)),
    ("ip_len", pa.uint32()),           # IP datagram length from the header
    ("ttl", pa.uint8()),               # TTL / hop limit
    ("proto", pa.uint8()),             # transport protocol number after IPv6 extension headers
    ("frag_offset", pa.uint16()),      # IPv4/IPv6 fragment offset in bytes (0 if unfragmented)
    ("more_frags", pa.bool_()),
    ("sport", pa.uint16()),
    ("dport", pa.uint16()),
    ("tcp_flags", pa.uint16()),        # FIN=0x01 SYN=0x02 RST=0x04 PSH=0x08 ACK=0x10 URG=0x20 ECE CWR NS
    ("seq", pa.uint32()),
    ("ack", pa.uint32()),
    ("window", pa.uint16()),           # raw (unscaled) advertised window
    ("payload_len", pa.uint32()),      # TCP/UDP payload bytes per the IP header
    ("mss", pa.uint16()),
    ("wscale", pa.uint8()),
    ("sack_ok", pa.bool_()),
    ("tsval", pa.uint32()),
    ("tsecr", pa.uint32()),
]

PACKET_SCHEMA = pa.schema([pa.field(name, typ) for name, typ in PACKET_FIELDS])

#: Parquet encodings of a packets table (``ingest``), chosen by measurement on the dev10m
#: testbed capture (736k packets; benchmarks/bench_ingest.py): dictionaries only for the
#: addresses (few hosts, 16 bytes each), timestamps delta-encoded (they rise by small steps).
#: Against pyarrow's defaults (a dictionary for every column) the write took 0.27 s instead of
#: 0.44 s and the file was 12.1 MB instead of 15.6 MB; zstd levels above 1 cost more time than
#: they save bytes (level 6: 0.87 s, 11.4 MB).
PARQUET_OPTIONS = {"compression": "zstd", "use_dictionary": ["src", "dst"],
                   "column_encoding": {"ts": "DELTA_BINARY_PACKED"}}

# TCP flag bits
FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80
TCP, UDP, ICMP, ICMPV6 = 6, 17, 1, 58

"""What a capture holds, at a glance (``traceflow info``; the questions ``capinfos`` answers).

:func:`capture_info` reads a capture once and reports its format and compression, link types,
records, bytes (the frames' original lengths, capinfos' "data size"), the time span (first and last
timestamp, UTC), whether timestamps are in order and the longest silence between them (a clock
step shows there), the snapshot length(s), protocol counts, TCP connections (from the flow
table: started with a SYN, and with a complete handshake) and truncation (records cut to the
snapshot length, a last record cut short, records skipped). Bytes of records whose link type the
decoder does not read are not known: those records are counted per link type under
``unsupported_linktypes``.
"""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

#: LINKTYPE_* names (tcpdump.org/linktypes.html) of the link types the decoder reads, and a few
#: common ones it does not
LINKTYPE_NAMES = {
    0: "NULL", 1: "ETHERNET", 10: "FDDI", 12: "RAW", 14: "RAW", 101: "RAW", 104: "C_HDLC",
    105: "IEEE802_11", 108: "LOOP", 113: "LINUX_SLL", 127: "IEEE802_11_RADIOTAP",
    226: "IPNET", 228: "IPV4", 229: "IPV6", 239: "NFLOG", 242: "IPOIB", 253: "NETLINK",
    258: "PKTAP", 276: "LINUX_SLL2",
}


def linktype_name(linktype):
    """``ETHERNET`` for 1, ``LINKTYPE_253``-style for numbers without a name here."""
    return LINKTYPE_NAMES.get(int(linktype), f"LINKTYPE_{int(linktype)}")


class ProtocolCounts:
    """Per-protocol packet counts and IP bytes, accumulated batch by batch."""

    KEYS = ("ipv4", "ipv6", "tcp", "udp", "icmp", "other")

    def __init__(self):
        self.counts = dict.fromkeys(self.KEYS, 0)
        self.ip_bytes = 0

    def add(self, batch):
        version, proto = batch.column("ip_version"), batch.column("proto")

        def count(mask):
            return int(pc.sum(pc.fill_null(mask, False).cast(pa.int64())).as_py() or 0)

        self.counts["ipv4"] += count(pc.equal(version, 4))
        self.counts["ipv6"] += count(pc.equal(version, 6))
        self.counts["tcp"] += count(pc.equal(proto, 6))
        self.counts["udp"] += count(pc.equal(proto, 17))
        self.counts["icmp"] += count(pc.or_(pc.equal(proto, 1), pc.equal(proto, 58)))
        self.counts["other"] += batch.num_rows - count(pc.is_valid(version))
        self.ip_bytes += int(pc.sum(batch.column("ip_len")).as_py() or 0)


def capture_info(path, *, decoder="fast", on_error="fail"):
    """A JSON-ready summary of the capture ``path`` (see the module docstring)."""
    import polars as pl

    from traceflow.flows import flows
    from traceflow.pcap.reader import ReadStats, iter_batches

    stats, protocols = ReadStats(), ProtocolCounts()
    batches = []
    for batch in iter_batches(path, decoder=decoder, on_error=on_error, stats=stats):
        protocols.add(batch)
        batches.append(batch)
    packets = pl.from_arrow(pa.Table.from_batches(batches)) if batches else None
    out = {"file": str(path), "format": stats.format, "compression": stats.compression,
           "file_bytes": Path(path).stat().st_size, "interfaces": stats.interfaces,
           "records": stats.records, "packets": stats.packets, "snaplens": stats.snaplens}
    per_type = {}
    if packets is not None and packets.height:
        counts = packets.group_by("linktype").agg(pl.len(), pl.col("wirelen").cast(pl.Int64).sum(),
                                                 pl.col("caplen").cast(pl.Int64).sum())
        for lt, n, wire, cap in counts.sort("linktype").iter_rows():
            per_type[int(lt)] = {"name": linktype_name(lt), "records": int(n), "bytes": int(wire),
                                 "captured_bytes": int(cap)}
    for lt, n in stats.unsupported_linktypes.items():
        per_type.setdefault(int(lt), {"name": linktype_name(lt), "records": 0, "bytes": None,
                                      "captured_bytes": None})["records"] += int(n)
    out["linktypes"] = {str(k): v for k, v in sorted(per_type.items())}
    out["unsupported_linktypes"] = {str(k): v for k, v in stats.unsupported_linktypes.items()}
    out["bytes"] = sum(v["bytes"] or 0 for v in per_type.values())
    out["captured_bytes"] = sum(v["captured_bytes"] or 0 for v in per_type.values())
    out.update(_span(packets))
    out["protocols"] = protocols.counts
    out["ip_bytes"] = protocols.ip_bytes
    out["tcp"] = _tcp(flows(packets)) if packets is not None and packets.height else \
        {"connections": 0, "syn": 0, "complete_handshakes": 0}
    out["truncation"] = {
        "snaplen_cut": int(packets.select((pl.col("caplen") < pl.col("wirelen")).sum()).item())
        if packets is not None else 0,
        "last_record_cut_bytes": stats.truncated_bytes,
        "skipped_records": stats.skipped_records, "skipped_bytes": stats.skipped_bytes}
    return out


def _span(packets):
    """First/last timestamps (int ns), the duration (s), whether timestamps never decrease, and
    the longest gap between consecutive timestamps in time order: its length (s) and the packets
    before it (``gap_after_packets``)."""
    import polars as pl

    if packets is None or packets.height == 0:
        return {"first_ns": None, "last_ns": None, "duration_s": None, "time_ordered": True,
                "longest_gap_s": None, "gap_after_packets": None}
    ts = packets.get_column("ts").cast(pl.Int64)
    first, last = int(ts.min()), int(ts.max())
    ordered = bool(packets.height < 2 or (ts.diff().drop_nulls() >= 0).all())
    gaps = ts.sort().diff().fill_null(0)
    at = int(gaps.arg_max())
    return {"first_ns": first, "last_ns": last, "duration_s": (last - first) / 1e9,
            "time_ordered": ordered, "longest_gap_s": int(gaps[at]) / 1e9, "gap_after_packets": at}


def _tcp(flow_table):
    import polars as pl

    tcp = flow_table.filter(pl.col("proto") == 6)
    return {"connections": tcp.height,
            "syn": int(tcp.select((pl.col("handshake") != "none").sum()).item()),
            "complete_handshakes": int(tcp.select((pl.col("handshake") == "complete").sum()).item())}

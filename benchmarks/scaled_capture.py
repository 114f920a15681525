"""Make an N-times longer capture from a real one: time-shifted, address-shifted copies.

Copy k of the capture's records starts one span (plus a second) after copy k-1 ends, and the
third octet of every IPv4 address is raised by k, so each copy's connections are new connections
(never more concurrent flows than in the original) and the flow count grows N-fold. Used by the
bounded-memory benchmark (issue 17) and its tests; Ethernet/IPv4 microsecond pcaps only.

    python benchmarks/scaled_capture.py SRC.pcap[.gz] DEST.pcap --copies 16
"""
import argparse
import gzip
from pathlib import Path

import numpy as np

_HEADER = 24
_REC = 16
_ETH_IPV4 = 14


def _records(data):
    """Offsets of the pcap record headers in ``data`` (after the global header)."""
    offsets = []
    pos, n = _HEADER, len(data)
    view = memoryview(data)
    while pos + _REC <= n:
        offsets.append(pos)
        caplen = int.from_bytes(view[pos + 8:pos + 12], "little")
        pos += _REC + caplen
    return np.asarray(offsets, dtype=np.int64)


def read_capture(path):
    """The bytes of a little-endian microsecond Ethernet pcap (gzip allowed) and its record
    offsets."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    magic, linktype = int.from_bytes(raw[:4], "little"), int.from_bytes(raw[20:24], "little")
    if magic != 0xA1B2C3D4 or linktype != 1:
        raise ValueError(f"{path}: need a little-endian microsecond Ethernet pcap")
    return np.frombuffer(raw, dtype=np.uint8), _records(raw)


def write_scaled(src, dest, copies):
    """Write ``copies`` shifted copies of capture ``src`` to ``dest``; returns bytes written."""
    data, offsets = read_capture(src)
    secs = data[offsets[:, None] + np.arange(4)].copy().view("<u4").ravel()
    span = int(secs.max()) - int(secs.min()) + 1
    is_ipv4 = (data[offsets + _REC + 12] == 0x08) & (data[offsets + _REC + 13] == 0x00)
    # third octet of the IPv4 source and destination addresses
    octets = np.concatenate([offsets[is_ipv4] + _REC + _ETH_IPV4 + 12 + 2,
                             offsets[is_ipv4] + _REC + _ETH_IPV4 + 16 + 2])
    ts_bytes = offsets[:, None] + np.arange(4)
    written = 0
    with open(dest, "wb") as out:
        out.write(data[:_HEADER].tobytes())
        last = offsets[-1]
        end = last + _REC + int(data[last + 8:last + 12].copy().view("<u4")[0])
        for k in range(copies):
            copy = data.copy()
            copy[ts_bytes] = (secs + np.uint32(k * (span + 1))).view(np.uint8).reshape(-1, 4)
            copy[octets] = (data[octets].astype(np.int64) + k) % 256
            chunk = copy[_HEADER:end]
            out.write(chunk.tobytes())
            written += chunk.size
    return written + _HEADER


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src")
    parser.add_argument("dest")
    parser.add_argument("--copies", type=int, default=4)
    args = parser.parse_args(argv)
    size = write_scaled(args.src, args.dest, args.copies)
    print(f"{args.dest}: {size / 1e6:.0f} MB, {args.copies} copies")


if __name__ == "__main__":
    main()

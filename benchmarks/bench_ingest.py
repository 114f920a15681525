"""Ingest throughput: the Cython decoder vs a plain dpkt per-packet loop, the dpkt reference decoder,
and simply reading the file's bytes into memory.

Input: the larger of the dev10m testbed captures (``../shared/datasets/testbed/dev10m``), decompressed
once to a temporary file so gzip does not dominate any of the timings.  Fast decoder and plain read:
best of 3 on the whole capture (page cache warm for both).  dpkt loop and dpkt reference: one run
each, on the whole capture, or with ``quick=True`` on its first 100k packets (their packets/s do
not depend on the file size; the fast decoder's packets/s is always from the whole capture).
The first row is the whole process ``traceflow ingest CAPTURE -o packets.parquet`` (start-up,
decode, and the Parquet write on its own thread), best of 3, with the file's size; target >= 20x
the dpkt loop.
"""
import gzip
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import best_of, timed

SHARED = Path(os.environ.get("TRACEFLOW_SHARED", Path(__file__).resolve().parents[2] / "shared"))
RUN = SHARED / "datasets" / "testbed" / "dev10m"
QUICK_PACKETS = 100_000


def _capture():
    candidates = [RUN / "server_side.pcap.gz", RUN / "client_side.pcap.gz"]
    candidates = [p for p in candidates if p.exists()]
    if not candidates:
        return None

    def size(p):  # decompressed size from the gzip trailer (exact below 4 GiB)
        with open(p, "rb") as f:
            f.seek(-4, os.SEEK_END)
            return struct.unpack("<I", f.read(4))[0]

    return max(candidates, key=size)


def _decompress(src, dst, max_packets=None):
    with gzip.open(src, "rb") as fin, open(dst, "wb") as fout:
        if max_packets is None:
            shutil.copyfileobj(fin, fout, 1 << 20)
            return
        head = fin.read(24)
        fout.write(head)
        e = "<" if head[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        for _ in range(max_packets):
            rec = fin.read(16)
            if len(rec) < 16:
                break
            fout.write(rec + fin.read(struct.unpack(e + "I", rec[8:12])[0]))


def _plain_read(path):
    with open(path, "rb") as f:
        return len(f.read())


def dpkt_loop(path):
    """The straightforward dpkt way: Reader + Ethernet/IP/TCP objects, appending the same fields."""
    import dpkt

    cols = {k: [] for k in ("ts", "caplen", "wirelen", "vlan", "ip_version", "src", "dst", "ip_len",
                            "ttl", "proto", "frag_offset", "more_frags", "sport", "dport", "tcp_flags",
                            "seq", "ack", "window", "payload_len", "opts")}
    with open(path, "rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            eth = dpkt.ethernet.Ethernet(buf)
            cols["ts"].append(int(ts * 1e9))
            cols["caplen"].append(len(buf))
            cols["wirelen"].append(len(buf))
            cols["vlan"].append(getattr(eth, "vlanid", None))
            ip = eth.data
            if isinstance(ip, (dpkt.ip.IP, dpkt.ip6.IP6)):
                v4 = isinstance(ip, dpkt.ip.IP)
                cols["ip_version"].append(4 if v4 else 6)
                cols["src"].append(ip.src)
                cols["dst"].append(ip.dst)
                cols["ip_len"].append(ip.len if v4 else ip.plen + 40)
                cols["ttl"].append(ip.ttl if v4 else ip.hlim)
                cols["proto"].append(ip.p)
                cols["frag_offset"].append(ip.offset * 8 if v4 else 0)
                cols["more_frags"].append(bool(ip.mf) if v4 else False)
                seg = ip.data
                if isinstance(seg, (dpkt.tcp.TCP, dpkt.udp.UDP)):
                    cols["sport"].append(seg.sport)
                    cols["dport"].append(seg.dport)
                if isinstance(seg, dpkt.tcp.TCP):
                    cols["tcp_flags"].append(seg.flags)
                    cols["seq"].append(seg.seq)
                    cols["ack"].append(seg.ack)
                    cols["window"].append(seg.win)
                    cols["payload_len"].append(len(seg.data))
                    cols["opts"].append(dpkt.tcp.parse_opts(seg.opts))
    return len(cols["ts"])


def run(quick=False):
    from traceflow.pcap.reader import read_packets

    src = _capture()
    if src is None:
        return []
    tmp = Path(tempfile.mkdtemp(prefix="bench_ingest."))
    try:
        path = tmp / "capture.pcap"
        _decompress(src, path)
        t_read, nbytes = best_of(lambda: _plain_read(path))
        t_fast, table = best_of(lambda: read_packets(path))
        out = tmp / "packets.parquet"
        t_ingest, _ = best_of(lambda: subprocess.run(
            [sys.executable, "-P", "-m", "traceflow.cli.main", "ingest", str(path), "-o", str(out)],
            check=True, stdout=subprocess.DEVNULL))
        parquet_mb = out.stat().st_size / 1e6
        n = table.num_rows
        slow_path = path
        if quick:
            slow_path = tmp / "prefix.pcap"
            _decompress(src, slow_path, QUICK_PACKETS)
        n_loop, t_loop = timed(dpkt_loop, slow_path)
        ref, t_ref = timed(read_packets, slow_path, decoder="dpkt")
        n_ref = ref.num_rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert n_loop == n_ref == (min(n, QUICK_PACKETS) if quick else n), (n, n_loop, n_ref)
    label = f"{src.parent.name}/{src.name} ({n} packets, {nbytes / 1e6:.1f} MB decompressed)"
    fast_pps, loop_pps, ref_pps = n / t_fast, n_loop / t_loop, n_ref / t_ref
    ingest_pps = n / t_ingest
    return [
        {"benchmark": f"ingest -> Parquet (whole process) vs plain dpkt loop, {label}",
         "ours": ingest_pps, "reference": loop_pps, "unit": "packets/s",
         "ratio": ingest_pps / loop_pps, "target": ">= 20x", "ok": ingest_pps / loop_pps >= 20,
         "note": f"{t_ingest:.2f} s, Parquet file {parquet_mb:.1f} MB"},
        {"benchmark": f"ingest: fast decoder vs plain dpkt loop, {label}", "ours": fast_pps,
         "reference": loop_pps, "unit": "packets/s", "ratio": fast_pps / loop_pps,
         "target": ">= 20x", "ok": fast_pps / loop_pps >= 20},
        {"benchmark": f"ingest: fast decoder vs reading the bytes, {label}", "ours": t_fast,
         "reference": t_read, "unit": "s", "ratio": t_fast / t_read,
         "target": "<= 3x", "ok": t_fast / t_read <= 3},
        {"benchmark": f"ingest: fast decoder vs dpkt reference decoder, {label}", "ours": fast_pps,
         "reference": ref_pps, "unit": "packets/s", "ratio": fast_pps / ref_pps,
         "target": "> 1x", "ok": fast_pps / ref_pps > 1},
    ]


if __name__ == "__main__":
    import json

    for row in run(quick="--quick" in sys.argv):
        print(json.dumps(row))

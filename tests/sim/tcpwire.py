"""Single-flow Linux-TCP scenarios with deterministic losses, and the TCP segments of their
captures (read with dpkt), shared by the mechanism tests of tests/sim/test_tcp_*.py.

The flow runs l0 -> r0 over a dumbbell whose access links are fast and short; the bottleneck
g1 -> g2 sets the rate and (with the access links) the RTT. ``drop`` lists the 1-based arrival
indices of data packets the bottleneck drops (``drop_rev``: of every packet on the way back).
The capture is taken on l0's access link, so it shows what the sender sends and when the ACKs
reach it.
"""
import dpkt

import traceflow.sim as sim

ACCESS_DELAY = 1e-6


def one_flow(pcap_dir, *, size, rtt=0.1, rate=100e6, mss=1000, drop=(), drop_rev=(),
             count="data", duration=30.0, limit=1000, tcp=None, sim_extra=None):
    """Run one transfer of ``size`` bytes; returns (Result, segments of the capture).
    ``count = "all"``: ``drop`` counts every forward packet (the SYN is the first)."""
    sc = {"simulation": {"duration": duration, "seed": 1, "mss": mss, **(sim_extra or {})},
          "topology": {"kind": "dumbbell", "left": 1, "right": 1,
                       "bottleneck": {"rate": rate, "delay": rtt / 2 - 2 * ACCESS_DELAY,
                                      "queue": {"kind": "droplist", "drop": list(drop),
                                                "count": count, "limit": limit},
                                      "queue_reverse": {"kind": "droplist", "count": "all",
                                                        "drop": list(drop_rev), "limit": limit}},
                       "access": {"rate": 10e9, "delay": ACCESS_DELAY},
                       "links": {"l0-g1": {"pcap": True}}},
          "tcp": {"profile": "linux", "cc": "reno", **(tcp or {})},
          "traffic": [{"kind": "files", "src": "l0", "dst": "r0", "first_idle": False,
                       "idle": 1e6, "size": {"dist": "fixed", "mean": size}}]}
    result = sim.run(sc, pcap_dir=pcap_dir)
    return result, segments(f"{pcap_dir}/l0-g1.pcap")


def segments(path):
    """The TCP segments of a capture: dicts with t (s), fwd (from the data sender), flags,
    seq / ack relative to each side's ISN, len (payload), ip_len, sacks [(left, right)]
    relative to the data sender's ISN, tsval, tsecr."""
    out, isn = [], {}
    with open(path, "rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            tcp = ip.data
            fwd = ip.src == bytes([10, 0, 0, 1])          # l0, node 0
            if tcp.flags & dpkt.tcp.TH_SYN:
                isn[fwd] = tcp.seq
            opts = dict((k, v) for k, v in dpkt.tcp.parse_opts(tcp.opts) if k != 1)
            sacks = []
            raw = opts.get(dpkt.tcp.TCP_OPT_SACK, b"")
            for i in range(0, len(raw), 8):
                left = int.from_bytes(raw[i:i + 4], "big") - isn[True]
                right = int.from_bytes(raw[i + 4:i + 8], "big") - isn[True]
                sacks.append((left, right))
            tsopt = opts.get(dpkt.tcp.TCP_OPT_TIMESTAMP, b"\0" * 8)
            out.append({"t": float(ts), "fwd": fwd, "flags": tcp.flags,
                        "seq": tcp.seq - isn[fwd],
                        "ack": tcp.ack - isn[not fwd] if tcp.flags & dpkt.tcp.TH_ACK else 0,
                        "len": ip.len - 4 * ip.hl - 4 * tcp.off, "ip_len": ip.len,
                        "sacks": sacks, "tsval": int.from_bytes(tsopt[:4], "big"),
                        "tsecr": int.from_bytes(tsopt[4:], "big")})
    return out


def data(segs):
    return [s for s in segs if s["fwd"] and s["len"] > 0]


def acks(segs):
    return [s for s in segs if not s["fwd"] and not s["flags"] & dpkt.tcp.TH_SYN]

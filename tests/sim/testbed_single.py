"""Single-flow oracle: one client of ../shared/tools/testbed.py (real Linux TCP) downloading
fixed-size files through the HTB bottleneck, against the simulator's linux profile.

``python tests/sim/testbed_single.py RUN_DIR OUT.json`` derives the per-transfer summary of a
testbed run (``testbed.py RUN_DIR --clients 1 --k SIZE --cap SIZE ...``): the timeline facts the
comparison needs, small enough to commit. ``simulate(summary)`` replays the same transfers
(trace mode, request mode) on the testbed's topology and derives the same summary from the
simulated capture, so both go through :func:`summarize_segments`.

Per transfer: start (s, relative to the first SYN), request and response bytes, completion
(SYN to the arrival of the last response byte at the client side), retransmitted data segments,
retransmissions after a silence of at least 200 ms (RTOs; Linux's minimum RTO), and the
response bytes the server sent in each 50 ms bin (the window's growth and its cuts).
"""
import json
import sys
from pathlib import Path

import dpkt
import numpy as np

BIN = 0.05          # s, bins of sent bytes
RTO_GAP = 0.2       # s: a retransmission after this much sender silence is a timeout
SERVER_PORT_REAL = 9000


def _segments(path):
    """(t, src_port, dst_port, flags, seq, payload) of each TCP segment of a capture."""
    out = []
    opener = open
    if str(path).endswith(".gz"):
        import gzip
        opener = gzip.open
    with opener(path, "rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            eth = dpkt.ethernet.Ethernet(buf)
            ip = eth.data
            if not isinstance(ip, dpkt.ip.IP) or not isinstance(ip.data, dpkt.tcp.TCP):
                continue
            tcp = ip.data
            plen = ip.len - 4 * ip.hl - 4 * tcp.off
            out.append((float(ts), tcp.sport, tcp.dport, tcp.flags, tcp.seq, plen))
    return out


def summarize_segments(server_side, client_side, server_port):
    """Per connection (client port): the summary rows, in order of the first SYN; and the
    applications' think times (medians, s): the client's from its handshake ACK to its
    request, the server's from the request to its first response byte."""
    conns, current, client_isn = {}, {}, {}
    for t, sp, dp, fl, seq, plen in server_side:
        port = dp if sp == server_port else sp
        if sp != server_port and fl & dpkt.tcp.TH_SYN and client_isn.get(port) != seq:
            # a new connection (a client port may be used again)
            client_isn[port] = seq
            current[port] = (port, t)
        if port not in current:
            continue
        c = conns.setdefault(current[port], {"syn": None, "isn": None, "req": 0, "data": [],
                                             "hs_ack": None, "req_t": None})
        if sp != server_port:
            if fl & dpkt.tcp.TH_SYN and c["syn"] is None:
                c["syn"] = t
            elif plen == 0 and c["hs_ack"] is None and c["syn"] is not None:
                c["hs_ack"] = t
            elif plen > 0 and c["req_t"] is None:
                c["req_t"] = t
            c["req"] += plen
        else:
            if fl & dpkt.tcp.TH_SYN:
                c["isn"] = seq
            elif plen > 0:
                c["data"].append((t, (seq - c["isn"] - 1) & 0xffffffff, plen))
    # the last response byte at the client side: the last data segment before the next SYN
    arrive, syns = {}, {}
    for t, sp, dp, fl, seq, plen in client_side:
        if sp != server_port and fl & dpkt.tcp.TH_SYN:
            syns.setdefault(sp, []).append(t)
        if sp == server_port and plen > 0:
            start = max([s for s in syns.get(dp, []) if s <= t], default=None)
            arrive[(dp, start)] = t
    t0 = min(c["syn"] for c in conns.values() if c["syn"] is not None)
    rows = []
    for key, c in sorted(conns.items(), key=lambda kv: kv[1]["syn"] or 1e18):
        done = [v for (port, s), v in arrive.items() if port == key[0] and s is not None
                and abs(s - c["syn"]) < 0.1]
        if c["syn"] is None or not c["data"] or not done:
            continue
        top, last_t, retx, rto = 0, None, 0, 0
        times = np.array([d[0] for d in c["data"]])
        for t, off, plen in c["data"]:
            if off < top:
                retx += 1
                if last_t is not None and t - last_t >= RTO_GAP:
                    rto += 1
            top = max(top, off + plen)
            last_t = t
        rel = times - c["syn"]
        nbins = int(np.ceil((rel.max() + 1e-9) / BIN))
        sent = np.bincount((rel // BIN).astype(int), weights=[d[2] for d in c["data"]],
                           minlength=nbins)
        rows.append({"start": round(c["syn"] - t0, 6), "request": c["req"], "size": top,
                     "completion": round(done[0] - c["syn"], 6), "retransmits": retx,
                     "rtos": rto, "sent_per_bin": [int(x) for x in sent],
                     "request_delay": c["req_t"] - c["hs_ack"],
                     "response_delay": c["data"][0][0] - c["req_t"]})
    delays = {k: round(float(np.median([r.pop(k) for r in rows])), 6)
              for k in ("request_delay", "response_delay")}
    return rows, delays


def derive(run_dir):
    run = Path(run_dir)
    params = json.loads((run / "params.json").read_text())
    ss = next(run.glob("server_side.pcap*"))
    cs = next(run.glob("client_side.pcap*"))
    rows, delays = summarize_segments(_segments(ss), _segments(cs), SERVER_PORT_REAL)
    return {"params": {k: params[k] for k in ("cc", "rate", "buffer", "mtu", "k", "idle",
                                              "duration", "seed")},
            "delays": delays, "transfers": rows}


def simulate(summary, pcap_dir, seed=1):
    """The summary's transfers replayed by the simulator's linux profile on the testbed's
    topology: server l0 -> g1 -> (HTB: rate, 1600-byte burst, 14 bytes of Ethernet counted;
    byte-limited DropTail) -> g2 -> client r0, reverse path unshaped, veth-like access links.
    ``seed`` sets where each host's jiffies begin (its timers' phase)."""
    import polars as pl

    import traceflow.sim as sim

    p = summary["params"]
    rate = float(str(p["rate"]).replace("kbit", "")) * 1e3
    rows = summary["transfers"]
    table = pl.DataFrame({"start": [int(r["start"] * 1e9) for r in rows],
                          "size": [r["size"] for r in rows],
                          "request": [r["request"] for r in rows]})
    sc = {"simulation": {"duration": rows[-1]["start"] + 30.0, "seed": seed, "mss": p["mtu"] - 52},
          "topology": {"kind": "dumbbell", "left": 1, "right": 1,
                       "bottleneck": {"rate": rate, "delay": 5e-6, "rate_rev": "line",
                                      "burst": 1600, "overhead": 14,
                                      "queue": {"kind": "droptail", "limit": 0,
                                                "limit_bytes": p["buffer"]}},
                       "access": {"rate": 10e9, "delay": 5e-6},
                       "links": {"l0-g1": {"pcap": True}, "r0-g2": {"pcap": True}}},
          "tcp": {"profile": "linux", "cc": p["cc"], **summary["delays"]},
          "traffic": [{"kind": "trace", "src": "l0", "dst": "r0"}]}
    result = sim.run(sc, flows=table.to_arrow(), pcap_dir=pcap_dir)
    rows, _ = summarize_segments(_segments(Path(pcap_dir) / "l0-g1.pcap"),
                                 _segments(Path(pcap_dir) / "r0-g2.pcap"), 5001)
    return result, rows


if __name__ == "__main__":
    out = derive(sys.argv[1])
    Path(sys.argv[2]).write_text(json.dumps(out, indent=0) + "\n")
    print(f"{len(out['transfers'])} transfers -> {sys.argv[2]}")

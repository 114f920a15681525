"""The delay relay: propagation delay without netem, one process per direction in the router.

The router does not forward in the kernel. Per direction, a process reads every IPv4 frame arriving
on one router interface and sends it out of the other ``rtt/2`` after it arrived (``rtt`` of the
client the frame belongs to), with the MAC addresses of the next hop; the loop itself is C
(:mod:`traceflow.testbed._relay`). Frames sent out of r1 still pass r1's HTB/FIFO bottleneck.

Down (server → clients): in r0, out r1, keyed by the IPv4 destination; up (clients → server): in
r1, out r0, keyed by the IPv4 source. Each process runs SCHED_FIFO when allowed, and stops when its
stdin reaches EOF (the orchestrator closes it, or dies), printing its counters as JSON on stdout.

    python -m traceflow.testbed.relay '{"direction": "down", ...}'
"""
import json
import socket
import sys

IP_SRC, IP_DST = 14 + 12, 14 + 16      # offsets of the IPv4 addresses in an Ethernet frame
SPIN_NS = 100_000                       # spin the last 100 µs before a due time
PRIORITY = 50                           # SCHED_FIFO priority (above every normal task)
LATENESS_BIN_S = 10e-6                  # width of a lateness histogram bin (_relay.pyx)


def spec(direction, macs, rtts, server, clients, mtu):
    """The JSON-able arguments of one direction.

    ``macs``: {"s0", "r0", "r1", "c0"} → MAC string; ``rtts``: RTT (s) per class;
    ``clients``: the class addresses; ``server``: the server's address.
    """
    one_way = [[addr, int(round(rtt * 1e9 / 2))] for addr, rtt in zip(clients, rtts)]
    if direction == "down":
        return dict(direction="down", in_dev="r0", out_dev="r1", dst_mac=macs["c0"],
                    src_mac=macs["r1"], key_offset=IP_DST, peer_offset=IP_SRC, peer=server,
                    delays=one_way, mtu=mtu)
    return dict(direction="up", in_dev="r1", out_dev="r0", dst_mac=macs["s0"], src_mac=macs["r0"],
                key_offset=IP_SRC, peer_offset=IP_DST, peer=server, delays=one_way, mtu=mtu)


def lateness_quantiles(hist, qs=(0.5, 0.99, 0.999, 1.0)):
    """Quantiles ``qs`` (s, as upper bin edges) of one of the relay's 10 µs delay histograms
    (the last bin is open: its lower edge + 10 µs is reported)."""
    total = sum(hist)
    out, acc, i = {}, 0, 0
    for q in qs:
        while i < len(hist) and acc + hist[i] < q * total:
            acc += hist[i]
            i += 1
        out[f"p{q * 100:g}"] = (i + 1) * LATENESS_BIN_S if total else None
    return out


def main(argv=None):
    from traceflow.testbed import _relay

    s = json.loads((argv or sys.argv[1:])[0])
    sched = _relay.realtime_priority(PRIORITY)
    mac = bytes.fromhex(s["dst_mac"].replace(":", "") + s["src_mac"].replace(":", ""))
    delays = [(socket.inet_aton(addr), ns) for addr, ns in s["delays"]]
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    stats = _relay.run(s["in_dev"], s["out_dev"], mac, s["key_offset"], s["peer_offset"],
                       socket.inet_aton(s["peer"]), delays, s["mtu"], SPIN_NS, sys.stdin.fileno())
    stats.update(direction=s["direction"], sched=sched,
                 lateness_s=lateness_quantiles(stats.pop("lateness_hist")),
                 rx_delay_s=lateness_quantiles(stats.pop("rx_delay_hist")))
    sys.stdout.write(json.dumps(stats) + "\n")


if __name__ == "__main__":
    main()

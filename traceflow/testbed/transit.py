"""The router's ground truth from its two captures: each packet's transit time and the drops.

Every TCP packet crosses the router once: down (server → clients) it is captured arriving on r0
(server_side.pcap), then held by the relay, queued at the bottleneck and captured leaving r1
(client_side.pcap); up it is captured arriving on r1 and leaving r0. A packet is identified on
both sides by its addresses, ports, sequence and acknowledgement numbers, flags, payload length
and TCP timestamp value (a retransmission carries a new timestamp); the k-th copy of an identical
key on one side pairs with the k-th on the other. A down packet with no copy on the far side was
dropped by the bottleneck queue.

``transit`` (s) = far-side timestamp − near-side timestamp; ``queueing`` (s) = transit − the
configured one-way delay rtt/2 of the packet's client (the relay's own error included).
"""
import socket

import polars as pl

from traceflow.pcap.reader import read_packets
from traceflow.testbed.params import SERVER_PORT, client_address

KEY = ("src", "dst", "sport", "dport", "seq", "ack", "tcp_flags", "payload_len", "tsval")


def _tcp(path):
    cols = ["ts", *KEY, "proto"]
    return (pl.from_arrow(read_packets(path).select(cols))
            .filter(pl.col("proto") == 6).drop("proto")
            .with_columns(copy=pl.int_range(pl.len()).over(KEY)))


def _mapped(address):
    """The packets table's 16-byte form of an IPv4 address (IPv4-mapped IPv6)."""
    return b"\0" * 10 + b"\xff\xff" + socket.inet_aton(address)


def router_transit(server_side, client_side, rtts):
    """One row per TCP packet that entered the router: direction ("down"/"up"), the key columns,
    client (the client's address), client_port, rtt_class and rtt (configured RTT of the client,
    s), t_in, t_out (ns timestamps; t_out null when dropped), transit and queueing (s; null when
    dropped).

    ``server_side``/``client_side``: the run's capture paths; ``rtts``: the run's configured RTT
    per class (params.json ``rtt``), class c being the clients at :func:`client_address` (c).
    """
    server, client = _tcp(server_side), _tcp(client_side)
    on = [*KEY, "copy"]
    parts = []
    # down packets come from the server's port and go to the client; up packets the reverse
    for direction, near, far, server_end, client_end in (("down", server, client, "s", "d"),
                                                         ("up", client, server, "d", "s")):
        going = pl.col(f"{server_end}port") == SERVER_PORT
        parts.append(
            near.filter(going).rename({"ts": "t_in"})
            .join(far.filter(going).rename({"ts": "t_out"}), on=on, how="left", nulls_equal=True)
            .with_columns(direction=pl.lit(direction),
                          client=pl.col("dst" if client_end == "d" else "src"),
                          client_port=pl.col(f"{client_end}port")))
    classes = pl.DataFrame({"client": [_mapped(client_address(c)) for c in range(len(rtts))],
                            "rtt_class": list(range(len(rtts))), "rtt": [float(r) for r in rtts]},
                           schema={"client": pl.Binary, "rtt_class": pl.Int32, "rtt": pl.Float64})
    return (pl.concat(parts).drop("copy")
            .with_columns(pl.col("client").cast(pl.Binary))
            .join(classes, on="client", how="left")
            .with_columns(transit=(pl.col("t_out") - pl.col("t_in")).dt.total_nanoseconds() / 1e9)
            .with_columns(queueing=pl.col("transit") - pl.col("rtt") / 2)
            .sort("t_in"))

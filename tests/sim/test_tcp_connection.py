"""Request mode's connection life and the HTB-like shaper against a real Linux connection: the
first transfer of ../shared/datasets/testbed/alpha1.35 (1913 bytes after a 5-byte request, no
other traffic yet), captured on both sides of the router.

The simulated transfer runs on the testbed's topology (server l0 -> router -> client r0;
1.5 Mbit/s HTB with a 1600-byte burst counting 14 Ethernet bytes per packet, unshaped reverse
path) with the applications' think times measured on that connection.
"""
import gzip

import dpkt
import polars as pl
import pytest

import traceflow.sim as sim
from tcpwire import segments

from conftest import shared_path

SERVER_PORT = 9000


def _real(name, limit_s=0.01):
    """(t, from_server, flags, payload, ip_len) of the capture's first connection."""
    out, t0, port = [], None, None
    with gzip.open(shared_path("testbed", "alpha1.35", f"{name}.pcap.gz"), "rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            t0 = ts if t0 is None else t0
            if ts - t0 > limit_s:
                break
            ip = dpkt.ethernet.Ethernet(buf).data
            tcp = ip.data
            client = tcp.dport if tcp.sport == SERVER_PORT else tcp.sport
            port = client if port is None else port
            if client == port:
                out.append((float(ts - t0), tcp.sport == SERVER_PORT, tcp.flags,
                            ip.len - 4 * ip.hl - 4 * tcp.off, ip.len))
    return out


def _simulated(tmp_path, request_delay, response_delay, close_delay):
    sc = {"simulation": {"duration": 2.0, "seed": 1, "mss": 988},
          "topology": {"kind": "dumbbell",
                       "bottleneck": {"rate": 1.5e6, "delay": 5e-6, "rate_rev": "line",
                                      "burst": 1600, "overhead": 14,
                                      "queue": {"kind": "droptail", "limit": 0,
                                                "limit_bytes": 6000}},
                       "access": {"rate": 10e9, "delay": 5e-6},
                       "links": {"l0-g1": {"pcap": True}, "r0-g2": {"pcap": True}}},
          "tcp": {"profile": "linux", "cc": "reno", "request_delay": request_delay,
                  "response_delay": response_delay, "close_delay": close_delay},
          "traffic": [{"kind": "trace", "src": "l0", "dst": "r0"}]}
    flows = pl.DataFrame({"start": [0], "size": [1913], "request": [5]})
    sim.run(sc, flows=flows.to_arrow(), pcap_dir=tmp_path)
    server = [(s["t"], s["fwd"], s["flags"], s["len"], s["ip_len"])
              for s in segments(tmp_path / "l0-g1.pcap")]
    client = [(s["t"], s["fwd"], s["flags"], s["len"], s["ip_len"])
              for s in segments(tmp_path / "r0-g2.pcap")]
    return server, client


@pytest.fixture(scope="module")
def real():
    return _real("server_side"), _real("client_side")


def _think_times(server_side):
    """The applications' delays on the real connection (server side of the router)."""
    hs_ack = next(p[0] for p in server_side if not p[1] and p[2] == dpkt.tcp.TH_ACK)
    request = next(p[0] for p in server_side if not p[1] and p[3] > 0)
    first_data = next(p[0] for p in server_side if p[1] and p[3] > 0)
    last_data = [p[0] for p in server_side if p[1] and p[3] > 0][-1]
    fin = next(p[0] for p in server_side if p[1] and p[2] & dpkt.tcp.TH_FIN)
    return request - hs_ack, first_data - request, fin - last_data


def test_connection_life_matches_linux_packet_for_packet(tmp_path, real):
    server_side, _ = real
    sim_server, _ = _simulated(tmp_path, *_think_times(server_side))
    # client SYN, SYN-ACK, ACK, request (PSH), the server's ACK of it, the response (PSH on
    # its last segment), the client's quick ACKs, the server's FIN on its own, the client's
    # FIN carrying its ACK of the server's FIN, the last ACK: flags, payloads and IP lengths
    # of each side's segments in order (the two sides interleave by microseconds of host time)
    for side in (True, False):
        assert ([p[2:] for p in sim_server if p[1] == side]
                == [p[2:] for p in server_side if p[1] == side])


def test_shaper_burst_and_token_wait_match_htb(tmp_path, real):
    server_side, client_side = real
    sim_server, sim_client = _simulated(tmp_path, *_think_times(server_side))

    def fin_wait(server, client):
        t_in = next(p[0] for p in server if p[1] and p[2] & dpkt.tcp.TH_FIN)
        t_out = next(p[0] for p in client if p[1] and p[2] & dpkt.tcp.TH_FIN)
        return t_out - t_in

    def data_gap(client):
        times = [p[0] for p in client if p[1] and p[3] > 0]
        return times[1] - times[0]

    # the two response segments pass back to back (1600-byte burst); the FIN then waits in the
    # queue until the bucket, emptied below zero, refills (2.1 ms at 1.5 Mbit/s)
    assert data_gap(sim_client) < 5e-5 and data_gap(client_side) < 5e-5
    assert fin_wait(sim_server, sim_client) == pytest.approx(fin_wait(server_side, client_side),
                                                             abs=1e-4)

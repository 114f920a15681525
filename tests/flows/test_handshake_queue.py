"""The packet-pair test of a SYN/ACK's queueing at a capture behind the bottleneck."""
import polars as pl
import pytest

from traceflow.flows.handshake_queue import synack_queued

MS = 1_000_000
SERVER, OTHER = b"\x0a\x00\x00\x01", b"\x0a\x00\x00\x02"


def _packets(rows):
    return pl.DataFrame(rows, schema={"ts": pl.Int64, "src": pl.Binary, "ip_len": pl.Int32,
                                      "tcp_flags": pl.Int32}, orient="row")


def test_back_to_back_behind_either_frame_is_queued_a_later_one_is_not():
    # 1 Mbit/s: a 1000-byte frame takes 8 ms, a 60-byte SYN/ACK 0.48 ms
    pk = _packets([
        (0, SERVER, 1000, 0x10),
        (8 * MS, SERVER, 60, 0x12),          # 8 ms behind the 1000-byte frame: its debt (HTB)
        (20 * MS, SERVER, 1000, 0x10),
        (20 * MS + 480_000, SERVER, 60, 0x12),   # its own time behind (a serializing link)
        (30 * MS, OTHER, 60, 0x02),          # the other direction does not count
        (50 * MS, SERVER, 60, 0x12),         # 29.5 ms after the last downstream frame: idle
    ])
    fl = pl.DataFrame({"start": [0, 10 * MS, 45 * MS, 60 * MS],
                       "rtt_syn": [0.008, 0.010480, 0.005, 0.001]})
    got = synack_queued(pk, fl, 1e6)["synack_queued"].to_list()
    assert got == [True, True, False, None]         # the last flow's SYN/ACK is not captured
    assert synack_queued(pk, fl, None)["synack_queued"].null_count() == 4


def test_path_rtt_keeps_jittered_handshakes_that_met_an_idle_link():
    """A handshake 0.5 ms above the pair's minimum is host/relay jitter when its SYN/ACK met an
    idle bottleneck: it keeps its own RTT; a queued one takes the nearest unqueued one."""
    from traceflow.models.fit import path_rtt

    ms = 1e-3
    syn = [10 * ms, 10.5 * ms, 40 * ms, 10.4 * ms]
    fl = pl.DataFrame({
        "start": pl.Series([10, 20, 30, 45]).cast(pl.Datetime("ns")),
        "client_addr": ["c"] * 4, "server_addr": ["s"] * 4, "rtt_syn": syn,
        "rtt_ack": [0.05 * ms, 0.06 * ms, 0.05 * ms, 0.05 * ms],
        "rtt_handshake": [s + 0.05 * ms for s in syn],
        "synack_queued": [False, False, True, False]})
    got = path_rtt(fl)["path_rtt"].to_list()
    assert got == pytest.approx([10.05 * ms, 10.55 * ms, 10.55 * ms, 10.45 * ms])
    # without the test, only the clean leg's 0.01 ms jitter counts: 10.5 ms looks queued
    assert path_rtt(fl.drop("synack_queued"))["path_rtt"].to_list() == pytest.approx(
        [10.05 * ms, 10.05 * ms, 10.05 * ms, 10.05 * ms])

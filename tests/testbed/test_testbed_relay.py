"""Accuracy of the delay relay on an idle testbed: handshake RTTs equal the configured RTTs.

Oracle: the kernel's capture timestamps (tcpdump on both router interfaces, nanosecond
resolution), independent of the relay's own clock reads. Requirement (issue 16): idle handshake
RTTs within 0.5 ms of the configured RTT. Tiny files at 10 Mbit/s keep the bottleneck queue
empty, so a handshake RTT is propagation only.

On a virtual machine the hypervisor sometimes stops a virtual CPU for milliseconds (steal time);
then no process, real-time or not, runs. Here a bare SCHED_FIFO timer loop saw 57 wake-ups late by
more than 0.5 ms in 20 s (max 6.9 ms) while 70 ms of CPU were stolen. So the tests allow 1 % of
samples (at least one) past the tolerance and require the median error to be half of it.
"""
import polars as pl
import pytest
from testbed_checks import SIDES, cli_json, ground_truth, require_testbed

from traceflow.testbed import Params, run_testbed
from traceflow.testbed.transit import router_transit

RTTS = (0.010, 0.060, 0.180)
TOLERANCE_S = 0.5e-3


def assert_within_tolerance(error):
    """``error``: absolute errors (s). Median ≤ tolerance/2; beyond it at most 1 % (≥ 1)."""
    late = int((error >= TOLERANCE_S).sum())
    assert error.median() < TOLERANCE_S / 2, error.describe()
    assert late <= max(1, 0.01 * error.len()), (late, error.len(), error.max())


@pytest.fixture(scope="module")
def idle_run(tmp_path_factory):
    require_testbed()
    out = tmp_path_factory.mktemp("relay") / "run"
    run_testbed(Params(clients=6, mean=200, idle=0.3, rate=10_000_000, buffer=50_000,
                       rtt=RTTS, duration=5.0, drain=5.0, seed=3), out)
    return out


@pytest.mark.parametrize("side", SIDES)
def test_idle_handshake_rtts_equal_configured_rtt(idle_run, side):
    out = idle_run.parent / f"{side}.flows.parquet"
    cli_json("flows", str(idle_run / f"{side}.pcap"), "-o", str(out))
    flows = pl.read_parquet(out)
    hs = ground_truth(idle_run).join(flows, left_on=["client_addr", "port"],
                                     right_on=["client_addr", "client_port"])
    assert hs.height >= 30 and hs["rtt_handshake"].null_count() == 0
    assert_within_tolerance((hs["rtt_handshake"] - hs["rtt"]).abs())
    assert sorted(hs["rtt"].unique()) == list(RTTS)


def test_every_packet_crosses_the_router_in_half_its_rtt(idle_run):
    # per packet and direction, not only per handshake: the reverse path is not shaped, so an up
    # packet's transit is the relay's one-way delay alone
    t = router_transit(idle_run / "server_side.pcap", idle_run / "client_side.pcap", RTTS)
    assert t["t_out"].null_count() == 0             # idle: nothing dropped, both captures whole
    up = t.filter(pl.col("direction") == "up")
    assert up.height > 100
    assert up["queueing"].min() >= 0                          # never early
    assert_within_tolerance(up["queueing"])

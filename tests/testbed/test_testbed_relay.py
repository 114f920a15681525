"""Accuracy of the delay relay on an idle testbed: handshake RTTs equal the configured RTTs.

Oracle: the kernel's capture timestamps (tcpdump on both router interfaces, nanosecond
resolution), independent of the relay's own clock reads. Requirement (issue 16): idle handshake
RTTs within 0.5 ms of the configured RTT. Tiny files at 10 Mbit/s keep the bottleneck queue
empty, so a handshake RTT is propagation only.

Why a few samples may miss: this machine's kernel is not preemptible ("Dynamic Preempt: none")
and runs under a hypervisor that steals CPU time, so even a SCHED_FIFO task waits while another
task is in the kernel or the virtual CPU is stopped. A bare SCHED_FIFO timer loop (200 µs sleeps)
saw 57 and 30 wake-ups late by more than 0.5 ms in two 20-s probes (max 6.9 and 16.9 ms) at load
8-11 from other jobs. So the tests allow 1 % of samples (at least 2) past the tolerance, and
require the median error to be half of it; and a run that misses is made once more. Two misses
in a row fail. The test runs alone (marked ``exclusive``: the other pytest-xdist worker's tests
once made 34 of 113 samples late, up to 4.6 ms, twice in a row in CI), and the testbed keeps the
idle CPUs from halting (traceflow/testbed/awake.py: idle, the median error was 0.26 ms).
"""
import json

import polars as pl
import pytest
from testbed_checks import (SIDES, assert_within_tolerance, cli_json, ground_truth,
                            require_testbed, run_alone)

from traceflow.testbed import Params
from traceflow.testbed.transit import router_transit

pytestmark = pytest.mark.exclusive

RTTS = (0.010, 0.060, 0.180)


def _idle_run(out):
    run_alone(Params(clients=6, mean=200, idle=0.3, rate=10_000_000, buffer=50_000,
                     rtt=RTTS, duration=8.0, drain=5.0, seed=3), out)
    return out


def _check(run):
    try:
        for side in SIDES:
            check_handshake_rtts(run, side)
        check_packet_transit(run)
    except AssertionError as exc:
        # what the run recorded of its own timing, to tell a late relay from a stolen CPU
        made = json.loads((run / "params.json").read_text())
        late = {d: (r["lateness_s"], r["rx_delay_s"]) for d, r in made["relay"].items()}
        raise AssertionError(f"{exc}; relay lateness, receive delay: {late}; "
                             f"steal {made['steal_seconds']:.2f} s") from exc


# one test, so that the run is made once (pytest-xdist makes a module fixture once per worker)
def test_idle_handshake_and_packet_delays_equal_configured(tmp_path):
    require_testbed()
    try:
        _check(_idle_run(tmp_path / "run"))
    except AssertionError:
        _check(_idle_run(tmp_path / "again"))


def check_handshake_rtts(run, side):
    out = run.parent / f"{side}.flows.parquet"
    cli_json("flows", str(run / f"{side}.pcap"), "-o", str(out))
    flows = pl.read_parquet(out)
    hs = ground_truth(run).join(flows, left_on=["client_addr", "port"],
                                right_on=["client_addr", "client_port"])
    assert hs.height >= 30 and hs["rtt_handshake"].null_count() == 0
    assert_within_tolerance((hs["rtt_handshake"] - hs["rtt"]).abs())
    assert sorted(hs["rtt"].unique()) == list(RTTS)


def check_packet_transit(run):
    # per packet and direction, not only per handshake: the reverse path is not shaped, so an up
    # packet's transit is the relay's one-way delay alone
    t = router_transit(run / "server_side.pcap", run / "client_side.pcap", RTTS)
    assert t["t_out"].null_count() == 0             # idle: nothing dropped, both captures whole
    up = t.filter(pl.col("direction") == "up")
    assert up.height > 100
    assert up["queueing"].min() >= 0                          # never early
    assert_within_tolerance(up["queueing"])

"""A 20-second testbed whose ground truth `traceflow flows` and `traceflow rtt` recover.

Issue 16: every completed transfer is found with its exact size, and `traceflow rtt --classes
auto` finds the three configured RTT classes, each median within 10 % of the configured RTT plus
the queueing its SYN/ACKs met (measured per packet between the two captures). The load is light
(about 1 % of the 100 Mbit/s bottleneck): under load a handshake that waited in the queue adds a
mode of its own to the RTT distribution (see test_testbed_reference.py).
"""
import polars as pl
import pytest
from testbed_checks import (SIDES, flows_of_transfers, require_testbed, rtt_classes_vs_truth,
                            run_alone)

from traceflow.testbed import Params

pytestmark = pytest.mark.exclusive


@pytest.fixture(scope="module")
def run20(tmp_path_factory):
    require_testbed()
    out = tmp_path_factory.mktemp("gt") / "run"
    run_alone(Params(clients=12, alpha=1.35, mean=4100, idle=0.5, rate=100_000_000,
                       buffer=100_000, rtt=(0.010, 0.060, 0.180), cc="reno", duration=20.0,
                       drain=10.0, seed=11), out)
    return out


# one test for both capture points, so that the run is made once (pytest-xdist would make a
# module fixture once per worker that runs one of its tests)
def test_ground_truth_recovered_at_both_capture_points(run20):
    for side in SIDES:
        check_transfers_found(run20, side)
        check_three_rtt_classes(run20, side)


def check_transfers_found(run, side):
    truth, matched = flows_of_transfers(run, side)
    assert truth.height >= 100
    assert matched.height == truth.height, side        # one flow per transfer, none missing
    assert matched["app_bytes_s2c"].null_count() == 0
    assert (matched["app_bytes_s2c"] == matched["size"]).all(), side
    # the request line "<size>\n" is the client's whole payload
    assert (matched["app_bytes_c2s"] == matched["size"].cast(pl.String).str.len_bytes() + 1).all()


def check_three_rtt_classes(run, side):
    expected, medians, counts = rtt_classes_vs_truth(run, side)
    found = [min(range(len(medians)), key=lambda k: abs(medians[k] - truth))
             for _, truth in expected]
    for (configured, truth), k in zip(expected, found):
        assert medians[k] == pytest.approx(truth, rel=0.10), (side, configured, truth, medians)
    # On a quiet machine these are the only classes. On this one (non-preemptible kernel, a
    # hypervisor that steals CPU) a few handshakes can be held milliseconds longer; a class of
    # their own may hold at most 3 % of the flows: two relay passes at 1 % stragglers each
    # (test_testbed_relay) plus a SYN/ACK that waited behind a burst.
    assert sum(counts) - sum(counts[k] for k in found) <= 0.03 * sum(counts), (medians, counts)

"""Host facts that are host facts (issues 43 and 46): on real captures whose traffic is interactive
or whose retransmissions are not timeouts, the end-host inference flags what no stack does
instead of handing it to the simulator. The oracles: the handshakes' own MSS option, RFC 6298 /
Linux's timer floors (200 ms minimum RTO, 1 s initial RTO), and the testbed's kernels (IW 10)."""
import pytest

from conftest import shared_path
from traceflow.experiments.testbed_replay import read_run
from traceflow.flows.hosts import infer_hosts
from traceflow.pcap.reader import read_packets
from traceflow.replay import host_settings


def _hosts(name):
    return infer_hosts(read_packets(shared_path("captures", name)))


def test_interactive_traffic_is_no_segment_size():
    """FTP control traffic (ppa_ftp-crack: 1309 logins, payloads of 20-60 bytes): the most common
    largest payload was 42 bytes, a 'segment size' that made every replayed segment tiny. No
    connection carries bulk data, so the segment is the handshakes' MSS (1460, no timestamps),
    flagged as a default."""
    h = _hosts("ppa_ftp-crack.pcap")
    assert h.mss == 1460 and h.segment_size == 1460
    assert h.quality["segment_size"].startswith("default: no bulk transfers")


def test_retransmissions_that_are_not_timeouts_are_no_rto():
    """ppa_ftp-crack's "timeouts" give a minimum RTO of -195 ms and its duplicate SYNs an initial
    RTO of 0 ms: no stack's timers. Both are flagged implausible and left out of the replay,
    which keeps its profile's timers."""
    h = _hosts("ppa_ftp-crack.pcap")
    assert h.min_rto_s is None and h.initial_rto_s is None
    assert h.quality["min_rto_s"].startswith("implausible")
    assert h.quality["initial_rto_s"].startswith("implausible")
    tcp = host_settings(h).get("tcp", {})
    assert "min_rto" not in tcp and "init_rto" not in tcp


def test_application_flights_are_no_window():
    """An SSH server's first flight is its banner (one partial segment): the window is not seen,
    and the modern stack (SACK, window scaling) gets Linux's 10 segments, flagged a default."""
    h = _hosts("slips_ssh-bruteforce.pcap")
    assert h.initial_window == 10
    assert h.quality["initial_window"].startswith("default: Linux's 10 segments")


@pytest.mark.parametrize("run", ["alpha1.35", "devcubic", "dev10m", "rtt3dev"])
def test_initial_window_from_the_receivers_side(run):
    """Behind the bottleneck (the client side) the timestamp echoes mark the first flights:
    the kernels' 10 segments, observed, as at the senders' side."""
    _, client, server = read_run(shared_path("testbed", run), span_s=60.0)
    for side in (client, server):
        h = infer_hosts(side)
        assert h.initial_window == 10 and h.initial_window_observable
        assert h.quality["initial_window"].startswith("ok")

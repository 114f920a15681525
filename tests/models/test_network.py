"""The network fit finds in one capture (:mod:`traceflow.models.network`) against the shared
testbed runs' ground truth (``params.json``: an HTB shaper at ``rate`` counting Ethernet frames,
IP + 14 bytes, with a 1600-byte burst, into a bfifo of ``buffer`` bytes; the reverse path
unshaped), from the capture downstream of the queue (``client_side``) and upstream of it
(``server_side``). Fitted on the first 120 s of each run."""
import json

import pytest

from conftest import shared_path
from traceflow.experiments.testbed_replay import read_run
from traceflow.models.fit import fit
from traceflow.values import parse_rate

RUNS = ["alpha1.35", "devcubic", "dev10m", "rtt3dev", "devcubic24k"]
#: HTB counts the 14-byte Ethernet header; the testbed's full data packets are 1040 IP bytes
ETHERNET = 14
FULL_PACKET = 1040
HTB_BURST = 1600


@pytest.fixture(scope="module", params=RUNS)
def fitted(request):
    run = shared_path("testbed", request.param)
    params, client, server = read_run(run, span_s=120.0)
    return params, fit(client), fit(server)


def test_rate_is_the_shapers_ip_rate(fitted):
    params, down, _ = fitted
    ip_rate = parse_rate(params["rate"]) * FULL_PACKET / (FULL_PACKET + ETHERNET)
    net = down.network
    assert net.quality["rate"] == "ok"
    assert net.rate_bps == pytest.approx(ip_rate, rel=0.005)
    assert down.link.capacity_bps == net.rate_bps


def test_buffer_within_ten_percent(fitted):
    """The buffer from the handshakes' full-queue delay (bfifo counts IP bytes)."""
    params, down, _ = fitted
    net = down.network
    assert net.quality["buffer"] == "ok"          # every run lost packets
    assert net.buffer_bytes == pytest.approx(params["buffer"], rel=0.10)


def test_burst_is_htbs(fitted):
    """HTB's 1600 frame bytes let one full packet through at line rate and the next after
    (2 * 1054 - 1600) / 1054 = 0.48 service times: 1579 IP bytes of the simulator's bucket."""
    _, down, _ = fitted
    expected = HTB_BURST * FULL_PACKET / (FULL_PACKET + ETHERNET)
    assert down.network.burst_bytes == pytest.approx(expected, rel=0.06)


def test_side_and_reverse(fitted):
    _, down, up = fitted
    assert down.network.side == "downstream"
    assert up.network.side == "upstream"
    assert down.network.reverse_rate_bps is None
    assert down.network.quality["reverse"].startswith("default")


def test_upstream_rate_is_flagged(fitted):
    """Upstream of the queue the gaps are the sender's (a 1 Gbit/s veth): no spacing shows the
    bottleneck, the rate is the peak throughput, flagged, and no burst is claimed."""
    params, _, up = fitted
    net = up.network
    assert net.quality["rate"] != "ok"
    assert net.burst_bytes == 0


def test_model_round_trips_with_network(fitted, tmp_path):
    from traceflow.models.model import Model

    _, down, _ = fitted
    path = tmp_path / "m.json"
    down.save(path)
    again = Model.load(path)
    assert again.network == down.network
    assert json.loads(path.read_text())["network"]["evidence"]["buffer"]

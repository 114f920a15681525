"""Closed-loop client sessions (:mod:`traceflow.models.sessions`) against the real-Linux testbed,
whose clients are known closed loops (``../shared/datasets/testbed/README.md``: "Clients run K
concurrent loops: sleep an exponential idle time, open a TCP connection, request a file ...,
read it to EOF, close"; ``params.json``: K = ``clients``, mean idle ``idle``), and on synthetic
processes with a known law."""
import json

import numpy as np
import polars as pl
import pytest

from conftest import shared_path
from traceflow.models.sessions import (exchanges_per_connection, fit_closed_loop, fit_sessions,
                                       open_counts)

SLICE_NS = 120 * 10**9


@pytest.fixture(scope="module", params=["alpha1.35", "devcubic", "dev10m"])
def testbed_slice(request):
    from traceflow.flows import flows
    from traceflow.pcap.reader import read_packets

    run = request.param
    packets = pl.from_arrow(read_packets(shared_path("testbed", run, "client_side.pcap.gz")))
    t0 = int(packets["ts"].cast(pl.Int64).min())
    packets = packets.filter(pl.col("ts").cast(pl.Int64) < t0 + SLICE_NS)
    params = json.loads(shared_path("testbed", run, "params.json").read_text())
    return run, params, fit_sessions(flows(packets), t0, t0 + SLICE_NS,
                                      exchanges_per_connection(packets))


def test_testbed_clients_are_closed_loops(testbed_slice):
    """From the first 120 s of the client-side capture alone: the closed loop beats open
    arrivals, the rate at which idle clients start transfers (K / θ) is the testbed's
    clients / idle within 10 %, and every transfer has its own connection. K and θ one by one
    are less sharply determined (the open count stays far below K, so the likelihood trades K
    against θ along K / θ): within 40 % of the truth."""
    run, params, s = testbed_slice
    assert s is not None, f"{run}: closed loop not detected"
    truth = params["clients"] / params["idle"]
    assert abs(s.sessions / s.think_mean_s - truth) / truth < 0.10, (run, s)
    assert abs(s.sessions - params["clients"]) / params["clients"] < 0.40, (run, s)
    assert abs(s.think_mean_s - params["idle"]) / params["idle"] < 0.45, (run, s)
    assert s.hosts == 1 and s.max_open < s.sessions
    assert s.exchanges_per_connection == 1.0


def _machine_repairman(k, theta, mean_service, horizon, rng):
    """Starts and ends of ``k`` closed-loop sessions: exponential think (mean ``theta``) and
    service (mean ``mean_service``) times, each session starting with a think."""
    starts, ends = [], []
    for _ in range(k):
        t = rng.exponential(theta)
        while t < horizon:
            d = rng.exponential(mean_service)
            starts.append(t)
            ends.append(t + d)
            t += d + rng.exponential(theta)
    return np.array(starts), np.array(ends)


def test_mle_recovers_a_known_closed_loop():
    rng = np.random.default_rng(3)
    starts, ends = _machine_repairman(20, 2.0, 1.0, 4000.0, rng)
    k, theta, gain, most = fit_closed_loop(starts, ends, 0.0, 4000.0)
    assert abs(k - 20) <= 2 and abs(theta - 2.0) / 2.0 < 0.1
    assert 2 * gain > 100 and most < k


def test_open_arrivals_stay_open():
    """Poisson starts whose rate does not depend on how many are open: the likelihood-ratio
    test keeps the open process (no sessions)."""
    rng = np.random.default_rng(4)
    starts = np.cumsum(rng.exponential(0.1, 20000))
    starts = starts[starts < 1500.0]
    ends = starts + rng.exponential(0.3, starts.size)
    fitted = fit_closed_loop(starts, ends, 0.0, 1500.0)
    assert 2 * fitted[2] < 10.83
    flows = pl.DataFrame({"proto": [6] * starts.size, "handshake": ["complete"] * starts.size,
                          "start": (starts * 1e9).astype(np.int64),
                          "end": (ends * 1e9).astype(np.int64),
                          "client_addr": ["10.0.0.1"] * starts.size})
    assert fit_sessions(flows, 0, int(1500e9), 1.0) is None


def test_open_counts():
    # [0, 2), [1, 3), [3, 4): N before the starts 0, 1, 0 (an end at 3 precedes the start at 3)
    busy, area = open_counts([0.0, 1.0, 3.0], [2.0, 3.0, 4.0], 0.0, 5.0)
    assert busy.tolist() == [0, 1, 0] and area == pytest.approx(5.0)


def test_exchanges_per_connection():
    """Two connections: one request/response, and one that carries a second request after the
    first response (a reused connection) — 1.5 exchanges per connection."""
    a, b, c = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]), bytes([10, 0, 0, 3])
    rows = [  # (ts, src, dst, sport, dport, flags, payload)
        (0, a, b, 40000, 80, 0x02, 0), (1, b, a, 80, 40000, 0x12, 0), (2, a, b, 40000, 80, 0x18, 100),
        (3, b, a, 80, 40000, 0x18, 1000), (4, b, a, 80, 40000, 0x18, 1000),
        (5, c, b, 40001, 80, 0x02, 0), (6, c, b, 40001, 80, 0x18, 100), (7, b, c, 80, 40001, 0x18, 500),
        (8, c, b, 40001, 80, 0x18, 100), (9, b, c, 80, 40001, 0x18, 500)]
    df = pl.DataFrame(rows, schema=["ts", "src", "dst", "sport", "dport", "tcp_flags",
                                    "payload_len"], orient="row").with_columns(proto=pl.lit(6))
    assert exchanges_per_connection(df) == 1.5

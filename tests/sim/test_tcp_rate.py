"""TCP Rate (Park & Tuan 2000, sec. 3.6.3 and Table I) against the paper's own text:
../shared/papers/park-tuan-2000-multiple-time-scale-tcp.txt:173 (Table I, TCP Rate row) and :196
("In the control law, ΔRTT is the difference between two consecutive RTT values, τ is the packet
spacing of the corresponding ACK packets, and 0 < a < b").
"""
import numpy as np
import pytest

import traceflow.sim as sim
from traceflow.errors import ScenarioError

from sampled import run_sampled

RATE, DELAY, ACCESS_RATE, ACCESS_DELAY = 10e6, 0.020, 100e6, 0.005   # bit/s, s
MSS, HDR, LIMIT = 1000, 40, 200                                      # bytes, bytes, packets


def _scenario(**rate):
    """One Rate flow alone: slow start to 60 segments (below the 73-packet pipe), then congestion
    avoidance into a 200-packet buffer it does not fill in 4 s (no loss)."""
    return {"simulation": {"duration": 4.0, "seed": 1, "mss": MSS, "tcp_header": HDR},
            "topology": {"kind": "dumbbell", "left": 1, "right": 1,
                         "bottleneck": {"rate": RATE, "delay": DELAY,
                                        "queue": {"kind": "droptail", "limit": LIMIT}},
                         "access": {"rate": ACCESS_RATE, "delay": ACCESS_DELAY}},
            "tcp": {"cc": "rate", "rate": rate, "init_cwnd": 1, "init_ssthresh": 60,
                    "handshake": False, "delayed_ack": False},
            "traffic": [{"kind": "infinite", "src": "l0", "dst": "r0"}]}


def _steps(raw):
    """Every change of cwnd in congestion avoidance (sampled every 20 us, closer than two ACKs):
    (cwnd before, change), and the sender's loss count."""
    _, _, sampler = run_sampled(raw, 20_000)
    _, cwnd, ssthresh, _ = np.array(sampler.trace()).T
    step = np.diff(cwnd)
    ca = (cwnd[:-1] >= ssthresh[:-1]) & (step != 0)
    return cwnd[:-1][ca], step[ca], sampler.n_loss + sampler.n_timeout


@pytest.mark.parametrize("equal", ["increase", "decrease"])
def test_rate_control_law_is_table_one(equal):
    """Table I: ΔRTT < 0: cwnd += a / cwnd; ΔRTT ≥ 0: cwnd -= (a / RTT) b τ. With τ given (2 ms),
    every decrease names the RTT sample it used, RTT = a b τ / decrease, which must lie between
    the path's propagation RTT (60 ms) and that plus the queue the window can build (one 0.832-ms
    transmission per segment beyond the pipe). ``equal`` is what equal consecutive samples do:
    Table I's ΔRTT ≥ 0 ("decrease") or Reno's increase."""
    a, b, tau = 1.0, 2.0, 0.002
    cwnd, step, losses = _steps(_scenario(a=a, b=b, tau=tau, equal=equal))
    assert losses == 0
    up, down = step > 0, step < 0
    assert up.sum() > 100 and down.sum() > 50
    np.testing.assert_allclose(step[up], a / cwnd[up], rtol=1e-9)
    rtt = a * b * tau / -step[down]
    spacing = (MSS + HDR) * 8 / RATE
    prop = 2 * (2 * ACCESS_DELAY + DELAY)
    assert rtt.min() >= prop
    assert rtt.max() <= prop + 2 * spacing + cwnd.max() * spacing
    if equal == "decrease":
        # equal samples (no queue yet) shrink the window: it never fills the 73-packet pipe
        assert cwnd.max() < prop * RATE / ((MSS + HDR) * 8)


@pytest.mark.parametrize("a, b", [(2.0, 2.0), (3.0, 2.0)])
def test_rate_needs_a_below_b(a, b):
    """PT:196: "0 < a < b"."""
    with pytest.raises(ScenarioError, match="must be > a"):
        sim.load_scenario(_scenario(a=a, b=b))

"""Simulator against analytic models: M/M/1/K loss, PFTK TCP throughput, RED drop fraction."""
import math

import numpy as np
import pyarrow.compute as pc
import pytest

import traceflow.sim as sim


def _two_hosts(bottleneck, access_rate=1e12):
    return {"kind": "dumbbell", "left": 1, "right": 1, "bottleneck": bottleneck,
            "access": {"rate": access_rate, "delay": 0.0,
                       "queue": {"kind": "droptail", "limit": 0}}}


@pytest.mark.parametrize("rho", [0.5, 0.9, 1.2])
def test_mm1k_loss_matches_analytic(rho):
    # Poisson arrivals, exponential packet sizes (so exponential service), K = 3 waiting places
    # plus the one in service: M/M/1/N with N = 4.
    K, C, size = 3, 10e6, 1000.0
    lam = rho * C / (size * 8)
    sc = {"simulation": {"duration": 6e5 / lam, "seed": 7, "queue_sample": 0},
          "topology": _two_hosts({"rate": C, "delay": 0.001,
                                  "queue": {"kind": "droptail", "limit": K}}),
          "traffic": [{"kind": "poisson", "transport": "udp", "src": "l0", "dst": "r0",
                       "rate": lam, "udp": {"size": "exponential", "mean_size": size}}]}
    res = sim.run(sc)
    n = K + 1
    analytic = (1 - rho) * rho ** n / (1 - rho ** (n + 1))
    assert res.summary["loss_rate"] == pytest.approx(analytic, rel=0.03)


def _pftk(p, rtt, t0, b=1):
    """Padhye–Firoiu–Towsley–Kurose send rate, packets per second."""
    return 1.0 / (rtt * math.sqrt(2 * b * p / 3)
                  + t0 * min(1.0, 3 * math.sqrt(3 * b * p / 8)) * p * (1 + 32 * p * p))


@pytest.mark.parametrize("p, duration", [(0.001, 1500.0), (0.005, 1000.0), (0.02, 1000.0)])
def test_reno_matches_pftk(p, duration):
    # one Reno flow, independent random loss p on the data direction, RTT 100 ms, no queueing;
    # min RTO 1 s so that T0 = 1 s (RTO = max(min_rto, srtt + 4 rttvar) with rttvar ~ 0).
    sc = {"simulation": {"duration": duration, "seed": 3, "queue_sample": 0},
          "topology": _two_hosts({"rate": 100e6, "delay": 0.05, "loss": p,
                                  "queue": {"kind": "droptail", "limit": 100000}}, 1e9),
          "tcp": {"cc": "reno", "min_rto": 1.0, "tick": 0.01, "handshake": False,
                  "rwnd": 100000},
          "traffic": [{"kind": "infinite", "src": "l0", "dst": "r0"}]}
    res = sim.run(sc)
    rate = res.summary["data_packets_sent"] / duration
    assert rate == pytest.approx(_pftk(p, 0.1, 1.0), rel=0.15)
    flow = res.flows.to_pylist()[0]
    assert flow["drop_pkts"] / flow["sent_pkts"] == pytest.approx(p, rel=0.2)


@pytest.mark.parametrize("load, max_p, gentle, mode", [
    (1.25, 0.2, False, "packets"), (1.5, 0.1, True, "packets"), (1.1, 0.1, False, "bytes")])
def test_red_drop_fraction_and_average_queue(load, max_p, gentle, mode):
    C, min_th, max_th = 10e6, 5.0, 15.0
    sc = {"simulation": {"duration": 60.0, "seed": 7, "queue_sample": 0.01},
          "topology": _two_hosts({"rate": C, "delay": 0.001, "queue": {
              "kind": "red", "limit": 200, "min_th": min_th, "max_th": max_th, "max_p": max_p,
              "gentle": gentle, "w_q": 0.002, "mode": mode}}),
          "traffic": [{"kind": "infinite", "transport": "udp", "src": "l0", "dst": "r0",
                       "udp": {"rate": load * C}}]}
    res = sim.run(sc)
    assert res.summary["loss_rate"] == pytest.approx(1 - 1 / load, abs=0.01)
    q = res.queue.filter(pc.equal(res.queue["link"], "g1->g2"))
    avg = q["avg"].to_numpy()
    avg = avg[len(avg) // 10:]            # after the EWMA has converged
    top = 2 * max_th if gentle else max_th
    assert min_th <= avg.mean() <= top
    assert np.quantile(avg, 0.01) >= min_th and np.quantile(avg, 0.99) <= top
    if not gentle:
        assert res.summary["link_utilization"] > 0.99

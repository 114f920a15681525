"""The burstiness paper's stochastic Reno model (traceflow.models.reno_cov)."""
import numpy as np
import pytest

from traceflow.models.reno_cov import RenoCovParams, cov_curve, poisson_cov, predicted_cov, simulate


def test_table1_constants():
    p = RenoCovParams()
    assert p.tau == pytest.approx(0.1)
    # 50 Mb/s of 1500-byte packets over 0.1 s is 416.7 packets, plus the 50-packet buffer
    assert p.gamma == pytest.approx(50e6 * 0.1 / 12000 + 50)
    assert poisson_cov(1, p) == pytest.approx(1 / np.sqrt(10))


def test_uncongested_model_is_poisson():
    # far below capacity the window never binds: Y_n = X_n, so c.o.v. = 1/sqrt(λτM)
    for m in (1, 5, 20):
        assert predicted_cov(m, replications=4) == pytest.approx(poisson_cov(m), rel=0.06)


def test_cov_decreases_with_clients_then_congestion_raises_it():
    r = cov_curve([1, 5, 10, 20, 30, 60, 100], replications=4)
    light = r["model_cov"][:5]
    assert np.all(np.diff(light) < 0)
    # heavy congestion: synchronised halving makes the aggregate far burstier than Poisson
    assert np.all(r["model_cov"][5:] > 3 * r["poisson_cov"][5:])


def test_throughput_never_exceeds_offered_and_conserves_packets():
    p = RenoCovParams(duration_s=50.0)
    y = simulate(60, p, replications=2, seed=3)
    # aggregate sent per step is bounded by the windows (≤ max_window each)
    assert y.max() <= 60 * p.max_window
    # over the run, sent ≤ generated; mean sent near capacity share when saturated
    assert y.mean() < 60 * p.rate_pps * p.tau


def test_seeded_determinism():
    a = simulate(30, replications=2, seed=7)
    b = simulate(30, replications=2, seed=7)
    np.testing.assert_array_equal(a, b)

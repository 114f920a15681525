"""Jain index, max-min shares and share errors (traceflow.stats.fairness)."""
import numpy as np
import pytest

from traceflow.errors import TraceflowError
from traceflow.stats.fairness import jain, maxmin_share, share_error, throughput_ratio


def test_jain_bounds_and_known_values():
    assert jain([5, 5, 5, 5]) == pytest.approx(1.0)
    assert jain([1, 0, 0, 0]) == pytest.approx(0.25)
    # (1+2+3)^2 / (3 * 14) = 36/42
    assert jain([1, 2, 3]) == pytest.approx(36 / 42)
    rng = np.random.default_rng(1)
    x = rng.pareto(1.5, 50)
    assert 1 / 50 <= jain(x) <= 1
    assert jain(3 * x) == pytest.approx(jain(x))      # scale invariant


def test_jain_rejects_bad_input():
    with pytest.raises(TraceflowError):
        jain([])
    with pytest.raises(TraceflowError):
        jain([1, -1])


def test_maxmin_redistributes_unused_share():
    share = maxmin_share([1, 2, 10, 10], 15)
    np.testing.assert_allclose(share, [1, 2, 6, 6])
    assert share.sum() == pytest.approx(15)
    # demands below capacity are met exactly
    np.testing.assert_allclose(maxmin_share([1, 2], 10), [1, 2])
    # equal greedy flows split evenly
    np.testing.assert_allclose(maxmin_share([100] * 4, 10), [2.5] * 4)


def test_ratio_and_share_error():
    assert throughput_ratio(2, 68) == pytest.approx(34)
    assert throughput_ratio(0, 1) == np.inf
    assert share_error([10, 20, 30], [1, 2, 3]) == pytest.approx(0)
    assert share_error([11, 20, 29], [1, 2, 3]) == pytest.approx(0.1, rel=1e-6)

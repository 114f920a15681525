"""APM / CAPM analytics (traceflow.models.capm) on synthetic rate series with known response."""
import numpy as np
import pytest

from traceflow.models.capm import (cross_correlation, dc_removed, eta, fair_drop_probabilities,
                            matched_filter, matched_filter_periods, response_coefficient,
                            signature, walsh_codes)
from traceflow.errors import TraceflowError

PAPER_C1 = [1, 0, 1, 0, 0, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 1]
PAPER_C2 = [0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1]


def test_paper_codes_are_dc_orthogonal_but_not_raw_orthogonal():
    assert cross_correlation(PAPER_C1, PAPER_C2) == pytest.approx(0.0)
    assert np.dot(PAPER_C1, PAPER_C2) > 0          # eq. (7) cannot hold for 0/1 codes
    assert dc_removed(PAPER_C1).sum() == pytest.approx(0.0)


def test_walsh_codes_are_orthogonal():
    codes = walsh_codes(5, 16)
    for i, a in enumerate(codes):
        for b in codes[i + 1:]:
            assert cross_correlation(a, b) == 0
    with pytest.raises(TraceflowError):
        walsh_codes(3, 12)


def test_signature_rectangular_chips():
    t = np.array([-0.1, 0.0, 1.9, 2.0, 31.99, 32.0])
    np.testing.assert_array_equal(signature(PAPER_C1, 2.0, t), [0, 1, 1, 0, 1, 0])


def _linear_response(t, codes_amps, chip_s, base=10000.0, k=50.0, lag=0.3):
    """Rate of a linear aggregate: λ(t) = base − (k / T_c)·Σ A_i s_i(t − lag)."""
    lam = np.full_like(t, base)
    for code, amp in codes_amps:
        lam -= k / chip_s * amp * signature(code, chip_s, t - lag)
    return lam


def test_matched_filter_recovers_k_and_ignores_other_router():
    chip, bin_s = 2.0, 0.01
    t = (np.arange(3400) + 0.5) * bin_s
    rng = np.random.default_rng(0)
    ks = []
    for amp2 in (0.0, 120.0):
        lam = _linear_response(t, [(PAPER_C1, 120.0), (PAPER_C2, amp2)], chip)
        lam += rng.normal(0, 200, t.size)
        ks.append(response_coefficient([matched_filter(lam, bin_s, PAPER_C1, chip, 0.0)], 120.0))
    # K = (k/T_c)·∫ s^a(t) s(t − lag) dt = 25 · (8 − 0.15 · 11): without lag ∫ s^a s = 0.25 · 32,
    # and each of the code's 10 chip changes plus its start loses 0.5 · 0.3 s of overlap
    assert ks[0] == pytest.approx(25 * (8 - 0.15 * 11), rel=0.02)
    # the other router barely leaks in: only its lagged chip edges (~3 %) break orthogonality
    assert ks[1] == pytest.approx(ks[0], rel=0.05)
    # linearity in A
    ys = [matched_filter(_linear_response(t, [(PAPER_C1, a)], chip), bin_s, PAPER_C1, chip, 0.0)
          for a in (40, 80, 160)]
    np.testing.assert_allclose(np.array(ys) / [40, 80, 160], ys[0] / 40, rtol=1e-9)


def test_matched_filter_is_exact_for_bins_straddling_chips():
    # bins of 0.3 s do not divide the 2 s chip; a rate equal to the signature gives ∫ s^a s dt
    bin_s, chip = 0.3, 2.0
    sig = np.repeat(dc_removed(PAPER_C1), 20)          # 0.1-s resolution
    fine = np.concatenate([sig, np.zeros(8)])
    coarse_t0 = 0.0
    y_fine = matched_filter(fine, 0.1, PAPER_C1, chip, 0.0)
    assert y_fine == pytest.approx(-0.25 * 32)
    # constant rate contributes nothing whatever the binning (eq. 12)
    assert matched_filter(np.full(120, 7.0), bin_s, PAPER_C1, chip, 1.0, t0_s=coarse_t0) == pytest.approx(0, abs=1e-9)
    with pytest.raises(TraceflowError):
        matched_filter(np.ones(10), 1.0, PAPER_C1, chip, 0.0)


def test_matched_filter_periods_counts_tests():
    lam = np.ones(1000)
    assert matched_filter_periods(lam, 0.1, PAPER_C1, 2.0, 0.0).size == 3   # 100 s / 32 s


def test_eta_apm():
    # rate 1000 pkt/s; after the drop it dips by 200 pkt/s for 0.5 s: η = 100 packets
    bin_s = 0.01
    lam = np.full(500, 1000.0)
    lam[200:250] -= 200
    assert eta(lam, bin_s, drop_s=2.0, recovery_s=1.0) == pytest.approx(100.0)


def test_fair_drop_probabilities_reproduce_paper():
    # the paper's demands (2×5234, 2×4547 pkt/s), K₁=77.3, K₂=588.1 and total p = 4 %
    p = fair_drop_probabilities([77.3, 588.1], [10468, 9094], 0.04)
    assert p[0] == pytest.approx(0.067, abs=0.0015)
    assert p[1] == pytest.approx(0.010, abs=0.0005)
    assert np.dot(p, [10468, 9094]) / 19562 == pytest.approx(0.04)
    # equal absolute decrease: K_i λ_i p_i equal
    assert 77.3 * 10468 * p[0] == pytest.approx(588.1 * 9094 * p[1])
    q = fair_drop_probabilities([77.3, 588.1], [10468, 9094], 0.04, mode="percentage")
    assert 77.3 * q[0] == pytest.approx(588.1 * q[1])
    with pytest.raises(TraceflowError):
        fair_drop_probabilities([1, 1000], [10, 1000], 0.9)

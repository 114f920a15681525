"""CUBIC (RFC 9438) and HyStart as Linux's tcp_cubic.c runs them.

One CUBIC flow (1000-byte segments) on an uncongested path (200 Mbit/s, large buffer) loses one
deterministic segment in slow start; afterwards nothing limits it but its window. Its cwnd is
sampled every 10 ms and compared with RFC 9438's curves, with W_max the window at the loss.
"""
import numpy as np
import pytest

from sampled import run_sampled

BETA, C = 0.7, 0.4        # RFC 9438 4.6 / 5.1


def _run(tmp_path, rtt, duration, drop=(), rate=200e6, limit=20_000, **cubic):
    sc = {"simulation": {"duration": duration, "seed": 1, "queue_sample": 0},
          "topology": {"kind": "dumbbell", "left": 1, "right": 1,
                       "bottleneck": {"rate": rate, "delay": rtt / 2 - 2e-6,
                                      "queue": {"kind": "droplist", "drop": list(drop),
                                                "limit": limit}},
                       "access": {"rate": 10e9, "delay": 1e-6}},
          "tcp": {"profile": "linux", "cc": "cubic", "cubic": cubic},
          "traffic": [{"kind": "infinite", "src": "l0", "dst": "r0"}]}
    _, snd, hook = run_sampled(sc, 10_000_000, tmp_path)
    return snd, np.array(hook.trace(), dtype=float)


def _epoch(tmp_path, rtt, duration):
    """W_max, RFC 9438's K, and the (t since the congestion-avoidance epoch began, cwnd)
    samples of that epoch, after one loss in slow start."""
    snd, trace = _run(tmp_path, rtt=rtt, duration=duration, drop=[200], hystart=False)
    w_max = snd.cc.last_max_cwnd
    t0 = snd.cc.epoch_start * snd.tick * 1e-9
    keep = trace[:, 0] * 1e-9 > t0
    return w_max, (w_max * (1 - BETA) / C) ** (1 / 3), trace[keep, 0] * 1e-9 - t0, trace[keep, 1]


def test_k_is_rfc9438s(tmp_path):
    snd, _ = _run(tmp_path, rtt=0.1, duration=3.0, drop=[200], hystart=False)
    w_max = snd.cc.last_max_cwnd
    assert 80 <= w_max <= 300
    # RFC 9438 4.2 eq. 2: K = cbrt(W_max (1 - beta) / C); Linux measures K in 1/1024 s from
    # W_max - cwnd at the start of the epoch (= W_max - ssthresh)
    k_rfc = (w_max * (1 - BETA) / C) ** (1 / 3)
    assert snd.cc.bic_k / 1024 == pytest.approx(k_rfc, rel=0.01)
    assert snd.cc.origin == w_max


def test_window_follows_the_cubic_curve(tmp_path):
    # 100 ms RTT: W_cubic grows slower than the Reno estimate only briefly, so the cubic
    # region governs. Linux aims at W_cubic one minimum RTT ahead (RFC 9438 4.2: the target
    # is W_cubic(t + RTT)) and reaches it as the RTT's ACKs arrive, so the window lies between
    # the curve now and the curve an RTT ahead, give or take the integer window's rounding and
    # the target's update at most once per jiffy (a segment each)
    rtt = 0.1
    w_max, k, t, cwnd = _epoch(tmp_path, rtt, 12.0)
    check = (t > 0.5) & (t < 1.8 * k)
    assert check.sum() > 300
    now = C * (t - k) ** 3 + w_max
    ahead = C * (t + rtt - k) ** 3 + w_max
    assert (cwnd[check] >= now[check] - 2).all() and (cwnd[check] <= ahead[check] + 1).all()
    # concave up to a plateau at W_max around t = K, then convex beyond it
    plateau = (t > k - 0.5) & (t < k + 0.5)
    assert np.abs(cwnd[plateau] - w_max).max() <= 1
    assert cwnd[t > k + 2].min() > w_max + 1


def test_reno_friendly_region_at_short_rtt(tmp_path):
    # 10 ms RTT: RFC 9438 4.3's W_est = W_max beta + 3 (1 - beta) / (1 + beta) t / RTT grows
    # faster than W_cubic(t), so CUBIC follows it
    rtt = 0.01
    w_max, k, t, cwnd = _epoch(tmp_path, rtt, 3.0)
    check = (t > 0.3) & (t < 1.5)
    w_est = w_max * BETA + 3 * (1 - BETA) / (1 + BETA) * t / rtt
    w_cubic = C * (t + rtt - k) ** 3 + w_max
    assert (w_est[check] > w_cubic[check] + 5).all()
    # Linux recomputes its target at most every HZ / 32 (7 jiffies, ~3 RTTs here) and then
    # closes the gap at one segment per cwnd ACKs, so the window trails W_est by a few segments
    lag = cwnd[check] - w_est[check]
    assert lag.max() <= 1 and lag.min() >= -4


def test_hystart_ack_train_leaves_slow_start_at_half_the_min_delay(tmp_path):
    # tcp_cubic.c hystart_update: an ACK train (ACKs <= 2 ms apart) lasting longer than
    # delay_min / 2 (+ half of the 1 ms TSO cushion) ends slow start, ssthresh = cwnd. At
    # 100 Mbit/s the ACKs of 1040-byte packets are 83.2 us apart; with delay_min ~ 200.1 ms the
    # train ends slow start after (200.1 + 1) / 2 ms / 83.2 us = 1209 ACKs of the round whose
    # flight was 1280 segments (10 * 2^7; the round of 640 lasts only 53 ms)
    snd, trace = _run(tmp_path, rtt=0.2, duration=3.0, rate=100e6, hystart=True)
    assert snd.cc.found
    spacing = 1040 * 8 / 100e6
    expected = 1280 + (snd.cc.delay_min * 1e-6 + 1e-3) / 2 / spacing
    assert snd.ssthresh == pytest.approx(expected, rel=0.01)

"""Discipline kernels of the simulator, driven directly (no event loop): lifetime/RTT
classification, the short/long split (fixed, DAS), FairShare's Appendix state machine and the
APM/CAPM/K-based droppers."""
import numpy as np
import pytest

from traceflow.stats.fairness import maxmin_share
from traceflow.sim import _sim

MS = 1_000_000          # ns


def test_lifetime_upgrade_exactly_at_threshold():
    c = _sim.FlowClassifier(50)
    classes = [c.count(7) for _ in range(120)]
    # packets 1..50 are short (class 0), packet 51 on long (class 1)
    assert classes[:50] == [0] * 50
    assert classes[50:] == [1] * 70
    assert c.packets_seen(7) == 120
    assert c.count(8) == 0                       # other flows start short
    # a new connection of the same sender is a new flow to the router
    assert c.count(7, 1) == 0 and c.packets_seen(7) == 1


def test_rtt_and_six_classes():
    six = _sim.FlowClassifier(3, [0.05, 0.2])
    assert six.n_classes == 6 and six.n_rtt == 3
    for flow, rtt in enumerate([0.01, 0.05, 0.1, 0.5]):
        six.set_rtt(flow, rtt)
    # boundaries are lower-inclusive for the next class
    assert [six.class_of(f) for f in range(4)] == [0, 1, 1, 2]
    for _ in range(3):
        six.count(3)
    assert six.count(3) == 3 + 2                  # long-lived, RTT class 2
    assert six.lifetime_of_class(5) == 1 and six.lifetime_of_class(2) == 0
    rtt_only = _sim.FlowClassifier(0, [0.05, 0.2])
    rtt_only.set_rtt(0, 0.5)
    assert rtt_only.n_classes == 3 and all(rtt_only.count(0) == 2 for _ in range(100))


def test_fixed_split_never_moves_and_das_tracks_demand():
    fixed = _sim.ShortLongSplit(0.6, False, capacity_bps=8e5)
    assert not any(fixed.feed(0, 1000, t * MS) for t in range(3000))
    assert fixed.short_share == 0.6
    das = _sim.ShortLongSplit(0.6, True, period_s=1.0, capacity_bps=8e5, alpha=1.0, headroom=1.0)
    # short classes offer 30 % of 100 kB/s for 5 s: the short share converges to 0.3
    for t in range(0, 5000, 10):
        das.feed(0, 300, t * MS)
        das.feed(1, 1000, t * MS)
    das.feed(1, 1000, 5000 * MS)
    assert das.updates == 5
    assert das.short_share == pytest.approx(0.3, rel=1e-9)
    # overload: the long classes keep at least 10 %
    for t in range(5000, 8000):
        das.feed(0, 1000, t * MS)
    das.feed(0, 1000, 8000 * MS)
    assert das.short_share == pytest.approx(0.9)


def _drive(fs, rates_Bps, rtts_s, seconds, pkt=1000):
    """Offer packets of several flows at fixed rates; per-flow drop counts."""
    events = []
    for f, (r, rtt) in enumerate(zip(rates_Bps, rtts_s)):
        gap = pkt / r
        events += [(int(k * gap * 1e9), f) for k in range(1, int(seconds / gap))]
    events.sort()
    drops = np.zeros(len(rates_Bps), int)
    for t, f in events:
        drops[f] += fs.offer(f, pkt, t)
    return drops


def test_fairshare_maxmin_and_scheduled_losses():
    cap_bps = 8e5                                   # C_L = 100 kB/s
    fs = _sim.FairShare(cap_bps, beta=0.2)
    rtts = [0.02, 0.05, 0.2]
    for f, rtt in enumerate(rtts):
        fs.init_long_flow(f, rtt, 1000, 0)
    # flow 0 offers 80 kB/s, flow 1 30 kB/s, flow 2 10 kB/s for 20 s
    drops = _drive(fs, [80e3, 30e3, 10e3], rtts, 20.0)
    demand = np.array([fs.state(f)[0] for f in range(3)])
    share = np.array([fs.state(f)[1] for f in range(3)])
    np.testing.assert_allclose(share, maxmin_share(demand, 100e3), rtol=1e-9)
    np.testing.assert_allclose(demand[1:], [30e3, 10e3], rtol=0.08)
    # the demand estimate counts accepted packets only: scheduled losses pull it below 80 kB/s,
    # but flow 0 still asks for more than its max-min share (100 - 30 - 10 kB/s)
    assert share[0] == pytest.approx(100e3 - demand[1] - demand[2])
    assert share[0] < demand[0] < 80e3
    # flow 0 exceeds 4/3 of its max-min share: one loss per RTT at most; the others none
    assert drops[1] == 0 and drops[2] == 0
    assert 0 < drops[0] <= 20.0 / 0.02 + 1
    assert fs.drops == drops.sum()


def test_fairshare_silent_flow_frees_its_share():
    fs = _sim.FairShare(8e5, beta=0.2)
    for f in range(2):
        fs.init_long_flow(f, 0.05, 1000, 0)
    _drive(fs, [60e3, 60e3], [0.05, 0.05], 5.0)
    assert fs.state(0)[1] == pytest.approx(50e3, rel=0.02)
    # flow 1 stops: after a few seconds flow 0's share covers its demand again
    t0 = int(5e9)
    for k in range(1, 2000):
        fs.offer(0, 1000, t0 + k * int(1000 / 60e3 * 1e9))
    d1, s1, _ = fs.state(1)
    assert d1 < 1e3
    assert fs.state(0)[1] == pytest.approx(fs.state(0)[0], rel=1e-9)


def test_capm_signature_drop_rate_and_apm():
    code = [1, 0, 1, 1, 0, 0, 1, 0]
    p = _sim.Perturber(signatures=[dict(code=code, chip_s=1.0, amplitude=50.0)])
    # 1000 packets/s for two code periods: 50 drops/s during 1-chips, none during 0-chips
    drops = np.array([p.offer(0, t * MS) for t in range(1, 16001)]).reshape(16, 1000).sum(1)
    expect = 50 * np.array(code * 2)
    assert np.abs(drops - expect).max() <= 1
    assert p.drop_counts()["signature"] == [drops.sum()]
    apm = _sim.Perturber(apm=[(2.0, 7, 1)])
    got = [apm.offer(t % 2, t * MS) for t in range(1, 4001)]
    assert sum(got) == 7
    assert all(t % 2 for t, d in zip(range(1, 4001), got) if d)        # only aggregate 1
    assert min(t for t, d in zip(range(1, 4001), got) if d) >= 2000


def test_two_routers_pace_independently():
    c1 = [1, 0, 1, 0, 0, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 1]
    c2 = [0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1]
    p = _sim.Perturber(signatures=[dict(code=c1, chip_s=0.5, amplitude=40.0),
                                   dict(code=c2, chip_s=0.5, amplitude=80.0)])
    for t in range(1, 8001):
        p.offer(0, t * MS)
    # 8 s of signature: 8 one-chips x 0.5 s each
    assert p.drop_counts()["signature"] == pytest.approx([40 * 4, 80 * 4], abs=2)


def test_k_based_random_drops_match_probabilities():
    state = np.random.SeedSequence(3).generate_state(4, np.uint64)
    p = _sim.Perturber(drop_probability=[0.067, 0.010], rng_state=state)
    n = 100_000
    for t in range(n):
        p.offer(t % 2, t * MS)
    a, b = p.drop_counts()["aggregate"]
    assert a / (n / 2) == pytest.approx(0.067, abs=0.004)
    assert b / (n / 2) == pytest.approx(0.010, abs=0.0015)


def test_perturber_counts_each_aggregates_arrivals():
    # the matched filter of eq. (13) needs the tested aggregate's own rate: 1000 pkt/s of
    # aggregate 0 and 250 pkt/s of aggregate 1 for 2 s, counted in 0.1 s bins
    p = _sim.Perturber([], [], (), 2.0, None, 2, 0.1)
    for t in range(1, 2001):
        p.offer(0, t * MS)
        if t % 4 == 0:
            p.offer(1, t * MS)
    counts = p.arrival_counts()[:, :20]
    assert counts[0, 1:].tolist() == [100] * 19 and counts[0, 0] == 99
    assert counts[1].tolist() == [24] + [25] * 19

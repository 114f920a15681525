"""The SSC module's arithmetic (sim/ssc.pxi SSCCore), outside any simulation."""
import numpy as np
import pytest

from traceflow.stats.levels import condprob_table, conditional_mean, level_map

SSCCore = pytest.importorskip("traceflow.sim._sim").SSCCore


def _fixed(**kw):
    # Fixed normalization [0, 8) with h = 8: a block of x bits has contention level 8 - floor(x).
    return SSCCore(h=8, norm="fixed", lo=0.0, hi=8.0, **kw)


def test_online_condprob_equals_offline_table():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 8, size=3000) * 0.3 + np.repeat(rng.uniform(0, 5.6, size=300), 10)
    core = _fixed()
    for v in x:
        core.block(v, v)
    levels, _ = level_map(x, 8, method="linear", lo=0, hi=8, reverse=True)
    assert np.array_equal(levels, 8 - np.floor(x).astype(int))
    offline = condprob_table(levels, 8)
    np.testing.assert_array_equal(core.table, offline)
    assert core.table[:, 8].sum() == x.size - 1
    # L2hat = E[L2 | L1] of the current level, from the same table
    assert core.L1 == levels[-1]
    assert core.L2hat == pytest.approx(conditional_mean(offline)[levels[-1] - 1])


def test_condprob_by_hand_and_persistence_for_unseen_level():
    core = _fixed()
    for lvl in [1, 2, 2, 3, 1]:
        core.block(8 - lvl + 0.5, 0.0)
    t = core.table
    assert t[0, 1] == 1 and t[1, 1] == 1 and t[1, 2] == 1 and t[2, 0] == 1
    assert t[:, 8].tolist() == [1, 2, 1, 0, 0, 0, 0, 0] and t.sum() == 8
    assert core.predict(2) == pytest.approx(2.5)
    assert core.predict(1) == pytest.approx(2.0)
    assert core.predict(6) == 6.0  # never observed: predict persistence


def test_online_quantile_map_equals_the_offline_map_at_every_block():
    # heavy-tailed, tied (empty blocks) and correlated: the cases where the map's details matter
    rng = np.random.default_rng(3)
    x = np.repeat(rng.pareto(1.2, 150), 4) * 1e6 * rng.uniform(0.5, 1.5, 600)
    x[rng.random(600) < 0.1] = 0.0
    core, online = SSCCore(h=8), []
    for i, v in enumerate(x):
        core.block(v, v)
        levels, edges = level_map(x[:i + 1], 8, method="quantile", reverse=True)
        assert core.L1 == levels[-1], i
        online.append(core.L1)
    np.testing.assert_allclose(core.edges, edges, rtol=1e-12)
    # the table counts each block at the level it had when it was observed
    np.testing.assert_array_equal(core.table, condprob_table(online, 8))
    # equiprobable levels; empty blocks are the most contended level
    assert np.bincount(levels, minlength=9)[1:].min() >= 0.8 * x.size / 8
    assert set(levels[x == 0]) == {8}


def test_fixed_edges_map():
    core = SSCCore(h=4, norm="fixed", edges=[1.0, 2.0, 3.0])
    assert [core.level(v) for v in (0.0, 1.0, 1.5, 2.5, 3.0, 9.0)] == [4, 4, 3, 2, 2, 1]
    with pytest.raises(ValueError, match="3 ascending"):
        SSCCore(h=4, norm="fixed", edges=[1.0, 3.0, 2.0])


def test_running_normalization_and_reversed_meaning():
    core = SSCCore(h=8, norm="running")
    assert core.level(5e6) == 4  # one observation: no range yet, middle level
    assert core.level(1e6) == 8  # lowest throughput so far: most contended
    assert core.level(9e6) == 1  # highest throughput so far: least contended
    assert (core.lo, core.hi) == (1e6, 9e6)
    assert core.level(5e6) == 4


@pytest.mark.parametrize("A", [1.0, 2.0, 6.0, 10.0])
def test_inverse_linear_schedule_end_points_and_monotone(A):
    core = SSCCore(h=8, a=1.0, A=A)
    assert core.schedule(1.0) == pytest.approx(A)
    assert core.schedule(8.0) == pytest.approx(1.0)
    grid = np.linspace(1, 8, 141)
    eps = np.array([core.schedule(g) for g in grid])
    assert np.all(np.diff(eps) <= 1e-12) and eps.min() >= 1.0 - 1e-12


def test_threshold_and_nonlinear_schedules():
    th = SSCCore(h=8, a=1.0, A=4.0, schedule="threshold", theta=3)
    assert [th.schedule(v) for v in (1, 2.5, 3, 3.01, 8)] == [4.0, 4.0, 4.0, 1.0, 1.0]
    nl = SSCCore(h=8, schedule="nonlinear")
    eps = [nl.schedule(v) for v in np.linspace(1, 8, 50)]
    assert eps[0] == pytest.approx(8.0) and eps[-1] == pytest.approx(1.0)
    assert np.all(np.diff(eps) < 0)
    with pytest.raises(ValueError):
        SSCCore(schedule="cubic")
    with pytest.raises(ValueError):
        SSCCore(a=2.0, A=1.0)


def _drive(core, gamma_of_a, n, seed=1):
    rng = np.random.default_rng(seed)
    trace = []
    for _ in range(n):
        x = rng.uniform(0, 8)  # the level sequence does not matter for this curve
        core.block(x, gamma_of_a(core.A))  # throughput of the block under the A in effect
        trace.append(core.A)
    return np.array(trace)


def test_metacontrol_climbs_a_unimodal_curve_and_stays_above_a():
    core = _fixed(meta=True, nu=0.05)
    assert core.A == 1.0  # A(0) = a
    trace = _drive(core, lambda A: 10.0 - (A - 6.0) ** 2, 3000)
    assert trace.min() >= 1.0
    tail = trace[-1000:]
    assert abs(tail.mean() - 6.0) < 0.5 and tail.min() > 5.0 and tail.max() < 7.0


def test_metacontrol_with_noisy_throughput_still_moves_toward_the_peak():
    rng = np.random.default_rng(7)
    core = _fixed(meta=True, nu=0.05)
    trace = _drive(core, lambda A: 10.0 - 0.5 * (A - 4.0) ** 2 + rng.normal(0, 0.3), 4000)
    assert trace.min() >= 1.0 and abs(trace[-2000:].mean() - 4.0) < 1.0


def test_metacontrol_floor_when_aggressiveness_only_hurts():
    core = _fixed(meta=True, nu=0.25)
    trace = _drive(core, lambda A: 10.0 - A, 500)
    assert trace.min() >= 1.0 and trace[-100:].mean() < 1.6


def test_warmup_disabled_mode_learns_but_keeps_default_slope():
    core = _fixed(A=5.0, enabled=False)
    for v in (7.5, 7.5, 0.5):
        assert core.block(v, 0.0) == 1.0
    assert core.table.sum() == 4  # two transitions, each counted in the cell and in h_l
    core.enabled = True
    assert core.block(7.5, 0.0) == pytest.approx(core.schedule(core.L2hat)) and core.xi > 1.0


def test_a_priori_table_without_learning():
    prior = condprob_table(np.array([1, 1, 1, 8, 8, 8, 1]), 8)
    core = _fixed(A=5.0, table=prior, learn=False)
    core.block(7.5, 0.0)  # level 1
    core.block(0.5, 0.0)  # level 8
    np.testing.assert_array_equal(core.table, prior)
    assert core.L2hat == pytest.approx(conditional_mean(prior)[7])


def test_slow_start_coupling_remembers_cwnd_per_level():
    core = _fixed(A=3.0)
    core.block(7.5, 0.0)  # L1 = 1
    assert core.ssthresh_for(17.0) == 17.0  # nothing remembered yet
    core.on_timeout(42.0)
    core.block(7.5, 0.0)  # L1 = 1 again, L2hat = 1
    assert core.ssthresh_for(17.0) == 42.0
    core.block(0.5, 0.0)  # L1 = 8, L2hat = 8: no window remembered at level 8
    assert core.ssthresh_for(17.0) == 17.0

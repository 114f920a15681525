"""Router disciplines inside the simulator: DRR weights and work conservation, lifetime
upgrades on the wire, FairShare's RTT fairness, CAPM drops, the eight presets."""
import numpy as np
import pytest

from traceflow import sim
from traceflow.errors import ScenarioError
from traceflow.stats.fairness import jain, share_error
from traceflow.sim import _sim
from traceflow.sim.disciplines import PRESETS, preset_queue, rtt_bounds_from_spectrum
from traceflow.sim.runner import Built
from traceflow.sim.scenario import load_scenario


def _attached(queue, nflows):
    s = _sim.Simulator()
    for f in range(nflows):
        s.add_flow(f, 0.1)
    link = _sim.Link(0, "a->b", _sim.Node(0, "a"), _sim.Node(1, "b"), 1e6, 0, queue)
    link.attach(s)
    return s, link


def _serve(queue, subs, active, n=30000, sizes=(1500, 576, 1040), seed=0):
    """Keep the ``active`` classes backlogged, dequeue ``n`` packets; bytes served per class."""
    rng = np.random.default_rng(seed)
    got = np.zeros(len(subs))
    for k in range(n):
        for c in active:
            while subs[c].len_pkts < 8:
                _sim.drive_enqueue(queue, c, int(rng.choice(sizes)), k, cls=c)
        flow, size = _sim.drive_dequeue(queue, k)
        got[flow] += size
    return got


def test_drr_backlogged_classes_get_weight_proportions():
    subs = [_sim.DropTail(50, 0) for _ in range(3)]
    q = _sim.ClassfulQueue(subs, weights=[1, 2, 5])
    _attached(q, 3)
    got = _serve(q, subs, [0, 1, 2])
    assert share_error(got, [1, 2, 5]) < 0.02
    assert q.class_bytes() == pytest.approx(list(got))


def test_drr_idle_class_share_is_redistributed():
    subs = [_sim.DropTail(50, 0) for _ in range(3)]
    q = _sim.ClassfulQueue(subs, weights=[1, 2, 5])
    _attached(q, 3)
    got = _serve(q, subs, [0, 1])            # class 2 idle: 0 and 1 split 1:2 of everything
    assert got[2] == 0
    assert share_error(got[:2], [1, 2]) < 0.02
    assert q.len_pkts == sum(s.len_pkts for s in subs)


def test_groups_split_between_backlogged_members():
    # SIX-like: group 0 (short, 60 %) has classes 0-2, group 1 (long, 40 %) has classes 3-5
    subs = [_sim.DropTail(50, 0) for _ in range(6)]
    split = _sim.ShortLongSplit(0.6, False)
    q = _sim.ClassfulQueue(subs, groups=[0, 0, 0, 1, 1, 1], split=split)
    _attached(q, 6)
    got = _serve(q, subs, [0, 1, 2, 4])
    np.testing.assert_allclose(got / got.sum(), [0.2, 0.2, 0.2, 0, 0.4, 0], atol=0.004)


def _udp_weights_scenario(weights, duration=10.0):
    return {"simulation": {"duration": duration, "mss": 1000, "queue_sample": 0},
            "topology": {"kind": "dumbbell", "left": len(weights), "right": len(weights),
                         "bottleneck": {"rate": 2e6, "delay": 0.005,
                                        "queue": {"kind": "classful", "classes": len(weights),
                                                  "weights": weights, "limit": 60}},
                         "access": {"rate": 10e6, "delay": 0.001}},
            "traffic": [{"kind": "infinite", "transport": "udp", "src": f"l{i}", "dst": f"r{i}",
                         "cls": i} for i in range(len(weights))]}


def test_classful_queue_in_a_scenario_is_weighted_and_work_conserving():
    res = sim.run(_udp_weights_scenario([1.0, 3.0]))
    got = res.flows.column("recv_bytes").to_numpy()
    assert share_error(got, [1, 3]) < 0.02
    assert res.summary["link_utilization"] > 0.99


def _long_flow_scenario(queue, n=6, duration=60.0):
    """``n`` greedy Reno flows with RTTs spread 10:1 (20 ms .. 200 ms) over 10 Mb/s."""
    rtts = np.geomspace(0.02, 0.2, n)
    links = {f"l{i}-g1": {"delay": r / 2 - 0.003} for i, r in enumerate(rtts)}
    return {"simulation": {"duration": duration, "mss": 1000, "queue_sample": 0},
            "topology": {"kind": "dumbbell", "left": n, "right": n,
                         "bottleneck": {"rate": 10e6, "delay": 0.002, "queue": queue},
                         "access": {"rate": 100e6, "delay": 0.001,
                                    "queue": {"kind": "droptail", "limit": 1000}},
                         "links": links},
            "tcp": {"cc": "reno", "handshake": False},
            "traffic": [{"kind": "infinite", "src": "l*", "dst": "r*", "start_spread": 1.0}]}


def test_fairshare_equalises_flows_with_rtts_spread_10_to_1():
    droptail = sim.run(_long_flow_scenario({"kind": "droptail", "limit": 200}))
    fair = sim.run(_long_flow_scenario({"kind": "fairshare", "beta": 0.2, "threshold": 50,
                                        "inner": {"kind": "droptail", "limit": 200}}))
    j_dt = jain(droptail.flows.column("goodput_bytes").to_numpy())
    j_fs = jain(fair.flows.column("goodput_bytes").to_numpy())
    assert j_fs >= 0.95
    assert j_dt < 0.75                       # DropTail favours the short RTTs markedly
    assert fair.summary["link_utilization"] > 0.9


def _built(scenario, pcap_dir):
    b = Built(load_scenario(scenario), str(pcap_dir))
    b.run()
    return b


def test_lifetime_upgrade_on_the_wire(tmp_path):
    # one lossless 200-segment transfer through LFT-DT: the short class carries exactly the
    # first 50 packets, the long class the rest
    sc = {"simulation": {"duration": 5.0, "mss": 1000, "queue_sample": 0},
          "topology": {"kind": "dumbbell", "bottleneck": {
              "rate": 10e6, "delay": 0.01, "queue": preset_queue("LFT-DT", 1000)}},
          "tcp": {"handshake": False},
          "traffic": [{"kind": "files", "src": "l0", "dst": "r0", "first_idle": False,
                       "idle": 100.0, "size": {"dist": "fixed", "mean": 200_000}}]}
    b = _built(sc, tmp_path)
    short, long_ = b.bottleneck.queue.class_bytes()
    assert short == 50 * 1040
    assert long_ == 150 * 1040


def test_capm_signature_drops_in_simulation(tmp_path):
    code = [1, 0, 1, 1, 0, 0, 1, 0]
    q = {"kind": "perturb", "inner": {"kind": "droptail", "limit": 1000},
         "signatures": [{"code": code, "chip": 0.5, "amplitude": 40.0}]}
    sc = _udp_weights_scenario([1.0])
    sc["topology"]["bottleneck"]["queue"] = q
    sc["simulation"]["duration"] = 8.0
    b = _built(sc, tmp_path)
    drops = b.bottleneck.queue.perturber.drop_counts()["signature"][0]
    # 2 code periods of 4 s, 4 one-chips of 0.5 s each at 40 drops/s
    assert drops == pytest.approx(2 * 4 * 0.5 * 40, abs=2)
    assert b.bottleneck.queue.own_drops == drops


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_build(name, tmp_path):
    lifetime, rtt, sub = PRESETS[name]
    sc = _udp_weights_scenario([1.0])
    sc["topology"]["bottleneck"]["queue"] = preset_queue(name, 24, [0.15, 0.45])
    sc["simulation"]["duration"] = 0.1
    b = _built(sc, tmp_path)
    q = b.bottleneck.queue
    assert q.n_classes == (2 if lifetime else 1) * (3 if rtt else 1)
    assert all(type(s).__name__ == {"droptail": "DropTail", "red": "RED"}[sub] for s in q.subqueues)
    assert sum(s.limit_pkts for s in q.subqueues) == 24 // q.n_classes * q.n_classes


def test_rtt_preset_without_bounds_is_a_scenario_error():
    sc = _udp_weights_scenario([1.0])
    sc["topology"]["bottleneck"]["queue"] = {"kind": "classful", "preset": "SIX-DT"}
    with pytest.raises(ScenarioError, match="rtt_bounds"):
        load_scenario(sc)


def test_rtt_bounds_learned_from_spectrum():
    rng = np.random.default_rng(2)
    rtts = np.concatenate([rng.uniform(0.09, 0.11, 200), rng.uniform(0.27, 0.33, 200),
                           rng.uniform(0.8, 1.0, 200)])
    lo, hi = rtt_bounds_from_spectrum(rtts, 3)
    assert 0.11 < lo < 0.27 and 0.33 < hi < 0.8


def test_fairshare_membership_follows_the_connection():
    # Wu & Nikolaidis, Appendix (wu-nikolaidis-2002-lifetime-rtt-classification.txt:318): "a TCP
    # flow starting to send data through the router is initially assumed to be short lived ...
    # After a period of time, if the flow is still active, it is upgraded to long lived". A
    # sender's next connection is a new TCP flow: it starts short, and only its own packets
    # past the threshold make it long again.
    q = _sim.FairShareQueue(_sim.DropTail(1000, 0), threshold=5)
    _attached(q, 1)
    fs = q.fairshare
    for k in range(6):
        _sim.drive_enqueue(q, 0, 1040, k, conn=0)
    assert fs.is_long(0) and fs.long_conn(0) == 0
    _sim.drive_enqueue(q, 0, 1040, 10, conn=1)
    assert not fs.is_long(0)
    for k in range(4):
        _sim.drive_enqueue(q, 0, 1040, 11 + k, conn=1)
    assert not fs.is_long(0)              # 5 packets of the new connection: still short
    _sim.drive_enqueue(q, 0, 1040, 20, conn=1)
    assert fs.is_long(0) and fs.long_conn(0) == 1

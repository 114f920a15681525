"""The scenario keys of the Linux TCP model: tcp.profile presets and their overrides, the
congestion-control / loss-recovery registries, per-direction link rates and the token-bucket
shaper, and the trace table's ``request`` column."""
import dpkt
import numpy as np
import polars as pl
import pytest

import traceflow.sim as sim
from tcpwire import segments
from traceflow.errors import ScenarioError
from traceflow.sim.scenario import PROFILES, tcp_for


def _sc(tcp=None, group_tcp=None, **topo):
    return {"topology": {"kind": "dumbbell", **topo},
            "tcp": tcp or {},
            "traffic": [{"kind": "infinite", "tcp": group_tcp or {}}]}


def test_linux_profile_presets_and_explicit_keys_win():
    t = sim.load_scenario(_sc({"profile": "linux"})).tcp
    for key, value in PROFILES["linux"].items():
        assert getattr(t, key) == value
    assert (t.cc, t.recovery, t.init_cwnd, t.init_rto, t.min_rto) == ("cubic", "sack_rack", 10, 1.0, 0.2)
    t = sim.load_scenario(_sc({"profile": "linux", "cc": "reno", "min_rto": 0.05})).tcp
    assert (t.cc, t.min_rto, t.recovery) == ("reno", 0.05, "sack_rack")
    ns2 = sim.load_scenario(_sc()).tcp
    assert (ns2.profile, ns2.cc, ns2.recovery, ns2.sack, ns2.init_cwnd) == ("ns2", "reno", "classic", False, 1.0)


def test_a_group_can_switch_profile():
    # the group's profile applies to what [tcp] did not say explicitly; newreno has no Linux
    # flavor, so the explicit cc is an error for that group
    with pytest.raises(ScenarioError, match=r"traffic\[0\]\.tcp\.cc"):
        sim.load_scenario(_sc({"cc": "newreno"}, {"profile": "linux"}))
    sc = sim.load_scenario(_sc({"init_rto": 2.0}, {"profile": "linux"}))
    t = tcp_for(sc, sc.traffic[0])
    assert (t.profile, t.cc, t.init_rto, t.sack) == ("linux", "cubic", 2.0, True)


@pytest.mark.parametrize("tcp, key", [
    ({"profile": "bsd"}, "tcp.profile"),
    ({"cc": "bbr"}, "tcp.cc"),
    ({"profile": "linux", "cc": "vegas"}, "tcp.cc"),
    ({"recovery": "sack_rack"}, "tcp.recovery"),
    ({"delayed_ack": "sometimes"}, "tcp.delayed_ack"),
])
def test_bad_tcp_keys_name_the_key(tcp, key):
    with pytest.raises(ScenarioError, match=key.replace(".", r"\.")):
        sim.load_scenario(_sc(tcp))


def test_rate_rev_validation():
    with pytest.raises(ScenarioError, match=r"topology\.bottleneck\.rate_rev"):
        sim.load_scenario(_sc(bottleneck={"rate_rev": "fast"}))


def _burst_run(tmp_path, burst):
    sc = {"simulation": {"duration": 1.0, "mss": 988},
          "topology": {"kind": "dumbbell",
                       "bottleneck": {"rate": 1.5e6, "delay": 1e-5, "rate_rev": "line",
                                      "line_rate": 1e9, "burst": burst, "overhead": 14,
                                      "pcap": True},
                       "access": {"rate": 10e9, "delay": 1e-6}},
          "tcp": {"profile": "linux", "cc": "reno"},
          "traffic": [{"kind": "files", "first_idle": False, "idle": 1e6,
                       "size": {"dist": "fixed", "mean": 988 * 10}}]}
    res = sim.run(sc, pcap_dir=tmp_path)
    segs = segments(tmp_path / "g1-g2.pcap")
    return res, [s["t"] for s in segs if s["fwd"] and s["len"] > 0], segs


@pytest.mark.parametrize("burst, passed", [(1600, 2), (5000, 5)])
def test_token_bucket_passes_its_burst_at_line_rate(tmp_path, burst, passed):
    # a full bucket of `burst` bytes lets packets through at line rate while it is not
    # negative (each 1040-byte packet counts 1054 with its Ethernet header): 1600 -> 2, 5000 ->
    # 5; then one packet per 1054 * 8 / 1.5e6 = 5.62 ms, the shaped rate
    _, t, _ = _burst_run(tmp_path, burst)
    gaps = np.diff(t)
    line = 1054 * 8 / 1e9
    assert np.allclose(gaps[:passed - 1], line, atol=1e-9)
    assert gaps[passed - 1] > 1e-3
    assert np.allclose(gaps[passed:], 1054 * 8 / 1.5e6, rtol=1e-6)


def test_unshaped_reverse_path_runs_at_line_rate(tmp_path):
    res, _, _ = _burst_run(tmp_path, 1600)
    links = {r["name"]: r for r in res.links.to_pylist()}
    fwd, rev = links["g1->g2"], links["g2->g1"]
    assert fwd["rate_bps"] == 1.5e6 and rev["rate_bps"] == 1e9
    # busy time at each direction's rate: the shaper counts IP + 14 bytes at 1.5 Mbit/s, the
    # reverse path serialises ACKs at 1 Gbit/s
    assert fwd["busy_s"] == pytest.approx((fwd["departure_bytes"] + 14 * fwd["departures"]) * 8 / 1.5e6, rel=1e-6)
    assert rev["busy_s"] == pytest.approx(rev["departure_bytes"] * 8 / 1e9, rel=1e-6)


@pytest.mark.parametrize("profile", ["linux", "ns2"])
def test_request_column_opens_from_the_client(tmp_path, profile):
    sc = {"simulation": {"duration": 2.0, "mss": 988},
          "topology": {"kind": "dumbbell", "bottleneck": {"rate": 10e6, "pcap": True}},
          "tcp": {"profile": profile, "cc": "reno"},
          "traffic": [{"kind": "trace", "src": "l0", "dst": "r0"}]}
    for request, first_syn_fwd in ((None, True), (300, False), (0, False)):
        cols = {"start": [0], "size": [3000]}
        if request is not None:
            cols["request"] = [request]
        res = sim.run(sc, flows=pl.DataFrame(cols).to_arrow(), pcap_dir=tmp_path / str(request))
        segs = segments(tmp_path / str(request) / "g1-g2.pcap")
        syn = next(s for s in segs if s["flags"] & dpkt.tcp.TH_SYN)
        assert syn["fwd"] == first_syn_fwd
        tr = pl.from_arrow(res.transfers.select(["request", "response", "end"]))
        assert tr["request"][0] == (request or 0) and tr["end"].null_count() == 0
        assert tr["response"].null_count() == (request is None)
        if request:
            # the server answers only once the whole request has arrived
            req_end = max(s["t"] for s in segs if not s["fwd"] and s["len"] > 0)
            assert min(s["t"] for s in segs if s["fwd"] and s["len"] > 0) > req_end

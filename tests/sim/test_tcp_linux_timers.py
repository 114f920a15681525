"""Linux's RTO (tcp_rtt_estimator, __tcp_set_rto, tcp_retransmit_timer), its SYN retries
(tcp_syn_linear_timeouts) and its delayed ACKs (tcp_event_data_recv, __tcp_ack_snd_check,
tcp_send_delayed_ack) in the linux profile: HZ = 250 (4 ms jiffies), rto_min 200 ms, initial
RTO 1 s. A timer of d jiffies fires at the tick after jiffy now + d, rounded up to 8 jiffies
when d >= 63 and to 64 when d >= 504 (kernel/time/timer.c).
"""
import dpkt
import numpy as np
import polars as pl

import traceflow.sim as sim
from tcpwire import acks, data, one_flow, segments
from traceflow.sim import _sim
from traceflow.sim.runner import Built

JIFFY = 0.004


def _wheel_slack(seconds):
    """How much later than its nominal time the timer wheel may fire a timer, s."""
    d = seconds / JIFFY
    gran = 1 if d < 63 else 8 if d < 504 else 64
    return (gran + 1) * JIFFY


def test_rto_from_rtt_samples_and_its_backoff(tmp_path):
    # RTT 150 ms. The SYN-ACK's sample: srtt = 150, mdev = 2 * 150 = 300 ms, rttvar =
    # max(mdev, rto_min) = 300; the first data segment's sample (150 ms again) leaves rttvar at
    # 300 (tcp_rtt_estimator), so RTO = srtt + rttvar = 450 ms = 112.5 -> 113 jiffies, 452 ms.
    # The second segment is lost four times: its tail loss probe (one segment in flight:
    # min(2 srtt + rto_min, RTO) = RTO), then RTOs backing off 452, 904, 1808 ms.
    res, segs = one_flow(tmp_path, size=2_000, rtt=0.15, drop=[2, 3, 4, 5])
    sent = [s["t"] for s in data(segs) if s["seq"] == 1001][1:]
    last_ack = [a for a in acks(segs) if a["ack"] == 1001][0]["t"]
    gaps = np.diff([last_ack] + sent)
    for gap, nominal in zip(gaps, (0.452, 0.452, 0.904, 1.808)):
        assert nominal <= gap <= nominal + _wheel_slack(nominal)
    tr = res.transfers.select(["timeouts", "loss_probes", "retransmits"]).to_pylist()[0]
    assert tr == {"timeouts": 3, "loss_probes": 1, "retransmits": 4}


def test_rto_floor_is_rto_min_plus_srtt(tmp_path):
    # RTT ~10 ms (plus the IW10 burst's queueing): rttvar never falls below rto_min, so
    # RTO = srtt + 200 ms, rounded up to jiffies (usecs_to_jiffies)
    sc = {"simulation": {"duration": 5.0},
          "topology": {"kind": "dumbbell", "bottleneck": {"rate": 100e6, "delay": 0.005 - 2e-6},
                       "access": {"rate": 10e9, "delay": 1e-6}},
          "tcp": {"profile": "linux", "cc": "reno"},
          "traffic": [{"kind": "files", "first_idle": False, "idle": 1e6,
                       "size": {"dist": "fixed", "mean": 60_000}}]}
    b = Built(sim.load_scenario(sc), tmp_path)
    b.finalize_sizes()
    b.run()
    snd = next(a for a in b.sim.agents if isinstance(a, _sim.TcpSender))
    assert 10.0e6 <= snd.srtt <= 11.0e6 and snd.rttvar == 200e6
    assert snd.rto == np.ceil((snd.srtt + 200e6) / 4e6) * 4e6


def test_syn_retries_linear_four_times_then_back_off(tmp_path):
    # ip-sysctl tcp_syn_linear_timeouts = 4: "with an initial RTO of 1 ... SYN RTOs to be
    # 1, 1, 1, 1, 1, 2, 4, ..." — six SYNs lost, the seventh answered
    _, segs = one_flow(tmp_path, size=1_000, drop=list(range(1, 7)), count="all", rtt=0.01,
                       duration=20.0)
    syns = [s["t"] for s in segs if s["fwd"] and s["flags"] & dpkt.tcp.TH_SYN]
    assert len(syns) == 7
    for gap, nominal in zip(np.diff(syns), (1, 1, 1, 1, 1, 2)):
        assert nominal <= gap <= nominal + _wheel_slack(nominal)


def _request_flow(tmp_path, size, rate):
    """One request-mode transfer (the client at r0 asks 5 bytes, the server at l0 answers
    ``size``) captured at the client's access link."""
    sc = {"simulation": {"duration": 20.0, "seed": 1, "mss": 988},
          "topology": {"kind": "dumbbell",
                       "bottleneck": {"rate": rate, "delay": 1e-5, "rate_rev": "line"},
                       "access": {"rate": 10e9, "delay": 1e-6},
                       "links": {"r0-g2": {"pcap": True}}},
          "tcp": {"profile": "linux", "cc": "reno"},
          "traffic": [{"kind": "trace", "src": "l0", "dst": "r0"}]}
    flows = pl.DataFrame({"start": [0], "size": [size], "request": [5]})
    sim.run(sc, flows=flows.to_arrow(), pcap_dir=tmp_path)
    segs = segments(tmp_path / "r0-g2.pcap")
    # seen at the client (r0): data arrives from the server (l0), ACKs leave
    return ([s for s in segs if s["fwd"] and s["len"] > 0],
            [s for s in segs if not s["fwd"] and s["len"] == 0 and s["flags"] == dpkt.tcp.TH_ACK])


def test_quick_acks_then_every_second_segment(tmp_path):
    # the first 16 segments are acknowledged one by one (TCP_MAX_QUICKACKS), then only once
    # more than one full segment is unacknowledged (rcv_nxt - rcv_wup > rcv_mss)
    arrivals, out = _request_flow(tmp_path, size=988 * 40, rate=1e6)
    ack_of = {a["ack"]: a["t"] for a in out}
    ends = [d["seq"] + d["len"] for d in arrivals]
    assert all(e in ack_of and ack_of[e] - d["t"] < 1e-5 for e, d in zip(ends[:16], arrivals[:16]))
    later = ends[16:38]
    assert [e in ack_of for e in later] == [False, True] * 11


def test_a_lone_segment_waits_for_the_delayed_ack_timer(tmp_path):
    # at 100 kbit/s segments arrive 84 ms apart: after the quick ACKs each waits for the
    # delayed-ACK timer, ato = TCP_ATO_MIN = 40 ms (10 jiffies). A missed delayed ACK doubles
    # ato (tcp_delack_timer_handler), but tcp_send_delayed_ack bounds it by max(srtt, 40 ms)
    # and the client's srtt is its handshake's ~5 ms, so every wait stays 40 ms
    arrivals, out = _request_flow(tmp_path, size=988 * 20, rate=1e5)
    ack_of = {a["ack"]: a["t"] for a in out}
    waits = [ack_of[d["seq"] + d["len"]] - d["t"] for d in arrivals[16:19]]
    for wait in waits:
        assert 0.040 <= wait <= 0.040 + _wheel_slack(0.04)

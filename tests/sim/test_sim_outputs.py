"""Simulator outputs: pcaps with TCP options sized by tcp_header, sender-hook traces in the run dir."""
from collections import Counter

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import traceflow.sim as sim
from traceflow.pcap.reader import read_packets

MSS = 1000


def _files_scenario(tcp_header):
    """Two file clients over a 2 Mb/s bottleneck whose both directions are captured."""
    return {
        "simulation": {"duration": 4.0, "seed": 3, "mss": MSS, "tcp_header": tcp_header},
        "topology": {"kind": "dumbbell", "left": 2, "right": 2,
                     "bottleneck": {"rate": 2e6, "delay": 0.01, "pcap": True,
                                    "queue": {"kind": "droptail", "limit": 20}}},
        "tcp": {"delayed_ack": True},
        "traffic": [{"kind": "files", "src": "l*", "dst": "r*", "idle": 0.3,
                     "size": {"dist": "exponential", "mean": 6000}}],
    }


@pytest.mark.parametrize("tcp_header", [40, 44, 52])
def test_pcap_tcp_header_carries_options_and_payload_is_exact(tmp_path, tcp_header):
    res = sim.run(_files_scenario(tcp_header), pcap_dir=tmp_path)
    pk = read_packets(res.pcaps[0])
    links = {r["name"]: r for r in res.links.to_pylist()}
    assert pk.num_rows == links["g1->g2"]["departures"] + links["g2->g1"]["departures"]
    flags = pk["tcp_flags"].to_numpy()
    ip_len = pk["ip_len"].to_numpy().astype(np.int64)
    payload = pk["payload_len"].to_numpy().astype(np.int64)
    caplen = pk["caplen"].to_numpy().astype(np.int64)
    syn = (flags & 0x02) != 0
    data = payload > 0
    assert syn.sum() >= 2 * res.summary["transfers_completed"] and data.sum() > 50
    # headers are captured whole (snaplen cuts the payload only): the data offset agrees with
    # the IP length, and every non-SYN segment has exactly the simulated header
    np.testing.assert_array_equal(caplen + payload, 14 + ip_len)
    np.testing.assert_array_equal(ip_len[~syn] - payload[~syn], tcp_header)
    # the simulated payload: full segments of mss bytes, one shorter last segment per transfer
    assert set(payload[data]) <= set(range(1, MSS + 1))
    assert np.all(payload[syn] == 0)
    mss = pk["mss"]
    tsval = pk["tsval"]
    if tcp_header == 40:
        # the classic capture, no options at all
        assert np.all(caplen == 14 + 40) and mss.null_count == pk.num_rows
        assert tsval.null_count == pk.num_rows
    else:
        assert mss.filter(pc.invert(pa_mask(syn))).null_count == int((~syn).sum())
        assert set(mss.filter(pa_mask(syn)).to_pylist()) == {MSS}
    if tcp_header == 44:
        # 4 option bytes: MSS on SYNs, NOP padding elsewhere
        assert tsval.null_count == pk.num_rows and pk["sack_ok"].null_count == pk.num_rows
    if tcp_header == 52:
        # SYNs carry MSS + SACK-permitted + Timestamps (16 option bytes)
        np.testing.assert_array_equal(ip_len[syn], 20 + 20 + 16)
        assert pk["sack_ok"].filter(pa_mask(syn)).to_pylist() == [True] * int(syn.sum())
        assert tsval.null_count == 0 and pk["tsecr"].null_count == 0
        tv = tsval.to_numpy().astype(np.int64)
        te = pk["tsecr"].to_numpy().astype(np.int64)
        ts_ms = pk["ts"].cast("int64").to_numpy() // 1_000_000
        # TSval is the sender's clock in ms: at or before the capture, within the queueing delay
        assert np.all(tv <= ts_ms) and np.all(ts_ms - tv < 1000)
        fwd = pk["dport"].to_numpy() == 5001
        # data segments echo the peer's last TSval (never in the future); a SYN echoes 0
        assert np.all(te[fwd & syn] == 0)
        assert np.all((te[fwd & ~syn] > 0) & (te[fwd & ~syn] <= tv[fwd & ~syn]))
        # an ACK echoes the TSval of a data segment of its flow (or of the SYN)
        key = pk["sport"].to_numpy().astype(np.int64) << 32
        sent = set(zip(key[fwd], tv[fwd]))
        rev_key = pk["dport"].to_numpy().astype(np.int64) << 32
        assert all((k, e) in sent for k, e in zip(rev_key[~fwd], te[~fwd]))
    # the flow analytics recover each completed transfer with its exact size: every connection
    # closed by FINs is a completed transfer, and every transfer completed before the last
    # 200 ms (its FIN/ACK crossed the bottleneck) is such a connection
    flows = pytest.importorskip("traceflow.flows").flows(pk)
    assert set(flows["handshake"].to_list()) == {"complete"}
    closed = Counter(flows.filter(flows["close"] == "FIN")["app_bytes_c2s"].to_list())
    done = res.transfers.filter(pc.is_valid(res.transfers["end"]))
    early = done.filter(pc.less(done["end"].cast("int64"), int(3.8e9)))
    assert early.num_rows >= 5
    assert not closed - Counter(done["size"].to_pylist())
    assert not Counter(early["size"].to_pylist()) - closed


def pa_mask(mask):
    import pyarrow as pa

    return pa.array(mask)


def _ssc_toml(path, duration, period):
    path.write_text(f"""
[simulation]
duration = {duration}
seed = 5
queue_sample = 0.0

[topology]
kind = "dumbbell"
left = 4
right = 2
bottleneck = {{ rate = 5e6, delay = 0.005, queue = {{ kind = "droptail", limit = 30 }} }}
access = {{ rate = 10e6, delay = 0.005 }}

[[traffic]]
kind = "files"
src = "l[0-1]"
dst = "r0"
count = 2
idle = 0.5
size = {{ dist = "pareto", alpha = 1.2, mean = 50e3 }}

[[traffic]]
kind = "infinite"
src = "l[2-3]"
dst = "r1"
count = 2
tcp = {{ cc = "reno", hook = {{ kind = "ssc", period = {period}, levels = 8, metacontrol = true, nu = 0.05 }} }}
""")
    return path


def test_ssc_traces_reach_result_and_run_dir(tmp_path):
    from click.testing import CliRunner

    import traceflow.cli.main as main

    duration, period = 16.0, 2.0
    scenario = _ssc_toml(tmp_path / "ssc.toml", duration, period)
    out = tmp_path / "run"
    r = CliRunner().invoke(main.cli, ["simulate", str(scenario), "-o", str(out)])
    assert r.exit_code == 0, r.output
    hooks = pq.read_table(out / "hooks.parquet")
    assert {"flow_id", "hook", "t", "x", "gamma", "L1", "L2hat", "xi", "A"} <= set(hooks.column_names)
    assert str(hooks.schema.field("t").type) == "timestamp[ns]"
    flows = pq.read_table(out / "flows.parquet").to_pydict()
    ssc_flows = sorted(f for f, k in zip(flows["flow_id"], flows["kind"]) if k == "infinite")
    assert sorted(set(hooks["flow_id"].to_pylist())) == ssc_flows
    for f in ssc_flows:
        tr = hooks.filter(pc.equal(hooks["flow_id"], f))
        t = tr["t"].cast("int64").to_numpy()
        # one row per T_L block that ended within the run
        assert len(t) >= duration / period - 1
        np.testing.assert_array_equal(np.diff(t), int(period * 1e9))
        l1 = tr["L1"].to_numpy()
        assert l1.min() >= 1 and l1.max() <= 8
        # metacontrol starts from A = a = 1; the slope stays within [a, A]
        xi, A = tr["xi"].to_numpy(), tr["A"].to_numpy()
        assert np.all(xi >= 1.0 - 1e-12) and np.all(xi <= A + 1e-12)
    # the run directory holds what Result.hooks held: same run, same traces
    res = sim.run(scenario)
    assert res.hooks.equals(hooks)
    # no hook, no table and no hooks.parquet
    plain = sim.run(scenario, overrides=["traffic.1.tcp={cc=\"reno\"}", "simulation.duration=2"])
    assert plain.hooks is None
    assert not (plain.write(tmp_path / "plain") / "hooks.parquet").exists()

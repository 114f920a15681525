"""Replay: trace-driven on the real testbed, model mode self-consistency, host parameters, CLI."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from conftest import shared_path
from traceflow import compare as C
from traceflow.errors import ScenarioError
from traceflow.report.comparison import format_text
from traceflow.replay import (build_scenario, normalize_sample_mean, replay, sample_flows,
                              trace_table)

REPO = Path(__file__).resolve().parents[2]
TESTBED_SCENARIO = REPO / "replays" / "replay_testbed.toml"
SPAN_NS = 300 * 10**9   # the first 300 s of the 900 s testbed run keep the test within budget


def _first(side):
    from traceflow.pcap.reader import read_packets

    df = pl.from_arrow(read_packets(shared_path("testbed", "alpha1.35", f"{side}_side.pcap.gz")))
    t0 = df["ts"].cast(pl.Int64).min()
    return df.filter(pl.col("ts").cast(pl.Int64) < t0 + SPAN_NS)


@pytest.fixture(scope="module")
def testbed(tmp_path_factory):
    """Fit the client-side capture (hosts from the server side), replay its flows through the
    testbed bottleneck, compare."""
    from traceflow.models.fit import fit
    from traceflow.flows import flows

    out = tmp_path_factory.mktemp("testbed")
    client = _first("client")
    model = fit(client, hosts_from=_first("server"))
    client.write_parquet(out / "client.parquet")
    run = replay(flows(client), out / "run", model=model, scenario=TESTBED_SCENARIO)
    result = C.compare_paths(out / "client.parquet", out / "run")
    return model, run, result


def test_testbed_replay_matches_utilization(testbed, record_property):
    model, run, result = testbed
    metrics = result["metrics"]
    assert set(metrics) == set(C.DEFAULT_TOLERANCES)
    for name, m in metrics.items():            # every metric computed on both sides
        assert m["measured"] is not None and m["predicted"] is not None, name
        assert m["error"] is not None and np.isfinite(m["error"]), name
        record_property(name, json.dumps({"measured": m["measured"], "predicted": m["predicted"],
                                          "error": m["error"]}, default=str))
    print("\n" + format_text(result))
    u = metrics["utilization"]
    assert abs(u["predicted"] - u["measured"]) / u["measured"] <= 0.15
    assert u["capacity_bps"] == 1.5e6     # HTB's rate, counting Ethernet frames (overhead 14)
    # the replay used what the trace revealed about the hosts
    used = run.summary["replay"]["hosts"]
    assert used["initial_window"] == 10 and used["segment_size"] == 988
    sc = run.scenario
    assert sc.tcp.init_cwnd == 10 and sc.tcp.min_rto == pytest.approx(model.hosts.min_rto_s)
    # 988 payload + 52 header bytes measured: the option-less simulated header keeps 1040-byte packets
    assert sc.simulation.mss + sc.simulation.tcp_header == 988 + 52
    assert run.summary["replay"]["mode"] == "trace"


def test_testbed_replay_same_flows(testbed):
    _, run, result = testbed
    # the measured flows were replayed as they were: same sizes, same number
    assert result["metrics"]["size_ks"]["error"] < 0.03
    n_measured = result["metrics"]["size_ks"]["measured"]["n"]
    assert abs(run.summary["transfers_completed"] - n_measured) <= 0.01 * n_measured


@pytest.fixture(scope="module")
def self_consistency(tmp_path_factory):
    """A simulator run (the bundled sample: its bottleneck pcap), fitted and replayed from the
    model alone (the bottleneck the model found in the capture)."""
    from traceflow.datasets.registry import get
    from traceflow.models.fit import fit

    out = tmp_path_factory.mktemp("selfc")
    sample = get("sample-sim-dumbbell").file_path("sim_dumbbell_a135.pcap.gz")
    model = fit([sample])
    model.save(out / "model.json")
    run = replay(out / "model.json", out / "run", seed=3)
    result = C.compare_paths(sample, out / "run")
    return model, run, result, out


def test_self_consistency(self_consistency):
    from traceflow.models.fit import tail_of

    model, run, result, out = self_consistency
    u = result["metrics"]["utilization"]
    print(f"\nself-consistency: utilization measured {u['measured']:.4f} predicted {u['predicted']:.4f}")
    assert abs(u["predicted"] - u["measured"]) / u["measured"] <= 0.05
    # the flow sizes of the replayed traffic have the fitted tail
    from traceflow.flows import flows
    from traceflow.pcap.reader import read_packets

    pred = C.transfers(flows(read_packets(out / "run" / "g1-g2.pcap")))
    alpha = tail_of(pred["size"].to_numpy()).alpha
    print(f"flow-size alpha: fitted {model.sizes.tail.alpha:.3f}, replayed {alpha:.3f}")
    assert abs(alpha - model.sizes.tail.alpha) <= 0.1
    assert abs(model.sizes.tail.alpha - 1.35) <= 0.1     # the sample's scenario
    assert run.summary["replay"]["mode"] == "model" and run.summary["replay"]["normalized"]


def test_sample_path_normalization():
    rng = np.random.default_rng(0)
    x = 1000 * (1 - rng.random(5000)) ** (-1 / 1.1)
    y = normalize_sample_mean(x, 4100)
    assert abs(y.mean() - 4100) / 4100 < 1e-3
    # the tail index is unchanged (scaling is a change of the Pareto location b only)
    a_x = x.size / np.log(x / x.min()).sum()
    a_y = y.size / np.log(y / y.min()).sum()
    assert abs(a_x - a_y) < 0.02
    # tail-only: the body below xmin stays as drawn
    body = rng.uniform(100, 900, 5000)
    z = normalize_sample_mean(np.concatenate([body, x]), 3000, xmin=1000)
    assert np.array_equal(z[:5000], np.round(body).astype(np.int64))
    assert abs(z.mean() - 3000) / 3000 < 1e-3


def test_sample_flows_follow_the_model(self_consistency):
    """Open arrivals (a model without sessions): the fitted rate, the fitted mean size."""
    import dataclasses

    model = dataclasses.replace(self_consistency[0], sessions=None)
    t = sample_flows(model, duration_s=600, seed=5)
    n = t.height
    expect = model.arrivals.rate_per_s * 600
    assert abs(n - expect) < 4 * np.sqrt(expect)
    assert abs(t["size"].mean() - model.sizes.mean) / model.sizes.mean < 1e-3
    assert t["start"].max() < 600e9 and (t["rtt"] >= 0).all()
    raw = sample_flows(model, duration_s=600, seed=5, normalize=False)
    assert raw.height == n and not np.allclose(raw["size"].mean(), model.sizes.mean, rtol=1e-3)


def test_sample_sessions_follow_the_model(self_consistency):
    """The sample is a simulator run of 32 closed-loop clients (``files`` traffic, exponential
    idle 1 s): the fit finds the sessions, and the sampled table holds, per session, think
    times of the fitted mean up to the span — the most transfers it could start. The rate at which
    idle clients ask (sessions / think time: 32 per s) is what the capture pins down; the two
    apart less sharply."""
    model = self_consistency[0]
    s = model.sessions
    assert s is not None and abs(s.sessions / s.think_mean_s - 32.0) < 0.05 * 32.0
    assert abs(s.sessions - 32) <= 4 and abs(s.think_mean_s - 1.0) < 0.15
    t = sample_flows(model, duration_s=600, seed=5)
    assert set(t.columns) >= {"session", "think", "size", "rtt"} and "start" not in t.columns
    per = t.group_by("session").agg(total=pl.col("think").sum(), rtt=pl.col("rtt").n_unique())
    assert per.height == s.sessions and per["total"].max() < 600 and (per["rtt"] == 1).all()
    assert abs(t["think"].mean() - s.think_mean_s) / s.think_mean_s < 0.05
    assert abs(t["size"].mean() - model.sizes.mean) / model.sizes.mean < 1e-3


def test_scenario_precedence(self_consistency):
    model = self_consistency[0]
    raw = build_scenario(hosts=model.hosts, capacity_bps=2e6, duration_s=5)
    assert raw["topology"]["bottleneck"]["rate"] == 2e6
    assert raw["tcp"]["init_cwnd"] == model.hosts.initial_window
    # a scenario file names the bottleneck and may override a host parameter
    raw = build_scenario(hosts=model.hosts, capacity_bps=2e6, duration_s=5,
                         scenario={"topology": {"bottleneck": {"rate": 3e6}}, "tcp": {"init_cwnd": 4}})
    assert raw["topology"]["bottleneck"]["rate"] == 3e6 and raw["tcp"]["init_cwnd"] == 4
    assert raw["topology"]["bottleneck"]["pcap"] is True
    assert raw["traffic"][-1]["kind"] == "trace"
    with pytest.raises(ScenarioError, match="capacity"):
        build_scenario(hosts=None, capacity_bps=None, duration_s=5)


def test_trace_table_from_flows():
    fl = pl.DataFrame({
        "proto": [6, 6, 17, 6], "start": pl.Series([3, 1, 2, 5]).cast(pl.Datetime("ns")),
        "client_addr": ["c1", "c1", "c1", "c2"], "server_addr": ["s", "s", "s", "s"],
        "app_bytes_c2s": [10, 0, 0, 5], "app_bytes_s2c": [2000, 300, 0, 0],
        "rtt_syn": [0.03, 0.02, 0.0005, None], "rtt_ack": [0.001, 0.001, 0.0005, None],
        "rtt_handshake": [0.031, 0.021, 0.001, None]})
    t = trace_table(fl)
    assert t["start"].to_list() == [1, 3, 5]
    assert t["size"].to_list() == [300, 2000, 0]           # the response, server -> client
    assert t["request"].to_list() == [0, 10, 5]
    # the UDP flow's handshake does not count; a pair without a sample gets the smallest of all
    assert t["rtt"].to_list() == [0.021, 0.021, 0.021]
    # each flow's own handshake (queueing included); missing -> the median
    assert trace_table(fl, rtt="handshake")["rtt"].to_list() == pytest.approx([0.021, 0.031, 0.026])
    with pytest.raises(ScenarioError, match="RTT mode"):
        trace_table(fl, rtt="floor")


def test_path_rtt_keeps_unqueued_handshakes():
    """The queue sits on the SYN -> SYN/ACK leg here (it spreads over 10-80 ms); the other leg
    shows the hosts' jitter (0.2 ms). Unqueued handshakes keep their own RTT, queued ones take the
    nearest unqueued one of their pair, never their own."""
    from traceflow.models.fit import path_rtt

    ms = 1e-3
    syn = [10 * ms, 50 * ms, 10.1 * ms, 80 * ms, 10 * ms]
    ack = [1 * ms, 1.2 * ms, 1.1 * ms, 1 * ms, 1 * ms]
    fl = pl.DataFrame({
        "start": pl.Series([10, 15, 30, 45, 50]).cast(pl.Datetime("ns")),
        "client_addr": ["c"] * 5, "server_addr": ["s"] * 5, "rtt_syn": syn, "rtt_ack": ack,
        "rtt_handshake": [a + b for a, b in zip(syn, ack)]})
    got = path_rtt(fl)
    assert got["path_rtt"].to_list() == pytest.approx([11 * ms, 11 * ms, 11.2 * ms, 11 * ms, 11 * ms])
    # 10 ms of the 11 lie beyond the capture point on the server's side
    assert got["server_share"].to_list() == pytest.approx([10 / 11] * 5)


@pytest.mark.parametrize("share", [None, 0.01, 0.25, 0.99])
def test_trace_replay_puts_the_path_delay_on_the_captured_sides(tmp_path, share):
    """A trace group's ``server_share`` puts that part of a flow's RTT between the bottleneck
    capture and the server: the replay's own capture must show the two handshake legs so split
    (read back by the flow analytics, the tool that measured the split in the trace)."""
    from traceflow.flows import flows
    from traceflow.pcap.reader import read_packets
    from traceflow.replay import replay

    rtt = 0.120
    # the trace's handshake legs (no leg measured: the symmetric default)
    syn, ack = (None, None) if share is None else (share * rtt, (1 - share) * rtt)
    measured = pl.DataFrame({
        "start": pl.Series([0, 10**9]).cast(pl.Datetime("ns")), "proto": [6, 6],
        "client_addr": ["c", "c"], "server_addr": ["s", "s"],
        "app_bytes_c2s": [100, 100], "app_bytes_s2c": [5000, 5000],
        "rtt_syn": [syn, syn], "rtt_ack": [ack, ack], "rtt_handshake": [rtt, rtt]},
        schema_overrides={"rtt_syn": pl.Float64, "rtt_ack": pl.Float64})
    replay(measured, tmp_path, scenario={"topology": {"bottleneck": {"rate": 1e7}}}, duration_s=3)
    got = flows(pl.from_arrow(read_packets(tmp_path / "g1-g2.pcap")))
    server = 0.5 if share is None else share
    # the simulated links add the handshake packets' transmission times the trace RTT holds
    assert got["rtt_handshake"].to_list() == pytest.approx([rtt, rtt], abs=2e-6)
    assert got["rtt_syn"].to_list() == pytest.approx([server * rtt] * 2, abs=1e-3)
    assert got["rtt_ack"].to_list() == pytest.approx([(1 - server) * rtt] * 2, abs=1e-3)


def test_cli_replay(tmp_path, self_consistency):
    from traceflow.cli.main import cli

    model_path = self_consistency[3] / "model.json"
    r = CliRunner().invoke(cli, ["replay", str(model_path), "-o", str(tmp_path / "run"),
                                 "--duration", "20", "--set", "topology.bottleneck.rate=3e6",
                                 "--seed", "2"])
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["bottleneck_rate_bps"] == 3e6 and s["duration_s"] == 20 and s["seed"] == 2
    assert s["replay"]["rtt"] == "model"
    import pyarrow.parquet as pq

    # model mode: path RTTs drawn from the fitted propagation RTTs (the sample's dumbbell paths)
    rtts = pq.read_table(tmp_path / "run" / "flows.parquet")["base_rtt"].to_numpy()
    prop = self_consistency[0].rtt.propagation
    assert rtts.min() >= prop.minimum - 1e-6 and rtts.max() <= prop.maximum + 1e-6
    assert (tmp_path / "run" / "g1-g2.pcap").stat().st_size > 1000
    assert "model mode" in r.output


def test_cli_replay_bad_scenario_key(tmp_path, self_consistency):
    model_path = self_consistency[3] / "model.json"
    p = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "replay", str(model_path),
                        "-o", str(tmp_path / "run"), "--set", "topology.bottleneck.colour=1"],
                       capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert "colour" in p.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_testbed_replay_full_span(tmp_path):
    """The whole 900 s testbed run (the default test uses its first 300 s)."""
    from traceflow.models.fit import fit
    from traceflow.flows import flows
    from traceflow.pcap.reader import read_packets

    client = shared_path("testbed", "alpha1.35", "client_side.pcap.gz")
    model = fit([client], hosts_from=[shared_path("testbed", "alpha1.35", "server_side.pcap.gz")])
    replay(flows(read_packets(client)), tmp_path / "run", model=model, scenario=TESTBED_SCENARIO)
    result = C.compare_paths(client, tmp_path / "run")
    print("\n" + format_text(result))
    u = result["metrics"]["utilization"]
    assert abs(u["predicted"] - u["measured"]) / u["measured"] <= 0.15
    assert all(np.isfinite(m["error"]) for m in result["metrics"].values())


def test_replay_of_a_capture_keeps_the_measured_handshake_rtts(tmp_path):
    """`replay CAPTURE --model M`: the measured connections, path RTTs from the packet-pair test
    (three RTT classes, 10/60/180 ms, with the testbed relay's jitter): the replay's handshake
    RTTs follow the measured ones (KS distance as in the testbed criteria)."""
    from scipy.stats import ks_2samp

    from conftest import shared_path
    from traceflow.experiments.testbed_replay import SCENARIO, read_run, run_overrides
    from traceflow.flows import flows
    from traceflow.models.fit import fit
    from traceflow.pcap.reader import read_packets
    from traceflow.replay import replay

    params, client, server = read_run(shared_path("testbed", "rtt3dev"), span_s=40)
    capture = tmp_path / "client.parquet"
    client.write_parquet(capture)
    model = fit(client, hosts_from=server)
    replay(capture, tmp_path / "run", model=model, scenario=SCENARIO,
           overrides=run_overrides(params), duration_s=40)
    got = flows(pl.from_arrow(read_packets(tmp_path / "run" / "g1-g2.pcap")))["rtt_handshake"]
    want = flows(client)["rtt_handshake"]
    assert ks_2samp(got.drop_nulls().to_numpy(), want.drop_nulls().to_numpy()).statistic < 0.1

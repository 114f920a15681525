"""Simulator core: conservation, determinism, scenario validation, run directory, CLI, pcap."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import traceflow.sim as sim
from traceflow.errors import ScenarioError
from traceflow.sim.runner import Built

REPO = Path(__file__).resolve().parents[2]
DUMBBELL = REPO / "replays" / "dumbbell.toml"


def _mixed(duration=8.0, seed=5):
    """Every transport and workload on one dumbbell, with RED, random loss and delayed ACKs."""
    return {
        "simulation": {"duration": duration, "seed": seed},
        "topology": {
            "kind": "dumbbell", "left": 4, "right": 4,
            "bottleneck": {"rate": 5e6, "delay": 0.01, "loss": 0.002,
                           "queue": {"kind": "red", "limit": 60, "min_th": 5, "max_th": 20,
                                     "max_p": 0.1},
                           "queue_reverse": {"kind": "droptail", "limit": 30}},
            "access": {"rate": 50e6, "delay": 0.002, "queue": {"kind": "droptail", "limit": 50}},
        },
        "tcp": {"cc": "reno", "delayed_ack": True},
        "traffic": [
            {"kind": "infinite", "src": "l0", "dst": "r0", "tcp": {"cc": "newreno"}},
            {"kind": "infinite", "src": "l1", "dst": "r1", "tcp": {"cc": "vegas"}},
            {"kind": "files", "src": ["l2", "l3"], "dst": "r*", "count": 4, "idle": 0.2,
             "size": {"dist": "pareto", "alpha": 1.3, "mean": 20000}, "tcp": {"cc": "tahoe"}},
            {"kind": "poisson", "transport": "udp", "src": "l3", "dst": "r3", "rate": 100},
            {"kind": "onoff", "src": "l2", "dst": "r2", "on": [0.2, 0.5], "off": [0.1, 0.3],
             "tcp": {"cc": "rate"}},
            {"kind": "poisson", "src": "l1", "dst": "r2", "rate": 50},
        ],
    }


def test_conservation_per_flow_and_per_link(tmp_path):
    b = Built(sim.load_scenario(_mixed()), tmp_path)
    b.finalize_sizes()
    b.run()
    in_events = b.sim.packets_in_events()
    held = {}
    for link in b.links:
        st = link.stats(b.duration_ns)
        # link: offered = dropped by the queue + transmitted (or being sent) + still queued
        assert st["arrivals"] == st["queue_drops"] + st["departures"] + st["queue_pkts"]
        # transmitted = arrived at the far end + lost on the wire + being sent or propagating
        assert st["departures"] == st["delivered"] + st["lost"] + st["on_wire"]
        for k, v in link.packets_by_flow().items():
            held[k] = held.get(k, 0) + v
    fs = b.sim.flow_stats()
    assert len(fs["sent_pkts"]) == 1 + 1 + 4 + 1 + 1 + 1
    total_drops = 0
    for f in range(len(fs["sent_pkts"])):
        for d, (sent, recv, drop) in enumerate((("sent_pkts", "recv_pkts", "drop_pkts"),
                                                 ("ack_sent_pkts", "ack_recv_pkts",
                                                  "ack_drop_pkts"))):
            in_flight = in_events.get((f, d), 0) + held.get((f, d), 0)
            assert fs[sent][f] == fs[recv][f] + fs[drop][f] + in_flight, (f, d)
            total_drops += fs[drop][f]
        assert fs["sent_pkts"][f] > 0
    # every drop is accounted to some link (queue drop or random loss)
    assert total_drops == sum(l.stats(b.duration_ns)["queue_drops"] + l.lost for l in b.links)
    assert sum(l.lost for l in b.links) > 0
    assert b.links[-2].queue.early_drops > 0          # RED acted on g1->g2


def _rows(table):
    # NaN != NaN: compare with NaN mapped to None
    return [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
            for r in table.to_pylist()]


def _tables_equal(a, b):
    for name in ("flows", "transfers", "series", "queue", "links"):
        ta, tb = getattr(a, name), getattr(b, name)
        assert ta.schema == tb.schema and ta.num_rows == tb.num_rows, name
        assert _rows(ta.cast(_plain(ta.schema))) == _rows(tb.cast(_plain(tb.schema))), name


def _plain(schema):
    import pyarrow as pa
    return pa.schema([pa.field(f.name, pa.int64() if pa.types.is_timestamp(f.type) else f.type)
                      for f in schema])


def test_determinism_same_seed_identical_different_seed_differs(tmp_path):
    sc = _mixed(4.0, seed=11)
    sc["topology"]["bottleneck"]["pcap"] = True
    a = sim.run(sc, pcap_dir=tmp_path / "a")
    b = sim.run(sc, pcap_dir=tmp_path / "b")
    c = sim.run(sc, seed=12, pcap_dir=tmp_path / "c")
    pcap = [Path(r.pcaps[0]).read_bytes() for r in (a, b, c)]
    assert pcap[0] == pcap[1] and pcap[0] != pcap[2]
    assert json.dumps(a.summary) == json.dumps(b.summary)
    _tables_equal(a, b)
    assert a.summary != c.summary
    assert _rows(a.flows) != _rows(c.flows)


def test_dumbbell_saturates_bottleneck_and_writes_run_dir(tmp_path):
    res = sim.run(DUMBBELL, overrides=["simulation.duration=10", "topology.bottleneck.pcap=true"])
    tmp_pcap = Path(res.pcaps[0]).parent
    s = res.summary
    assert 0.9 < s["link_utilization"] <= 1.0
    assert abs(s["throughput_bps"] - s["link_utilization"] * 10e6) < 0.02 * 10e6
    assert 0 < s["loss_rate"] < 0.1
    assert s["goodput_bps"] <= s["throughput_bps"]
    assert 0 < s["mean_queue_pkts"] <= 100
    out = res.write(tmp_path / "run")
    names = sorted(p.name for p in out.iterdir())
    assert names == ["flows.parquet", "g1-g2.pcap", "links.parquet", "queue.parquet",
                     "scenario.json", "series.parquet", "summary.json", "timing.json",
                     "transfers.parquet"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["packets_forwarded"] == s["packets_forwarded"]
    series = pq.read_table(out / "series.parquet")
    assert series.num_rows == 1000                   # 10 s in 10 ms bins
    assert int(np.sum(series["packets"].to_numpy())) == s["packets_forwarded"]
    echo = json.loads((out / "scenario.json").read_text())
    assert echo["simulation"]["duration"] == 10
    del res                                   # the temporary capture goes with the Result
    assert not tmp_pcap.exists()


def test_pcap_is_readable_and_matches_link_counters(tmp_path):
    from traceflow.pcap.reader import read_packets

    sc = {
        "simulation": {"duration": 5.0, "seed": 2},
        "topology": {"kind": "dumbbell", "left": 2, "right": 2,
                     "bottleneck": {"rate": 2e6, "delay": 0.01, "pcap": True,
                                    "queue": {"kind": "droptail", "limit": 20}}},
        "traffic": [{"kind": "files", "src": "l*", "dst": "r*", "idle": 0.3,
                     "size": {"dist": "exponential", "mean": 8000}}],
    }
    res = sim.run(sc, pcap_dir=tmp_path)
    pk = read_packets(res.pcaps[0])
    links = {r["name"]: r for r in res.links.to_pylist()}
    assert pk.num_rows == links["g1->g2"]["departures"] + links["g2->g1"]["departures"]
    flags = pk["tcp_flags"].to_numpy()
    syn = int(np.sum((flags & 0x12) == 0x02))
    synack = int(np.sum((flags & 0x12) == 0x12))
    fin_data = int(np.sum(((flags & 0x01) != 0) & (pk["payload_len"].to_numpy() > 0)))
    assert syn >= res.summary["transfers"] - 2         # one SYN per transfer (+ retransmits)
    assert synack >= res.summary["transfers_completed"]
    assert fin_data >= res.summary["transfers_completed"]
    assert set(pk["ip_len"].to_numpy()[pk["payload_len"].to_numpy() > 0]) <= set(range(41, 1041))
    # the flow analytics see one connection per transfer, with the transfer's exact size
    flows = pytest.importorskip("traceflow.flows").flows(pk)
    done = res.transfers.filter(pc.is_valid(res.transfers["end"]))
    assert sorted(flows["app_bytes_c2s"].to_list()) == sorted(done["size"].to_pylist())
    assert set(flows["handshake"].to_list()) == {"complete"}
    assert set(flows["close"].to_list()) == {"FIN"}


@pytest.mark.parametrize("override, key", [
    ("tcp.cc=\"bbr\"", "tcp.cc"),
    ("topology.bottlneck.rate=1", "topology.bottlneck"),
    ("topology.bottleneck.rate=-5", "topology.bottleneck.rate"),
    ("topology.bottleneck.queue.kind=\"sfq\"", "topology.bottleneck.queue.kind"),
    ("topology.bottleneck.queue={kind=\"red\", min_th=20, max_th=10}",
     "topology.bottleneck.queue.max_th"),
    ("traffic.0.count=1.5", "traffic[0].count"),
    ("traffic.0.tcp.rwnd=0", "traffic[0].tcp.rwnd"),
    ("simulation.duration=\"long\"", "simulation.duration"),
])
def test_scenario_validation_names_the_key(override, key):
    with pytest.raises(ScenarioError) as exc:
        sim.load_scenario(DUMBBELL, [override])
    assert key in str(exc.value)
    assert "\n" not in str(exc.value)


def test_overrides_seed_and_unknown_nodes():
    sc = sim.load_scenario(DUMBBELL, ["topology.bottleneck.rate=5e6", "traffic.0.count=3"], seed=9)
    assert sc.topology.bottleneck.rate == 5e6
    assert sc.traffic[0].count == 3 and sc.simulation.seed == 9
    with pytest.raises(ScenarioError, match="traffic.5"):
        sim.load_scenario(DUMBBELL, ["traffic.5.count=3"])
    with pytest.raises(ScenarioError, match=r"traffic\[0\].src"):
        sim.run(DUMBBELL, overrides=["traffic.0.src=\"x*\""])
    with pytest.raises(ScenarioError, match="monitor.links"):
        sim.run(DUMBBELL, overrides=["monitor.links=[\"a->b\"]"])


def test_cli_runs_and_reports_errors_on_one_line(tmp_path):
    from click.testing import CliRunner

    import traceflow.cli.main as main

    out = tmp_path / "run"
    r = CliRunner().invoke(main.cli, ["simulate", str(DUMBBELL), "--set", "simulation.duration=2",
                                      "--seed", "4", "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    payload = json.loads(r.output)
    assert payload["seed"] == 4 and payload["duration_s"] == 2.0
    assert (out / "summary.json").exists()
    bad = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "simulate", str(DUMBBELL),
                          "--set", "tcp.xi=0", "-o", str(tmp_path / "bad")],
                         capture_output=True, text=True)
    assert bad.returncode == 2
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and "tcp.xi" in lines[0] and "Traceback" not in bad.stderr
    assert not (tmp_path / "bad").exists()


def test_trace_driven_flows_follow_the_table():
    import pyarrow as pa

    table = pa.table({"start": pa.array([0, 500_000_000, 1_000_000_000], pa.int64())
                      .cast(pa.timestamp("ns")),
                      "size": [5000, 20000, 1000], "rtt": [0.2, 0.1, None]})
    sc = {"simulation": {"duration": 5.0},
          "topology": {"kind": "dumbbell", "left": 1, "right": 1,
                       "bottleneck": {"rate": 10e6, "delay": 0.01}},
          "traffic": [{"kind": "trace", "src": "l0", "dst": "r0", "start": 1.0}]}
    res = sim.run(sc, flows=table)
    assert res.transfers["size"].to_pylist() == [5000, 20000, 1000]
    starts = res.transfers["start"].cast("int64").to_pylist()
    assert starts == [1_000_000_000, 1_500_000_000, 2_000_000_000]
    rtts = res.flows["base_rtt"].to_pylist()
    assert rtts[0] == pytest.approx(0.2) and rtts[1] == pytest.approx(0.1)
    assert rtts[2] == pytest.approx(2 * (0.001 + 0.01 + 0.001))
    assert res.transfers["end"].null_count == 0


def test_sessions_run_closed_loop():
    """A ``session`` column makes closed-loop sessions: each transfer of a session opens
    ``think`` s after the client had the whole previous response (its end), never before — so
    its start follows the previous transfer's end, however long that took."""
    import pyarrow as pa

    table = pa.table({"session": [0, 1, 0, 0, 1], "think": [0.5, 0.2, 0.3, 0.0, 1.0],
                      "size": [200_000, 1000, 5000, 3000, 2000], "rtt": [0.05, 0.02, 0.05, 0.05, 0.02],
                      "request": [100] * 5})
    sc = {"simulation": {"duration": 10.0},
          "topology": {"kind": "dumbbell", "left": 2, "right": 2,
                       "bottleneck": {"rate": 2e6, "delay": 0.001}},
          "traffic": [{"kind": "trace", "src": "l*", "dst": "r*", "start": 1.0}]}
    res = sim.run(sc, flows=table)
    import polars as pl

    tr = pl.from_arrow(res.transfers).with_columns(pl.col("start", "end").cast(pl.Int64))
    assert len(res.flows) == 2 and tr.height == 5 and tr["end"].null_count() == 0
    s0, s1 = (tr.filter(pl.col("flow_id") == f).sort("start") for f in res.flows["flow_id"].to_pylist())
    assert s0["size"].to_list() == [200_000, 5000, 3000] and s1["size"].to_list() == [1000, 2000]
    start0, end0 = s0["start"].to_list(), s0["end"].to_list()
    assert start0[0] == 1_500_000_000
    # the 200 kB transfer takes about a second at 2 Mbit/s: the next one waits for it
    assert end0[0] - start0[0] > 0.8e9 and start0[1] == end0[0] + 300_000_000
    # think 0: as soon as the previous connection has closed (its FIN exchange, ~1 RTT)
    assert 0 <= start0[2] - end0[1] <= 0.1e9
    assert s1["start"].to_list() == [1_200_000_000, s1["end"][0] + 1_000_000_000]
    assert res.flows["base_rtt"].to_pylist() == pytest.approx([0.05, 0.02])


def test_sample_path_normalization_hits_the_target_mean():
    # Pareto(1.05) file sizes: reruns rescale k by target / realized mean (same uniforms) until the
    # realized mean is within the stopping rule's 0.5 %, keeping the closest round. The heavy tail
    # makes the rounds oscillate (a file moves in or out of the run), with a floor: seed 2's last
    # rounds give -0.88 %, +0.76 %, -1.45 %, +1.41 %, -1.94 % for k within 1.6 % of each other, so
    # the best of a budget of 8 rounds (the replay allows 4) is asserted within 1 % (measured -0.07,
    # +0.76, -0.31 % for seeds 1-3), the plain sample path off by more than 10 %.
    normalized, plain = [], []
    for seed in (1, 2, 3):
        sc = sim.load_scenario(REPO / "replays" / "selfsim_baseline.toml",
                               ["simulation.duration=1000", "traffic.0.size.iterations=8"], seed=seed)
        assert sc.traffic[0].size.normalize == "iterate"
        normalized.append(sim.run(sc).transfers["size"].to_numpy().mean() / 4096 - 1)
        raw = sim.run(sc, overrides=["traffic.0.size.normalize=\"none\""])
        plain.append(raw.transfers["size"].to_numpy().mean() / 4096 - 1)
    assert max(map(abs, normalized)) <= 0.01
    assert max(map(abs, plain)) > 0.1


def test_star_and_chain_topologies_route_and_time_correctly():
    star = {"simulation": {"duration": 20.0},
            "topology": {"kind": "star", "clients": 3,
                         "access": {"rate": 10e6, "delay": 0.025},
                         "bottleneck": {"rate": 50e6, "delay": 0.025,
                                        "queue": {"kind": "droptail", "limit": 50}}},
            "tcp": {"cc": "reno", "rwnd": 20, "delayed_ack": True},
            "traffic": [{"kind": "poisson", "src": "c*", "dst": "srv", "rate": 100}]}
    star["topology"]["links"] = {"c1-gw": {"delay": 0.075}}       # per-host access delay
    res = sim.run(star)
    assert res.summary["bottleneck"] == "gw->srv"
    assert res.flows["base_rtt"].to_pylist() == pytest.approx([0.1, 0.2, 0.1])
    # 100 packets/s per client offered, well under capacity: all of it is carried
    assert res.summary["goodput_bps"] == pytest.approx(3 * 100 * 1000 * 8, rel=0.05)
    chain = {"simulation": {"duration": 20.0},
             "topology": {"kind": "chain", "sources": 2,
                          "bottleneck": {"rate": 2e6, "delay": 0.01},
                          "egress": {"rate": 1e6, "delay": 0.02,
                                     "queue": {"kind": "droptail", "limit": 20}}},
             "traffic": [{"kind": "onoff", "src": "h*", "dst": "dst", "on": [1, 2],
                          "off": [0.5, 1.0]}],
             "monitor": {"links": ["R2->dst", "R1->R2"]}}
    res = sim.run(chain)
    assert res.summary["bottleneck"] == "R2->dst"
    assert res.flows["base_rtt"].to_pylist() == pytest.approx([2 * (0.001 + 0.01 + 0.02)] * 2)
    assert 0.5 < res.summary["link_utilization"] <= 1.0
    assert res.summary["transfers"] >= 2 * 20 / 3 - 2       # one connection per on period
    assert set(res.series["link"].to_pylist()) == {"R2->dst", "R1->R2"}


def test_byte_limited_droptail_never_exceeds_its_buffer():
    res = sim.run(REPO / "replays" / "selfsim_baseline.toml",
                  overrides=["simulation.duration=200", "traffic.0.size.normalize=\"none\""])
    links = {r["name"]: r for r in res.links.to_pylist()}
    assert 0 < links["g1->g2"]["max_queue_bytes"] <= 6000
    assert links["g1->g2"]["queue_drops"] > 0
    bins = res.summary["response_time_by_size"]
    assert sum(b["transfers"] for b in bins) == res.summary["transfers_completed"]
    means = [b["mean_s"] for b in bins if b["transfers"] > 20]
    assert means == sorted(means)              # larger files take longer


def test_udp_rate_spacing_and_greedy_modes():
    def one(udp, kind="infinite"):
        sc = {"simulation": {"duration": 10.0},
              "topology": {"kind": "dumbbell", "left": 1, "right": 1,
                           "bottleneck": {"rate": 10e6, "delay": 0.01},
                           "access": {"rate": 4e6, "delay": 0.001}},
              "traffic": [{"kind": kind, "transport": "udp", "src": "l0", "dst": "r0",
                           "udp": udp}]}
        return sim.run(sc).flows.to_pylist()[0]

    assert one({"rate": 1e6})["sent_pkts"] == pytest.approx(10 * 1e6 / (1028 * 8), abs=2)
    assert one({"spacing": 0.05})["sent_pkts"] == pytest.approx(10 / 0.05, abs=2)
    greedy = one({})                      # line rate of the first hop (4 Mb/s access link)
    assert greedy["sent_pkts"] == pytest.approx(10 * 4e6 / (1028 * 8), abs=2)
    assert greedy["drop_pkts"] == 0


def test_trace_flows_accept_a_polars_table():
    import polars as pl

    df = pl.DataFrame({"start": [0, 2_000_000_000], "size": [3000, 7000], "rtt": [0.3, 0.05]})
    sc = {"simulation": {"duration": 5.0},
          "topology": {"kind": "dumbbell", "left": 2, "right": 2},
          "traffic": [{"kind": "trace", "src": "l*", "dst": "r*"}]}
    res = sim.run(sc, flows=df)
    assert res.flows["src"].to_pylist() == ["l0", "l1"]
    assert res.flows["base_rtt"].to_pylist() == pytest.approx([0.3, 0.05])
    assert res.transfers["size"].to_pylist() == [3000, 7000]
    assert res.transfers["end"].null_count == 0


def _one_client_files(**files):
    return {"simulation": {"duration": 5.0, "mss": 1000, "tcp_header": 40},
            "topology": {"kind": "dumbbell", "left": 1, "right": 1,
                         "bottleneck": {"rate": 10e6, "delay": 0.02},
                         "access": {"rate": 100e6, "delay": 0.005}},
            "tcp": {"handshake": False},
            "traffic": [{"kind": "files", "src": "l0", "dst": "r0", "idle": 0.05,
                         "first_idle": False, "size": {"dist": "fixed", "mean": 1500},
                         **files}]}


def test_files_self_similarity_paper_semantics():
    # Park, Kim & Crovella (park-kim-crovella-1997-self-similarity-performance.txt:111): "each
    # file is split into q = ceil(X/M) packets" (ns-2 agents send whole packets), and the
    # client's idle period follows the server's completed transfer (its last ACK)
    plain = sim.run(_one_client_files()).transfers
    paper = sim.run(_one_client_files(pad_last=True, idle_after="last_ack")).transfers
    assert set(plain["bytes_sent"].to_pylist()[:-1]) == {1500}          # payload bytes
    assert set(paper["bytes_sent"].to_pylist()[:-1]) == {2000}

    def gaps(t):
        start = t["start"].cast("int64").to_numpy()
        end = t["end"].cast("int64").to_numpy(zero_copy_only=False)
        return (start[1:] - end[:-1]) / 1e9
    # the sender starts the next file only after the last ACK (one ACK trip, 30 ms + 38.4 us of
    # transmission, after delivery); both runs draw the same idle times I_k: from delivery the
    # gap is max(I_k, trip), from the last ACK trip + I_k
    trip = 0.0300384
    g_plain, g_paper = gaps(plain), gaps(paper)
    n = min(len(g_plain), len(g_paper))
    idle = g_paper[:n] - trip
    assert idle.min() > 0 and (idle < trip).sum() > 5
    np.testing.assert_allclose(g_plain[:n], np.maximum(idle, trip), atol=1e-8)

"""The congestion control read from one capture (issue 44 item 3), against real Linux kernels:
the shared testbed runs name theirs (params.json ``cc``). Each run, from either side of the
bottleneck, must be labelled right where it holds connections of 100 data segments or more,
"cannot tell" otherwise, never wrong; the measured reduction factor, growth, held ratio and
pacing must be the families' (Reno 0.5 and one segment per round trip, RFC 5681; CUBIC 0.7,
RFC 9438 / Linux 717/1024; BBR none tied to loss and paced, Linux tcp_bbr.c)."""
import os
from pathlib import Path

import polars as pl
import pytest

from conftest import shared_path
from traceflow.flows import congestion
from traceflow.flows.hosts import infer_hosts

#: the shared runs and the congestion control their hosts ran
RUNS = ("alpha1.35", "dev10m", "devcubic", "devcubic24k", "rtt3dev", "devbbr")
#: the first seconds of each run the default suite reads (all six runs hold long connections
#: with loss episodes by then: 5-91 per run and side)
SPAN_S = 120.0
#: the families' reduction factors
BETA = {"reno": 0.5, "cubic": 0.7}
SIDES = ("client_side", "server_side")


@pytest.fixture(scope="module")
def runs():
    """run -> (params, {side: packets of the first SPAN_S seconds})."""
    from traceflow.experiments.testbed_replay import read_run

    cache = {}

    def get(run):
        if run not in cache:
            params, client, server = read_run(shared_path("testbed", run), SPAN_S)
            cache[run] = params, {"client_side": client, "server_side": server}
        return cache[run]
    return get


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("run", RUNS)
def test_each_shared_run_labelled_right(runs, run, side):
    params, packets = runs(run)
    hosts = infer_hosts(packets[side])
    ev = hosts.congestion_control_evidence
    assert ev["connections"] >= 1                # long connections: the label must be right
    assert hosts.congestion_control == params["cc"], congestion.describe(
        hosts.congestion_control, hosts.congestion_control_confidence, ev)
    assert 0.5 <= hosts.congestion_control_confidence <= 1
    assert hosts.quality["congestion_control"] == "ok"
    if params["cc"] in BETA:
        # the family's reduction factor (the criterion: within 0.1) over >= 15 episodes
        assert ev["beta_episodes"] >= 15
        assert abs(ev["reduction_factor"] - BETA[params["cc"]]) <= 0.1
        # Reno adds a segment per round trip (measured 0.60-0.92); CUBIC well under it (its
        # Reno-friendly region adds 0.53; measured 0.20-0.42)
        if params["cc"] == "reno":
            assert 0.55 <= ev["growth_per_round"] <= 1.1
        else:
            assert ev["growth_per_round"] <= 0.5
        assert ev["held_ratio"] <= 0.8               # windows after loss are reduced
    else:
        assert 0.95 <= ev["held_ratio"] <= 1.15      # BBR keeps its window through loss
    if side == "server_side":                        # pacing shows before the bottleneck
        assert ev["paced_share"] == (1.0 if params["cc"] == "bbr" else 0.0)


def test_connections_labelled_one_by_one_are_mostly_right(runs):
    """The per-connection view: each long connection's own label, where its evidence suffices
    (measured: 47 of 48 right in the first 120 s, 186 of 193 over the whole runs, the wrong
    ones Reno/CUBIC mix-ups on a connection's few episodes); every one names its data
    sender."""
    right = labelled = 0
    for run in RUNS:
        params, packets = runs(run)
        for side in SIDES:
            table = congestion.connection_table(packets[side])
            assert table["server"].null_count() == 0 and table.height >= 1
            found = table.filter(pl.col("label").is_not_null())
            labelled += found.height
            right += int((found["label"] == params["cc"]).sum())
            assert (found["confidence"] > 0).all()
    assert labelled >= 40 and right >= 0.85 * labelled, (right, labelled)


@pytest.mark.parametrize("run", ["devcubic", "devbbr"])
def test_without_timestamps_behind_the_bottleneck_the_capture_cannot_tell(runs, run):
    """The same captures with the timestamps option gone (the hidden BBR run has none): behind
    the bottleneck the flight is not visible, so no label (never a wrong one); before it the
    flight needs no timestamps and the label stays right."""
    params, packets = runs(run)
    strip = [pl.lit(None, dtype=pl.UInt32).alias(c) for c in ("tsval", "tsecr")]
    client = infer_hosts(packets["client_side"].with_columns(strip))
    assert client.congestion_control is None
    assert client.congestion_control_evidence["flight_visible"] == 0
    assert "without TCP timestamps" in client.quality["congestion_control"]
    server = infer_hosts(packets["server_side"].with_columns(strip))
    assert server.congestion_control == params["cc"]


def test_the_streamed_fit_reads_the_same(runs):
    """`traceflow fit` streams the packets (the end-host buffer carries the timestamps): the
    model's label is the whole-table one."""
    from traceflow.models.fit import fit

    _, packets = runs("devbbr")
    whole = infer_hosts(packets["client_side"])
    streamed = fit(packets["client_side"]).hosts
    assert streamed.congestion_control == whole.congestion_control == "bbr"
    assert streamed.congestion_control_evidence == whole.congestion_control_evidence


def test_fit_prints_and_writes_the_family(runs, tmp_path):
    """`traceflow fit` says what it found, with its confidence, and model.json carries it."""
    from conftest import invoke
    from traceflow.models.model import Model

    _, packets = runs("devbbr")
    source = tmp_path / "server_60s.parquet"
    t0 = packets["server_side"]["ts"].cast(pl.Int64).min()
    packets["server_side"].filter(pl.col("ts").cast(pl.Int64) < t0 + 60 * 10**9).write_parquet(
        source)
    res = invoke("fit", source, "-o", tmp_path / "m.json")
    assert res.exit_code == 0, res.output
    line = next(x for x in res.stdout.splitlines() if x.startswith("congestion control:"))
    assert line.startswith("congestion control: bbr (confidence ")
    hosts = Model.load(tmp_path / "m.json").hosts
    assert hosts.congestion_control == "bbr" and hosts.congestion_control_confidence > 0.5


def test_real_captures_cannot_tell_or_label_with_evidence():
    """Public captures (mostly short web flows, no sender-side loss history): no crash; no
    label without connections of 100 data segments, and none without loss episodes or a
    pacing test behind it."""
    from traceflow.pcap.reader import read_packets

    folder = shared_path("captures")
    paths = sorted(p for p in folder.iterdir() if p.suffix in (".pcap", ".pcapng"))
    assert len(paths) >= 10
    for path in paths:
        hosts = infer_hosts(pl.from_arrow(read_packets(path)))
        ev = hosts.congestion_control_evidence
        if hosts.congestion_control is None:
            assert hosts.quality["congestion_control"].startswith("default"), path.name
            continue
        assert ev["connections"] >= 1 and (ev["beta_episodes"] >= congestion.MIN_EPISODES
                                           or ev.get("pacing_tested", 0) >= 1), path.name


def _hosts(cc):
    from traceflow.models.model import Hosts

    return Hosts(mss=1000, segment_size=988, initial_window=10.0, initial_window_flows=5,
                 initial_window_observable=True, receiver_window=None, min_rto_s=None,
                 rto_samples=0, delayed_ack=None, segments_per_ack=None, vantage="sender",
                 sack=True, congestion_control=cc)


def test_replay_uses_the_family_the_simulator_knows(monkeypatch):
    from traceflow import replay
    from traceflow.sim import load_scenario
    from traceflow.sim.scenario_tcp import CONGESTION

    def tcp_of(cc, scenario=None):
        raw = replay.build_scenario(hosts=_hosts(cc), capacity_bps=1.5e6, duration_s=10.0,
                                    scenario=scenario)
        return load_scenario(raw).tcp.cc

    assert tcp_of("reno") == "reno"
    assert tcp_of(None) == "cubic"                    # the linux profile's
    assert tcp_of("reno", {"tcp": {"cc": "cubic"}}) == "cubic"   # a scenario wins
    assert replay.unknown_congestion_control(_hosts("reno")) is None
    # a family the simulator does not know: the profile's, and a warning that says so
    monkeypatch.delitem(CONGESTION, "bbr", raising=False)
    assert tcp_of("bbr") == "cubic"
    assert "bbr" in replay.unknown_congestion_control(_hosts("bbr"))


@pytest.mark.slow
@pytest.mark.parametrize("run", RUNS)
def test_whole_shared_runs_labelled_right(run):
    """Every shared run whole (300-900 s), both captures."""
    from traceflow.experiments.testbed_replay import read_run

    params, client, server = read_run(shared_path("testbed", run))
    for packets in (client, server):
        assert infer_hosts(packets).congestion_control == params["cc"]


#: kernel runs made with ../shared/tools/testbed.py (its --timestamps 0, --cc bbr) outside the
#: repository, e.g. /work/cc-runs: each run directory's label must be its params' cc from the
#: server side and its cc or "cannot tell" from the client side
KERNEL_RUNS = Path(os.environ.get("TRACEFLOW_CC_RUNS", "/work/cc-runs"))


def _kernel_runs():
    if not KERNEL_RUNS.is_dir():
        return []
    return sorted(p.name for p in KERNEL_RUNS.iterdir() if (p / "params.json").exists()
                  and any((p / f"server_side{s}").exists() for s in (".pcap", ".pcap.gz")))


@pytest.mark.slow
@pytest.mark.parametrize("run", _kernel_runs() or [pytest.param(
    None, marks=pytest.mark.skip(reason=f"no kernel runs under {KERNEL_RUNS} "
                                        "(TRACEFLOW_CC_RUNS; make them with testbed.py)"))])
def test_kernel_runs_never_labelled_wrong(run):
    from traceflow.experiments.testbed_replay import read_run

    params, client, server = read_run(KERNEL_RUNS / run)
    assert infer_hosts(server).congestion_control == params["cc"]
    assert infer_hosts(client).congestion_control in (params["cc"], None)

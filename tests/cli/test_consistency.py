"""Issue 19, consistency and conveniences: one -o/--output, typed DURATION and RATE options,
"Examples:" in every --help, shell completion, bundled scenarios by name, human units and UTC
times, series bins from the first packet, and the Python API (flows of a path, address text,
pandas). Oracles: tshark (IP lengths, addresses), the bundled scenario files."""
import json
import tomllib
import os
import subprocess
import sys

import click
import pytest
from conftest import REPO, invoke, shared_path, tshark_fields

from traceflow.cli.main import COMMANDS, cli
from traceflow.cli.options import Duration, DurationList, Rate
from traceflow.errors import ScenarioError

#: options that take a time or a rate, wherever they appear
DURATION_OPTIONS = {"--bin", "--scale", "--idle-timeout", "--duration", "--rtt", "--scales"}
RATE_OPTIONS = {"--capacity", "--rate"}


def all_commands():
    def walk(cmd, path):
        yield path, cmd
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(None):
                yield from walk(cmd.get_command(None, name), [*path, name])
    for name in sorted(COMMANDS):
        yield from walk(cli.get_command(None, name), [name])


COMMAND_PATHS = [p for p, _ in all_commands()]


@pytest.mark.parametrize("path", COMMAND_PATHS, ids=" ".join)
def test_help_has_examples_and_one_output_spelling(path):
    res = invoke(*path, "--help")
    assert res.exit_code == 0 and "Examples:" in res.stdout
    command = dict((tuple(p), c) for p, c in all_commands())[tuple(path)]
    for param in command.params:
        if isinstance(param, click.Option) and "-o" in param.opts:
            assert param.opts == ["-o", "--output"], path
        names = set(param.opts) if isinstance(param, click.Option) else set()
        if names & DURATION_OPTIONS and not isinstance(param.type, click.Choice):
            assert isinstance(param.type, (Duration, DurationList)), (path, param.opts)
        if names & RATE_OPTIONS:
            assert isinstance(param.type, Rate), (path, param.opts)


def test_rate_and_duration_values(tmp_path):
    capture = shared_path("captures", "ndpi_netflix.pcap")
    res = invoke("fit", capture, "-o", tmp_path / "m.json", "--capacity", "1.5Mbit", "--json")
    assert json.loads(res.stdout)["link"]["capacity_bps"] == 1.5e6
    bad = invoke("fit", capture, "-o", tmp_path / "m.json", "--capacity", "fast")
    assert bad.exit_code == 2 and "bad rate 'fast'" in bad.output
    bad = invoke("series", capture, "--bin", "ten ms")
    assert bad.exit_code == 2 and "bad duration" in bad.output
    a = json.loads(invoke("dispersion", capture, "--scales", "100ms,1s", "--rtt", "0.1",
                          "--json").stdout)
    assert a["dispersion"]["scales"] == ["100ms", "1s"] and a["cov"][0]["interval"] == "100ms"


def test_shell_completion_is_available():
    env = {**os.environ, "_TRACEFLOW_COMPLETE": "bash_source"}
    script = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main"], env=env,
                            capture_output=True, text=True, timeout=60).stdout
    assert "_traceflow_completion" in script and "complete " in script
    env = {**os.environ, "_TRACEFLOW_COMPLETE": "bash_complete", "COMP_WORDS": "traceflow fl",
           "COMP_CWORD": "1"}
    words = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main"], env=env,
                           capture_output=True, text=True, timeout=60).stdout
    assert "flows" in words
    # how to turn it on is in the docs (the README keeps to the first hour)
    docs = (REPO / "docs" / "capture.md").read_text()
    assert "_TRACEFLOW_COMPLETE=bash_source traceflow" in docs


def test_bundled_scenarios_by_name_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    listing = invoke("scenarios", "list").stdout
    assert "dumbbell" in listing and "[experiment: traceflow reproduce]" in listing
    shown = invoke("scenarios", "show", "dumbbell").stdout
    assert shown == (REPO / "replays" / "dumbbell.toml").read_text()
    res = invoke("simulate", "dumbbell", "-o", "run", "--set", "simulation.duration=1", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["duration_s"] == pytest.approx(1.0, abs=0.01)
    capture = shared_path("captures", "ndpi_netflix.pcap")
    assert invoke("fit", capture, "-o", "m.json").exit_code == 0
    res = invoke("replay", "m.json", "--scenario", "replay_testbed", "--duration", "5s", "-o",
                 "rr", "--json")
    assert res.exit_code == 0, res.output
    bundled = tomllib.loads((REPO / "replays" / "replay_testbed.toml").read_text())
    assert json.loads(res.stdout)["bottleneck_rate_bps"] == bundled["topology"]["bottleneck"]["rate"]
    # a missing file or name is "not found"; a file that is there but broken is "invalid TOML"
    for spec in ("nosuch", "missing.toml"):
        res = invoke("simulate", spec, "-o", "r2")
        assert isinstance(res.exception, ScenarioError)
        assert "not found" in str(res.exception) and "TOML" not in str(res.exception)
    (tmp_path / "broken.toml").write_text("[simulation\nduration = ")
    res = invoke("simulate", "broken.toml", "-o", "r3")
    assert "invalid TOML" in str(res.exception)


def test_series_rate_does_not_depend_on_the_bin_and_matches_tshark():
    """Bins start at the first packet; the mean rate is over the packets' own span: the IP bytes
    tshark reads, over the same span, at every bin width."""
    capture = shared_path("captures", "ndpi_netflix.pcap")
    rows = tshark_fields(capture, "frame.time_epoch", "ip.len")
    times = [float(t) for t, _ in rows]
    total = sum(int(n) for _, n in rows)
    span = max(times) - min(times)
    rates = []
    for width in ("10ms", "1s", "7s"):
        summary = json.loads(invoke("series", capture, "--bin", width, "--json").stdout)
        assert summary["bytes"] == total
        rates.append(summary["mean_rate_bps"])
    assert rates[0] == rates[1] == rates[2] == pytest.approx(8 * total / span, rel=1e-6)
    text = invoke("series", capture, "--bin", "1s").stdout
    assert "from 2017-01-13 14:50:30.789585 UTC" in text and "kbit/s" in text


def test_text_outputs_have_units_and_no_python_reprs(tmp_path):
    capture = shared_path("captures", "ndpi_netflix.pcap")
    outputs = [invoke("fit", capture, "-o", tmp_path / "m.json").stdout,
               invoke("replay", tmp_path / "m.json", "-o", tmp_path / "run").stdout,
               invoke("simulate", "dumbbell", "-o", tmp_path / "sim",
                      "--set", "simulation.duration=1").stdout,
               invoke("ingest", capture, "-o", tmp_path / "p.parquet").output,
               invoke("flows", capture, "--proto", "udp").stdout]
    for text in outputs:
        assert "None" not in text and "{}" not in text and "nan" not in text, text
    assert "kbit/s" in outputs[0] and "UTC" in outputs[0] and "kbit/s" in outputs[1]
    assert "Mbit/s" in outputs[2]


def test_python_api_flows_of_a_path_address_text_and_pandas():
    import traceflow
    from traceflow.flows import flows

    capture = shared_path("formats", "arkime_v6.pcap")
    by_path = flows(capture)
    assert by_path.equals(flows(traceflow.read_packets(capture)))
    packets = traceflow.with_address_strings(traceflow.read_packets(capture))
    # the outer header's address (ICMP errors quote an inner one, which tshark lists second)
    theirs = [(r[0] or r[1]).split(",")[0] for r in tshark_fields(capture, "ip.src", "ipv6.src")]
    assert packets["src"].to_list() == theirs
    assert isinstance(traceflow.load_packets(capture), type(by_path))  # one table type: Polars
    pytest.importorskip("pandas")
    assert by_path.to_pandas().shape == by_path.shape

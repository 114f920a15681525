"""Issue 47: a newcomer's first hour. Each item of the issue's list, run as the user runs it (the
``traceflow`` command, or Click's runner), checked against tshark/capinfos where a number is at
stake, otherwise against the line the issue asks for."""
import datetime as dt
import gzip
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from conftest import REPO, invoke, require_tool, shared_path

SAMPLE = REPO / "datasets" / "samples" / "sim_dumbbell_a135.pcap.gz"
TRACEFLOW = [sys.executable, "-P", "-m", "traceflow.cli.main"]


def run(*args, env=None, **kw):
    return subprocess.run([*TRACEFLOW, *map(str, args)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})}, **kw)


def first_packets(tmp_path, n, name="short.pcap"):
    """The sample's first ``n`` packets as a pcap (nanosecond, as the sample)."""
    with gzip.open(SAMPLE, "rb") as f:
        data = f.read()
    pos, out = 24, [data[:24]]
    for _ in range(n):
        caplen = struct.unpack("<I", data[pos + 8:pos + 12])[0]
        out.append(data[pos:pos + 16 + caplen])
        pos += 16 + caplen
    path = tmp_path / name
    path.write_bytes(b"".join(out))
    return path


def tshark_epoch(capture, count=1):
    rows = subprocess.run(["tshark", "-n", "-r", str(capture), "-c", str(count), "-T", "fields",
                           "-e", "frame.time_epoch"], capture_output=True, text=True,
                          timeout=120).stdout.split()
    return [float(r) for r in rows]


# -- the command itself ---------------------------------------------------------------------------

def test_bare_traceflow_prints_its_help_on_lines():
    res = run()
    assert res.returncode == 0 and res.stderr == ""
    lines = res.stdout.splitlines()
    assert lines[0].startswith("Usage: traceflow") and "Commands:" in lines
    from traceflow.cli.main import COMMANDS
    listed = {line.split()[0] for line in lines[lines.index("Commands:") + 1:]
              if line.startswith("  ") and line[2] != " "}
    assert listed == set(COMMANDS)


def test_unknown_command_suggests_the_closest():
    res = run("flow", "x.pcap")
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr == ("traceflow: error: no such command 'flow' (did you mean 'flows'?); "
                          "traceflow --help lists them\n")


def test_a_reader_that_stops_reading_ends_the_command_with_status_0(tmp_path):
    """``traceflow flows ... -o - | head -1``: status 0, nothing on stderr."""
    proc = subprocess.Popen([*TRACEFLOW, "flows", str(SAMPLE), "-o", "-", "--head", "5000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().startswith("┌".encode())
    proc.stdout.close()
    assert proc.wait(timeout=300) == 0
    assert b"Error" not in proc.stderr.read()


def test_unknown_column_suggests_the_closest(tmp_path):
    flows = tmp_path / "flows.parquet"
    assert run("flows", SAMPLE, "-o", flows).returncode == 0
    res = run("tail", flows, "--column", "byts")
    assert res.returncode == 2
    assert "no column 'byts' (did you mean 'bytes'?)" in res.stderr
    assert res.stderr.count("\n") == 1 and "rtt_p90" in res.stderr  # every column listed


# -- info --------------------------------------------------------------------------------------

def capinfos(capture):
    """capinfos' snapshot length(s) and strict time order of ``capture``."""
    require_tool("capinfos")
    out = subprocess.run(["capinfos", str(capture)], capture_output=True, text=True,
                         timeout=120).stdout
    header = [line.split("file hdr:")[1].strip() for line in out.splitlines()
              if "file hdr:" in line][0]
    interfaces = [int(line.split("=")[1]) for line in out.splitlines() if "Capture length" in line]
    ordered = [line.split(":")[1].strip() for line in out.splitlines()
               if line.startswith("Strict time order")][0]
    return header, interfaces, ordered


@pytest.mark.parametrize("name", [None, "libtrace_vlan.pcap", "pcapplusplus_pcapng-example.pcapng",
                                  "tcpdump_mptcp-v0.pcap"])
def test_info_snapshot_length_and_time_order_are_capinfos(name):
    capture = SAMPLE if name is None else shared_path("formats", name)
    header, interfaces, ordered = capinfos(capture)
    res = invoke("info", capture, "--json")
    assert res.exit_code == 0, res.output
    info = json.loads(res.stdout)
    expected = [int(header.split()[0])] if header != "(not set)" else interfaces
    assert info["snaplens"] == expected
    assert str(info["time_ordered"]) == ordered
    text = invoke("info", capture).stdout
    assert ("time order:    strict" in text) == (ordered == "True")
    assert f"snapshot len:  {expected[0]:,} bytes" in text


def test_info_takes_globs_and_directories_as_flows_does(tmp_path):
    (tmp_path / "a").mkdir()
    for i in range(2):
        first_packets(tmp_path / "a", 50 + i, f"c{i}.pcap")
    (tmp_path / "a" / "notes.txt").write_text("not a capture")
    by_dir = invoke("info", tmp_path / "a", "--json")
    by_glob = invoke("info", str(tmp_path / "a" / "*.pcap"), "--json")
    assert by_dir.exit_code == by_glob.exit_code == 0, by_dir.output
    assert [d["records"] for d in json.loads(by_dir.stdout)] == [50, 51]
    assert json.loads(by_glob.stdout) == json.loads(by_dir.stdout)
    none = run("info", tmp_path / "*.pcapng")
    assert none.returncode == 2 and none.stderr == f"traceflow: error: {tmp_path}/*.pcapng: matches no files\n"


def test_info_warns_about_packets_years_before_the_rest(tmp_path):
    """The issue's capture: its first 26 packets five years before the rest. capinfos gives the
    span; the warning names the 26 packets and the gap, as series/fit refuse it."""
    short = first_packets(tmp_path, 300)
    data = bytearray(short.read_bytes())
    years = 5 * 365 * 86400
    pos = 24
    for i in range(300):
        sec, _, caplen = struct.unpack("<III", data[pos:pos + 12])
        if i >= 26:
            struct.pack_into("<I", data, pos, sec + years)
        pos += 16 + caplen
    stepped = tmp_path / "stepped.pcap"
    stepped.write_bytes(bytes(data))
    res = invoke("info", stepped)
    assert res.exit_code == 0
    warning = [line for line in res.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1 and "26 packets come 4.38e+04 h before the rest" in warning[0]
    assert "series, fit and report will refuse it" in warning[0]
    quiet = invoke("info", short)
    assert "warning" not in quiet.stderr


# -- output conventions --------------------------------------------------------------------------

def test_csv_timestamps_are_iso_with_offset_as_json(tmp_path):
    """series' first bin starts at the first packet (tshark's time), written the same way in CSV
    and JSON lines."""
    require_tool("tshark")
    for suffix in ("csv", "jsonl"):
        assert invoke("series", SAMPLE, "--bin", "1s", "-o", tmp_path / f"s.{suffix}").exit_code == 0
    csv_t = [line.split(",")[0] for line in (tmp_path / "s.csv").read_text().splitlines()[1:]]
    json_t = [json.loads(line)["t"] for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert csv_t == json_t and csv_t[0].endswith("+00:00")
    first = dt.datetime.fromisoformat(csv_t[0])
    assert first.timestamp() == pytest.approx(tshark_epoch(SAMPLE)[0], abs=1e-6)


def test_flows_parquet_start_end_are_utc_instants(tmp_path):
    require_tool("tshark")
    for name, extra in (("streamed.parquet", []), ("selected.parquet", ["--proto", "tcp"])):
        out = tmp_path / name
        assert invoke("flows", SAMPLE, "-o", out, *extra).exit_code == 0
        schema = pq.read_schema(out)
        assert str(schema.field("start").type) == str(schema.field("end").type) == \
            "timestamp[ns, tz=UTC]"
        start = pl.read_parquet(out)["start"][0]
        assert start.timestamp() == pytest.approx(tshark_epoch(SAMPLE)[0], abs=1e-6)
    # a --filter on start with a TIMESTAMP literal still selects by the instant
    res = invoke("tail", tmp_path / "streamed.parquet", "--column", "bytes", "--min-tail", "10",
                 "--filter", "start >= TIMESTAMP '1970-01-01 00:02:00'", "--json")
    everything = pl.read_parquet(tmp_path / "streamed.parquet")
    later = everything.filter(pl.col("start") >= dt.datetime(1970, 1, 1, 0, 2, tzinfo=dt.UTC))
    assert res.exit_code == 0 and json.loads(res.stdout)["n"] == later.height < everything.height


def test_sweep_results_are_null_where_the_summaries_are(tmp_path):
    out = tmp_path / "sweep"
    res = invoke("sweep", "dumbbell", "--grid", "topology.bottleneck.rate=5e6,1e7", "--set",
                 "simulation.duration=1", "-o", out)
    assert res.exit_code == 0, res.output
    results = pl.read_parquet(out / "results.parquet")
    floats = [c for c, t in results.schema.items() if t.is_float()]
    assert sum(results[c].is_nan().sum() for c in floats) == 0
    for row in results.iter_rows(named=True):
        summary = json.loads((out / "cells" / f"{row['cell']}.json").read_text())["summary"]
        nulls = {k for k, v in summary.items() if v is None}
        assert nulls and nulls == {k for k in summary if k in row and row[k] is None}


def test_too_short_captures_suggest_a_bin_that_works(tmp_path):
    """hurst: the suggested --bin gives the estimate; dispersion: n/a (never nan) and the
    suggested --bin/--scales give a slope."""
    short = first_packets(tmp_path, 30)
    res = run("hurst", short)
    assert res.returncode == 2 and res.stderr.endswith("try a smaller --bin, e.g. --bin 100us\n")
    assert invoke("hurst", short, "--bin", "100us", "--json").exit_code == 0
    res = invoke("dispersion", short)
    assert res.exit_code == 0 and "nan" not in res.stdout
    assert "log-log slope of var/mean: n/a" in res.stdout
    hint = res.stdout.splitlines()[-1]
    args = hint.split("e.g. ")[1].split()
    again = invoke("dispersion", short, *args)
    assert again.exit_code == 0 and "n/a" not in again.stdout


# -- datasets, scenarios, levels ---------------------------------------------------------------------

def test_absent_datasets_say_how_to_get_them(tmp_path):
    env = {"TRACEFLOW_SHARED": str(tmp_path / "nowhere")}
    listing = run("datasets", "list", env=env)
    assert listing.returncode == 0
    assert f"absent (looked for in {tmp_path / 'nowhere'}/datasets/testbed/dev10m)" in listing.stdout
    assert "TRACEFLOW_SHARED=/path/to/shared" in listing.stdout
    path = run("datasets", "path", "testbed-dev10m", env=env)
    assert path.returncode == 2 and path.stdout == ""
    assert path.stderr.startswith("traceflow: error: dataset 'testbed-dev10m' is not present")
    assert path.stderr.count("\n") == 1
    # a bundled sample is present wherever traceflow is installed (the checkout, site-packages)
    bundled = Path(run("datasets", "path", "sample-sim-dumbbell", "sim_dumbbell_a135.pcap.gz",
                       env=env).stdout.strip())
    assert bundled.name == SAMPLE.name and bundled.read_bytes() == SAMPLE.read_bytes()


def test_every_listed_scenario_has_a_description():
    res = invoke("scenarios", "list", "--json")
    rows = json.loads(res.stdout)
    assert "tcpmt_base" in {r["name"] for r in rows} and "setups" not in {r["name"] for r in rows}
    assert all(r["description"].strip() for r in rows)
    for r in rows:  # and each runs as a scenario: a TOML the simulator's schema reads
        assert r["kind"] in ("scenario", "experiment")


def test_levels_direction_equals_tshark_selection(tmp_path):
    """levels --direction dst:NET on the capture = levels of the packets tshark selects."""
    require_tool("tshark")
    selected = tmp_path / "dst.pcap"
    subprocess.run(["tshark", "-n", "-r", str(SAMPLE), "-Y", "ip.dst == 10.0.0.32/27", "-F",
                    "pcap", "-w", str(selected)], check=True, capture_output=True, timeout=120)
    args = ["--scale", "1s", "--levels", "4", "--json"]
    ours = json.loads(invoke("levels", SAMPLE, "--direction", "dst:10.0.0.32/27", *args).stdout)
    theirs = json.loads(invoke("levels", selected, *args).stdout)
    everything = json.loads(invoke("levels", SAMPLE, *args).stdout)
    assert ours["condprob"] == theirs["condprob"] and ours["edges"] == theirs["edges"]
    assert ours["edges"] != everything["edges"]


def test_values_that_cannot_be_computed_print_n_a(tmp_path):
    """A 300-packet capture has no Hurst estimate: fit prints n/a, as its JSON holds null."""
    short = first_packets(tmp_path, 300)
    res = invoke("fit", short, "-o", tmp_path / "m.json")
    assert res.exit_code == 0, res.output
    assert "nan" not in res.stdout
    hurst = json.loads((tmp_path / "m.json").read_text())["hurst"]
    shown = [line for line in res.stdout.splitlines() if line.startswith("Hurst (")][0]
    assert shown.split("): ", 1)[1] == ", ".join(f"{k} n/a" for k, v in hurst.items() if v is None)

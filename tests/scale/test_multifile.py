"""``traceflow ingest/flows`` over many files: partitioned Parquet datasets, one task per file."""
import json
import struct
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import shared_path

from traceflow.cli.main import cli
from traceflow.flows import flows
from traceflow.pcap.reader import read_packets

NAMES = ["zeek_wikipedia.pcap", "ndpi_synscan.pcap", "zeek_ftp_bruteforce.pcap",
         "sanders_http_espn.pcapng"]


@pytest.fixture(scope="module")
def captures():
    return [shared_path("captures", name) for name in NAMES]


@pytest.fixture
def capture_dir(tmp_path, captures):
    """A directory of links to the shared captures (a directory input; nothing copied)."""
    d = tmp_path / "caps"
    (d / "sub").mkdir(parents=True)
    for i, cap in enumerate(captures):
        (d / ("sub" if i % 2 else "") / cap.name).symlink_to(cap)
    (d / "README.txt").write_text("not a capture: ignored by the directory search")
    return d


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def run_cli(*args, cwd):
    return subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_ingest_dataset_matches_single_file_reads(tmp_path, captures):
    out = tmp_path / "packets"
    summary = run("ingest", *captures, "-o", out, "--dataset", "--workers", 2, "--json")
    counts = [read_packets(cap).num_rows for cap in captures]
    assert all(counts)
    parts = sorted(out.glob("*.parquet"))
    assert len(parts) == len(captures) == len(summary["files"])
    # per-file counts: the summary, the part and a direct read of the capture agree
    assert [f["packets"] for f in summary["files"]] == counts
    assert [pl.scan_parquet(p).select(pl.len()).collect().item() for p in parts] == counts
    assert [f["path"] for f in summary["files"]] == [str(c.resolve()) for c in captures]
    assert summary["packets"] == sum(counts) == summary["records"]
    assert summary["protocols"]["tcp"] == sum(f["protocols"]["tcp"] for f in summary["files"])
    lazy = pl.scan_parquet(out / "*.parquet")
    assert lazy.select(pl.len()).collect().item() == sum(counts)
    # the dataset holds the same packets as one single-file ingest of the same captures
    single = tmp_path / "all.parquet"
    one = run("ingest", *captures, "-o", single, "--json")
    assert one["packets"] == sum(counts) and [f["packets"] for f in one["files"]] == counts
    assert lazy.collect().equals(pl.read_parquet(single))


def test_flows_dataset_equals_per_file_flows(tmp_path, captures, capture_dir):
    out = tmp_path / "flows"
    summary = run("flows", capture_dir, "-o", out, "--dataset", "--workers", 2,
                  "--idle-timeout", "60s", "--json")
    ds = pl.scan_parquet(out / "*.parquet").collect()
    expected = {str(c.resolve()): flows(pl.from_arrow(read_packets(c)).lazy(), idle_timeout=60.0)
                for c in captures}
    assert ds.height == summary["flows"] == sum(t.height for t in expected.values())
    assert {Path(f["file"]).name: f["flows"] for f in summary["files"]} == {
        Path(s).name: t.height for s, t in expected.items()}
    per_source = ds.group_by("source").agg(pl.len(), pl.sum("packets"), pl.sum("bytes"))
    assert sorted(per_source.iter_rows()) == sorted(
        (s, t.height, t["packets"].sum(), t["bytes"].sum()) for s, t in expected.items())
    # flow_id restarts in every part; (source, flow_id) identifies a flow
    assert ds.select(pl.struct("source", "flow_id").n_unique()).item() == ds.height
    for source, table in expected.items():
        part = ds.filter(pl.col("source") == source).drop("source").sort("flow_id")
        # the parts mark start/end UTC (issue 47)
        assert part.equals(table.sort("flow_id").with_columns(
            pl.col("start", "end").dt.replace_time_zone("UTC")))


def test_glob_and_directory_inputs(tmp_path, capture_dir):
    glob = capture_dir / "**" / "*.pcap"       # the .pcap files (also in sub/), not .pcapng
    packets = run("ingest", glob, "-o", tmp_path / "p", "--dataset", "--workers", 1, "--json")
    paths = [f["path"] for f in packets["files"]]
    assert len(paths) == sum(n.endswith(".pcap") for n in NAMES)
    assert all(p.endswith(".pcap") for p in paths)
    # a packets dataset directory is an input too: flows of its parts equal flows of the captures
    from_parts = run("flows", tmp_path / "p", "--idle-timeout", "60s", "--json")
    direct = run("flows", glob, "--idle-timeout", "60s", "--json")
    assert from_parts["flows"] == direct["flows"] > 0
    assert [f["flows"] for f in from_parts["files"]] == [f["flows"] for f in direct["files"]]
    # without --dataset several inputs still make one table, in order
    single = run("ingest", capture_dir, "-o", tmp_path / "one.arrow", "--json")
    assert single["format"] == "arrow" and len(single["files"]) == len(NAMES)
    assert single["packets"] == sum(f["packets"] for f in single["files"])


def test_bad_file_among_good_ones_leaves_nothing(tmp_path, captures):
    bad = tmp_path / "bad.pcap"
    data = bytearray(captures[0].read_bytes())
    struct.pack_into("<I", data, 24 + 8, 0x7FFFFFFF)   # the first record's length: corrupt
    bad.write_bytes(bytes(data))
    for command in ("ingest", "flows"):
        out = tmp_path / "out" / command
        proc = run_cli(command, captures[0], bad, captures[1], "-o", out, "--dataset",
                       "--workers", 2, cwd=tmp_path)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, proc.stderr
        assert "bad.pcap" in lines[0] and "Traceback" not in proc.stderr
        assert not out.exists() and not list(out.parent.iterdir())


def test_capture_cut_short_among_good_ones_warns_once_and_keeps_its_records(tmp_path, captures):
    """A worker's warning reaches the user as the parent's one line, and the cut capture's
    complete records are kept (tcpdump killed mid-write)."""
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(captures[0].read_bytes()[:5000])
    out = tmp_path / "out"
    proc = run_cli("ingest", cut, captures[1], "-o", out, "--dataset", "--workers", 2, "--json",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("traceflow: warning: ")
    assert "cut.pcap: capture ends inside record" in lines[0]
    summary = json.loads(proc.stdout)
    assert summary["files"][0]["packets"] > 0 and summary["files"][0]["truncated_bytes"] > 0


def test_option_errors(tmp_path, captures):
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "notes.txt").write_text("mine")
    for args in (["ingest", captures[0], "-o", tmp_path / "x.parquet", "--workers", 2],
                 ["ingest", captures[0], "-o", keep / "..", "--dataset"],
                 ["ingest", captures[0], "-o", tmp_path / "d", "--dataset", "--format", "arrow"],
                 ["flows", captures[0], "--dataset"],
                 ["flows", tmp_path / "nothing" / "*.pcap", "-o", tmp_path / "d", "--dataset"]):
        proc = run_cli(*args, cwd=tmp_path)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert (keep / "notes.txt").read_text() == "mine"
    assert not (tmp_path / "d").exists() and not (tmp_path / "x.parquet").exists()


def test_flows_of_a_chunked_packets_dataset_equal_the_whole_capture(tmp_path):
    """A capture ingested in chunks is still one packet stream: flows never split at a chunk."""
    capture = shared_path("captures", "ndpi_netflix.pcap")
    packets = tmp_path / "packets"
    run("ingest", capture, "-o", packets, "--dataset", "--chunk-size", "64KiB", "--json")
    assert len(list(packets.glob("*-c*.parquet"))) > 3
    whole = flows(pl.from_arrow(read_packets(capture)).lazy())
    cols = ["packets", "bytes", "app_bytes_c2s", "app_bytes_s2c", "close", "handshake"]
    for args in ([], ["--dataset", "--workers", "2"]):
        out = tmp_path / f"flows{len(args)}"
        run("flows", packets, "-o", out if args else out.with_suffix(".parquet"), *args, "--json")
        table = pl.read_parquet(out / "*.parquet" if args else out.with_suffix(".parquet"))
        assert table.height == whole.height
        assert table.sort("start").select(cols).equals(whole.sort("start").select(cols))

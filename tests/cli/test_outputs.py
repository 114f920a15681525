"""Issue 19: output format from the suffix (one writer for every command), ``-o -`` prints a
table, an unknown suffix is an error, output directories get the umask's permissions. Oracle: the
tshark reference tables of the shared captures (streams, packet counts) and capinfos."""
import csv
import json
import os
import stat

import polars as pl
import pyarrow.ipc as ipc
import pytest
from conftest import REFERENCE, invoke, shared_path

from traceflow.errors import TraceflowError

NETFLIX = "ndpi_netflix.pcap"


def reference_streams(name):
    with open(REFERENCE / f"{name}.streams.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_flows_table_in_every_format_is_the_same_table(tmp_path):
    capture = shared_path("captures", NETFLIX)
    tables = {}
    for suffix in (".parquet", ".arrow", ".csv", ".tsv", ".json", ".jsonl"):
        out = tmp_path / f"flows{suffix}"
        res = invoke("flows", capture, "-o", out)
        assert res.exit_code == 0, res.output
        if suffix == ".parquet":
            assert out.read_bytes()[:4] == b"PAR1"
            tables[suffix] = pl.read_parquet(out)
            typed_columns = tables[suffix].columns
        elif suffix == ".arrow":
            ipc.open_file(out)  # an Arrow IPC file, not Parquet under another name
            tables[suffix] = pl.read_ipc(out)
        elif suffix in (".csv", ".tsv"):
            tables[suffix] = pl.read_csv(out, separator="\t" if suffix == ".tsv" else ",")
        else:
            lines = out.read_text().splitlines()
            assert list(json.loads(lines[0])) == typed_columns  # one object per row, in order
            tables[suffix] = pl.read_ndjson(out).select(typed_columns)
    typed = tables[".parquet"]
    assert tables[".arrow"].equals(typed)
    for suffix in (".csv", ".tsv", ".json", ".jsonl"):
        text = tables[suffix]
        assert text.columns == typed.columns and text.height == typed.height == 61
        # text formats: durations in seconds, addresses as text, times labelled UTC
        assert text["duration"].to_list() == pytest.approx(
            (typed["duration"].dt.total_nanoseconds() / 1e9).to_list())
        assert text["client_addr"].to_list() == typed["client_addr"].to_list()
        assert str(text["start"][0]).endswith(("+00:00", "+0000"))


def test_csv_flows_match_the_tshark_streams(tmp_path):
    """--proto tcp and a --filter on the flow table, written as CSV: the same connections as
    tshark's TCP streams with server port 443 (reference table)."""
    capture = shared_path("captures", NETFLIX)
    out = tmp_path / "https.csv"
    res = invoke("flows", capture, "--proto", "tcp", "--filter", "server_port = 443", "-o", out)
    assert res.exit_code == 0, res.output
    with open(out, newline="") as f:
        ours = {(r["client_addr"], r["client_port"], r["server_addr"], r["server_port"])
                for r in csv.DictReader(f)}
    theirs = {(r["client"], r["client_port"], r["server"], r["server_port"])
              for r in reference_streams(NETFLIX) if r["server_port"] == "443"}
    assert ours == theirs and len(ours) == 21


def test_dash_prints_a_table_and_head_limits_it(tmp_path):
    capture = shared_path("captures", NETFLIX)
    res = invoke("flows", capture, "-o", "-", "--head", "3")
    assert res.exit_code == 0, res.output
    assert "(3 of 61 rows; --head N shows more)" in res.stdout
    assert "192.168.1.7" in res.stdout and "UTC" in res.stdout
    assert "61 flows" in res.stderr and "61 flows" not in res.stdout  # the summary moves aside
    res = invoke("ingest", capture, "-o", "-", "--head", "2")
    assert res.exit_code == 0, res.output
    assert "(2 of 1793 rows" in res.stdout and "192.168.1.7" in res.stdout


def test_ingest_packets_as_csv_with_text_addresses(tmp_path):
    capture = shared_path("captures", NETFLIX)
    out = tmp_path / "packets.csv"
    res = invoke("ingest", capture, "-o", out, "--json")
    assert res.exit_code == 0, res.output
    table = pl.read_csv(out)
    reference = json.loads((REFERENCE / f"{NETFLIX}.packets.json").read_text())
    assert table.height == reference["packets"] == json.loads(res.stdout)["packets"]
    assert table.filter(pl.col("proto") == 6).height == reference["tcp"]
    assert table["src"][0] == "192.168.1.7"


@pytest.mark.parametrize("command", [["flows"], ["ingest"], ["series"]])
def test_unknown_suffix_is_an_error_naming_the_path(tmp_path, command):
    capture = shared_path("captures", NETFLIX)
    out = tmp_path / "table.xlsx"
    res = invoke(*command, capture, "-o", out)
    assert isinstance(res.exception, TraceflowError)
    message = str(res.exception)
    assert str(out) in message and "unknown table format '.xlsx'" in message
    assert "\n" not in message and not out.exists()


def test_series_writes_csv_and_json_outputs_refuse_other_suffixes(tmp_path):
    capture = shared_path("captures", NETFLIX)
    res = invoke("series", capture, "--bin", "1s", "-o", tmp_path / "s.csv")
    assert res.exit_code == 0, res.output
    assert pl.read_csv(tmp_path / "s.csv").columns == ["t", "bytes", "packets"]
    for args in (["fit", capture, "-o", tmp_path / "model.parquet"],
                 ["levels", capture, "-o", tmp_path / "levels.csv"]):
        res = invoke(*args)
        assert isinstance(res.exception, TraceflowError) and ".json" in str(res.exception)


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_output_directories_get_the_umask_permissions(tmp_path, umask):
    capture = shared_path("captures", "zeek_wikipedia.pcap")
    old = os.umask(umask)
    try:
        runs = [invoke("simulate", "dumbbell", "-o", tmp_path / "run", "--set",
                       "simulation.duration=0.2"),
                invoke("flows", capture, "-o", tmp_path / "flows", "--dataset")]
    finally:
        os.umask(old)
    for res in runs:
        assert res.exit_code == 0, res.output
    for name in ("run", "flows"):
        # not the 0700 of a temporary directory
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o777 & ~umask
        for f in (tmp_path / name).iterdir():
            assert stat.S_IMODE(f.stat().st_mode) == 0o666 & ~umask, f

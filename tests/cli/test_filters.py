"""Issue 19: ``--filter`` (Polars SQL) and ``--proto`` on flows, rtt, tail, fit, levels and report,
one implementation (:mod:`traceflow.selection`). Oracle: tshark — its reference stream table of the
capture, and captures it filtered itself (``tshark -Y tcp -w``)."""
import csv
import json
import subprocess

import numpy as np
import pytest
from conftest import invoke, require_tool, shared_path

from traceflow.errors import TraceflowError

NETFLIX = "ndpi_netflix.pcap"


@pytest.fixture(scope="module")
def netflix():
    return shared_path("captures", NETFLIX)


@pytest.fixture(scope="module")
def tshark_tcp(netflix, tmp_path_factory):
    """The capture's TCP packets, selected by tshark itself."""
    require_tool("tshark")
    out = tmp_path_factory.mktemp("tshark") / "tcp.pcap"
    subprocess.run(["tshark", "-n", "-r", str(netflix), "-Y", "tcp", "-F", "pcap", "-w", str(out)],
                   check=True, capture_output=True, timeout=120)
    return out


def https_streams():
    with open(shared_path("reference", f"{NETFLIX}.streams.csv"), newline="") as f:
        return [r for r in csv.DictReader(f) if r["server_port"] == "443"]


def run_json(*args):
    res = invoke(*args, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_levels_proto_equals_tshark_selection(netflix, tshark_tcp):
    ours = run_json("levels", netflix, "--proto", "tcp", "--scale", "1s", "--levels", "4")
    theirs = run_json("levels", tshark_tcp, "--scale", "1s", "--levels", "4")
    everything = run_json("levels", netflix, "--scale", "1s", "--levels", "4")
    assert ours["condprob"] == theirs["condprob"] and ours["edges"] == theirs["edges"]
    assert ours["edges"] != everything["edges"]  # the UDP packets were really left out


def test_fit_filter_equals_tshark_selection(netflix, tshark_tcp, tmp_path):
    ours = run_json("fit", netflix, "--filter", "proto = 6", "-o", tmp_path / "a.json")
    theirs = run_json("fit", tshark_tcp, "-o", tmp_path / "b.json")
    for key in ("link", "arrivals", "sizes", "hurst", "levels"):
        assert ours[key] == theirs[key], key
    assert ours["span"]["packets"] == theirs["span"]["packets"] == 1748


def test_report_proto_counts_tshark_tcp_packets(tmp_path):
    name = "zeek_wikipedia.pcap"
    reference = json.loads(shared_path("reference", f"{name}.packets.json").read_text())
    summary = run_json("report", shared_path("captures", name), "--proto", "tcp", "-o",
                       tmp_path / "r")
    rows = {r["quantity"]: r["raw"] for r in summary["sections"][0]["rows"]}
    assert rows["packets"] == reference["tcp"] and summary["proto"] == "tcp"


def test_rtt_filter_matches_tshark_initial_rtt(netflix):
    """rtt --filter on the flow table: the quantiles of tshark's initial_rtt over the same
    (port 443) streams."""
    summary = run_json("rtt", netflix, "--filter", "server_port = 443", "--column",
                       "rtt_handshake", "--per", "connection")
    assert summary["column"] == "rtt_handshake"
    theirs = np.array([float(r["initial_rtt"]) for r in https_streams() if r["initial_rtt"]])
    assert summary["quantiles"]["n"] == theirs.size == 20
    assert summary["quantiles"]["p50"] == pytest.approx(np.quantile(theirs, 0.5), abs=1e-6)


def test_tail_filter_fits_the_same_sample_as_tshark_streams(netflix, tmp_path):
    """tail --filter over flows of the capture and tail of tshark's stream table: the same
    packet counts, so the same fit."""
    ref = tmp_path / "streams.csv"
    with open(ref, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["packets"])
        writer.writerows([r["packets"]] for r in https_streams())
    ours = run_json("tail", netflix, "--filter", "server_port = 443", "--column", "packets",
                    "--min-tail", "10")
    theirs = run_json("tail", ref, "--column", "packets", "--min-tail", "10")
    assert ours["n"] == theirs["n"] == 21
    assert ours["alpha"] == theirs["alpha"] and ours["xmin"] == theirs["xmin"]


def test_flows_proto_udp_and_bad_filters(netflix):
    summary = run_json("flows", netflix, "--proto", "udp")
    assert summary["flows"] == 13 and summary["tcp"]["connections"] == 0
    res = invoke("flows", netflix, "--filter", "no_such_column > 1")
    assert isinstance(res.exception, TraceflowError)
    assert "no_such_column" in str(res.exception) and "server_port" in str(res.exception)
    res = invoke("rtt", netflix, "--filter", "server_port >")
    assert isinstance(res.exception, TraceflowError) and "bad --filter" in str(res.exception)

"""``traceflow rtt`` keeps only what its summary reads (issue 17): :class:`RttRows` takes the flow
table chunk by chunk, ~50 bytes per flow (no address text per flow), and gives the summary the
whole table gives.

Oracle: the real-kernel testbed run rtt3dev, whose three client hosts sit behind configured
round-trip delays of 10, 60 and 180 ms (its params.json): each host pair's minimum path RTT lies
just above its configured delay, at either capture point."""
import json
import subprocess
import sys

import polars as pl
import pytest

from conftest import shared_path
from traceflow.flows import load_flows
from traceflow.flows.rtt import RttRows, rtt_summary

CONFIGURED_MS = {"10.201.2.10": 10.0, "10.201.2.11": 60.0, "10.201.2.12": 180.0}


@pytest.fixture(scope="module")
def server_flows():
    return load_flows([shared_path("testbed", "rtt3dev", "server_side.pcap.gz")])


@pytest.mark.parametrize("options", [{}, {"per": "/24", "classes": [0.03, 0.1]},
                                     {"column": "rtt_handshake", "per": "connection"}])
@pytest.mark.parametrize("addresses", [pl.String, pl.Categorical])
def test_chunks_give_the_summary_of_the_whole_table(server_flows, options, addresses):
    # fit gives its flows' addresses as categories (traceflow.models.fitstream)
    options = dict(options)
    classes = options.pop("classes", "auto")
    rows = RttRows(**options)
    typed = server_flows.with_columns(pl.col("client_addr", "server_addr").cast(addresses))
    for chunk in typed.iter_slices(997):
        rows.add(chunk)
    assert len(rows.parts) > 5
    whole = rtt_summary(server_flows, classes=classes, **options)
    assert json.dumps(rows.summary(classes=classes)) == json.dumps(whole)  # NaN medians too
    # no text per flow: the paths are numbered, their text kept once
    assert all(dtype != pl.String for dtype in rows.rows.schema.values())
    assert rows.paths.height == (len(CONFIGURED_MS) if options.get("per", "pair") == "pair"
                                 else 1 if options.get("per") == "/24" else 0)


@pytest.mark.parametrize("side", ["server_side", "client_side"])
def test_streamed_cli_finds_the_configured_path_delays(side):
    path = shared_path("testbed", "rtt3dev", f"{side}.pcap.gz")
    out = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "rtt", str(path),
                          "--json"], capture_output=True, text=True, check=True).stdout
    summary = json.loads(out)
    assert summary == json.loads(json.dumps(rtt_summary(load_flows([path]).filter(
        pl.col("proto") == 6))))
    paths = {row["host_b"]: row["rtt_min"] * 1e3 for row in summary["paths"]}
    assert paths.keys() == CONFIGURED_MS.keys()
    for host, configured in CONFIGURED_MS.items():
        # above the configured delay by transmission and host reaction times only (< 1 ms)
        assert configured <= paths[host] < configured + 1.0, (host, paths[host])
    assert summary["classes"]["n_classes"] == 3


def test_path_ids_are_unordered_pairs_numbered_by_first_appearance_across_chunks():
    # both directions of a pair share a path; a missing address is a host of its own; a chunk
    # that brings an old pair back gives it its old number
    first = pl.DataFrame({"client_addr": ["10.0.0.1", "10.0.0.2", "10.0.0.1", None],
                          "server_addr": ["10.0.0.2", "10.0.0.1", "10.0.0.3", "10.0.0.3"],
                          "rtt_min": [0.05, 0.04, 0.2, 0.3]})
    second = pl.DataFrame({"client_addr": ["10.0.0.3", "10.0.0.9", "10.0.0.3"],
                           "server_addr": [None, "10.0.0.2", "10.0.0.1"],
                           "rtt_min": [0.25, 0.1, 0.15]})
    rows = RttRows(column="rtt_min", per="pair")
    rows.add(first)
    rows.add(second)
    assert rows.rows["path"].to_list() == [0, 0, 1, 2, 2, 3, 1]
    assert rows.connection_rtts("rtt_min").to_list() == [0.04, 0.04, 0.15, 0.25, 0.25, 0.1, 0.15]

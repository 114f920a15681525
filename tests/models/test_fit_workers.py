"""``fit --workers N`` (issue 17): N processes each stream the connections of one hash partition
of a capture and their passes are merged; the model is the one a single pass makes, byte for
byte. The single pass is itself checked against the whole-table functions
(test_fit_stream.py)."""
import filecmp

import numpy as np
import pytest

from conftest import invoke, shared_path
from traceflow import compare as cmp
from traceflow.models.fit import FLOW_COLUMNS
from traceflow.models.fitstream import Bins, stream_inputs

CAPTURES = [("captures", "ppa_ftp-crack.pcap"),          # its clock steps back 44 s
            ("captures", "slips_test-cc-capture-1.pcap"),  # UDP and other non-TCP packets
            ("captures", "ndpi_netflix.pcap"),
            ("testbed", "rtt3dev", "server_side.pcap.gz")]


@pytest.mark.parametrize("name", CAPTURES, ids=lambda n: n[-1])
def test_passes_of_hash_partitions_merge_into_the_single_pass(name):
    """Three partitions streamed one after another in this process and merged: every result
    fit reads equals the single pass's (flow table, every column; end-host facts; link series
    and capacity bins; span; exchanges; SYN/ACK gaps)."""
    path = shared_path(*name)
    one, (table,) = stream_inputs([path], columns=FLOW_COLUMNS)
    merged, (parts_table,) = stream_inputs([path], partitions=3, columns=FLOW_COLUMNS)
    assert parts_table.equals(table)
    assert merged.hosts.result() == one.hosts.result()
    assert merged.data.origin == one.data.origin and merged.data.count == one.data.count
    assert np.array_equal(merged.data.series(merged.span()[1]), one.data.series(one.span()[1]))
    assert np.array_equal(merged.data.busy(), one.data.busy()) and merged.data.busy().size
    assert (merged.span(), merged.packets, merged.bytes) == (one.span(), one.packets, one.bytes)
    assert merged.exchanges == one.exchanges
    assert merged.synacks.table().equals(one.synacks.table())


def test_more_partitions_than_connections_of_some_inputs():
    """Seven partitions over the two inputs of one testbed run, over a web capture of 61 flows
    and over an IPv6 capture of one TCP connection among 41 other flows (most partitions hold
    none); every table and the facts are still the single pass's. (A pass's inputs are one span
    of time: captures years apart are refused as a clock step.)"""
    for paths in ([shared_path("testbed", "rtt3dev", side) for side in ("client_side.pcap.gz",
                                                                        "server_side.pcap.gz")],
                  [shared_path("captures", "ndpi_netflix.pcap")],
                  [shared_path("formats", "arkime_v6.pcap")]):
        one, tables = stream_inputs(paths, columns=FLOW_COLUMNS)
        merged, parts_tables = stream_inputs(paths, partitions=7, columns=FLOW_COLUMNS)
        assert all(a.equals(b) for a, b in zip(tables, parts_tables))
        assert merged.hosts.result() == one.hosts.result()
        assert np.array_equal(merged.data.busy(), one.data.busy())
        assert merged.exchanges == one.exchanges


def test_hosts_only_pass_of_partitions_merges_into_the_single_pass():
    """The ``--hosts-from`` pass (end-host facts only) of two inputs, in 2 partitions. Oracle
    besides the single pass: the testbed's Linux senders start with 10 segments, as the server
    side alone says (the client side, far from the senders, sees only a lower bound: 3). Before
    connection ids were made unique across inputs, the single pass joined the first flights of
    one input's connections with another's and said 31."""
    paths = [shared_path("testbed", "rtt3dev", side) for side in ("client_side.pcap.gz",
                                                                   "server_side.pcap.gz")]
    one, tables = stream_inputs(paths, flows=False)
    merged, parts_tables = stream_inputs(paths, partitions=2, flows=False)
    assert tables == parts_tables == [None, None]
    assert merged.hosts.result() == one.hosts.result()
    assert merged.hosts.result().initial_window == 10


def test_bins_merge_on_one_grid():
    """Bins of different packets on one grid (origins whole bins apart, one before the other)
    merge into the Bins of all the packets; bins on another grid are refused."""
    w = cmp.BIN_NS
    rng = np.random.default_rng(1)
    ts = np.sort(rng.integers(0, 50 * w, 400))
    size = rng.integers(40, 1500, ts.size).astype(np.float64)
    late = ts >= 20 * w
    every, first, second = Bins(int(ts[0])), Bins(int(ts[0])), Bins(int(ts[0]) + 20 * w)
    every.add(ts, size)
    first.add(ts[~late], size[~late])
    second.add(ts[late], size[late])
    for a, b in ((first, second), (second, first)):
        merged = Bins(a.origin)
        merged.merge(a)
        merged.merge(b)
        assert merged.origin == every.origin
        assert np.array_equal(merged.sums, every.sums)
        assert (merged.count, merged.total, merged.lo, merged.hi) == (
            every.count, every.total, every.lo, every.hi)
        assert np.array_equal(merged.busy(), every.busy())
    off = Bins(int(ts[0]) + w // 2)
    off.add(ts[:3], size[:3])
    with pytest.raises(ValueError, match="different grids"):
        every.merge(off)


def test_cli_workers_write_the_single_pass_model(tmp_path):
    """In worker processes: the same model file, byte for byte, with and without
    ``--hosts-from``, and of two inputs."""
    server = shared_path("testbed", "rtt3dev", "server_side.pcap.gz")
    client = shared_path("testbed", "rtt3dev", "client_side.pcap.gz")
    for name, extra in (("alone", []), ("hosts", ["--hosts-from", str(client)]),
                        ("two inputs", [str(client)])):
        outs = []
        for workers in (1, 2):
            out = tmp_path / f"{name}{workers}.json"
            res = invoke("fit", server, "-o", out, "--workers", workers, *extra)
            assert res.exit_code == 0, res.output
            outs.append(out)
        assert filecmp.cmp(*outs, shallow=False), name


def test_cli_workers_warn_once_about_a_cut_capture(tmp_path):
    """Every worker reads the whole capture, and so meets its cut end: the user hears it once."""
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(shared_path("captures", "slips_test-cc-capture-1.pcap").read_bytes()[:300_000])
    res = invoke("fit", cut, "-o", tmp_path / "m.json", "--workers", 2)
    assert res.exit_code == 0, res.output
    lines = [line for line in res.stderr.splitlines() if "capture ends inside record" in line]
    assert len(lines) == 1 and lines[0].startswith(f"traceflow: warning: {cut}")

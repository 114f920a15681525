"""``flows --workers N`` on one capture (issue 17): N processes each stream the connections of one
hash partition of the endpoint pairs; the table is the one a single pass makes, every column.

Oracle besides the single pass: tshark's TCP conversation count on the same capture."""
import subprocess
import sys

import polars as pl
import pytest

from conftest import require_tool, shared_path
from traceflow.flows import flows


@pytest.mark.parametrize("name", [("captures", "ppa_ftp-crack.pcap"),
                                  ("captures", "slips_test-cc-capture-1.pcap"),
                                  ("testbed", "rtt3dev", "client_side.pcap.gz")])
def test_workers_give_the_single_pass_table(name):
    """ppa_ftp-crack steps its clock back 44 s; every partition sees the whole capture's clock
    (trace end, re-ordering), so close reasons and EOF match too."""
    path = shared_path(*name)
    whole = flows(path)
    assert flows(path, partitions=2, workers=2).equals(whole)
    assert flows(path, partitions=3, workers=2).equals(whole)


@pytest.mark.parametrize("idle_timeout", [0.5, 5.0])
def test_partitions_expire_on_the_whole_streams_clock(idle_timeout):
    """ppa_ftp-crack is one capture twice over (its clock steps back 44 s), so whether a pair's
    state expired before its packets come again decides whether they join its connection.
    Expiry is swept on the whole stream's clock, at the same moments in every partition; when
    each partition swept on its own packets, 5 s gave 1326 flows in 2 partitions and 1320 in 3
    instead of 1324."""
    path = shared_path("captures", "ppa_ftp-crack.pcap")
    whole = flows(path, idle_timeout=idle_timeout)
    assert whole.height == {0.5: 1420, 5.0: 1324}[idle_timeout]
    for partitions in (2, 3):
        for batch_size in (1000, 65536):
            assert flows(path, idle_timeout=idle_timeout, partitions=partitions,
                         batch_size=batch_size).equals(whole)


def test_partitions_give_the_single_pass_table_on_every_shared_capture():
    """Every shared capture (pcap and pcapng, with and without clock steps), idle timeout 5 s,
    3 partitions in small batches: the single pass's table, every column."""
    from conftest import CAPTURES

    paths = sorted(p for p in CAPTURES.glob("*.pcap*")) if CAPTURES.is_dir() else []
    if not paths:
        pytest.skip("needs ../shared/datasets/captures (not present)")
    for path in paths:
        whole = flows(path, idle_timeout=5.0)
        assert flows(path, idle_timeout=5.0, partitions=3, batch_size=1000).equals(whole), path


def test_cli_workers_matches_tshark_conversations(tmp_path):
    require_tool("tshark")
    path = shared_path("captures", "slips_test-cc-capture-1.pcap")
    tables = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}.parquet"
        subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "flows", str(path),
                        "-o", str(out), "--workers", str(workers)], check=True,
                       capture_output=True)
        tables.append(pl.read_parquet(out))
    assert tables[1].equals(tables[0])
    conv = subprocess.run(["tshark", "-r", str(path), "-q", "-z", "conv,tcp"],
                          capture_output=True, text=True, check=True).stdout
    tshark_conversations = sum(1 for line in conv.splitlines() if "<->" in line)
    tcp = tables[0].filter(pl.col("proto") == 6)
    assert tcp.height == tshark_conversations > 10


def test_cli_workers_report_a_bad_record_as_one_pass_does(tmp_path):
    """A record no decoder can read, met in the worker processes: the one line and exit status
    (2, the input's fault) of one process, nothing written."""
    import struct

    bad = tmp_path / "bad.pcap"
    bad.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
                    + struct.pack("<IIII", 1, 0, 2**31 - 1, 2**31 - 1) + b"x" * 100)
    runs = []
    for workers in ("1", "2"):
        out = tmp_path / f"w{workers}.parquet"
        runs.append(subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "flows",
                                    str(bad), "-o", str(out), "--workers", workers],
                                   capture_output=True, text=True))
        assert not out.exists()
    assert [r.returncode for r in runs] == [2, 2]
    assert runs[1].stderr == runs[0].stderr
    assert runs[0].stderr.count("\n") == 1 and str(bad) in runs[0].stderr
    assert "exceeds the snapshot length" in runs[0].stderr

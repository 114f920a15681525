"""Streamed flows (issue 17): the flow table is the same, every column, whether the packets come
from the capture decoded batch by batch, from a packets Parquet, from one in-memory table, or in
batches of any size — and the CLI's chunk-by-chunk writer writes that same table. The rules
themselves are checked against tshark and the testbed ground truth in test_flows_reference.py."""
import subprocess
import sys

import polars as pl
import pyarrow.parquet as pq
import pytest
from conftest import shared_path

from traceflow.flows import flows, flows_with_rtt_samples
from traceflow.pcap.reader import read_packets

# a capture with TCP timestamps, one without, a pcapng with a 46-year timestamp glitch, a
# day-long trace with silences longer than the idle timeout
SMALL = [("captures", "slips_test-cc-capture-1.pcap"), ("captures", "ppa_ftp-crack.pcap"),
         ("formats", "pcapplusplus_pcapng-example.pcapng"), ("formats", "libtrace_sll.pcap.gz")]


@pytest.mark.parametrize("folder,name", SMALL)
def test_any_batch_size_and_source_give_the_same_flows(tmp_path, folder, name):
    path = shared_path(folder, name)
    packets = read_packets(path)
    whole, samples = flows_with_rtt_samples(packets, batch_size=packets.num_rows + 1)
    assert whole.height > 0
    parquet = tmp_path / "packets.parquet"
    pq.write_table(packets, parquet, row_group_size=5000)
    for source, batch in [(path, 65536), (parquet, 65536), (packets, 333),
                          (pl.from_arrow(packets).lazy(), 1000)]:
        table, s = flows_with_rtt_samples(source, batch_size=batch)
        assert table.equals(whole), (source, batch)
        assert s.equals(samples), (source, batch)


@pytest.mark.parametrize("timeout", [0.05, 0.5])
def test_expiry_inside_the_stream_changes_nothing(timeout):
    """Short idle timeouts make the splitter finish connections while streaming; the table is
    still the same as with one batch, and the same packets end up in flows."""
    packets = read_packets(shared_path("captures", "slips_test-cc-capture-1.pcap"))
    whole = flows(packets, idle_timeout=timeout, batch_size=packets.num_rows + 1)
    assert whole.height > flows(packets).height            # the timeout does split flows
    assert whole["packets"].sum() == pl.from_arrow(packets)["ip_version"].is_not_null().sum()
    for batch in (101, 4096):
        assert flows(packets, idle_timeout=timeout, batch_size=batch).equals(whole)


def test_cli_writes_the_same_table_chunk_by_chunk(tmp_path):
    path = shared_path("captures", "ppa_ftp-crack.pcap")
    out = tmp_path / "flows.parquet"
    subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "flows", str(path), "-o",
                    str(out)], check=True, capture_output=True)
    written = pl.read_parquet(out)
    assert written.drop("source").equals(flows(path))
    assert (written["source"] == path.name).all()


def test_testbed_capture_streamed_and_partitions():
    """A real 10 Mbit/s testbed capture: streamed from the file in small
    batches and in partitions, one table."""
    path = shared_path("testbed", "dev10m", "client_side.pcap.gz")
    whole = flows(read_packets(path), batch_size=1 << 30)
    assert whole.height > 20000
    assert flows(path, batch_size=10007).equals(whole)
    assert flows(path, partitions=3).equals(whole)

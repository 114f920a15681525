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


def _disordered(packets, seed=3, max_delay_ms=300):
    """``packets`` in the capture order of a merge of two interfaces whose packets reach the
    capture file up to ``max_delay_ms`` late (timestamps unchanged)."""
    import numpy as np

    df = pl.from_arrow(packets)
    rng = np.random.default_rng(seed)
    delay = rng.integers(0, max_delay_ms * 10**6, df.height) * (np.arange(df.height) % 2)
    key = df["ts"].dt.epoch("ns").to_numpy() + delay
    return df[np.argsort(key, kind="stable")]


def test_out_of_order_capture_gives_the_flows_of_its_sorted_version(tmp_path):
    packets = read_packets(shared_path("captures", "slips_test-cc-capture-1.pcap"))
    mixed = _disordered(packets)
    sorted_flows = flows(mixed.sort("ts", maintain_order=True))  # equal timestamps keep order
    assert not flows(mixed).equals(sorted_flows)          # the disorder does matter
    notes = []
    assert flows_with_rtt_samples(mixed, reorder=1.0, notes=notes)[0].equals(sorted_flows)
    assert notes[0]["reordered"] > 1000 and notes[0]["late"] == notes[0]["steps"] == 0
    # in partitions, each re-ordering the whole stream before it keeps its own packets
    assert flows(mixed, reorder=1.0, partitions=3, batch_size=997).equals(sorted_flows)
    # a window shorter than the disorder cannot fix it, and says so
    notes = []
    flows_with_rtt_samples(mixed, reorder=0.01, notes=notes)
    assert notes[0]["late"] > 0
    # the command re-orders by default and reports it
    parquet = tmp_path / "mixed.parquet"
    mixed.write_parquet(parquet)
    out = tmp_path / "flows.parquet"
    run = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "flows", str(parquet),
                          "-o", str(out)], check=True, capture_output=True, text=True)
    assert "re-ordered" in run.stderr and "could not" not in run.stderr
    assert pl.read_parquet(out).drop("source").equals(sorted_flows)


def test_backward_clock_step_is_reported_not_reordered():
    """ppa_ftp-crack.pcap holds the same traffic twice, the second copy 44.6 s earlier: the
    step is reported, nothing is moved across it."""
    packets = read_packets(shared_path("captures", "ppa_ftp-crack.pcap"))
    notes = []
    table, _ = flows_with_rtt_samples(packets, reorder=1.0, notes=notes)
    assert table.equals(flows(packets))
    assert notes[0]["steps"] == 1 and notes[0]["largest_step_s"] == pytest.approx(44.602753)
    assert notes[0]["reordered"] == notes[0]["late"] == 0

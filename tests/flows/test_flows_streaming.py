"""Streamed flows (issue 17): the flow table is the same, every column, whether the packets come
from the capture decoded batch by batch, from a packets Parquet, from one in-memory table, or in
batches of any size — and the CLI's chunk-by-chunk writer writes that same table. The rules
themselves are checked against tshark and the testbed ground truth in test_flows_reference.py."""
import subprocess
import sys

import numpy as np
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


@pytest.mark.parametrize("folder,name", SMALL[:2] + [("testbed", "dev10m/client_side.pcap.gz")])
def test_minima_only_stream_gives_the_same_rtt_min(folder, name):
    """Without the quantiles (fit's pass) only each open connection's smallest sample per half
    and its sample count are kept: every column but rtt_median/rtt_p90 is the same, in batches
    that split connections and with an idle timeout that expires them mid-stream."""
    from traceflow.flows.table import flow_chunks

    packets = read_packets(shared_path(folder, *name.split("/")))
    full = flows(packets)
    assert full["rtt_min"].is_not_null().sum() > 0
    for batch, timeout in ((packets.num_rows + 1, 300.0), (4096, 300.0), (777, 0.5)):
        if timeout != 300.0:
            full = flows(packets, idle_timeout=timeout)
        chunks = [chunk for chunk, stream in flow_chunks(packets, batch_size=batch,
                                                        idle_timeout=timeout,
                                                        rtt_quantiles=False)]
        table = pl.concat(chunks).select(full.columns)
        assert table.drop("rtt_median", "rtt_p90").equals(full.drop("rtt_median", "rtt_p90"))
        assert table["rtt_median"].null_count() == table["rtt_p90"].null_count() == table.height


def utc(table):
    """``table`` as a flows Parquet file holds it: start and end marked UTC (issue 47)."""
    return table.with_columns(pl.col("start", "end").dt.replace_time_zone("UTC"))


def test_cli_writes_the_same_table_chunk_by_chunk(tmp_path):
    path = shared_path("captures", "ppa_ftp-crack.pcap")
    out = tmp_path / "flows.parquet"
    subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "flows", str(path), "-o",
                    str(out)], check=True, capture_output=True)
    written = pl.read_parquet(out)
    assert written.drop("source").equals(utc(flows(path)))
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
    assert pl.read_parquet(out).drop("source").equals(utc(sorted_flows))


def test_backward_clock_step_is_reported_not_reordered():
    """ppa_ftp-crack.pcap holds the same traffic twice, the second copy 44.6 s earlier: the
    step is reported, nothing is moved across it."""
    packets = read_packets(shared_path("captures", "ppa_ftp-crack.pcap"))
    notes = []
    table, _ = flows_with_rtt_samples(packets, reorder=1.0, notes=notes)
    assert table.equals(flows(packets))
    assert notes[0]["steps"] == 1 and notes[0]["largest_step_s"] == pytest.approx(44.602753)
    assert notes[0]["reordered"] == notes[0]["late"] == 0


def _split_all(cols, idle_ns, max_rows):
    """Feed ``cols`` to a FlowSplitter holding ``max_rows`` rows, taking its rows whenever
    they fill: (the rows in the order they were finished, how often the rows filled)."""
    from traceflow.flows.flowsplit import FlowSplitter

    splitter, first, pieces, fills = FlowSplitter(idle_ns, max_rows=max_rows), 0, [], 0
    n = cols["ts"].size
    while first < n:
        used, _ = splitter.feed({k: v[first:] for k, v in cols.items()}, True, n)
        assert used > 0 or splitter.rows_full
        fills += splitter.rows_full
        pieces.append(splitter.finished())
        first += used
    splitter.close()
    pieces.append(splitter.finished())
    return {k: np.concatenate([p[k] for p in pieces]) for k in pieces[0]}, fills


def _udp_packets(n_pairs, idle_ns):
    """One UDP packet from each of ``n_pairs`` hosts, then one from another host after the idle
    timeout, whose expiry sweep finishes the ``n_pairs`` connections at once."""
    from traceflow.flows.flowsplit import NO_SWEEP

    n = n_pairs + 1
    cols = {"ts": np.r_[np.arange(n_pairs), 2 * idle_ns].astype(np.int64),
            "src_hi": np.zeros(n, np.uint64), "src_lo": np.arange(1, n + 1, dtype=np.uint64),
            "dst_hi": np.zeros(n, np.uint64), "dst_lo": np.full(n, 1000, np.uint64),
            "sport": np.full(n, 5000, np.uint16), "dport": np.full(n, 53, np.uint16),
            "has_ports": np.ones(n, np.uint8), "proto": np.full(n, 17, np.uint8),
            "ip_version": np.full(n, 4, np.uint8), "is_tcp": np.zeros(n, np.uint8),
            "flags": np.zeros(n, np.uint16), "seq": np.zeros(n, np.uint32),
            "payload": np.full(n, 20, np.int64), "ip_len": np.full(n, 48, np.int64),
            "wirelen": np.full(n, 62, np.int64), "sweep": np.full(n, NO_SWEEP, np.int64),
            "pos": np.arange(n, dtype=np.int64)}
    cols["sweep"][-1] = 2 * idle_ns
    return cols


def test_full_rows_buffer_resumes_where_it_stopped():
    """The splitter's buffer of finished rows is bounded (``max_rows``): an expiry sweep that
    finishes more connections than it holds stops and resumes, and a split stops before its
    packet. The rows, in order, are those of an unbounded buffer: a sweep finishing 10
    connections at once, and a real capture at a 2 s timeout (298 of its 299 connections
    finished by sweeps and splits inside the stream)."""
    from traceflow.flows.flowsplit import StreamClock
    from traceflow.flows.table import _ip_packets, _kernel_frame

    idle = 2 * 10**9
    burst = _udp_packets(10, idle)
    df = _kernel_frame(_ip_packets(pl.from_arrow(
        read_packets(shared_path("captures", "slips_test-cc-capture-1.pcap"))), 1))
    real = {c: df[c].to_numpy() for c in df.columns}
    real["sweep"] = StreamClock(idle).sweeps(real["ts"], df.height)
    real["pos"] = np.arange(df.height)
    for cols, at_sweep in ((burst, 10), (real, None)):
        whole, fills = _split_all(cols, idle, 1 << 20)
        assert fills == 0 and whole["conn"].size > 10
        if at_sweep:       # the sweep, not the end, finished them
            assert whole["at_end"][:at_sweep].sum() == 0
        for rows in (1, 3, 17):
            bounded, fills = _split_all(cols, idle, rows)
            assert fills >= (whole["at_end"] == 0).sum() // rows - 1
            assert bounded.keys() == whole.keys()
            for name in whole:
                assert np.array_equal(bounded[name], whole[name]), (rows, name)


@pytest.mark.parametrize("folder,name", SMALL[:2])
def test_any_rows_buffer_gives_the_same_flows(monkeypatch, folder, name):
    """FlowStream hands the splitter's rows out when they fill (``COLLECT_ROWS``) and feeds
    the rest of the batch at once: the flows and RTT samples are the same for any buffer,
    with expiry sweeps inside the stream (0.05 s timeout) and without."""
    import traceflow.flows.table as table

    packets = read_packets(shared_path(folder, name))
    for timeout in (0.05, 300.0):
        want = flows_with_rtt_samples(packets, idle_timeout=timeout, batch_size=4096)
        for rows in (1, 5):
            monkeypatch.setattr(table, "COLLECT_ROWS", rows)
            got = flows_with_rtt_samples(packets, idle_timeout=timeout, batch_size=4096)
            monkeypatch.undo()
            assert got[0].equals(want[0]) and got[1].equals(want[1]), (timeout, rows)

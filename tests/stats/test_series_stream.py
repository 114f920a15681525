"""``traceflow series`` streams (issue 17): batch by batch, only the needed columns, binned
incrementally (traceflow.stats.bins, traceflow.stats.series.packet_series).

Oracles: tshark's ``-z io,stat`` (frames and bytes per interval from the first packet) on shared
captures, and the whole-table binning (:func:`link_series`) the series was made by before."""
import re
import subprocess

import numpy as np
import polars as pl
import pytest

from conftest import require_tool, shared_path
from traceflow.stats.bins import SeriesBins
from traceflow.stats.series import link_series, packet_series, read_packets

MS = 1_000_000
CAPTURES = ["slips_ssh-bruteforce.pcap", "sanders_http_espn.pcapng", "ndpi_netflix.pcap"]


def _io_stat(path, seconds):
    """(frames, bytes) per interval of tshark's ``-z io,stat`` (intervals from the first packet)."""
    out = subprocess.run(["tshark", "-r", str(path), "-q", "-z", f"io,stat,{seconds}"],
                         capture_output=True, text=True, check=True).stdout
    rows = re.findall(r"^\|\s*[\d.]+\s*<>\s*[\d.A-Za-z]+\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|$", out,
                      re.MULTILINE)
    return np.array([[int(f), int(b)] for f, b in rows], dtype=np.int64)


@pytest.mark.parametrize("name", CAPTURES)
def test_streamed_series_matches_tshark_io_stat(name):
    require_tool("tshark")
    path = shared_path("captures", name)
    frame = packet_series(path, "100ms", size="wirelen", batch_size=256).frame()
    want = _io_stat(path, 0.1)
    got = frame.select("packets", "bytes").to_numpy()
    # tshark prints the interval holding the last packet too: the same bins
    assert got.shape == want.shape and np.array_equal(got, want)
    assert got[:, 0].sum() > 3 * 256  # several batches


def test_workers_bin_chunks_into_the_tshark_series():
    """``--workers N`` cuts an uncompressed capture at record boundaries into N chunks, bins
    them in N processes on one grid and adds the counts: tshark's intervals, every one."""
    from traceflow.stats.series import _chunks

    require_tool("tshark")
    path = shared_path("captures", "slips_test-cc-capture-1.pcap")
    assert len(_chunks(path, 2)) == 2 and len(_chunks(path, 3)) >= 2
    want = _io_stat(path, 0.1)
    for workers in (2, 3):
        frame = packet_series(path, "100ms", size="wirelen", workers=workers).frame()
        assert np.array_equal(frame.select("packets", "bytes").to_numpy(), want)
    selected = {"proto": "tcp", "filter": "sport = 443"}
    assert packet_series(path, "7ms", workers=2, **selected).frame().equals(
        packet_series(path, "7ms", **selected).frame())


def test_workers_rebin_when_the_first_packet_is_not_the_earliest(tmp_path):
    """The capture's second half written before its first: the first chunk's first packet, the
    grid's edge, is not the earliest, so the chunks are binned again from the earliest, as one
    pass does. Binning does not depend on the packets' order, so the series is the original
    capture's (tshark's, test above)."""
    import dpkt

    path = shared_path("captures", "slips_test-cc-capture-1.pcap")
    with open(path, "rb") as f:
        reader = dpkt.pcap.Reader(f)
        records, linktype, snaplen = list(reader), reader.datalink(), reader.snaplen
    rotated = tmp_path / "rotated.pcap"
    with open(rotated, "wb") as f:
        writer = dpkt.pcap.Writer(f, snaplen=snaplen, linktype=linktype)
        half = len(records) // 2
        for ts, buf in records[half:] + records[:half]:
            writer.writepkt(buf, ts)
    for width in ("100ms", "7ms"):
        bins = packet_series(rotated, width, workers=2)
        assert bins.start is not None                       # binned again
        assert bins.frame().equals(packet_series(path, width).frame())


@pytest.mark.parametrize("selection", [{}, {"proto": "tcp", "filter": "payload_len > 0"},
                                       {"direction": "dst:10.0.0.0/8", "size": "wirelen"}])
def test_streamed_series_equals_the_whole_table(selection):
    """Small batches, columns read by need and bins grown batch by batch give the frame the
    whole decoded table gives, on a real capture of 15 minutes."""
    path = shared_path("testbed", "alpha1.35", "client_side.pcap.gz")
    whole = link_series(read_packets(path), "10ms", **selection)
    streamed = packet_series(path, "10ms", batch_size=5000, **selection)
    assert whole.height > 80_000 and streamed.frame().equals(whole)


def test_earliest_packet_in_a_later_batch_off_the_grid(tmp_path):
    """A packets table whose earliest packet comes late and 3 ms off the first batch's grid is
    binned again from it: bins start at the earliest packet, as for the whole table."""
    rng = np.random.default_rng(3)
    ts = np.sort(rng.integers(1_000 * MS, 2_000 * MS, 400))
    ts = np.concatenate([ts[:200], [ts[0] - 997 * MS + 3 * MS], ts[200:]])
    table = pl.DataFrame({"ts": ts, "wirelen": rng.integers(60, 1514, ts.size),
                          "ip_len": rng.integers(40, 1500, ts.size)}).with_columns(
        pl.col("ts").cast(pl.Datetime("ns")), pl.col("wirelen").cast(pl.UInt32),
        pl.col("ip_len").cast(pl.UInt32))
    path = tmp_path / "packets.parquet"
    table.write_parquet(path, row_group_size=64)
    bins = packet_series(path, "10ms", batch_size=64)
    assert bins.lo == ts.min() and bins.hi == ts.max() + 1
    assert bins.frame().equals(link_series(table, "10ms"))
    assert bins.frame()["t"][0] == table["ts"].min()


def test_bins_grow_both_ways_and_keep_the_range():
    """Batches before and after the stored bins, and a fixed [start, end) window."""
    bins = SeriesBins(10 * MS, start=5 * MS, end=95 * MS)
    for batch in ([50, 51, 90, 99], [7, 6, 1], [94, 30]):
        ts = np.array(batch, dtype=np.int64) * MS
        bins.add(ts, np.full(ts.size, 100, dtype=np.int64))
    frame = bins.frame()
    assert frame["t"].dt.epoch("ns").to_list() == [5 * MS + 10 * MS * k for k in range(9)]
    # [5,15): 6, 7; [25,35): 30; [45,55): 50, 51; [85,95): 90, 94; 1 and 99 lie outside
    assert frame["packets"].to_list() == [2, 0, 1, 0, 2, 0, 0, 0, 2]
    assert frame["bytes"].sum() == 700


def test_bins_across_storage_blocks_equal_one_bincount():
    """Bins stored in blocks (BLOCK bins each), batches in shuffled order spanning many blocks:
    the series NumPy's bincount gives over all packets at once."""
    from traceflow.stats.bins import BLOCK

    rng = np.random.default_rng(5)
    ts = rng.integers(0, 7 * BLOCK * 1000, 20_000)
    sizes = rng.integers(40, 1500, ts.size)
    bins = SeriesBins(1000, start=int(ts.min()))  # the phase a second pass would take
    for part in np.array_split(rng.permutation(ts.size), 13):
        bins.add(ts[part], sizes[part])
    frame = bins.frame()
    idx = (ts - ts.min()) // 1000
    assert len(bins.blocks) >= 7
    assert frame["packets"].to_list() == np.bincount(idx).tolist()
    assert frame["bytes"].to_list() == np.bincount(idx, weights=sizes).astype(np.int64).tolist()

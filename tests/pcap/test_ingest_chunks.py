"""One capture decoded as several chunks (``plan_chunks`` / ``chunk=``, ``ingest --dataset
--chunk-size``) gives exactly the whole-file table, errors and counts."""
import gzip
import json
import struct
import subprocess
import sys

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from conftest import shared_path

from traceflow.cli.ingest import parse_size
from traceflow.cli.main import cli
from traceflow.errors import InputFormatError, TraceflowError, TraceflowWarning
from traceflow.pcap.reader import ReadStats, plan_chunks, read_packets

# 40 bytes is smaller than any record; the rest cut the files into a few to many chunks
SIZES = [40, 1000, 8192]


def chunked(path, target, **opts):
    """``(chunks, concatenated chunk tables, summed chunk stats)``."""
    chunks = plan_chunks(path, target)
    tables, stats = [], []
    for chunk in chunks:
        st = ReadStats()
        tables.append(read_packets(path, chunk=chunk, stats=st, batch_size=1024, **opts))
        stats.append(st)
    return chunks, pa.concat_tables(tables), stats


def check_plan(chunks, path, target):
    size = path.stat().st_size
    assert len(chunks) > 1
    assert chunks[0].start_offset == 0 and chunks[-1].end_offset == size
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for a, b in zip(chunks, chunks[1:]):  # contiguous, ordered, a record index per cut
        assert a.end_offset == b.start_offset > a.start_offset
        assert b.first_record_index >= a.first_record_index
        assert a.end_offset - a.start_offset >= target


def check_equal(path, target, **opts):
    whole_stats = ReadStats()
    whole = read_packets(path, stats=whole_stats, **opts)
    chunks, table, stats = chunked(path, target, **opts)
    check_plan(chunks, path, target)
    assert table.equals(whole)   # every column, every row, in order
    for key in ("records", "packets", "skipped_records", "skipped_bytes", "bytes", "interfaces"):
        assert sum(getattr(s, key) for s in stats) == getattr(whole_stats, key), key
    return chunks, whole


@pytest.mark.parametrize("target", SIZES)
def test_pcapng_with_many_interfaces(target):
    path = shared_path("formats", "pcapplusplus_many_interfaces-1.pcapng")
    chunks, whole = check_equal(path, target)
    assert len(set(whole.column("iface").to_pylist())) > 1
    # later chunks start with the section's interfaces, with their link types and resolutions
    assert max(len(c.interfaces) for c in chunks) > 1


@pytest.mark.parametrize("target", SIZES)
def test_big_endian_pcapng_and_new_sections(tmp_path, target):
    # two sections (the second SHB forgets the first's interfaces), the first big-endian
    parts = [shared_path("formats", "libtrace_complex.pcapng"),
             shared_path("formats", "pcapplusplus_pcapng-example.pcapng")]
    path = tmp_path / "two_sections.pcapng"
    path.write_bytes(b"".join(p.read_bytes() for p in parts))
    chunks, whole = check_equal(path, target)
    assert whole.num_rows == sum(read_packets(p).num_rows for p in parts)
    if target < parts[0].stat().st_size:  # a cut inside the big-endian section
        assert {c.big_endian for c in chunks} == {False, True}


@pytest.mark.parametrize("target", SIZES + [64 << 10])
def test_real_pcap(target):
    path = shared_path("captures", "ndpi_netflix.pcap")
    chunks, _ = check_equal(path, target)
    assert all(c.header == chunks[1].header for c in chunks[1:])


@pytest.fixture(scope="module")
def testbed_prefix(tmp_path_factory):
    """The first 20 MB of a real testbed capture: its last record is cut short."""
    src = shared_path("testbed", "alpha1.35", "client_side.pcap.gz")
    path = tmp_path_factory.mktemp("testbed") / "client_20mb.pcap"
    with gzip.open(src) as f:
        path.write_bytes(f.read(20_000_000))
    return path


def test_large_testbed_prefix(testbed_prefix):
    # with on_error=skip the truncated last record is dropped in both reads
    chunks, whole = check_equal(testbed_prefix, 1 << 20, on_error="skip")
    assert whole.num_rows > 10_000
    # cut at the first record boundary after the target, seen within an eighth of it
    assert all(c.end_offset - c.start_offset < (1 << 20) * 9 // 8 + 200 for c in chunks)
    assert len(chunks) >= 17
    # by default: the same warning about the cut-off record, with the whole file's offset and
    # record index, and the same complete records
    with pytest.warns(TraceflowWarning) as expected:
        table = read_packets(testbed_prefix)
    with pytest.warns(TraceflowWarning) as got:
        last = read_packets(testbed_prefix, chunk=chunks[-1])
    assert str(got[0].message) == str(expected[0].message)
    assert table.num_rows == whole.num_rows
    assert table.slice(table.num_rows - last.num_rows).equals(last)


def records_of(data):
    """Offsets of the records of a little-endian pcap."""
    offsets, pos = [], 24
    while pos + 16 <= len(data):
        offsets.append(pos)
        pos += 16 + struct.unpack_from("<I", data, pos + 8)[0]
    return offsets


@pytest.fixture
def corrupt_pcap(tmp_path):
    """A real pcap whose record at ~80% of the file claims a captured length beyond any limit."""
    data = bytearray(shared_path("captures", "ndpi_netflix.pcap").read_bytes())
    offsets = records_of(data)
    index = len(offsets) * 4 // 5
    struct.pack_into("<I", data, offsets[index] + 8, 0x7FFFFFF0)
    path = tmp_path / "corrupt.pcap"
    path.write_bytes(bytes(data))
    return path, offsets[index], index


def test_corrupt_record_in_a_later_chunk(corrupt_pcap):
    path, offset, index = corrupt_pcap
    chunks = plan_chunks(path, 64 << 10)
    assert len(chunks) > 3 and chunks[-1].start_offset <= offset
    with pytest.raises(InputFormatError) as err:
        for chunk in chunks:
            read_packets(path, chunk=chunk)
    assert (err.value.offset, err.value.record) == (offset, index)
    # skipping: chunk tables still equal the whole-file read
    _, table, _ = chunked(path, 64 << 10, on_error="skip")
    assert table.equals(read_packets(path, on_error="skip"))


def test_compressed_and_small_files_are_one_chunk(tmp_path):
    gz = shared_path("formats", "libtrace_ip-in-mpls.pcap.gz")
    assert [c.whole for c in plan_chunks(gz, 1024)] == [True]
    pcap = shared_path("captures", "zeek_wikipedia.pcap")
    assert [c.whole for c in plan_chunks(pcap, 10 << 20)] == [True]
    with pytest.raises(TraceflowError):
        read_packets(pcap, chunk=plan_chunks(pcap, 4096)[1], decoder="dpkt")


def test_parse_size():
    assert [parse_size(s) for s in ("64MiB", "16MiB", "64KiB", "4096", "2k", "1.5GB")] == [
        64 << 20, 16 << 20, 64 << 10, 4096, 2048, 1_500_000_000]
    for bad in ("", "12 parsecs", "0", "-5MiB"):
        with pytest.raises(TraceflowError):
            parse_size(bad)


def test_cli_dataset_of_chunks_equals_single_file_ingest(tmp_path):
    inputs = [shared_path("captures", "ndpi_netflix.pcap"),
              shared_path("captures", "sanders_http_espn.pcapng"),
              shared_path("formats", "libtrace_ip-in-mpls.pcap.gz")]
    out = tmp_path / "ds"
    result = CliRunner().invoke(cli, ["ingest", *map(str, inputs), "-o", str(out), "--dataset",
                                      "--chunk-size", "64KiB", "--workers", "2", "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    single = tmp_path / "single.parquet"
    one = CliRunner().invoke(cli, ["ingest", *map(str, inputs), "-o", str(single), "--json"])
    assert one.exit_code == 0, one.output
    one = json.loads(one.output)

    parts = sorted(p.name for p in out.glob("*.parquet"))
    names = [p.rsplit("/", 1)[1] for f in summary["files"] for p in f["parts"]]
    assert parts == names   # name order is file order, then chunk order
    chunks = [f["chunks"] for f in summary["files"]]
    assert chunks[0] > 5 and chunks[1] > 5 and chunks[2] == 1
    assert names[0] == "part-00000-ndpi_netflix.pcap-c0000.parquet"
    assert names[-1] == "part-00002-libtrace_ip-in-mpls.pcap.gz.parquet"
    # per-file counts add up to those of the single-file ingest
    for key in ("packets", "records", "bytes", "interfaces", "ip_bytes", "protocols"):
        assert [f[key] for f in summary["files"]] == [f[key] for f in one["files"]], key
    assert summary["bytes_read"] == one["bytes_read"]
    dataset = pl.read_parquet([out / p for p in parts])
    assert dataset.equals(pl.read_parquet(single))
    assert pq.read_schema(out / parts[1]) == pq.read_schema(single)


def test_cli_corrupt_chunk_exits_2_with_true_offset(tmp_path, corrupt_pcap):
    path, offset, index = corrupt_pcap
    out = tmp_path / "ds"
    proc = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "ingest", str(path),
                           "-o", str(out), "--dataset", "--chunk-size", "64KiB", "--workers", "2"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "corrupt.pcap" in lines[0] and f"record {index}, offset {offset})" in lines[0]
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["corrupt.pcap"]
    # a chunk size without --dataset is an option error
    proc = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "ingest", str(path),
                           "-o", str(tmp_path / "x.parquet"), "--chunk-size", "1MiB"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2 and "--chunk-size needs --dataset" in proc.stderr

"""Bad input: clear errors (file, offset, record), skip-and-count, the CLI contract, and fuzzing."""
import gzip
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DATASETS, shared_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_ingest_formats import block, epb, eth, idb, ipv4, pcap_file, shb, tcp, write

from traceflow.cli.main import cli
from traceflow.errors import InputFormatError, TraceflowWarning
from traceflow.pcap.reader import ReadStats, read_packets

DECODERS = ["fast", "dpkt"]
T0 = 1_600_000_000_000_000_000
FRAMES = [(T0 + i * 1000, eth(ipv4(tcp(seq=i, payload=b"k" * 20)))) for i in range(5)]
RECORD = 16 + len(FRAMES[0][1])  # bytes per pcap record


def good_pcap():
    return pcap_file(FRAMES)


def check_error(path, decoder, *, offset=None, record=None, words=()):
    with pytest.raises(InputFormatError) as exc:
        read_packets(path, decoder=decoder)
    msg = str(exc.value)
    assert str(path) in msg and "\n" not in msg
    if offset is not None:
        assert exc.value.offset == offset, msg
    if record is not None:
        assert exc.value.record == record, msg
    for w in words:
        assert w in msg
    return exc.value


@pytest.mark.parametrize("decoder", DECODERS)
def test_file_level_errors(tmp_path, decoder):
    check_error(write(tmp_path, "empty.pcap", b""), decoder, offset=0, words=["empty"])
    check_error(write(tmp_path, "garbage.pcap", os.urandom(64)), decoder, offset=0, words=["unknown"])
    check_error(write(tmp_path, "hdr.pcap", good_pcap()[:10]), decoder, offset=0, words=["truncated"])
    # corrupt gzip data fails (a cut-short file is read: tests/pcap/test_cut_compressed.py)
    corrupt = bytearray(gzip.compress(good_pcap()))
    corrupt[-12] ^= 0xFF
    check_error(write(tmp_path, "bad.gz", bytes(corrupt)), decoder, words=["gzip"])
    for on_error in ("fail", "skip"):   # nothing to skip at file level
        with pytest.raises(InputFormatError):
            read_packets(write(tmp_path, "e2.pcap", b""), decoder=decoder, on_error=on_error)


def check_truncated(path, decoder, *, offset, record, present, rows):
    """A file ending inside its last record: a warning naming it, the complete records kept."""
    stats = ReadStats()
    with pytest.warns(TraceflowWarning, match=rf"capture ends inside record {record} \(offset "
                                              rf"{offset}, {present} bytes") as caught:
        table = read_packets(path, decoder=decoder, stats=stats)
    assert str(path) in str(caught[0].message)
    assert table.num_rows == rows and stats.truncated_bytes == present
    assert stats.skipped_records == 0
    return table


@pytest.mark.parametrize("decoder", DECODERS)
def test_truncated_records(tmp_path, decoder):
    data = good_pcap()
    for cut, what in ((len(data) - 5, "data"), (24 + 4 * RECORD + 9, "header")):
        path = write(tmp_path, f"trunc-{what}.pcap", data[:cut])
        check_truncated(path, decoder, offset=24 + 4 * RECORD, record=4,
                        present=cut - 24 - 4 * RECORD, rows=4)
        stats = ReadStats()
        table = read_packets(path, decoder=decoder, on_error="skip", stats=stats)
        assert table.num_rows == 4 and stats.skipped_records == 1


@pytest.mark.parametrize("decoder", DECODERS)
def test_record_longer_than_snaplen_or_file(tmp_path, decoder):
    data = bytearray(pcap_file(FRAMES, snaplen=200))
    struct.pack_into("<I", data, 24 + 2 * RECORD + 8, 5000)      # record 2: caplen > snaplen
    check_error(write(tmp_path, "snap.pcap", bytes(data)), decoder, offset=24 + 2 * RECORD, record=2,
                words=["snapshot length"])
    data = bytearray(good_pcap())
    struct.pack_into("<I", data, 24 + 4 * RECORD + 8, 60000)     # last record: beyond the file
    # indistinguishable from a capture cut short inside its last record
    check_truncated(write(tmp_path, "long.pcap", bytes(data)), decoder, offset=24 + 4 * RECORD,
                    record=4, present=RECORD, rows=4)
    # a bad record with good ones after it is corruption: an error suggesting --on-error skip
    data = bytearray(pcap_file(FRAMES, snaplen=200))
    struct.pack_into("<I", data, 24 + 1 * RECORD + 8, 5000)
    err = check_error(write(tmp_path, "mid.pcap", bytes(data)), decoder, offset=24 + RECORD,
                      record=1)
    assert str(err).endswith("to skip bad records: traceflow ingest --on-error skip")


def test_skip_resyncs_after_corrupt_record_header(tmp_path):
    """on_error=skip: a garbled record header is skipped and decoding resumes at the next record."""
    data = bytearray(pcap_file(FRAMES, snaplen=200))
    struct.pack_into("<I", data, 24 + 2 * RECORD + 8, 0x7FFFFFFF)
    stats = ReadStats()
    table = read_packets(write(tmp_path, "c.pcap", bytes(data)), on_error="skip", stats=stats)
    assert table.column("seq").to_pylist() == [0, 1, 3, 4]
    assert stats.skipped_records == 1 and stats.skipped_bytes == RECORD and stats.errors


def test_skip_over_garbage_between_records(tmp_path):
    data = good_pcap()
    cut = 24 + 3 * RECORD
    junk = bytes(range(256)) * 3
    stats = ReadStats()
    table = read_packets(write(tmp_path, "g.pcap", data[:cut] + junk + data[cut:]), on_error="skip",
                         stats=stats)
    assert table.column("seq").to_pylist() == [0, 1, 2, 3, 4]
    assert stats.skipped_bytes == len(junk)


@pytest.mark.parametrize("decoder", DECODERS)
def test_pcapng_bad_blocks(tmp_path, decoder):
    pkt = eth(ipv4(tcp()))
    head = shb() + idb(1)
    ok = epb(0, 1, pkt)
    # undefined interface: framing intact, so skip drops exactly that block
    path = write(tmp_path, "if.pcapng", head + ok + epb(3, 2, pkt) + ok)
    check_error(path, decoder, offset=len(head + ok), record=1, words=["interface 3"])
    stats = ReadStats()
    assert read_packets(path, decoder=decoder, on_error="skip", stats=stats).num_rows == 2
    assert stats.skipped_records == 1
    # trailer disagrees with the header length
    bad = bytearray(ok)
    struct.pack_into("<I", bad, len(bad) - 4, 999)
    check_error(write(tmp_path, "tr.pcapng", head + ok + bytes(bad)), decoder, offset=len(head + ok),
                words=["trailer"])
    # block length not a multiple of 4 / smaller than a block
    bad = bytearray(ok)
    struct.pack_into("<I", bad, 4, 13)
    check_error(write(tmp_path, "len.pcapng", head + bytes(bad)), decoder, offset=len(head), words=["length"])
    # captured length larger than the block
    bad = bytearray(ok)
    struct.pack_into("<I", bad, 20, 5000)
    check_error(write(tmp_path, "cap.pcapng", head + bytes(bad)), decoder, offset=len(head))
    # the file ends inside a block: a capture cut short
    check_truncated(write(tmp_path, "cut.pcapng", head + ok + ok[:-7]), decoder,
                    offset=len(head + ok), record=1, present=len(ok) - 7, rows=1)


@pytest.mark.parametrize("decoder", DECODERS)
def test_pcapng_unknown_blocks_are_legal(tmp_path, decoder):
    pkt = eth(ipv4(tcp()))
    data = (shb() + block(0x7777, b"?" * 9) + idb(1) + block(0x40000BAD, b"\0\0\0\1zz") + epb(0, 1, pkt)
            + block(4, b"\0" * 8) + epb(0, 2, pkt) + block(0x0BADBAD, b""))
    stats = ReadStats()
    assert read_packets(write(tmp_path, "u.pcapng", data), decoder=decoder, stats=stats).num_rows == 2
    assert stats.skipped_records == 0 and stats.errors == []


# --- CLI ------------------------------------------------------------------------------------------

def run_cli(*args, cwd):
    return subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_cli_error_exit_2_and_no_partial_output(tmp_path):
    good = write(tmp_path, "good.pcap", good_pcap())
    data = bytearray(pcap_file(FRAMES, snaplen=200))
    struct.pack_into("<I", data, 24 + 2 * RECORD + 8, 5000)     # record 2 corrupt, 3 and 4 fine
    bad = write(tmp_path, "bad.pcap", bytes(data))
    out = tmp_path / "out" / "packets.parquet"
    # the good file is fully written before the bad one fails: still no output at all
    proc = run_cli("ingest", good, bad, "-o", out, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "bad.pcap" in lines[0] and "record 2" in lines[0]
    assert "--on-error skip" in lines[0]
    assert "Traceback" not in proc.stderr
    assert not out.exists() and not list(out.parent.glob("*"))
    garbage = write(tmp_path, "garbage.pcap", b"not a capture at all")
    proc = run_cli("ingest", garbage, "-o", out, "--on-error", "skip", cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and not out.exists()


@pytest.mark.parametrize("fmt,suffix", [("parquet", ".parquet"), ("arrow", ".arrow")])
def test_cli_ingest_json_summary(tmp_path, fmt, suffix):
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    good = write(tmp_path, "good.pcap", good_pcap())
    bad = write(tmp_path, "bad.pcap", good_pcap()[:-5])
    out = tmp_path / f"p{suffix}"
    res = CliRunner().invoke(cli, ["ingest", str(good), str(bad), "-o", str(out), "--format", fmt,
                                   "--on-error", "skip", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["packets"] == 9 and summary["skipped_records"] == 1
    assert summary["protocols"]["tcp"] == 9 and summary["protocols"]["ipv4"] == 9
    assert summary["ip_bytes"] == 9 * (20 + 20 + 20) and len(summary["files"]) == 2
    table = pq.read_table(out) if fmt == "parquet" else pa.ipc.open_file(out).read_all()
    assert table.column("seq").to_pylist() == [0, 1, 2, 3, 4, 0, 1, 2, 3]


def test_ingest_file_is_mappable(tmp_path):
    from traceflow.cli.ingest import ingest_file

    src = write(tmp_path, "one.pcap", good_pcap())
    summary = ingest_file(src, tmp_path / "one.parquet", decoder="dpkt")
    assert summary["packets"] == 5 and (tmp_path / "one.parquet").exists()


# --- fuzzing --------------------------------------------------------------------------------------

def _seeds():
    names = [("captures", "sanders_tcp_handshake.pcapng"), ("formats", "libtrace_complex.pcapng"),
             ("formats", "pcapplusplus_sll2.pcap"), ("formats", "libtrace_100_sll.pcap"),
             ("formats", "tcpdump_LINKTYPE_PKTAP.pcap"), ("formats", "arkime_dot1ad.pcap")]
    seeds = [(DATASETS / a / b).read_bytes() for a, b in names if (DATASETS / a / b).exists()]
    return seeds or [good_pcap()]


SEEDS = _seeds()
mutation = st.tuples(st.sampled_from(["flip", "set32", "cut", "insert", "delete"]),
                     st.floats(0, 1), st.integers(0, 2**32 - 1))


def _mutate(data, ops):
    data = bytearray(data)
    for op, where, value in ops:
        i = int(where * max(len(data) - 1, 0))
        if op == "flip" and data:
            data[i] ^= 1 << (value % 8)
        elif op == "set32" and len(data) >= 4:
            i = min(i, len(data) - 4)
            data[i:i + 4] = struct.pack("<I", value if value % 3 else value % 70000)
        elif op == "cut":
            del data[i:]
        elif op == "insert":
            data[i:i] = value.to_bytes(4, "little") * (1 + value % 5)
        elif op == "delete":
            del data[i:i + 1 + value % 40]
    return bytes(data)


@pytest.mark.filterwarnings("ignore::traceflow.errors.TraceflowWarning")  # cut-off captures
@settings(max_examples=400, deadline=2000, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(seed=st.sampled_from(range(len(SEEDS))), ops=st.lists(mutation, min_size=1, max_size=6),
       on_error=st.sampled_from(["fail", "skip"]), batch=st.sampled_from([3, 65536]))
def test_fuzz_fast_decoder(seed, ops, on_error, batch):
    """Mutated real captures only ever give a table, a warning about a cut-off last record, or an
    InputFormatError (no crash, no hang)."""
    data = _mutate(SEEDS[seed], ops)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.pcap"
        path.write_bytes(data)
        stats = ReadStats()
        try:
            table = read_packets(path, on_error=on_error, batch_size=batch, stats=stats)
        except InputFormatError as exc:
            assert exc.path == str(path)
            return
        assert table.num_rows == stats.packets <= stats.records
        if on_error == "fail":
            assert stats.skipped_records == 0


def test_fuzz_uses_real_captures():
    shared_path("captures", "sanders_tcp_handshake.pcapng")
    assert len(SEEDS) == 6

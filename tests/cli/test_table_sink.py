"""traceflow.output.TableSink's Parquet path: written on a thread (decode overlaps the write), the
table and its encodings as given, and a write error raised in the caller's thread (issue 17)."""
import errno

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from traceflow import output
from traceflow.pcap.schema import PARQUET_OPTIONS


def _batches(n=5, rows=1000):
    for i in range(n):
        yield pa.table({"ts": pa.array(range(i * rows, (i + 1) * rows), pa.timestamp("ns")),
                        "src": pa.array([bytes(16)] * rows, pa.binary(16)),
                        "dst": pa.array([bytes([i]) * 16] * rows, pa.binary(16))})


def test_parquet_written_through_the_thread_equals_the_batches(tmp_path):
    path = tmp_path / "p.parquet"
    with output.TableSink(path, parquet=PARQUET_OPTIONS) as sink:
        for b in _batches():
            sink.write(b)
    got = pq.read_table(path)
    assert got.equals(pa.concat_tables(_batches()))
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 5
    column = {meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i)
              for i in range(meta.num_columns)}
    assert "DELTA_BINARY_PACKED" in column["ts"].encodings
    assert any("DICTIONARY" in e for e in column["src"].encodings)


class _Failing:
    """A Parquet writer whose second write fails as on a full disk."""

    def __init__(self):
        self.writes, self.closed = 0, False

    def write_table(self, table):
        self.writes += 1
        if self.writes == 2:
            raise OSError(errno.ENOSPC, "No space left on device")

    def close(self):
        self.closed = True


def test_a_write_error_reaches_the_caller_and_the_writer_is_closed():
    failing = _Failing()
    with pytest.raises(OSError) as info:
        with output._WriterThread(failing) as writer:
            for b in _batches(n=50):
                writer.write_table(b)
    assert info.value.errno == errno.ENOSPC
    assert failing.closed and failing.writes == 2      # nothing written after the error
    assert not writer.thread.is_alive()

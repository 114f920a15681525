"""Writing tables: the format comes from the output's suffix, one implementation for every command.

======================  ==========================================================
suffix                  format
======================  ==========================================================
``.parquet``            Parquet (zstd), types kept exactly; written on a thread of its own,
                        overlapping the making of the next batch
``.arrow`` ``.ipc``     Arrow IPC file (Feather v2), types kept exactly
``.feather``
``.csv`` / ``.tsv``     comma / tab separated text with a header row
``.json`` ``.jsonl``    JSON lines: one object per row
``.ndjson``
``-``                   a table printed on stdout (the first ``head`` rows)
======================  ==========================================================

Any other suffix is an error (naming the path), raised by :func:`table_format` before any work is
done, so ``-o flows.xlsx`` never silently writes Parquet. Text formats and the printed table show
values as people read them: 16-byte addresses as text (:mod:`traceflow.pcap.addresses`), durations
as float seconds, timestamps in UTC with the offset written out as JSON writes them
(``2024-03-01T12:00:00.25+00:00``). Parquet and Arrow keep the batches' types exactly; tables of
instants (flows' ``start``/``end``) are marked UTC by :func:`utc_aware` before they are written.
Files are written atomically (:mod:`traceflow.atomic`).
"""
from __future__ import annotations

import contextlib
import queue
import sys
import threading
from pathlib import Path

import pyarrow as pa

from traceflow.errors import TraceflowError

STDOUT = "-"
SUFFIXES = {".parquet": "parquet", ".arrow": "arrow", ".ipc": "arrow", ".feather": "arrow",
            ".csv": "csv", ".tsv": "tsv", ".json": "jsonl", ".jsonl": "jsonl", ".ndjson": "jsonl"}
TEXT_FORMATS = ("csv", "tsv", "jsonl", "stdout")
DEFAULT_HEAD = 20
#: CSV/TSV timestamps: ISO 8601 with the offset as ``+00:00``, as Polars' JSON writes them
ISO_DATETIME = "%Y-%m-%dT%H:%M:%S%.f%:z"


def table_format(path) -> str:
    """The format of output ``path`` from its suffix (``"stdout"`` for ``-``); an unknown suffix is
    a :class:`TraceflowError` naming the path."""
    if str(path) == STDOUT:
        return "stdout"
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        known = " ".join(dict.fromkeys(SUFFIXES))
        raise TraceflowError(f"unknown table format {suffix or '(no suffix)'!r}: use one of "
                             f"{known}, or - to print a table", path=path)
    return SUFFIXES[suffix]


def readable(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with the columns text formats cannot hold as they are made readable: binary
    addresses as text, durations as float seconds, naive timestamps marked UTC."""
    import polars as pl

    from traceflow.pcap.addresses import address_strings

    cols = []
    for name, dtype in frame.schema.items():
        col = pl.col(name)
        if dtype == pl.Binary:
            cols.append(address_strings(frame.get_column(name)))
        elif isinstance(dtype, pl.Duration):
            cols.append(col.dt.total_nanoseconds().cast(pl.Float64) / 1e9)
        elif isinstance(dtype, pl.Datetime) and dtype.time_zone is None:
            cols.append(col.dt.replace_time_zone("UTC"))
    return frame.with_columns(cols) if cols else frame


def utc_aware(table: pa.Table) -> pa.Table:
    """``table`` (Arrow) with its time-zone-naive timestamp columns (UTC instants) marked UTC
    (``timestamp[ns, tz=UTC]``), so pandas and Polars read them as the instants they are."""
    naive = [i for i, f in enumerate(table.schema)
             if pa.types.is_timestamp(f.type) and f.type.tz is None]
    for i in naive:
        field = table.schema.field(i)
        kind = pa.timestamp(field.type.unit, tz="UTC")
        table = table.set_column(i, field.with_type(kind), table.column(i).cast(kind))
    return table


class TableSink:
    """Write a table batch by batch (Polars frames, Arrow tables or record batches) to ``path`` in
    the format of its suffix; the file appears only when the ``with`` block succeeds.

    Parquet and Arrow keep the batches' Arrow types exactly (``schema``, an Arrow schema, is
    written even when no batch comes). ``head``: rows printed when ``path`` is ``-`` (default
    :data:`DEFAULT_HEAD`; None = all). ``out``: the stream ``-`` prints to (stdout). ``fmt``
    overrides the suffix (for temporary names chosen by the caller, not by the user).
    ``parquet``: keyword arguments of :class:`pyarrow.parquet.ParquetWriter` (encodings chosen
    for the table, e.g. :data:`traceflow.pcap.schema.PARQUET_OPTIONS`; default zstd)."""

    def __init__(self, path, *, schema=None, head=DEFAULT_HEAD, out=None, fmt=None, parquet=None):
        self.path, self.head = path, head
        self.format = fmt or table_format(path)
        self.schema, self.out = schema, out
        self.parquet = {"compression": "zstd", **(parquet or {})}
        self.rows = 0
        self._writer = None
        self._kept = []

    def __enter__(self):
        self._stack = contextlib.ExitStack()
        if self.format != "stdout":
            from traceflow.atomic import atomic_path

            self._tmp = self._stack.enter_context(atomic_path(self.path))
        return self

    def write(self, batch):
        if isinstance(batch, pa.RecordBatch):
            batch = pa.Table.from_batches([batch])
        self.rows += batch.num_rows if isinstance(batch, pa.Table) else batch.height
        if self.format in ("parquet", "arrow"):
            table = batch if isinstance(batch, pa.Table) else batch.to_arrow()
            self._open(table.schema).write_table(table)
            return
        import polars as pl

        frame = batch if isinstance(batch, pl.DataFrame) else pl.from_arrow(batch)
        if self.format == "stdout":
            if self.head is None or sum(f.height for f in self._kept) < self.head:
                self._kept.append(frame)
            return
        frame = readable(frame)
        first = self._writer is None
        out = self._open(None)
        if self.format == "jsonl":
            frame.write_ndjson(out)
        else:
            frame.write_csv(out, separator="\t" if self.format == "tsv" else ",",
                            include_header=first, datetime_format=ISO_DATETIME)

    def _open(self, schema):
        if self._writer is not None:
            return self._writer
        import pyarrow.parquet as pq

        if self.format == "parquet":
            writer = _WriterThread(pq.ParquetWriter(self._tmp, schema, **self.parquet))
        elif self.format == "arrow":
            writer = pa.ipc.new_file(str(self._tmp), schema)
        else:
            writer = open(self._tmp, "wb")
        self._writer = self._stack.enter_context(writer)
        return self._writer

    def __exit__(self, *exc):
        if exc[0] is None:
            if self.format == "stdout":
                import polars as pl

                kept = pl.concat(self._kept, how="vertical_relaxed") if self._kept else \
                    pl.DataFrame(schema=pl.from_arrow(self.schema.empty_table()).schema
                                 if self.schema is not None else None)
                print_table(kept, head=self.head, total=self.rows, out=self.out)
            elif self._writer is None and self.schema is not None:
                self.write(self.schema.empty_table())  # an empty table still has its columns
        return self._stack.__exit__(*exc)


class _WriterThread:
    """A Parquet writer fed through a short queue and run on a thread: pyarrow encodes and
    compresses without the GIL, so the caller makes the next batch (decoding, for ``ingest``)
    while the last one is written. A write error is raised at the next write or at close."""

    def __init__(self, writer, depth=2):
        self.writer, self.error = writer, None
        self.queue = queue.Queue(depth)
        self.thread = threading.Thread(target=self._run, name="parquet-writer", daemon=True)
        self.thread.start()

    def _run(self):
        while (table := self.queue.get()) is not None:
            if self.error is None:
                try:
                    self.writer.write_table(table)
                except BaseException as exc:  # handed to the caller's thread
                    self.error = exc

    def _raise(self):
        if self.error is not None:
            raise self.error

    def write_table(self, table):
        self._raise()
        self.queue.put(table)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.queue.put(None)
        self.thread.join()
        try:
            self.writer.close()
        finally:
            if exc[0] is None:
                self._raise()


def write_table(table, path, *, head=DEFAULT_HEAD, out=None):
    """Write a whole table (Polars frame or Arrow table) to ``path`` (:class:`TableSink`);
    returns the number of rows."""
    with TableSink(path, head=head, out=out) as sink:
        sink.write(table)
    return sink.rows


def print_table(frame: pl.DataFrame, *, head=DEFAULT_HEAD, total=None, out=None):
    """Print the first ``head`` rows of ``frame`` as an aligned table, every column shown."""
    import polars as pl

    out = out or sys.stdout
    total = frame.height if total is None else total
    shown = readable(frame if head is None else frame.head(head))
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=10_000, fmt_str_lengths=60,
                   tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True):
        print(shown, file=out)
    if shown.height < total:
        print(f"({shown.height} of {total} rows; --head N shows more)", file=out)

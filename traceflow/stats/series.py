"""Packets → binned link time series, aggregation to coarser scales, and loading of 1-D inputs.

A *series* is a Polars frame ``t`` (bin start, timestamp[ns]), ``bytes`` (int64), ``packets``
(int64), one row per bin of a fixed width, empty bins included as zeros. Bins start at the first
packet (or at a given ``start``, to bin two captures of the same period alike), so a series at any
bin width covers the same span, and all arithmetic on time is integer nanoseconds.

Bytes are IP bytes (``ip_len``, correct for snaplen-truncated captures); non-IP packets count their
``wirelen``. ``size="wirelen"`` counts link-layer frame lengths instead.

Selections (for :func:`link_series` and ``traceflow series``):

* ``direction``: ``"src:CIDR"`` or ``"dst:CIDR"`` (e.g. ``"src:10.0.0.1"``, ``"dst:10.1.0.0/16"``,
  ``"src:2001:db8::/32"``) keeps packets whose source / destination address lies in the network.
* ``filter``: a Polars SQL ``WHERE`` expression over the packets columns
  (:mod:`traceflow.pcap.schema`), e.g. ``"proto = 6 AND (sport = 80 OR dport = 80)"`` or
  ``"payload_len > 0"``.
"""
from __future__ import annotations

import copy
import ipaddress
import re
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from traceflow.errors import InputFormatError, TraceflowError, about
from traceflow.stats.bins import SeriesBins


_UNITS_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000,
             "min": 60_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|µs|ms|s|min|m|h)?\s*$")


def parse_duration(value) -> int:
    """A duration as integer nanoseconds: ``"10ms"``, ``"2.5s"``, ``"100us"``, or an int (ns).

    A bare number without unit is seconds when given as a string (``"0.1"`` = 100 ms).
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        ns = int(value)
    else:
        m = _DURATION_RE.match(str(value))
        if not m:
            raise TraceflowError(f"bad duration {value!r} (examples: 10ms, 2.5s, 100us)")
        number, unit = m.group(1), m.group(2) or "s"
        # exact decimal arithmetic: "0.1s" must be 100_000_000 ns, not 99_999_999
        whole, _, frac = number.partition(".")
        scale = _UNITS_NS[unit]
        ns = int(whole or 0) * scale + (int(frac) * scale // 10 ** len(frac) if frac else 0)
    if ns <= 0:
        raise TraceflowError(f"duration must be positive, got {value!r}")
    return ns


def format_duration(ns: int) -> str:
    """The shortest exact spelling of ``ns`` (``10000000`` → ``"10ms"``)."""
    for unit in ("h", "min", "s", "ms", "us"):
        if ns % _UNITS_NS[unit] == 0:
            return f"{ns // _UNITS_NS[unit]}{unit}"
    return f"{ns}ns"


def _as_frame(packets) -> pl.DataFrame:
    if isinstance(packets, pl.DataFrame):
        return packets
    if isinstance(packets, pl.LazyFrame):
        return packets.collect()
    if isinstance(packets, (pa.Table, pa.RecordBatch)):
        return pl.from_arrow(packets)
    raise TypeError(f"packets must be a Polars frame or an Arrow table, got {type(packets).__name__}")


def _network_bytes(spec: str):
    """(prefix bytes of the IPv4-mapped/IPv6 network, prefix length in bits) for a CIDR string."""
    try:
        net = ipaddress.ip_network(spec.strip(), strict=False)
    except ValueError as exc:
        raise TraceflowError(f"bad address or network {spec!r} in --direction") from exc
    if net.version == 4:
        base = b"\x00" * 10 + b"\xff\xff" + net.network_address.packed
        return base, 96 + net.prefixlen
    return net.network_address.packed, net.prefixlen


def address_mask(column: pa.ChunkedArray | pa.Array, cidr: str) -> np.ndarray:
    """Boolean mask: which 16-byte addresses of ``column`` lie in network ``cidr`` (null → False)."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=bool)
    if arr.type != pa.binary(16):  # Polars hands fixed-size binaries back as large_binary
        try:
            arr = arr.cast(pa.binary(16))
        except pa.ArrowInvalid as exc:
            raise InputFormatError("addresses are not 16-byte binaries") from exc
    if arr.offset:
        arr = pa.concat_arrays([arr])  # re-materialize so the data buffer starts at element 0
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8, count=16 * n).reshape(n, 16)
    prefix, bits = _network_bytes(cidr)
    whole, rest = divmod(bits, 8)
    want = np.frombuffer(prefix, dtype=np.uint8)
    ok = np.all(raw[:, :whole] == want[:whole], axis=1)
    if rest:
        m = (0xFF << (8 - rest)) & 0xFF
        ok &= (raw[:, whole] & m) == (want[whole] & m)
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    return ok & valid


def select_packets(packets, direction: str | None = None, filter: str | None = None,
                   proto: str | None = None) -> pl.DataFrame:
    """Apply a ``direction`` (``src:CIDR`` / ``dst:CIDR``), a SQL ``filter`` and ``proto``
    (``tcp``/``udp``; :mod:`traceflow.selection`) to a packets table."""
    from traceflow.selection import select_rows

    df = select_rows(_as_frame(packets), filter, proto)
    if direction:
        side, sep, cidr = direction.partition(":")
        if not sep or side not in ("src", "dst"):
            raise TraceflowError(f"bad direction {direction!r}: use src:CIDR or dst:CIDR")
        if side not in df.columns:
            raise InputFormatError(f"packets table has no {side!r} column for --direction")
        mask = address_mask(df.get_column(side).to_arrow(), cidr)
        df = df.filter(pl.Series(mask))
    return df


def link_series(packets, bin="10ms", direction=None, filter=None, *, proto=None, size="ip_len",
                start=None, end=None) -> pl.DataFrame:
    """Bytes and packets per bin of width ``bin`` (a duration string or int ns).

    ``start`` / ``end`` (timestamp-like or int ns) fix the covered range — useful to compare two
    series over the same period; by default it runs from the first packet (the first bin starts
    there) to the bin holding the last. Packets outside ``[start, end)`` are ignored. Empty bins
    are zeros.
    """
    bins = SeriesBins(parse_duration(bin), None if start is None else _ns(start),
                      None if end is None else _ns(end))
    _add_packets(bins, select_packets(packets, direction, filter, proto), size)
    return bins.frame()


def _add_packets(bins: SeriesBins, df: pl.DataFrame, size: str) -> None:
    """Count the packets of ``df`` (selected already) in ``bins``; bytes per ``size``."""
    if "ts" not in df.columns:
        raise InputFormatError("packets table has no 'ts' column")
    ts = df.get_column("ts").cast(pl.Datetime("ns")).cast(pl.Int64).to_numpy()
    if size == "ip_len" and "ip_len" in df.columns:
        sizes = df.select(pl.col("ip_len").cast(pl.Int64)
                          .fill_null(pl.col("wirelen").cast(pl.Int64))).to_series()
    elif size in ("ip_len", "wirelen") and "wirelen" in df.columns:
        sizes = df.get_column("wirelen").cast(pl.Int64)
    else:
        raise InputFormatError(f"packets table has no {size!r} column")
    bins.add(ts, sizes.fill_null(0).to_numpy())


def packet_series(path, bin="10ms", direction=None, filter=None, *, proto=None, size="ip_len",
                  batch_size=1 << 16, workers=1, executor="local", scheduler=None) -> SeriesBins:
    """The link series of a capture or packets table (path), as :func:`link_series` makes it
    from the whole table, read ``batch_size`` packets at a time and only the columns the
    selection and ``size`` need: memory is one batch and the bins, whatever the input's length.

    ``workers`` > 1 (with ``executor``, ``scheduler`` as
    :func:`traceflow.scale.parallel.iter_tasks`): an uncompressed capture is cut at record
    boundaries into a chunk per worker (:func:`traceflow.pcap.reader.plan_chunks`), binned at
    once on one grid and the counts added: the same series.

    Returns the :class:`~traceflow.stats.bins.SeriesBins` (``.frame()`` is the series; ``.lo``,
    ``.hi`` the first packet and the last + 1 ns). An input whose earliest packet comes after
    the first batch, off that batch's bin grid, is read twice.
    """
    width = parse_duration(bin)
    chunks = _chunks(path, workers)
    task = partial(_bin_part, path=path, direction=direction, filter=filter, proto=proto,
                   size=size, batch_size=batch_size)
    # one grid for every chunk: a bin edge at the capture's first packet, which is its
    # earliest unless the clock steps back (then, as in one pass, bin again from the earliest)
    phase = _first_ts(path, chunks[0]) if len(chunks) > 1 else None
    if phase is None:
        bins = task((SeriesBins(width), None))
        if not bins.aligned:
            bins = task((SeriesBins(width, start=bins.lo), None))
        return bins
    from traceflow.scale.parallel import map_tasks

    def run(empty):
        for part in map_tasks(task, [(copy.deepcopy(empty), c) for c in chunks],
                              executor=executor, workers=workers, scheduler=scheduler,
                              progress=False, user_errors=True, first_here=True):
            empty.merge(part)
        return empty

    bins = run(SeriesBins(width, phase=phase))
    if not bins.aligned:
        bins = run(SeriesBins(width, start=bins.lo))
    return bins


def _chunks(path, workers):
    """Chunks of a capture for ``workers`` processes (one whole chunk if it cannot be cut)."""
    import os

    from traceflow.pcap.reader import Chunk, plan_chunks

    if workers is None or workers <= 1 or table_kind(path) != "capture":
        return [Chunk(str(path))]
    size = os.stat(path).st_size
    return plan_chunks(path, target_bytes=max(1 << 20, -(-size // workers)))


def _first_ts(path, chunk):
    """The timestamp (int ns) of the first packet of ``chunk``, None without any."""
    from traceflow.pcap.reader import iter_batches

    for batch in iter_batches(path, batch_size=1, chunk=chunk):
        if batch.num_rows:
            return _ns(pl.from_arrow(batch.select(["ts"]))["ts"].cast(pl.Int64)[0])
    return None


def _bin_part(part, *, path, direction, filter, proto, size, batch_size):
    """Bin the packets of ``path`` (of its chunk ``chunk``, None: all) into ``bins``, ``part`` =
    (bins, chunk); returns them (a top-level task, so worker processes can run it)."""
    from traceflow.selection import row_filter

    bins, chunk = part
    expr = row_filter(filter, proto)
    wanted = {"ts", "wirelen", *(["ip_len"] if size == "ip_len" else []),
              *(expr.meta.root_names() if expr is not None else []),
              *([direction.partition(":")[0]] if direction else [])}
    with about(path):
        for df in _packet_batches(path, wanted, batch_size, chunk):
            _add_packets(bins, select_packets(df, direction, filter, proto), size)
    return bins


def _packet_batches(path, wanted, batch_size, chunk=None):
    """Polars frames of the packets of a capture (or of its ``chunk``) or packets table, in
    order, with the columns ``wanted`` (all columns when the table lacks one of them, so errors
    list what it has); a CSV or Arrow IPC table is one frame."""
    from traceflow.pcap.schema import PACKET_SCHEMA

    kind = table_kind(path)
    names = PACKET_SCHEMA.names if kind == "capture" else table_columns(path)
    columns = [c for c in names if c in wanted] if wanted <= set(names) else list(names)
    if kind == "capture":
        from traceflow.pcap.reader import iter_batches  # lazy: the decoder is heavy

        for batch in iter_batches(path, batch_size=batch_size, chunk=chunk):
            yield pl.from_arrow(batch.select(columns))
    elif kind == "parquet":
        import pyarrow.parquet as pq

        try:
            with pq.ParquetFile(path) as f:
                for batch in f.iter_batches(batch_size=batch_size, columns=columns):
                    yield pl.from_arrow(batch)
        except (OSError, pa.ArrowException) as exc:
            raise InputFormatError(f"cannot read table: {str(exc).splitlines()[0]}",
                                   path=path) from exc
    else:
        yield read_table(path)


def _ns(value) -> int:
    if isinstance(value, (int, np.integer)):
        return int(value)
    return int(pl.Series([value]).cast(pl.Datetime("ns")).cast(pl.Int64)[0])


def bin_width(series: pl.DataFrame) -> int:
    """The bin width of a series in ns (from the spacing of ``t``)."""
    t = series.get_column("t").cast(pl.Datetime("ns")).cast(pl.Int64).to_numpy()
    if t.size < 2:
        raise InputFormatError("cannot infer the bin width of a series with fewer than 2 bins")
    d = np.diff(t)
    width = int(d.min())
    if width <= 0 or np.any(d % width):
        raise InputFormatError("series 't' is not on a regular grid")
    return width


def aggregate(series: pl.DataFrame, factor: int, *, partial=False) -> pl.DataFrame:
    """Sum blocks of ``factor`` consecutive bins (bin width × factor).

    The trailing incomplete block is dropped, so every output bin covers the same duration (what
    variance-time and dispersion statistics assume), unless ``partial``. ``t`` is the start of
    each block.
    """
    factor = int(factor)
    if factor < 1:
        raise TraceflowError(f"aggregation factor must be ≥ 1, got {factor}")
    if factor == 1:
        return series
    whole = series if partial else series.head(series.height // factor * factor)
    return (whole.with_row_index("_i")
            .group_by((pl.col("_i") // factor).alias("_b"), maintain_order=True)
            .agg(pl.col("t").first(), pl.col("bytes").sum(), pl.col("packets").sum())
            .drop("_b"))


def counts_label(column, kind, direction=None, size="ip_len"):
    """What ``column`` of a series loaded from an input of ``kind`` counts, for the label of a
    rate, H or dispersion: e.g. "IP bytes, both directions", "packets, direction dst:10.0.0.0/8";
    a series or other table's column counts whatever made it."""
    if kind not in ("capture", "packets"):
        return f"{column} as the {kind} table holds them"
    what = {"bytes": "IP bytes" if size == "ip_len" else "frame bytes"}.get(column, column)
    return f"{what}, " + (f"direction {direction}" if direction else "both directions")


def resample(series: pl.DataFrame, bin, *, partial=False) -> pl.DataFrame:
    """Aggregate ``series`` to bin width ``bin`` (must be a multiple of its own bin width).

    Blocks of bins from the first; the trailing incomplete one is dropped (:func:`aggregate`:
    what the scale statistics need) unless ``partial``, which keeps it, as the series made from
    the capture at ``bin`` has it (the same bins and counts)."""
    target = parse_duration(bin)
    width = bin_width(series)
    if target % width:
        raise TraceflowError(f"--bin {format_duration(target)} is not a multiple of the series bin "
                             f"{format_duration(width)}")
    return aggregate(series, target // width, partial=partial)


def block_sums(x: np.ndarray, factor: int) -> np.ndarray:
    """Sums of non-overlapping blocks of ``factor`` samples of a 1-D array (tail dropped)."""
    k = x.size // factor
    return x[: k * factor].reshape(k, factor).sum(axis=1)


# ---------------------------------------------------------------------------------------------
# Loading inputs of the analytics commands
# ---------------------------------------------------------------------------------------------

def table_kind(path) -> str:
    """``"parquet"``, ``"ipc"``, ``"csv"`` or ``"capture"``: by magic bytes, then by name."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except OSError as exc:
        raise TraceflowError(exc.strerror or "cannot open", path=path) from exc
    if magic[:4] == b"PAR1":
        return "parquet"
    if magic == b"ARROW1":
        return "ipc"
    if path.name.lower().endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz")):
        return "csv"
    return "capture"


def read_table(path) -> pl.DataFrame:
    """Read a Parquet / Arrow IPC / CSV(.gz) table (not a capture)."""
    path = Path(path)
    kind = table_kind(path)
    try:
        if kind == "parquet":
            return pl.read_parquet(path)
        if kind == "ipc":
            return pl.read_ipc(path)
        if kind == "csv":
            sep = "\t" if ".tsv" in path.name.lower() else ","
            return pl.read_csv(path, separator=sep, infer_schema_length=10000)
    except (pl.exceptions.PolarsError, OSError, pa.ArrowException) as exc:
        raise InputFormatError(f"cannot read table: {str(exc).splitlines()[0]}", path=path) from exc
    raise InputFormatError("not a table (expected .parquet, .arrow or .csv)", path=path)


def table_columns(path) -> list[str]:
    """Column names of a Parquet / Arrow IPC / CSV table without reading its data."""
    kind = table_kind(path)
    try:
        if kind == "parquet":
            return list(pl.read_parquet_schema(path))
        if kind == "ipc":
            return list(pl.read_ipc_schema(path))
        if kind == "csv":
            sep = "\t" if ".tsv" in Path(path).name.lower() else ","
            return pl.read_csv(path, separator=sep, n_rows=1).columns
    except (pl.exceptions.PolarsError, OSError, pa.ArrowException) as exc:
        raise InputFormatError(f"cannot read table: {str(exc).splitlines()[0]}", path=path) from exc
    return []


def is_timed(path) -> bool:
    """True for a capture, a packets table or a series table (inputs where ``--bin`` applies)."""
    if table_kind(path) == "capture":
        return True
    cols = set(table_columns(path))
    return {"ts", "wirelen"} <= cols or {"t", "bytes", "packets"} <= cols


def read_packets(path) -> pl.DataFrame:
    """Packets of a capture (via :func:`traceflow.pcap.reader.read_packets`) as a Polars frame
    (``traceflow.load_packets``)."""
    from traceflow.pcap.reader import read_packets as _read  # lazy: the decoder is heavy

    return _as_frame(_read(path))


def is_packets(df: pl.DataFrame) -> bool:
    return {"ts", "wirelen"} <= set(df.columns)


def is_series(df: pl.DataFrame) -> bool:
    return {"t", "bytes", "packets"} <= set(df.columns)


@dataclass
class LoadedSeries:
    """A 1-D numeric series ready for statistics.

    ``values`` float64; ``bin_ns`` the sampling interval when the input is a time series (None for
    a plain column of a table); ``column`` the quantity (``bytes``/``packets``/user column);
    ``kind`` what the input was (capture, packets, series, table); ``frame`` the series frame when
    one was built or read (None for a plain column).
    """

    values: np.ndarray
    bin_ns: int | None
    column: str
    kind: str
    frame: pl.DataFrame | None = field(default=None, repr=False)


def load_series(path, *, column=None, bin=None, direction=None, filter=None, proto=None,
                default_bin="10ms", default_column="bytes") -> LoadedSeries:
    """Load a 1-D series from a capture, a packets table, a series table, or any table + column.

    * capture / packets table → :func:`link_series` at ``bin`` (default ``default_bin``);
    * series table (``t, bytes, packets``) → its ``column`` (default ``default_column``), aggregated
      to ``bin`` when given (a multiple of its own width);
    * any other Parquet/CSV → ``column`` (required) as is; ``bin`` is not applicable there.
    """
    kind = table_kind(path)
    if kind != "capture":
        kind = "packets" if {"ts", "wirelen"} <= set(table_columns(path)) else "table"
    if kind in ("capture", "packets"):
        col = column or default_column
        if col not in ("bytes", "packets"):
            raise TraceflowError(f"--column for a capture or packets table is bytes or packets, not {col!r}")
        frame = packet_series(path, bin or default_bin, direction, filter, proto=proto).frame()
        return LoadedSeries(frame.get_column(col).to_numpy().astype(np.float64),
                            parse_duration(bin or default_bin), col, kind, frame)
    df = read_table(path)
    kind = "series" if is_series(df) else "table"
    if direction or filter or proto:
        raise TraceflowError("--direction/--filter/--proto apply to captures and packets tables "
                             "only", path=path)
    if kind == "series":
        frame = df.select("t", "bytes", "packets").with_columns(pl.col("t").cast(pl.Datetime("ns")))
        width = bin_width(frame) if frame.height > 1 else None
        if bin is not None:
            frame = resample(frame, bin)
            width = parse_duration(bin)
        col = column or default_column
        if col not in frame.columns:
            raise TraceflowError(f"series has no column {col!r} (bytes, packets)", path=path)
        return LoadedSeries(frame.get_column(col).to_numpy().astype(np.float64), width, col, kind, frame)
    if not column:
        raise TraceflowError(f"table is neither packets nor a series: give --column (one of "
                             f"{', '.join(df.columns[:12])})", path=path)
    if bin is not None:
        raise TraceflowError("--bin applies to captures, packets and series tables only", path=path)
    return LoadedSeries(column_values(df, column, path=path), None, column, "table")


def column_values(df: pl.DataFrame, column: str, *, path=None) -> np.ndarray:
    """A numeric column as float64 (Duration → seconds; Datetime rejected; nulls dropped)."""
    if column not in df.columns:
        from traceflow.suggest import did_you_mean

        raise TraceflowError(f"no column {column!r}{did_you_mean(column, df.columns)}; columns: "
                             f"{', '.join(df.columns)}", path=path)
    s = df.get_column(column)
    if s.dtype == pl.Duration or isinstance(s.dtype, pl.Duration):
        s = s.dt.total_nanoseconds().cast(pl.Float64) / 1e9
    elif not s.dtype.is_numeric() and s.dtype != pl.Boolean:
        raise InputFormatError(f"column {column!r} is {s.dtype}, not numeric", path=path)
    return s.drop_nulls().cast(pl.Float64).to_numpy()


load_packets = read_packets

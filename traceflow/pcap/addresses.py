"""The packets table's 16-byte addresses as text.

Addresses are stored as 16-byte binaries, IPv4 as IPv4-mapped IPv6 (``::ffff:a.b.c.d``), so one
column holds both families and compares fast. For people and for text formats they become strings:
IPv4-mapped addresses as dotted quads (``192.0.2.1``), others in RFC 5952 form (``2001:db8::1``).
Each distinct address is converted once.
"""
import ipaddress

import polars as pl
import pyarrow as pa


def _text(raw):
    if raw is None:
        return None
    if len(raw) != 16:
        return raw.hex()
    ip = ipaddress.IPv6Address(raw)
    return str(ip.ipv4_mapped) if ip.ipv4_mapped else str(ip)


def address_strings(values):
    """A Polars String Series of the addresses in ``values`` (a Polars Series, an Arrow array or a
    list of 16-byte ``bytes``); nulls stay null; binaries that are not 16 bytes become hex."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = pl.Series(values)
    elif not isinstance(values, pl.Series):
        values = pl.Series(values, dtype=pl.Binary)
    name = values.name
    values = values.cast(pl.Binary)
    distinct = values.unique().drop_nulls()
    mapping = dict(zip(distinct.to_list(), (_text(v) for v in distinct.to_list())))
    return values.replace_strict(mapping, default=None, return_dtype=pl.String).alias(name)


def with_address_strings(table, columns=None):
    """``table`` (Polars frame or Arrow table) as a Polars DataFrame whose binary address columns
    (``columns``, default every Binary column, e.g. ``src``/``dst``) hold text instead.

    >>> import traceflow
    >>> packets = traceflow.with_address_strings(traceflow.read_packets("trace.pcap"))  # doctest: +SKIP
    """
    frame = pl.from_arrow(table) if isinstance(table, (pa.Table, pa.RecordBatch)) else table
    if columns is None:
        columns = [c for c, t in frame.schema.items() if t == pl.Binary]
    return frame.with_columns(address_strings(frame.get_column(c)) for c in columns)

"""Row selection shared by every command: ``--filter`` (a Polars SQL ``WHERE`` clause over the
table's columns) and ``--proto tcp|udp|icmp``.

Which table the clause sees depends on what the command analyses: flows, rtt and tail select flows
(``server_port = 443``, ``bytes > 1e6``, ``close = 'RST'``); series, hurst, dispersion, levels, fit
and report select packets before anything is built from them (``dport = 53``,
``payload_len > 0``). ``--proto`` works on both (their ``proto`` column).
"""
from __future__ import annotations

import polars as pl

from traceflow.errors import TraceflowError

#: ``--proto`` names → IP protocol numbers (icmp: ICMP and ICMPv6)
PROTOCOLS = {"tcp": (6,), "udp": (17,), "icmp": (1, 58)}


def row_filter(filter=None, proto=None):
    """The Polars expression of ``filter`` and ``proto`` (None when there is nothing to select)."""
    exprs = []
    if proto is not None:
        if proto not in PROTOCOLS:
            raise TraceflowError(f"bad --proto {proto!r}: use {', '.join(PROTOCOLS)}")
        exprs.append(pl.col("proto").is_in(PROTOCOLS[proto]))
    if filter:
        try:
            exprs.append(pl.sql_expr(filter))
        except Exception as exc:  # Polars raises several types for SQL syntax errors
            raise TraceflowError(f"bad --filter {filter!r}: {str(exc).splitlines()[0]}") from None
    if not exprs:
        return None
    return pl.all_horizontal(exprs) if len(exprs) > 1 else exprs[0]


def select_rows(frame, filter=None, proto=None):
    """The rows of ``frame`` (Polars DataFrame, or LazyFrame: the result stays lazy) matching
    ``filter`` and ``proto``; a clause naming a column the table lacks is a one-line error listing
    the columns."""
    expr = row_filter(filter, proto)
    if expr is None:
        return frame
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    # SQL's TIMESTAMP '...' literals are naive: compare time-zone-aware columns as UTC instants
    aware = {n: d.time_zone for n, d in schema.items()
             if isinstance(d, pl.Datetime) and d.time_zone is not None}
    try:
        out = frame.with_columns(pl.col(n).dt.convert_time_zone("UTC").dt.replace_time_zone(None)
                                 for n in aware).filter(expr).with_columns(
            pl.col(n).dt.replace_time_zone("UTC").dt.convert_time_zone(tz)
            for n, tz in aware.items()) if aware else frame.filter(expr)
        if isinstance(out, pl.LazyFrame):
            out.collect_schema()  # resolves the column names now, not at a later collect
        return out
    except (pl.exceptions.ColumnNotFoundError, pl.exceptions.SQLInterfaceError,
            pl.exceptions.InvalidOperationError, pl.exceptions.ComputeError,
            pl.exceptions.SchemaError) as exc:
        names = frame.collect_schema().names() if isinstance(frame, pl.LazyFrame) else frame.columns
        what = "--proto" if filter is None else f"--filter {filter!r}"
        message = str(exc).splitlines()[0]
        if "valid columns" not in message:
            message += f" (columns: {', '.join(names)})"
        raise TraceflowError(f"bad {what}: {message}") from None

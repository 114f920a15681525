"""A column of a table from values known for some of its rows (the rest null).

A left join of a table with such values followed by a sort back into the table's order copies
every column of the table twice; with the values put in place (:func:`scattered`) the table's
columns are shared, not copied (``fit`` on long captures: issue 17)."""
import polars as pl


def scattered(name, rows, values, height):
    """A Series ``name`` of ``height`` rows holding ``values`` at the row numbers ``rows`` (each
    at most once) and null elsewhere."""
    out = pl.repeat(None, height, dtype=values.dtype, eager=True).alias(name)
    return out.scatter(rows, values) if rows.len() else out

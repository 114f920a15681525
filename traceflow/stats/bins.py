"""Incremental binning of packets into a link series: bytes and packets per bin, batch by batch.

:class:`SeriesBins` counts packets on a grid of bins ``width`` ns wide whose phase (one bin edge)
is fixed by its first packets, so memory is one int64 count and one byte sum per bin, in blocks
of :data:`BLOCK` bins allocated where packets fall, whatever the number of packets. A series starts at its first
(earliest) packet, which a stream only knows at its end: when an earlier packet off the grid's
phase comes later, :attr:`SeriesBins.aligned` is False and the caller bins the packets again with
``start`` set to :attr:`SeriesBins.lo` (one more pass; captures are rarely out of order before their
first batch's earliest packet).
"""
from __future__ import annotations

import numpy as np
import polars as pl

from traceflow.errors import InputFormatError

SERIES_SCHEMA = {"t": pl.Datetime("ns"), "bytes": pl.Int64, "packets": pl.Int64}
#: bins a series may span (at 10 ms, 31 days; 4 GiB of int64 counts and sums, 2 GiB of
#: fit's float64 sums): beyond, the timestamps are taken for a clock step (a packet stamped
#: 1970 among 2012's asked for 999 GiB)
MAX_BINS = 1 << 28
BLOCK_BITS = 14
BLOCK = 1 << BLOCK_BITS  # bins per block of storage (256 KiB of counts and sums)


def check_span(lo, hi, width):
    """Refuse (:class:`~traceflow.errors.InputFormatError`) a series of bins ``width`` ns wide
    from ``lo`` to ``hi`` (ns) longer than :data:`MAX_BINS`."""
    from traceflow import units

    if (hi - lo) // width < MAX_BINS:
        return
    raise InputFormatError(
        f"the packets' timestamps span {(hi - lo) / 86400e9:.3g} days ({units.timestamp(lo)} to "
        f"{units.timestamp(hi)}): a series of {units.duration(width / 1e9)} bins would have "
        f"{(hi - lo) // width + 1:.3g} of them (at most {MAX_BINS:.3g}); a clock step? keep one "
        f"period, e.g. --filter \"ts >= TIMESTAMP '{units.timestamp(hi)[:10]}'\"")


class SeriesBins:
    """Bytes and packets per bin of ``width`` ns (see the module docstring).

    ``start`` / ``end`` (int ns): the covered range ``[start, end)``; packets outside it are not
    counted. By default the range runs from the earliest packet to the latest (+1 ns).
    ``phase`` (int ns): a bin edge of the grid (default ``start``, else the first packets').
    """

    def __init__(self, width: int, start: int | None = None, end: int | None = None,
                 phase: int | None = None):
        self.width = int(width)
        self.start, self.end = start, end
        self.phase = start if phase is None else phase  # a bin edge (ns)
        self.blocks = {}            # grid index // BLOCK -> counts and sums (2 x BLOCK int64)
        self.ts_min = self.ts_max = None  # earliest / latest packet added (ns)

    def add(self, ts: np.ndarray, sizes: np.ndarray) -> None:
        """Count packets at times ``ts`` (int64 ns) of ``sizes`` bytes (int64), in any order."""
        if ts.size == 0:
            return
        lo, hi = int(ts.min()), int(ts.max())
        self.ts_min = lo if self.ts_min is None else min(self.ts_min, lo)
        self.ts_max = hi if self.ts_max is None else max(self.ts_max, hi)
        check_span(self.ts_min if self.start is None else max(self.ts_min, self.start),
                   self.ts_max if self.end is None else min(self.ts_max, self.end), self.width)
        if self.start is not None or self.end is not None:
            keep = np.ones(ts.size, dtype=bool)
            if self.start is not None:
                keep &= ts >= self.start
            if self.end is not None:
                keep &= ts < self.end
            ts, sizes = ts[keep], sizes[keep]
            if ts.size == 0:
                return
        if self.phase is None:
            self.phase = lo
        grid = (ts - self.phase) // self.width
        first = int(grid.min())
        idx = grid - first
        n = int(idx.max()) + 1
        counts = np.bincount(idx, minlength=n)
        # float64 partial sums of integers are exact below 2**53 bytes per bin (9 PB)
        sums = np.bincount(idx, weights=sizes, minlength=n).astype(np.int64)
        for block in np.unique((first + np.flatnonzero(counts)) >> BLOCK_BITS).tolist():
            base = block << BLOCK_BITS
            since, until = max(base, first), min(base + BLOCK, first + n)
            if block not in self.blocks:
                self.blocks[block] = np.zeros((2, BLOCK), dtype=np.int64)
            stored = self.blocks[block]
            stored[0, since - base:until - base] += counts[since - first:until - first]
            stored[1, since - base:until - base] += sums[since - first:until - first]

    def merge(self, other: "SeriesBins") -> None:
        """Add the packets ``other`` counted (same width, range and phase: e.g. the bins of
        another part of the same capture)."""
        if (other.width, other.start, other.end) != (self.width, self.start, self.end) or (
                other.blocks and self.blocks and other.phase != self.phase):
            raise ValueError("merging series bins of different grids")
        if other.ts_min is None:
            return
        if self.phase is None:
            self.phase = other.phase
        for block, stored in other.blocks.items():
            if block in self.blocks:
                self.blocks[block] += stored
            else:
                self.blocks[block] = stored.copy()
        self.ts_min = other.ts_min if self.ts_min is None else min(self.ts_min, other.ts_min)
        self.ts_max = other.ts_max if self.ts_max is None else max(self.ts_max, other.ts_max)

    @property
    def lo(self) -> int | None:
        """Start of the series (ns): ``start``, else the earliest packet."""
        return self.start if self.start is not None else self.ts_min

    @property
    def hi(self) -> int | None:
        """End of the series (ns, exclusive): ``end``, else the latest packet + 1."""
        return self.end if self.end is not None else (
            None if self.ts_max is None else self.ts_max + 1)

    @property
    def aligned(self) -> bool:
        """True when the series' start is a bin edge of the grid (:meth:`frame` is exact)."""
        return self.phase is None or self.lo is None or (self.lo - self.phase) % self.width == 0

    def frame(self) -> pl.DataFrame:
        """The series: ``t`` (bin start), ``bytes``, ``packets``, empty bins as zeros."""
        lo, hi = self.lo, self.hi
        if lo is None or hi is None or hi <= lo:
            return pl.DataFrame(schema=SERIES_SCHEMA)
        if not self.aligned:
            raise ValueError("series start is off the bin grid: bin again with start=lo")
        nbins = -(-(hi - lo) // self.width)
        counts, sums = np.zeros(nbins, dtype=np.int64), np.zeros(nbins, dtype=np.int64)
        if self.blocks:
            # copy the stored bins that fall in [lo, lo + nbins * width)
            at = (lo - self.phase) // self.width
            for block, stored in self.blocks.items():
                base = block << BLOCK_BITS
                since, until = max(base, at), min(base + BLOCK, at + nbins)
                if since < until:
                    counts[since - at:until - at] = stored[0, since - base:until - base]
                    sums[since - at:until - at] = stored[1, since - base:until - base]
        t = lo + self.width * np.arange(nbins, dtype=np.int64)
        return pl.DataFrame({"t": t, "bytes": sums, "packets": counts}).with_columns(
            pl.col("t").cast(pl.Datetime("ns")))

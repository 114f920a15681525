"""Incremental binning of packets into a link series: bytes and packets per bin, batch by batch.

:class:`SeriesBins` counts packets on a grid of bins ``width`` ns wide whose phase (one bin edge)
is fixed by its first packets, so memory is one int64 count and one byte sum per bin from the
first to the last bin touched, whatever the number of packets. A series starts at its first
(earliest) packet, which a stream only knows at its end: when an earlier packet off the grid's
phase comes later, :attr:`SeriesBins.aligned` is False and the caller bins the packets again with
``start`` set to :attr:`SeriesBins.lo` (one more pass; captures are rarely out of order before their
first batch's earliest packet).
"""
from __future__ import annotations

import numpy as np
import polars as pl

SERIES_SCHEMA = {"t": pl.Datetime("ns"), "bytes": pl.Int64, "packets": pl.Int64}


class SeriesBins:
    """Bytes and packets per bin of ``width`` ns (see the module docstring).

    ``start`` / ``end`` (int ns): the covered range ``[start, end)``; packets outside it are not
    counted. By default the range runs from the earliest packet to the latest (+1 ns).
    """

    def __init__(self, width: int, start: int | None = None, end: int | None = None):
        self.width = int(width)
        self.start, self.end = start, end
        self.phase = start          # a bin edge (ns); from the first packets when start is None
        self.base = 0               # grid index of counts[0]
        self.counts = np.zeros(0, dtype=np.int64)
        self.sums = np.zeros(0, dtype=np.int64)
        self.ts_min = self.ts_max = None  # earliest / latest packet added (ns)

    def add(self, ts: np.ndarray, sizes: np.ndarray) -> None:
        """Count packets at times ``ts`` (int64 ns) of ``sizes`` bytes (int64), in any order."""
        if ts.size == 0:
            return
        lo, hi = int(ts.min()), int(ts.max())
        self.ts_min = lo if self.ts_min is None else min(self.ts_min, lo)
        self.ts_max = hi if self.ts_max is None else max(self.ts_max, hi)
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
        first, last = int(grid.min()), int(grid.max())
        self._cover(first, last + 1)
        idx = grid - first
        at = first - self.base
        n = last - first + 1
        self.counts[at:at + n] += np.bincount(idx, minlength=n)
        # float64 partial sums of integers are exact below 2**53 bytes per bin (9 PB)
        self.sums[at:at + n] += np.bincount(idx, weights=sizes, minlength=n).astype(np.int64)

    def _cover(self, first: int, stop: int) -> None:
        """Grow the arrays (by doubling, either way) to hold grid indices ``[first, stop)``."""
        size = self.counts.size
        if size and first >= self.base and stop <= self.base + size:
            return
        need_lo = min(first, self.base) if size else first
        need_hi = max(stop, self.base + size) if size else stop
        grow = max(need_hi - need_lo, 2 * size)
        lo = need_hi - grow if size and first < self.base else need_lo
        counts, sums = np.zeros(grow, dtype=np.int64), np.zeros(grow, dtype=np.int64)
        if size:
            counts[self.base - lo:self.base - lo + size] = self.counts
            sums[self.base - lo:self.base - lo + size] = self.sums
        self.counts, self.sums, self.base = counts, sums, lo

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
        if self.phase is not None and self.counts.size:
            # copy the stored bins that fall in [lo, lo + nbins * width)
            at = (lo - self.phase) // self.width - self.base
            src_lo, src_hi = max(at, 0), min(at + nbins, self.counts.size)
            if src_lo < src_hi:
                counts[src_lo - at:src_hi - at] = self.counts[src_lo:src_hi]
                sums[src_lo - at:src_hi - at] = self.sums[src_lo:src_hi]
        t = lo + self.width * np.arange(nbins, dtype=np.int64)
        return pl.DataFrame({"t": t, "bytes": sums, "packets": counts}).with_columns(
            pl.col("t").cast(pl.Datetime("ns")))

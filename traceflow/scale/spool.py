"""Frames gathered over a long streaming pass, in memory up to a budget and on disk beyond it.

``traceflow fit`` keeps a few values per connection until the pass ends (the flow table, the
end-host facts, the SYN/ACK gaps): O(connections), a few hundred bytes each, so on a long capture
they outgrow the pass's own working set (issue 17). A :class:`Spool` holds them as
named lists of Polars frames; once all of them together exceed ``budget`` bytes, every list
goes to an Arrow IPC file in a private temporary directory and later frames follow it there.
They come back, frame by frame or concatenated, in the order they were appended and with the
schema of the first. The directory is deleted by :meth:`Spool.close` or when the spool is
garbage-collected.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref

import polars as pl
import polars.selectors as cs
import pyarrow as pa

from traceflow.errors import OutputError, os_errno

#: bytes (Polars' estimate) held in memory by one spool before its frames go to disk. What
#: ``fit`` keeps per connection: with 32 MB, its pass over a 16x dev10m capture peaked at
#: 352 MB (the frames held, up to 32 MB, where a 1x capture's whole spool holds 2.7 MB),
#: with 8 MB at 319-322 MB (in-process, one run each); the frames written cost no speed seen
SPOOL_BYTES = 8 << 20


class Spool:
    """Named, append-only lists of frames (see the module docstring). ``budget``: bytes kept in
    memory; ``dir``: where the temporary directory is made (default: :func:`tempfile.gettempdir`,
    i.e. ``$TMPDIR``)."""

    def __init__(self, budget=SPOOL_BYTES, dir=None):
        self.budget = budget
        self.dir = dir
        self.held = {}          # name -> frames in memory
        self.schema = {}        # name -> Polars schema of the first frame
        self.files = {}         # name -> (path, writer, batches per frame appended)
        self.nbytes = 0
        self.path = None        # the temporary directory, once made
        self._made = 0          # files made in it
        self._cleanup = None
        self._lock = threading.Lock()

    def append(self, name, frame):
        """Add ``frame`` (a DataFrame) at the end of the list ``name`` (threads may append at
        once, each to lists of its own)."""
        with self._lock:
            self.schema.setdefault(name, frame.schema)
            if self.path is not None:
                self._write(name, frame)
                return
            self.held.setdefault(name, []).append(frame)
            self.nbytes += frame.estimated_size()
            if self.nbytes > self.budget:
                self._spill()

    def count(self, name):
        """How many frames were appended to ``name``."""
        with self._lock:
            return len(self.held.get(name, ())) + (len(self.files[name][2]) if name in self.files
                                                   else 0)

    def frames(self, name):
        """The frames of ``name`` in the order they were appended (an iterator)."""
        if name in self.files:
            path, counts = self._finish(name)
            reader = self._guarded(pa.ipc.open_file, path)
            schema = self.schema[name]
            i = 0
            for n in counts:
                table = pa.Table.from_batches([reader.get_batch(i + k) for k in range(n)],
                                              reader.schema)
                i += n
                yield pl.from_arrow(table).cast(schema) if n else pl.DataFrame(schema=schema)
        yield from self.held.get(name, ())

    def concat(self, name):
        """Every frame of ``name`` in one DataFrame of one chunk (None if none was appended):
        the later stages of ``fit`` on the 16x dev10m flow table, read back a frame per
        release, peaked 8-16 MB higher than on the same table in one chunk."""
        if not self.count(name):
            return None
        return pl.concat(list(self.frames(name)), how="vertical", rechunk=True)

    def drop(self, name):
        """Forget the frames of ``name`` (and delete its file)."""
        self.schema.pop(name, None)
        for frame in self.held.pop(name, ()):
            self.nbytes -= frame.estimated_size()
        if name in self.files:
            os.unlink(self._discard(name))

    def close(self):
        """Drop every list and delete the temporary directory."""
        for name in list(self.files):
            self._discard(name)
        self.held, self.nbytes = {}, 0
        if self._cleanup is not None:
            self._cleanup()

    def _finish(self, name):
        """Close the file of ``name`` for writing (its footer written); ``(path, counts)``."""
        path, writer, counts = self.files[name]
        if writer is not None:
            self._guarded(writer.close)
            self.files[name] = (path, None, counts)
        return path, counts

    def _discard(self, name):
        """Forget the file of ``name`` (its writer closed, a failure to write the footer of a
        file that goes anyway ignored: a full disk); its path."""
        path, writer, _ = self.files.pop(name)
        if writer is not None:
            try:
                writer.close()
            except (OSError, pa.ArrowException):
                pass
        return path

    def _spill(self):
        try:
            self.path = tempfile.mkdtemp(prefix="traceflow-spool-", dir=self.dir)
        except OSError as exc:
            raise self._error(exc, self.dir or tempfile.gettempdir()) from None
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.path, ignore_errors=True)
        held, self.held, self.nbytes = self.held, {}, 0
        for name, frames in held.items():
            for frame in frames:
                self._write(name, frame)

    def _write(self, name, frame):
        # categories as text: an IPC file has one dictionary per column, the frames one each
        table = frame.with_columns(cs.categorical().cast(pl.String),
                                   cs.enum().cast(pl.String)).to_arrow()
        if name not in self.files:
            self._made += 1         # never a name in use: names are dropped and made again
            path = os.path.join(self.path, f"{self._made}.arrow")
            sink = self._guarded(pa.OSFile, path, "wb")
            self.files[name] = (path, self._guarded(pa.ipc.new_file, sink, table.schema), [])
        path, writer, counts = self.files[name]
        if writer is None:
            raise RuntimeError(f"spool list {name!r} was read from its file: no more frames")
        batches = table.to_batches()
        for batch in batches:
            self._guarded(writer.write_batch, batch)
        counts.append(len(batches))

    def _guarded(self, call, *args, **kwargs):
        try:
            return call(*args, **kwargs)
        except (OSError, pa.ArrowException) as exc:
            if os_errno(exc) is None:
                raise
            raise self._error(exc, self.path) from None

    @staticmethod
    def _error(exc, where):
        return OutputError(f"cannot keep temporary data: {os.strerror(os_errno(exc)).lower()} "
                           f"(set TMPDIR to a file system with room)", path=where)

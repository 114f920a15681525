"""Read pcap/pcapng captures (optionally gzip/zstd-compressed) into Arrow tables of packets.

``read_packets(path)`` returns a ``pyarrow.Table`` in :data:`traceflow.pcap.schema.PACKET_SCHEMA`;
``iter_batches(path)`` streams record batches of at most ``batch_size`` packets with memory bounded
by the batch and read-chunk sizes, whatever the file size.

Two decoders produce identical tables: ``decoder="fast"`` (Cython, the default) and ``"dpkt"``
(the dpkt-based reference, :mod:`traceflow.pcap.dpkt_decoder`).

``plan_chunks(path)`` cuts a large uncompressed capture at record boundaries into :class:`Chunk` s
that the fast decoder reads independently (``iter_batches(path, chunk=c)``); their tables, in order,
make the whole file's table, so several workers can decode one file.

Bad input raises :class:`~traceflow.errors.InputFormatError` naming the file, byte offset (in the
decompressed stream) and record index.  With ``on_error="skip"`` a malformed record is dropped and
counted in :class:`ReadStats` instead.  Resync policy: a pcapng block whose framing is intact but whose
content is bad (captured length beyond the block, undefined interface) is skipped whole; otherwise the
reader scans forward (byte by byte for pcap, 4-byte aligned for pcapng) to the first offset where a
plausible record starts that is followed by another plausible record (or the end of the data), and
counts the bytes in between as ``skipped_bytes``.  A file that ends inside its last record (a
capture cut short) keeps every complete record; the partial one is dropped with a warning
(:func:`~traceflow.pcap.containers.end_truncated`).  Errors about a malformed record suggest
``--on-error skip``.  File-level problems (empty file, unknown magic, truncated file header, corrupt
compression) always raise.
Records of link types the decoder does not understand produce no rows; they are counted in
``ReadStats.unsupported_linktypes``.  pcapng simple packet blocks carry no timestamp or interface:
their rows have ``ts`` 0 and ``iface`` 0.
"""
import os
import stat as stat_mode
import struct
from dataclasses import dataclass

import pyarrow as pa

from traceflow.errors import InputFormatError, TraceflowError
from traceflow.pcap import _decode
from traceflow.pcap.containers import (
    GZIP_MAGIC, IDB, MAX_RECORD, PCAP_HEADER_LEN, PCAPNG_MAGIC, SKIP_HINT, ZSTD_MAGIC, CaptureStream,
    PcapHeader, ReadStats, end_truncated, parse_idb, parse_pcap_header, section_byte_order, sniff,
)
from traceflow.pcap.schema import PACKET_SCHEMA

__all__ = ["read_packets", "iter_batches", "plan_chunks", "Chunk", "ReadStats", "SUPPORTED_LINKTYPES"]

SUPPORTED_LINKTYPES = _decode.SUPPORTED_LINKTYPES
CHUNK = 4 << 20          # bytes read per call
RESYNC_KEEP = 1 << 19    # bytes kept at a chunk's end while resynchronising (two 256 KiB records)
_S = _decode.STATUS
NEED_MORE, BATCH_FULL, BLOCK, BAD_RECORD = (_S[k] for k in ("NEED_MORE", "BATCH_FULL", "BLOCK",
                                                           "BAD_RECORD"))
FRAMING_INTACT = _decode.FRAMING_INTACT
DEFAULT_CHUNK_BYTES = 64 << 20
# a link type no decoder knows: records of it are framed and counted, never decoded (chunk planning)
FRAME_ONLY_LINKTYPE = 0xFFFF


@dataclass(frozen=True)
class Chunk:
    """A byte range of a capture that decodes on its own (see :func:`plan_chunks`).

    ``start_offset``/``end_offset``: the bytes ``[start, end)`` of the file (``end_offset`` None: to
    its end); the first chunk starts at 0 and holds the file header.  ``first_record_index``: the
    file-wide index of the chunk's first record.  Context to decode from ``start_offset``:
    ``format``, for pcap the file ``header``, for pcapng the section's byte order ``big_endian``
    and the ``interfaces`` (:class:`~traceflow.pcap.containers.Interface`) in force there.
    """
    path: str
    start_offset: int = 0
    end_offset: int | None = None
    first_record_index: int = 0
    index: int = 0
    format: str | None = None
    header: PcapHeader | None = None
    big_endian: bool = False
    interfaces: tuple = ()

    @property
    def whole(self):
        return self.start_offset == 0 and self.end_offset is None


def plan_chunks(path, target_bytes=DEFAULT_CHUNK_BYTES):
    """Cut a capture into :class:`Chunk` s of about ``target_bytes`` bytes (at least one record each).

    Cuts fall on record (pcap) or block (pcapng) boundaries, found by framing the file with the fast
    decoder without decoding packets.  A compressed, non-regular or small file is one whole chunk.
    Planning stops cutting at the first malformed record: the rest of the file is the last chunk,
    whose reader reports (or skips) it exactly as a whole-file read does.
    """
    if target_bytes < 1:
        raise TraceflowError(f"chunk size must be positive, not {target_bytes}")
    whole = [Chunk(str(path))]
    try:
        st = os.stat(path)
        if not stat_mode.S_ISREG(st.st_mode) or st.st_size <= target_bytes:
            return whole  # a pipe cannot be read twice
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError:
        return whole  # the reader reports it
    if magic[:2] == GZIP_MAGIC or magic == ZSTD_MAGIC:
        return whole
    planner = _Planner(path, target_bytes, st.st_size)
    try:
        for _ in planner.batches():
            pass
    except InputFormatError:
        pass
    if not planner.cuts:
        return whole
    starts = [(0, 0, False, ())] + planner.cuts
    ends = [cut[0] for cut in planner.cuts] + [st.st_size]
    header = planner.header if planner.stats.format == "pcap" else None
    return [Chunk(str(path), start, end, record, i, planner.stats.format, header, big, interfaces)
            for i, ((start, record, big, interfaces), end) in enumerate(zip(starts, ends))]


def read_packets(path, *, decoder="fast", on_error="fail", batch_size=65536, stats=None, progress=None,
                 chunk=None):
    """Decode a capture into a ``pyarrow.Table`` (schema :data:`PACKET_SCHEMA`).

    Parameters
    ----------
    path : str or pathlib.Path
        A pcap or pcapng file (optionally .gz/.zst compressed).
    decoder : {"fast", "dpkt"}, default "fast"
        The Cython decoder, or the dpkt reference decoder.
    on_error : {"fail", "skip"}, default "fail"
        What a malformed record does: stop with an error, or be skipped (and counted in
        ``stats``).
    batch_size : int, default 65536
        Packets decoded per record batch.
    stats : ReadStats, optional
        Filled in while reading.
    progress : callable, optional
        Receives increments of bytes read from the file (compressed bytes for .gz/.zst).
    chunk : Chunk, optional
        Decode only this :class:`Chunk` of the file (see :func:`iter_batches`).

    Returns
    -------
    pyarrow.Table
        One row per packet in file order (``ts`` in ns, lengths in bytes).

    Raises
    ------
    TraceflowError
        An invalid ``decoder``, ``on_error`` or ``batch_size``, a ``chunk`` with the dpkt decoder,
        or a capture that cannot be read.

    Examples
    --------
    >>> from traceflow.pcap.reader import read_packets
    >>> table = read_packets("trace.pcap.gz")
    >>> table.num_rows
    """
    batches = list(iter_batches(path, decoder=decoder, on_error=on_error, batch_size=batch_size,
                                stats=stats, progress=progress, chunk=chunk))
    return pa.Table.from_batches(batches, schema=PACKET_SCHEMA)


def iter_batches(path, *, decoder="fast", on_error="fail", batch_size=65536, stats=None, progress=None,
                 chunk=None):
    """Yield ``pyarrow.RecordBatch`` es of at most ``batch_size`` packets, in file order.

    With ``chunk`` (from :func:`plan_chunks` of this file) only that byte range is decoded; error
    offsets and record indices still count from the start of the file, and ``stats`` count the
    chunk's records and bytes (and the pcapng interfaces it defines) only.
    """
    if on_error not in ("fail", "skip"):
        raise TraceflowError(f"on_error must be 'fail' or 'skip', not {on_error!r}")
    if batch_size < 1:
        raise TraceflowError(f"batch_size must be positive, not {batch_size}")
    stats = ReadStats() if stats is None else stats
    stats.path = str(path)
    if decoder == "fast":
        return _FastReader(path, on_error, batch_size, stats, progress, chunk).batches()
    if chunk is not None and not chunk.whole:
        raise TraceflowError("reading a chunk of a capture needs decoder='fast'")
    if decoder == "dpkt":
        from traceflow.pcap.dpkt_decoder import iter_batches as dpkt_batches

        return dpkt_batches(path, on_error=on_error, batch_size=batch_size, stats=stats,
                            progress=progress)
    raise TraceflowError(f"decoder must be 'fast' or 'dpkt', not {decoder!r}")


class _FastReader:
    """Chunked read loop around :class:`traceflow.pcap._decode.Decoder`."""

    frame_only = False  # frame records without decoding them (chunk planning)

    def __init__(self, path, on_error, batch_size, stats, progress, chunk=None):
        self.path = path
        self.skip = on_error == "skip"
        self.batch_size = batch_size
        self.stats = stats
        self.progress = progress
        self.chunk = chunk if chunk is not None else Chunk(str(path))
        self.read_size = CHUNK
        self.header = None        # pcap file header
        self.interfaces = []      # pcapng interfaces of the current section
        self._inherited = 0       # of which in force before the chunk starts
        self._raw_seen = 0

    def _error(self, message, offset, record=None, hint=None):
        return InputFormatError(message, path=self.path, offset=offset, record=record, hint=hint)

    def _linktype(self, linktype):
        return FRAME_ONLY_LINKTYPE if self.frame_only else linktype

    def batches(self):
        chunk = self.chunk
        start, end = chunk.start_offset, chunk.end_offset
        with CaptureStream(self.path, start, end) as src:
            self.src = src
            self._raw_seen = src.raw_pos
            self.stats.compression = src.compression
            big, interfaces = False, ()
            if start == 0:
                head = src.read_exact(4)
                fmt = sniff(head, self.path)
                if fmt == "pcap":
                    head += src.read_exact(PCAP_HEADER_LEN - 4)
                    self.header = parse_pcap_header(head, self.path)
                    buf, base = bytearray(), PCAP_HEADER_LEN
                else:  # byte order comes from the section header block
                    buf, base = bytearray(head), 0
            else:
                fmt, self.header = chunk.format, chunk.header
                big, interfaces = chunk.big_endian, chunk.interfaces
                buf, base = bytearray(), start
            self.stats.format = fmt
            hdr = self.header
            if fmt == "pcap":
                dec = _decode.Decoder(0, hdr.big_endian, MAX_RECORD)
                dec.set_pcap(self._linktype(hdr.linktype), hdr.snaplen, hdr.nanos)
            else:
                dec = _decode.Decoder(1, big, MAX_RECORD)
            dec.records = chunk.first_record_index
            self.dec = dec
            for iface in interfaces:
                self._add_interface(iface)
            self._inherited = len(interfaces)
            yield from self._loop(buf, fmt, base)
            self.stats.bytes = src.pos - start
            self._tick()
            if fmt == "pcap":
                self.stats.add_unsupported(hdr.linktype, dec.unsupported)
                self.stats.interfaces = int(start == 0)
                self.stats.snaplens = [hdr.snaplen] * int(start == 0)
            else:
                self._collect_interfaces()

    def _add_interface(self, iface):
        self.interfaces.append(iface)
        self.dec.add_interface(self._linktype(iface.linktype), iface.tsresol, iface.tsoffset)

    def _boundary(self, offset):
        """Called where a record or block starts (file offset ``offset``); for chunk planning."""

    def _tick(self):
        if self.progress is not None:
            raw = self.src.raw_pos
            self.progress(raw - self._raw_seen)
            self._raw_seen = raw

    def _collect_interfaces(self):
        dec = self.dec
        n = dec.n_interfaces
        arrays = dec.if_arrays
        for iface, count in zip(self.interfaces, arrays["unsupported"][:n]):
            self.stats.add_unsupported(iface.linktype, count)
        # interfaces inherited by a chunk are counted by the chunk that defines them
        self.stats.interfaces += n - self._inherited
        self._inherited = 0

    def _loop(self, buf, fmt, base):
        """Decode records; ``buf`` holds the bytes read so far (from stream offset ``base``)."""
        dec, stats = self.dec, self.stats
        filled = len(buf)
        pos = 0
        eof = False
        resyncing = False
        cols = _decode.Columns(self.batch_size)
        while True:
            view = memoryview(buf)[:filled]
            if resyncing:
                found = dec.resync(view, pos)
                if found >= 0:
                    stats.skipped_bytes += found - pos
                    pos, resyncing = found, False
                elif eof:
                    stats.skipped_bytes += filled - pos
                    pos, resyncing = filled, False
                    status = NEED_MORE
                else:
                    keep_from = max(pos, filled - RESYNC_KEEP)
                    stats.skipped_bytes += keep_from - pos
                    pos = keep_from
                    status = NEED_MORE
            if not resyncing:
                pos, status = dec.decode(view, pos, cols)
            view.release()
            if status == BATCH_FULL:
                stats.packets += cols.n
                yield cols.to_batch()
                cols = _decode.Columns(self.batch_size)
                continue
            if status == BLOCK:
                try:
                    new_pos = self._block(buf, filled, pos, base)
                except InputFormatError as exc:
                    if not self.skip:
                        raise
                    new_pos, status, msg = None, BAD_RECORD, str(exc)
                if new_pos is not None:
                    pos = new_pos
                    self._boundary(base + pos)
                    continue
            if status == BAD_RECORD:
                err, dec.err = dec.err, 0
                if err:
                    msg = _decode.ERRORS[err].format(a=dec.err_a, b=dec.err_b)
                if not self.skip:
                    raise self._error(msg, base + pos, dec.records, hint=SKIP_HINT)
                stats.skipped_records += 1
                stats.note(f"record {dec.records} at offset {base + pos}: {msg}")
                if fmt == "pcapng" and err in FRAMING_INTACT:
                    pos += struct.unpack((">" if dec.big else "<") + "I", buf[pos + 4:pos + 8])[0]
                    dec.records += 1
                else:
                    resyncing = True
                    pos += 1
                    stats.skipped_bytes += 1
                continue
            # NEED_MORE (or a block that does not fit yet)
            if eof:
                if pos < filled or self.src.cut_at is not None:
                    end_truncated(stats, self.path, base + pos, dec.records, filled - pos, self.skip,
                                  self.src.cut_at)
                break
            if not resyncing:
                self._boundary(base + pos)
            # keep the unread tail, then read more behind it
            tail = filled - pos
            if tail > MAX_RECORD + 64:
                raise self._error("record larger than the maximum size", base + pos, dec.records)
            need = tail + self.read_size
            if len(buf) < need:
                new = bytearray(need)
                new[:tail] = buf[pos:filled]
                buf = new
            elif pos:
                buf[:tail] = buf[pos:filled]
            base += pos
            pos, filled = 0, tail
            with memoryview(buf) as mv:
                n = self.src.readinto(mv[filled:])
            if n == 0:
                eof = True
            filled += n
            self._tick()
        if cols.n:
            stats.packets += cols.n
            yield cols.to_batch()
        stats.records = dec.records - self.chunk.first_record_index

    def _block(self, buf, filled, pos, base):
        """Handle the non-packet pcapng block at ``pos``; its new end, or None if it is incomplete."""
        dec = self.dec
        if filled - pos < 12:
            return None
        head = bytes(buf[pos:pos + 12])
        if head[:4] == PCAPNG_MAGIC:
            big = section_byte_order(head, self.path, base + pos)
        else:
            big = dec.big
        e = ">" if big else "<"
        btype = struct.unpack(e + "I", head[:4])[0]
        blen = struct.unpack(e + "I", head[4:8])[0]
        if btype == 0x0A0D0D0A and (blen < 28 or blen % 4 or blen > MAX_RECORD):
            raise self._error(f"invalid pcapng block length {blen}", base + pos, dec.records,
                              hint=SKIP_HINT)
        if filled - pos < blen:
            return None
        block = bytes(buf[pos:pos + blen])
        if struct.unpack(e + "I", block[-4:])[0] != blen:
            raise self._error("pcapng block length does not match its trailer", base + pos,
                              dec.records, hint=SKIP_HINT)
        if btype == 0x0A0D0D0A:
            major = struct.unpack(e + "H", block[12:14])[0]
            if major != 1:
                raise self._error(f"unsupported pcapng version {major}", base + pos, dec.records)
            self._collect_interfaces()
            dec.big = big
            dec.reset_interfaces()
            self.interfaces = []
        elif btype == IDB:
            if blen < 20:
                raise self._error(f"truncated interface description block ({blen} bytes)", base + pos)
            iface = parse_idb(block, big)
            self.stats.snaplens.append(iface.snaplen)
            self._add_interface(iface)
        # every other block type (statistics, name resolution, custom, unknown) is legal: skip it
        return pos + blen


class _Planner(_FastReader):
    """Frames a whole capture without decoding packets and notes a cut (offset, record index,
    pcapng byte order and interfaces) at the first record boundary after every ``target`` bytes."""

    frame_only = True

    def __init__(self, path, target, size):
        super().__init__(path, "fail", 1, ReadStats(), None)
        # boundaries are seen where a read ends: short reads keep chunks near the target size
        self.read_size = min(CHUNK, max(1, target // 8))
        self.target, self.size = target, size
        self.next_cut = target
        self.cuts = []

    def _boundary(self, offset):
        if self.next_cut <= offset < self.size:
            self.cuts.append((offset, self.dec.records, bool(self.dec.big), tuple(self.interfaces)))
            self.next_cut = offset + self.target

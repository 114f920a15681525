"""Read pcap/pcapng captures (optionally gzip/zstd-compressed) into Arrow tables of packets.

``read_packets(path)`` returns a ``pyarrow.Table`` in :data:`traceflow.pcap.schema.PACKET_SCHEMA`;
``iter_batches(path)`` streams record batches of at most ``batch_size`` packets with memory bounded
by the batch and read-chunk sizes, whatever the file size.

Two decoders produce identical tables: ``decoder="fast"`` (Cython, the default) and ``"dpkt"``
(the dpkt-based reference, :mod:`traceflow.pcap.dpkt_decoder`).

Bad input raises :class:`~traceflow.errors.InputFormatError` naming the file, byte offset (in the
decompressed stream) and record index.  With ``on_error="skip"`` a malformed record is dropped and
counted in :class:`ReadStats` instead.  Resync policy: a pcapng block whose framing is intact but whose
content is bad (captured length beyond the block, undefined interface) is skipped whole; otherwise the
reader scans forward (byte by byte for pcap, 4-byte aligned for pcapng) to the first offset where a
plausible record starts that is followed by another plausible record (or the end of the data), and
counts the bytes in between as ``skipped_bytes``.  A truncated final record is dropped.  File-level
problems (empty file, unknown magic, truncated file header, corrupt compression) always raise.
Records of link types the decoder does not understand produce no rows; they are counted in
``ReadStats.unsupported_linktypes``.  pcapng simple packet blocks carry no timestamp or interface:
their rows have ``ts`` 0 and ``iface`` 0.
"""
import struct

import pyarrow as pa

from traceflow.errors import InputFormatError, TraceflowError
from traceflow.pcap import _decode
from traceflow.pcap.containers import (
    IDB, MAX_RECORD, PCAPNG_MAGIC, CaptureStream, ReadStats, parse_idb, parse_pcap_header, section_byte_order,
    sniff,
)
from traceflow.pcap.schema import PACKET_SCHEMA

__all__ = ["read_packets", "iter_batches", "ReadStats", "SUPPORTED_LINKTYPES"]

SUPPORTED_LINKTYPES = _decode.SUPPORTED_LINKTYPES
CHUNK = 4 << 20          # bytes read per call
RESYNC_KEEP = 1 << 19    # bytes kept at a chunk's end while resynchronising (two 256 KiB records)
_S = _decode.STATUS
NEED_MORE, BATCH_FULL, BLOCK, BAD_RECORD = (_S[k] for k in ("NEED_MORE", "BATCH_FULL", "BLOCK",
                                                           "BAD_RECORD"))
FRAMING_INTACT = _decode.FRAMING_INTACT


def read_packets(path, *, decoder="fast", on_error="fail", batch_size=65536, stats=None, progress=None):
    """Decode a capture into a ``pyarrow.Table`` (schema :data:`PACKET_SCHEMA`).

    ``stats``: an optional :class:`ReadStats` filled in while reading.  ``progress``: optional
    callable receiving increments of bytes read from the file (compressed bytes for .gz/.zst).
    """
    batches = list(iter_batches(path, decoder=decoder, on_error=on_error, batch_size=batch_size,
                                stats=stats, progress=progress))
    return pa.Table.from_batches(batches, schema=PACKET_SCHEMA)


def iter_batches(path, *, decoder="fast", on_error="fail", batch_size=65536, stats=None, progress=None):
    """Yield ``pyarrow.RecordBatch`` es of at most ``batch_size`` packets, in file order."""
    if on_error not in ("fail", "skip"):
        raise TraceflowError(f"on_error must be 'fail' or 'skip', not {on_error!r}")
    if batch_size < 1:
        raise TraceflowError(f"batch_size must be positive, not {batch_size}")
    stats = ReadStats() if stats is None else stats
    stats.path = str(path)
    if decoder == "fast":
        return _FastReader(path, on_error, batch_size, stats, progress).batches()
    if decoder == "dpkt":
        from traceflow.pcap.dpkt_decoder import iter_batches as dpkt_batches

        return dpkt_batches(path, on_error=on_error, batch_size=batch_size, stats=stats,
                            progress=progress)
    raise TraceflowError(f"decoder must be 'fast' or 'dpkt', not {decoder!r}")


class _FastReader:
    """Chunked read loop around :class:`traceflow.pcap._decode.Decoder`."""

    def __init__(self, path, on_error, batch_size, stats, progress):
        self.path = path
        self.skip = on_error == "skip"
        self.batch_size = batch_size
        self.stats = stats
        self.progress = progress
        self._raw_seen = 0

    def _error(self, message, offset, record=None):
        return InputFormatError(message, path=self.path, offset=offset, record=record)

    def batches(self):
        with CaptureStream(self.path) as src:
            self.src = src
            self.stats.compression = src.compression
            head = src.read_exact(4)
            fmt = sniff(head, self.path)
            self.stats.format = fmt
            if fmt == "pcap":
                head += src.read_exact(20)
                hdr = parse_pcap_header(head, self.path)
                dec = _decode.Decoder(0, hdr.big_endian, MAX_RECORD)
                dec.set_pcap(hdr.linktype, hdr.snaplen, hdr.nanos)
            else:  # byte order comes from the section header block
                dec = _decode.Decoder(1, False, MAX_RECORD)
            self.dec = dec
            yield from self._loop(bytearray(head), fmt)
            self.stats.bytes = src.pos
            self._tick()
            if fmt == "pcap":
                self.stats.add_unsupported(hdr.linktype, dec.unsupported)
                self.stats.interfaces = 1
            else:
                self._collect_interfaces()

    def _tick(self):
        if self.progress is not None:
            raw = self.src.raw_pos
            self.progress(raw - self._raw_seen)
            self._raw_seen = raw

    def _collect_interfaces(self):
        dec = self.dec
        n = dec.n_interfaces
        arrays = dec.if_arrays
        for lt, count in zip(arrays["linktype"][:n], arrays["unsupported"][:n]):
            self.stats.add_unsupported(lt, count)
        self.stats.interfaces += n

    def _loop(self, buf, fmt):
        """Decode records; ``buf`` holds the bytes read so far: the pcap file header (already
        parsed) or the start of the first pcapng block."""
        dec, stats = self.dec, self.stats
        base = 0                  # stream offset of buf[0]
        if fmt == "pcap":
            base = len(buf)
            buf = bytearray()
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
                    continue
            if status == BAD_RECORD:
                err, dec.err = dec.err, 0
                if err:
                    msg = _decode.ERRORS[err].format(a=dec.err_a, b=dec.err_b)
                if not self.skip:
                    raise self._error(msg, base + pos, dec.records)
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
                if pos < filled:
                    if not self.skip:
                        raise self._error(f"truncated record: file ends {filled - pos} bytes into it",
                                          base + pos, dec.records)
                    stats.skipped_records += 1
                    stats.skipped_bytes += filled - pos
                    stats.note(f"record {dec.records} at offset {base + pos}: truncated at end of file")
                break
            # keep the unread tail, then read more behind it
            tail = filled - pos
            if tail > MAX_RECORD + 64:
                raise self._error("record larger than the maximum size", base + pos, dec.records)
            need = tail + CHUNK
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
        stats.records = dec.records

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
            raise self._error(f"invalid pcapng block length {blen}", base + pos, dec.records)
        if filled - pos < blen:
            return None
        block = bytes(buf[pos:pos + blen])
        if struct.unpack(e + "I", block[-4:])[0] != blen:
            raise self._error("pcapng block length does not match its trailer", base + pos, dec.records)
        if btype == 0x0A0D0D0A:
            major = struct.unpack(e + "H", block[12:14])[0]
            if major != 1:
                raise self._error(f"unsupported pcapng version {major}", base + pos, dec.records)
            self._collect_interfaces()
            dec.big = big
            dec.reset_interfaces()
        elif btype == IDB:
            if blen < 20:
                raise self._error(f"truncated interface description block ({blen} bytes)", base + pos)
            iface = parse_idb(block, big)
            dec.add_interface(iface.linktype, iface.tsresol, iface.tsoffset)
        # every other block type (statistics, name resolution, custom, unknown) is legal: skip it
        return pos + blen

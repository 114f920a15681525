"""Capture containers: compression sniffing and the file/section/interface headers of pcap and pcapng.

Both decoders use these to open a capture and learn its format; packet records themselves are framed
by each decoder (the fast one in C, the reference with dpkt's header classes).
Compression and format are recognised by magic bytes, never by the file name.
"""
import io
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from traceflow.errors import InputFormatError

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
# magic -> (big_endian, nanosecond timestamps)
PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": (False, False), b"\xa1\xb2\xc3\xd4": (True, False),
    b"\x4d\x3c\xb2\xa1": (False, True), b"\xa1\xb2\x3c\x4d": (True, True),
}
MODIFIED_PCAP_MAGICS = (b"\x34\xcd\xb2\xa1", b"\xa1\xb2\xcd\x34")
BYTE_ORDER_MAGIC = 0x1A2B3C4D

# Largest record or block accepted (bytes).  libpcap caps captured lengths at 256 KiB; pcapng
# non-packet blocks (name resolution, decryption secrets) may legitimately be larger.
MAX_RECORD = 64 << 20

PCAP_HEADER_LEN = 24
IDB = 1  # interface description block type
OPT_ENDOFOPT, OPT_IF_TSRESOL, OPT_IF_TSOFFSET = 0, 9, 14
COMPRESSION_ERRORS = (OSError, EOFError, zlib.error)
#: compressed bytes read from the file at a time
COMPRESSED_READ = 1 << 18


def _zstd_errors():
    import zstandard

    return (zstandard.ZstdError,)


class Decompressor(io.RawIOBase):
    """The decompressed bytes of a gzip (every member) or zstd (every frame) file ``raw``,
    ending where the compressed data ends. Unlike ``gzip.GzipFile``, which raises on a file
    that ends inside a member and loses what it had decompressed, it returns every byte the
    input holds and then sets ``cut`` (True: the input ends inside a member or frame, as a
    capture cut short does), as tshark and capinfos read such files."""

    def __init__(self, raw, compression):
        self._raw = raw
        self._gzip = compression == "gzip"
        self._obj = self._new()
        self._fed = False          # the current member or frame has had input
        self._out, self._off = b"", 0
        self.cut = False

    def _new(self):
        if self._gzip:
            return zlib.decompressobj(wbits=31)
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj()

    def readable(self):
        return True

    def readinto(self, buf):
        while self._off >= len(self._out):
            if not self._more():
                return 0
        n = min(len(buf), len(self._out) - self._off)
        buf[:n] = self._out[self._off:self._off + n]
        self._off += n
        return n

    def _more(self):
        """Decompress the next compressed read into ``_out``; False at the end of the file."""
        data = self._raw.read(COMPRESSED_READ)
        if not data:
            self.cut = self._fed and not self._obj.eof
            return False
        out = []
        while data:
            if self._obj.eof:      # the last member ended: what follows starts the next one
                if self._gzip:     # gzip allows zero padding between members
                    data = data.lstrip(b"\0")
                    if not data:
                        break
                self._obj, self._fed = self._new(), False
            self._fed = True
            out.append(self._obj.decompress(data))
            data = self._obj.unused_data if self._obj.eof else b""
        self._out, self._off = b"".join(out), 0
        return True


class CaptureStream(io.RawIOBase):
    """A readable, decompressed view of a capture file; ``raw_pos`` is the position in the file
    itself (for progress bars).  Decompression errors become :class:`InputFormatError`;
    ``cut_at`` is the offset in the decompressed stream where compressed data that ends inside
    a member or frame ended (None: it did not; :class:`Decompressor`).

    ``start``/``end`` restrict an uncompressed file to the byte range ``[start, end)`` (one chunk
    of it); ``pos`` still counts from the start of the file."""

    def __init__(self, path, start=0, end=None):
        self.path = Path(path)
        self._raw = open(self.path, "rb")
        magic = self._raw.read(4)
        self._raw.seek(0)
        self.end = end
        self.compression = None
        self._errors = COMPRESSION_ERRORS
        self.cut_at = None
        if magic[:2] == GZIP_MAGIC or magic == ZSTD_MAGIC:
            self.compression = "gzip" if magic[:2] == GZIP_MAGIC else "zstd"
            if self.compression == "zstd":
                self._errors = COMPRESSION_ERRORS + _zstd_errors()
            self._stream = Decompressor(self._raw, self.compression)
        else:
            self._stream = self._raw
        if (start or end is not None) and self.compression:
            self.close()
            raise InputFormatError(f"cannot read a byte range of {self.compression}-compressed data",
                                   path=self.path)
        self._raw.seek(start)
        self.pos = start  # offset in the decompressed stream of the next byte read

    @property
    def raw_pos(self):
        return self._raw.tell()

    def readable(self):
        return True

    def readinto(self, buf):
        if self.end is not None and len(buf) > self.end - self.pos:
            with memoryview(buf) as whole, whole[:max(0, self.end - self.pos)] as part:
                return self._readinto(part)
        return self._readinto(buf)

    def _readinto(self, buf):
        try:
            n = self._stream.readinto(buf)
        except self._errors as exc:
            raise InputFormatError(f"corrupt {self.compression} data: {exc}", path=self.path,
                                   offset=self.pos) from None
        self.pos += n
        if n == 0 and self.compression and self._stream.cut:
            self.cut_at = self.pos
        return n

    def read_exact(self, n):
        """Up to ``n`` bytes (fewer only at end of file)."""
        out = bytearray()
        while len(out) < n:
            chunk = self.read(n - len(out))
            if not chunk:
                break
            out += chunk
        return bytes(out)

    def close(self):
        if self._stream is not self._raw:
            self._stream.close()
        self._raw.close()
        super().close()


@dataclass
class PcapHeader:
    big_endian: bool
    nanos: bool
    version: tuple
    snaplen: int
    linktype: int


def sniff(head, path):
    """Container format ("pcap" or "pcapng") from the first 4 decompressed bytes."""
    if not head:
        raise InputFormatError("empty file: no capture header", path=path, offset=0)
    if head[:4] in PCAP_MAGICS:
        return "pcap"
    if head[:4] == PCAPNG_MAGIC:
        return "pcapng"
    if head[:4] in MODIFIED_PCAP_MAGICS:
        raise InputFormatError("unsupported modified (Kuznetzov) pcap format", path=path, offset=0)
    raise InputFormatError(f"unknown capture format (magic {head[:4].hex()})", path=path, offset=0)


def parse_pcap_header(head, path):
    """The 24-byte pcap file header."""
    if len(head) < PCAP_HEADER_LEN:
        raise InputFormatError(f"truncated pcap file header ({len(head)} of 24 bytes)", path=path,
                               offset=0)
    big, nanos = PCAP_MAGICS[head[:4]]
    e = ">" if big else "<"
    vmaj, vmin, _zone, _sigfigs, snaplen, linktype = struct.unpack(e + "HHiIII", head[4:24])
    # the upper bits of the link type field carry FCS information, not the link type
    return PcapHeader(big, nanos, (vmaj, vmin), snaplen, linktype & 0xFFFF)


@dataclass
class Interface:
    """A pcapng interface: link type, snapshot length, raw if_tsresol byte, if_tsoffset (s)."""
    linktype: int
    snaplen: int
    tsresol: int = 6
    tsoffset: int = 0


def section_byte_order(block, path, offset):
    """Big-endian flag of a pcapng section from its SHB's byte-order magic (block[8:12])."""
    if len(block) < 12:
        raise InputFormatError("truncated pcapng section header", path=path, offset=offset)
    if struct.unpack("<I", block[8:12])[0] == BYTE_ORDER_MAGIC:
        return False
    if struct.unpack(">I", block[8:12])[0] == BYTE_ORDER_MAGIC:
        return True
    raise InputFormatError("bad pcapng byte-order magic", path=path, offset=offset + 8)


def parse_options(body, big):
    """pcapng options as a list of (code, value bytes); stops at opt_endofopt or a malformed option."""
    e = ">" if big else "<"
    out, i = [], 0
    while i + 4 <= len(body):
        code, ln = struct.unpack(e + "HH", body[i:i + 4])
        if code == OPT_ENDOFOPT or i + 4 + ln > len(body):
            break
        out.append((code, bytes(body[i + 4:i + 4 + ln])))
        i += 4 + ((ln + 3) & ~3)
    return out


def parse_idb(block, big):
    """An Interface Description Block (whole block bytes) -> :class:`Interface`."""
    e = ">" if big else "<"
    linktype, _reserved, snaplen = struct.unpack(e + "HHI", block[8:16])
    iface = Interface(linktype, snaplen)
    for code, value in parse_options(block[16:len(block) - 4], big):
        if code == OPT_IF_TSRESOL and len(value) >= 1:
            iface.tsresol = value[0]
        elif code == OPT_IF_TSOFFSET and len(value) >= 8:
            iface.tsoffset = struct.unpack(e + "q", value[:8])[0]
    return iface


@dataclass
class ReadStats:
    """What a read saw besides the packets it returned.

    ``records``: records framed (packets of every link type); ``packets``: rows produced;
    ``skipped_records``/``skipped_bytes``: malformed input dropped under ``on_error="skip"``;
    ``unsupported_linktypes``: {link type: records not decoded}; ``bytes``: decompressed bytes read;
    ``truncated_bytes``: bytes of a last record the file ends inside (0: the file ends on a record
    boundary; see :func:`end_truncated`); ``cut_at``: where compressed data that ends inside a
    member or frame ended, as an offset of the decompressed stream (None: it did not);
    ``snaplens``: the snapshot length (bytes) of the pcap
    file header, or of each pcapng interface in file order (0: no limit).
    """
    path: str = ""
    format: str = ""
    compression: str = None
    records: int = 0
    packets: int = 0
    skipped_records: int = 0
    skipped_bytes: int = 0
    unsupported_linktypes: dict = field(default_factory=dict)
    interfaces: int = 0
    bytes: int = 0
    truncated_bytes: int = 0
    snaplens: list = field(default_factory=list)
    cut_at: int = None
    errors: list = field(default_factory=list)

    def add_unsupported(self, linktype, n):
        if n:
            self.unsupported_linktypes[int(linktype)] = self.unsupported_linktypes.get(int(linktype), 0) + int(n)

    def note(self, message):
        """Record a skipped problem (first 20 kept)."""
        if len(self.errors) < 20:
            self.errors.append(message)

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


#: appended to errors about a malformed record in the middle of a capture
SKIP_HINT = "to skip bad records: traceflow ingest --on-error skip"


def end_truncated(stats, path, offset, record, present, skip, cut_at=None):
    """The file ends ``present`` bytes into record ``record`` (at ``offset``): what a killed or
    still-running tcpdump leaves. The complete records before it are kept; the partial one is
    dropped, counted in ``stats.truncated_bytes`` and, with ``skip``, as a skipped record; without
    ``skip`` (the default) a :class:`~traceflow.errors.TraceflowWarning` says so, once.
    ``cut_at``: compressed data ended inside a member or frame, at this offset of the
    decompressed stream (:attr:`CaptureStream.cut_at`; ``present`` may then be 0)."""
    from traceflow.errors import warn

    stats.truncated_bytes = int(present)
    stats.cut_at = cut_at
    where = (f"inside record {record} (offset {offset}, {present} bytes of it present)"
             if present else f"after record {record - 1}")
    if cut_at is not None:
        where = (f"early: its {stats.compression} data ends inside a compressed block, at offset "
                 f"{cut_at} of the decompressed stream, {where}")
    if skip:
        if present:
            stats.skipped_records += 1
            stats.skipped_bytes += int(present)
        stats.note(f"record {record} at offset {offset}: truncated at end of file")
        return
    warn(f"capture ends {where}: kept the complete records before it, as from a capture that was "
         f"cut short", path=path)

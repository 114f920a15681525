"""Reference decoder built on dpkt: slow, simple, and independent of the Cython kernel.

Records are framed with dpkt's pcap header classes and pcapng block classes; each header is parsed
by the dpkt class for it (Ethernet VLAN tags and MPLS labels, SLL/SLL2, loopback, IP, IPv6 fragment
header, TCP, UDP, TCP options via ``dpkt.tcp.parse_opts``); the walk from one header to the next and
the rules for which fields are null follow the packets-table contract (see
:mod:`traceflow.pcap.schema`), so the table equals the fast decoder's column by column.

``on_error="skip"`` skips bad pcapng packet blocks whose framing is intact; any other framing
error ends the read (counted in ``skipped_bytes``) instead of resyncing. A truncated final record
is dropped as the fast reader drops it (:func:`~traceflow.pcap.containers.end_truncated`).
"""
import struct

import dpkt
import pyarrow as pa
from dpkt import ethernet, ip6, pcap, pcapng, sll, sll2, tcp, udp

from traceflow.errors import InputFormatError
from traceflow.pcap.containers import (
    MAX_RECORD, PCAPNG_MAGIC, SKIP_HINT, CaptureStream, ReadStats, end_truncated, parse_options,
    section_byte_order, sniff,
)
from traceflow.pcap.schema import PACKET_SCHEMA

SUPPORTED = frozenset({0, 1, 10, 12, 14, 101, 104, 108, 113, 226, 228, 229, 239, 242, 258, 276})
COLUMNS = [f.name for f in PACKET_SCHEMA]
V4_MAPPED = b"\x00" * 10 + b"\xff\xff"
VLAN_TYPES = (0x8100, 0x88A8, 0x9100)
IP6_EXT = (0, 43, 60)


class _Frame(Exception):
    """Bad record framing inside the reference reader; ``present`` (not None): the file ends that
    many bytes into the record."""

    def __init__(self, message, offset, intact_len=None, present=None):
        super().__init__(message)
        self.offset = offset
        self.intact_len = intact_len
        self.present = present


def iter_batches(path, *, on_error="fail", batch_size=65536, stats=None, progress=None):
    """Yield record batches like :func:`traceflow.pcap.reader.iter_batches` (``decoder="dpkt"``)."""
    stats = ReadStats() if stats is None else stats
    stats.path = str(path)
    rows = {name: [] for name in COLUMNS}
    with CaptureStream(path) as src:
        stats.compression = src.compression
        head = src.read_exact(4)
        stats.format = sniff(head, path)
        records = _pcap_records(src, head, path, stats) if stats.format == "pcap" else \
            _pcapng_records(src, head, path, stats)
        last_raw = 0
        index = 0
        while True:
            try:
                rec = next(records)
                if isinstance(rec, _Frame):     # bad block with intact framing
                    raise rec
            except StopIteration:
                if src.cut_at is not None:
                    end_truncated(stats, path, src.pos, index, 0, on_error == "skip", src.cut_at)
                break
            except _Frame as exc:
                if exc.present is not None:
                    end_truncated(stats, path, exc.offset, index, exc.present, on_error == "skip",
                                  src.cut_at)
                    break
                if on_error != "skip":
                    raise InputFormatError(str(exc), path=path, offset=exc.offset, record=index,
                                           hint=SKIP_HINT) from None
                stats.skipped_records += 1
                stats.note(f"record {index} at offset {exc.offset}: {exc}")
                if exc.intact_len is None:
                    stats.skipped_bytes += max(0, src.pos - exc.offset)
                    break
                index += 1
                continue
            index += 1
            ts, caplen, wirelen, iface, linktype, data = rec
            if linktype not in SUPPORTED:
                stats.add_unsupported(linktype, 1)
                continue
            row = decode_packet(data, linktype)
            row.update(ts=ts, caplen=caplen, wirelen=wirelen, iface=iface, linktype=linktype)
            for name in COLUMNS:
                rows[name].append(row.get(name))
            if len(rows["ts"]) == batch_size:
                stats.packets += batch_size
                yield _batch(rows)
                rows = {name: [] for name in COLUMNS}
            if progress is not None and src.raw_pos != last_raw:
                progress(src.raw_pos - last_raw)
                last_raw = src.raw_pos
        if rows["ts"]:
            stats.packets += len(rows["ts"])
            yield _batch(rows)
        stats.records = index
        stats.bytes = src.pos


def _batch(rows):
    arrays = [pa.array(rows[f.name], type=f.type) for f in PACKET_SCHEMA]
    return pa.RecordBatch.from_arrays(arrays, schema=PACKET_SCHEMA)


def _wrap64(ns):
    """Two's-complement int64 of an integer taken modulo 2**64 (the C decoder's arithmetic)."""
    ns &= (1 << 64) - 1
    return ns - (1 << 64) if ns >= 1 << 63 else ns


# --- containers -----------------------------------------------------------------------------------

def _pcap_records(src, head, path, stats):
    head += src.read_exact(20)
    if len(head) < 24:
        raise InputFormatError(f"truncated pcap file header ({len(head)} of 24 bytes)", path=path, offset=0)
    magic = struct.unpack(">I", head[:4])[0]   # as dpkt.pcap.FileHdr reads it
    little = magic in (pcap.PMUDPCT_MAGIC, pcap.PMUDPCT_MAGIC_NANO)
    nanos = magic in (pcap.TCPDUMP_MAGIC_NANO, pcap.PMUDPCT_MAGIC_NANO)
    fh = pcap.LEFileHdr(head) if little else pcap.FileHdr(head)
    hdr_cls = pcap.LEPktHdr if little else pcap.PktHdr
    linktype = fh.linktype & 0xFFFF
    limit = fh.snaplen or MAX_RECORD
    stats.interfaces, stats.snaplens = 1, [fh.snaplen]
    offset = 24
    while True:
        raw = src.read_exact(16)
        if not raw:
            return
        if len(raw) < 16:
            raise _Frame("truncated record", offset, present=len(raw))
        ph = hdr_cls(raw)
        if ph.caplen > limit or ph.caplen > MAX_RECORD:
            what = "snapshot length" if fh.snaplen and ph.caplen > fh.snaplen else "maximum"
            raise _Frame(f"record captured length {ph.caplen} exceeds the {what} "
                         f"{fh.snaplen if what == 'snapshot length' else MAX_RECORD}", offset)
        data = src.read_exact(ph.caplen)
        if len(data) < ph.caplen:
            raise _Frame("truncated record", offset, present=16 + len(data))
        ts = ph.tv_sec * 1_000_000_000 + ph.tv_usec * (1 if nanos else 1000)
        yield _wrap64(ts), ph.caplen, ph.len, 0, linktype, data
        offset += 16 + ph.caplen


def _ts_ns(units, tsresol, tsoffset):
    """pcapng timestamp units -> ns for the raw if_tsresol byte and if_tsoffset (seconds)."""
    k = tsresol & 0x7F
    if tsresol & 0x80:
        ns = units * 10 ** 9 >> k
    elif k <= 9:
        ns = units * 10 ** (9 - k)
    else:
        ns = units // 10 ** (k - 9)
    return _wrap64(_wrap64(ns) + tsoffset * 10 ** 9)


def _pcapng_records(src, head, path, stats):
    big = False
    interfaces = []
    offset = 0
    while True:
        first = head + src.read_exact(8 - len(head)) if head else src.read_exact(8)
        head = b""
        if not first:
            break
        if len(first) < 8:
            raise _Frame("truncated record", offset, present=len(first))
        if first[:4] == PCAPNG_MAGIC:
            rest = src.read_exact(4)
            big = section_byte_order(first + rest, path, offset)
            first += rest
        e = ">" if big else "<"
        btype, blen = struct.unpack(e + "II", first[:8])
        if blen < 12 or blen % 4 or blen > MAX_RECORD + 64:
            raise _Frame(f"invalid pcapng block length {blen}", offset)
        body = src.read_exact(blen - len(first))
        block = first + body
        if len(block) < blen:
            raise _Frame("truncated record", offset, present=len(block))
        if struct.unpack(e + "I", block[-4:])[0] != blen:
            raise _Frame(f"pcapng block length {blen} does not match its trailer "
                         f"{struct.unpack(e + 'I', block[-4:])[0]}", offset)
        at = offset
        offset += blen
        if btype == pcapng.PCAPNG_BT_SHB:
            shb = _fixed_fields(pcapng.SectionHeaderBlock if big else pcapng.SectionHeaderBlockLE,
                                block)
            if shb.v_major != 1:
                raise InputFormatError(f"unsupported pcapng version {shb.v_major}", path=path, offset=at)
            stats.interfaces += len(interfaces)
            interfaces = []
        elif btype == pcapng.PCAPNG_BT_IDB:
            cls = pcapng.InterfaceDescriptionBlock if big else pcapng.InterfaceDescriptionBlockLE
            tsresol, tsoffset = 6, 0
            for code, data in _options(cls, block, big):
                if code == pcapng.PCAPNG_OPT_IF_TSRESOL and len(data) >= 1:
                    tsresol = data[0]
                elif code == pcapng.PCAPNG_OPT_IF_TSOFFSET and len(data) >= 8:
                    tsoffset = struct.unpack(e + "q", data[:8])[0]
            idb = _fixed_fields(cls, block)
            stats.snaplens.append(idb.snaplen)
            interfaces.append((idb.linktype, tsresol, tsoffset))
        elif btype in (pcapng.PCAPNG_BT_EPB, pcapng.PCAPNG_BT_PB, pcapng.PCAPNG_BT_SPB):
            if btype == pcapng.PCAPNG_BT_SPB:
                wirelen = struct.unpack(e + "I", block[8:12])[0]
                caplen, iface, units, hdr = min(wirelen, blen - 16), 0, None, 12
            else:
                if blen < 32:
                    raise _Frame(f"invalid pcapng block length {blen}", at)
                if btype == pcapng.PCAPNG_BT_EPB:
                    cls = pcapng.EnhancedPacketBlock if big else pcapng.EnhancedPacketBlockLE
                else:
                    cls = pcapng.PacketBlock if big else pcapng.PacketBlockLE
                pb = cls.__new__(cls)
                dpkt.Packet.unpack(pb, block)   # header fields only: data checks are ours
                iface, caplen, wirelen, hdr = pb.iface_id, pb.caplen, pb.pkt_len, 28
                units = pb.ts_high << 32 | pb.ts_low
            room = blen - hdr - 4
            if caplen > room:
                yield _Frame(f"packet block captured length {caplen} exceeds the block (room for {room})",
                             at, blen)
                continue
            if iface >= len(interfaces):
                yield _Frame(f"packet block refers to undefined interface {iface} ({len(interfaces)} defined)",
                             at, blen)
                continue
            linktype, tsresol, tsoffset = interfaces[iface]
            ts = 0 if units is None else _ts_ns(units, tsresol, tsoffset)
            yield ts, caplen, wirelen, iface, linktype, block[hdr:hdr + caplen]
        # other blocks (statistics, name resolution, custom, unknown) are legal and skipped
    stats.interfaces += len(interfaces)


def _fixed_fields(cls, block):
    """A dpkt pcapng block's fixed header fields, without dpkt's option parsing."""
    obj = cls.__new__(cls)
    dpkt.Packet.unpack(obj, block)
    return obj


def _options(cls, block, big):
    """(code, data) of a block's options as dpkt parses them. dpkt decodes text options (comments,
    names) as UTF-8 and raises on anything else, or on an option running past the block: those
    blocks' options are read as the fast reader reads them (up to the first malformed one)."""
    try:
        return [(opt.code, opt.data) for opt in cls(block).opts]
    except (UnicodeDecodeError, struct.error, dpkt.UnpackError):
        return parse_options(block[16:len(block) - 4], big)


# --- packets --------------------------------------------------------------------------------------

def _family(fam):
    if fam == 2:
        return 4
    if fam in (10, 24, 26, 28, 30):
        return 6
    return 0


def _link(buf, linktype, depth=0):
    """(offset of the IP header, IP version, outermost VLAN id or None); offset None if not IP."""
    vlan = [None]
    n = len(buf)
    try:
        if linktype == 1:
            eth = ethernet.Ethernet.__new__(ethernet.Ethernet)
            dpkt.Packet.unpack(eth, buf[:14])
            return _ethertypes(buf, 14, eth.type, vlan) + (vlan[0],)
        if linktype == 113:
            hdr = sll.SLL.__new__(sll.SLL)
            dpkt.Packet.unpack(hdr, buf[:16])
            return _ethertypes(buf, 16, hdr.ethtype, vlan) + (vlan[0],)
        if linktype == 276:
            hdr = sll2.SLL2.__new__(sll2.SLL2)
            dpkt.Packet.unpack(hdr, buf[:20])
            return _ethertypes(buf, 20, hdr.ethtype, vlan) + (vlan[0],)
    except (dpkt.NeedData, struct.error):  # a frame shorter than its link header (dpkt 1.9.8
        return None, 0, None                # raises struct.error, not NeedData, for these)
    if linktype in (12, 14, 101):
        if n >= 1 and buf[0] >> 4 in (4, 6):
            return 0, buf[0] >> 4, None
        return None, 0, None
    if linktype in (228, 229):
        return 0, 4 if linktype == 228 else 6, None
    if linktype in (0, 108):
        if n < 4:
            return None, 0, None
        fam = struct.unpack(">I" if linktype == 108 else "<I", buf[:4])[0]
        if linktype == 0 and fam > 0xFFFF:
            fam = struct.unpack(">I", buf[:4])[0]
        if linktype == 0 and fam > 0xFFFF:      # Linux-style: an ethertype in bytes 2-3
            return _ethertypes(buf, 4, struct.unpack(">H", buf[2:4])[0], vlan) + (vlan[0],)
        version = _family(fam)
        return (4 if version else None), version, None
    if linktype == 10:
        if n < 13:
            return None, 0, None
        return _ethertypes(buf, 13, 0, vlan) + (vlan[0],)
    if linktype == 104:
        if n < 4:
            return None, 0, None
        return _ethertypes(buf, 4, struct.unpack(">H", buf[2:4])[0], vlan) + (vlan[0],)
    if linktype == 226:
        if n < 24:
            return None, 0, None
        version = _family(buf[1])
        return (24 if version else None), version, None
    if linktype == 242:
        if n < 44:
            return None, 0, None
        return _ethertypes(buf, 44, struct.unpack(">H", buf[40:42])[0], vlan) + (vlan[0],)
    if linktype == 239:
        if n < 4 or not _family(buf[0]):
            return None, 0, None
        off = 4
        while off + 4 <= n:
            tlv_len, tlv_type = struct.unpack("<HH", buf[off:off + 4])
            if tlv_len < 4:
                break
            if tlv_type == 9:
                return off + 4, _family(buf[0]), None
            off += (tlv_len + 3) & ~3
        return None, 0, None
    if linktype == 258 and depth == 0:
        if n < 8:
            return None, 0, None
        hdr_len, inner = struct.unpack("<II", buf[:8])
        if hdr_len < 8 or hdr_len > n:
            return None, 0, None
        off, version, vlan_id = _link(buf[hdr_len:], inner, 1)
        return (None if off is None else off + hdr_len), version, vlan_id
    return None, 0, None


def _ethertypes(buf, off, et, vlan):
    """Follow VLAN tags, MPLS labels, PPPoE and LLC/SNAP (dpkt header classes) to IP."""
    n = len(buf)
    for _ in range(16):
        if et in VLAN_TYPES:
            if off + 4 > n:
                return None, 0
            tag = ethernet.VLANtag8021Q(buf[off:off + 4])
            if vlan[0] is None:
                vlan[0] = tag.id
            et, off = tag.type, off + 4
        elif et in (0x8847, 0x8848):
            while True:
                if off + 4 > n:
                    return None, 0
                label = ethernet.MPLSlabel(buf[off:off + 4])
                off += 4
                if label.s:
                    break
            if off >= n or buf[off] >> 4 not in (4, 6):
                return None, 0
            return off, buf[off] >> 4
        elif et == 0x8864:
            if off + 8 > n:
                return None, 0
            proto = struct.unpack(">H", buf[off + 6:off + 8])[0]
            off += 8
            return {0x21: (off, 4), 0x57: (off, 6)}.get(proto, (None, 0))
        elif et < 0x600:
            if off + 8 > n or buf[off:off + 3] != b"\xaa\xaa\x03":
                return None, 0
            et, off = struct.unpack(">H", buf[off + 6:off + 8])[0], off + 8
        else:
            version = {0x0800: 4, 0x86DD: 6}.get(et, 0)
            return (off if version else None), version
    return None, 0


def _transport(row, data, proto, room):
    """TCP/UDP fields from ``data`` (captured bytes); ``room`` = ip_len minus network headers."""
    if proto == 6 and len(data) >= 20:
        seg = tcp.TCP.__new__(tcp.TCP)
        dpkt.Packet.unpack(seg, data[:20])
        row.update(sport=seg.sport, dport=seg.dport, seq=seg.seq, ack=seg.ack, window=seg.win,
                   tcp_flags=seg.flags)   # 9 bits: NS..FIN
        doff = seg.off * 4
        if doff >= 20 and room >= doff:
            row["payload_len"] = room - doff
        if doff > 20:
            options = data[20:doff]
            at = 0  # where the option dpkt split off starts in ``options``
            for opt in tcp.parse_opts(options):
                if opt is None or opt[0] == tcp.TCP_OPT_EOL:
                    break
                kind, value = opt
                if kind > tcp.TCP_OPT_NOP:
                    # dpkt reads a length below 2 as 2 and cuts an option that runs past the
                    # header short; both are malformed (RFC 9293 §3.1): stop, as the decoder does
                    declared = options[at + 1]
                    if declared < 2 or at + declared > len(options):
                        break
                    at += declared
                else:
                    at += 1
                if kind == tcp.TCP_OPT_MSS and len(value) == 2:
                    row["mss"] = struct.unpack(">H", value)[0]
                elif kind == tcp.TCP_OPT_WSCALE and len(value) == 1:
                    row["wscale"] = value[0]
                elif kind == tcp.TCP_OPT_SACKOK and len(value) == 0:
                    row["sack_ok"] = True
                elif kind == tcp.TCP_OPT_TIMESTAMP and len(value) == 8:
                    row["tsval"], row["tsecr"] = struct.unpack(">II", value)
    elif proto == 17 and len(data) >= 8:
        dgram = udp.UDP(data[:8])
        row.update(sport=dgram.sport, dport=dgram.dport)
        if room >= 8:
            row["payload_len"] = room - 8


def decode_packet(buf, linktype):
    """Column values of one packet (absent keys are null)."""
    row = {}
    off, version, vlan_id = _link(buf, linktype)
    if vlan_id is not None:
        row["vlan"] = vlan_id
    if off is None or off > len(buf):
        return row
    data = buf[off:]
    if version == 4 and len(data) >= 20 and data[0] >> 4 == 4:
        try:
            hdr = dpkt.ip.IP(data)
        except dpkt.UnpackError:          # header length below 20 bytes
            return row
        ihl = hdr.hl * 4
        row.update(ip_version=4, src=V4_MAPPED + hdr.src, dst=V4_MAPPED + hdr.dst, ip_len=hdr.len,
                   ttl=hdr.ttl, proto=hdr.p, frag_offset=hdr.offset * 8, more_frags=bool(hdr.mf))
        if hdr.offset == 0 and ihl <= len(data):
            _transport(row, data[ihl:], hdr.p, hdr.len - ihl)
    elif version == 6 and len(data) >= 40 and data[0] >> 4 == 6:
        hdr = ip6.IP6.__new__(ip6.IP6)
        dpkt.Packet.unpack(hdr, data[:40])
        ip_len = hdr.plen + 40
        row.update(ip_version=6, src=hdr.src, dst=hdr.dst, ip_len=ip_len, ttl=hdr.hlim,
                   frag_offset=0, more_frags=False)
        nh, pos, complete = hdr.nxt, 40, False
        for _ in range(32):
            if nh in IP6_EXT or nh == 51:
                if pos + 2 > len(data):
                    break
                length = (data[pos + 1] + 1) * 8 if nh != 51 else (data[pos + 1] + 2) * 4
                nh, pos = data[pos], pos + length
            elif nh == 44:
                if pos + 8 > len(data):
                    break
                frag = ip6.IP6FragmentHeader(data[pos:pos + 8])
                row.update(frag_offset=frag.frag_off * 8, more_frags=bool(frag.m_flag))
                nh, pos = frag.nxt, pos + 8
                if frag.frag_off:
                    row["proto"] = nh
                    return row
            else:
                complete = True
                break
        row["proto"] = nh
        if complete and pos <= len(data):
            _transport(row, data[pos:], nh, ip_len - pos)
    return row

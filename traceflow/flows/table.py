"""Packets → flows: bidirectional connections with counters, close reason and handshake RTTs.

The flow table follows the "Flows" contract of DESIGN.md. How a flow is delimited:

- Packets are grouped by their unordered endpoint pair (address, port, address, port, protocol)
  and kept in capture order (not timestamp order: after a clock step backwards the packets of a
  connection still follow each other as they were seen).
- A flow ends before a packet when the gap since the previous packet of the pair exceeds
  ``idle_timeout`` seconds (a lone timestamp far ahead of both neighbours is a clock glitch and
  splits nothing), or (TCP) when the packet is a SYN without ACK whose ISN differs from
  the base sequence number of its direction in the current connection (port reuse; the rule
  Wireshark uses for ``tcp.stream``). A SYN with the same ISN is a retransmission: counted in
  ``syn_count``, no new flow. Late packets after a FIN/RST stay in their connection.
- ``start``/``end``: timestamps of the first and last packet in capture order (as Wireshark's
  conversations); ``duration`` = end - start, clipped at 0 if the clock stepped backwards.
- Client = sender of the first SYN without ACK; else the receiver of the first SYN/ACK; else the
  first sender (flows seen mid-stream, UDP, other protocols).
- ``close``: ``RST`` if a reset was seen; else ``FIN`` if both directions sent a FIN; else
  ``EOF`` if the flow is the last one of its endpoint pair and its last packet is within
  ``idle_timeout`` of the end of the trace (the last packet's timestamp); else ``IDLE`` (timed
  out, or an abandoned half-open connection replaced by a new SYN on the same ports).
- ``handshake``: ``complete`` (SYN, SYN/ACK and the client's final ACK seen), ``none`` (neither
  SYN nor SYN/ACK seen), else ``partial``. Non-TCP flows: ``none``.

Handshake RTT samples (seconds, null when not measurable), after the lifetime/RTT paper
(Wu & Nikolaidis, section 2.2): ``rtt_syn`` SYN → SYN/ACK, ``rtt_ack`` SYN/ACK → final ACK,
``rtt_data1`` final ACK (the client's first ACK after the SYN/ACK, or after the SYN when the
SYN/ACK was not captured) → first data packet (either direction), ``rtt_data2`` first data → second
data packet, ``rtt_min3`` = min(rtt_syn, rtt_data1, rtt_data2) over the available samples (the
paper's estimate), ``rtt_handshake`` SYN → final ACK (Wireshark's ``tcp.analysis.initial_rtt``).
Karn's rule: if the client sent more than one SYN, ``rtt_syn`` and ``rtt_handshake`` are null;
if the server sent more than one SYN/ACK, ``rtt_syn``, ``rtt_ack``, ``rtt_handshake`` and
``rtt_data1`` are null. Negative intervals (clock steps) and intervals longer than the idle
timeout (timestamp glitches) are null.

Path RTT over the whole connection (:mod:`traceflow.flows.pathrtt`; seconds): ``rtt_samples``,
``rtt_min`` (minimum of each half of the path around the capture point, summed), ``rtt_median``,
``rtt_p90``; TCP timestamps time the halves where present, sequence numbers (Karn's rule) else.

Sequence space (TCP, per direction): sequence numbers are unwrapped relative to the first packet
of the direction (signed 32-bit differences, so 2^32 wraparound is harmless). ``app_bytes_*`` is
the length of the union of the payload ranges (each byte once: the transfer size, retransmissions
excluded); ``retransmissions`` counts segments occupying sequence space (SYN, payload, FIN) that
start below the highest sequence number already sent in that direction (retransmissions,
including retransmitted SYNs, and reordered segments).

Implementation: Polars does the columnar work (projection, address halves, group-by counters,
per-flow columns); the sequential rules (ISN-based splitting, handshake event chain, running
sequence-space state) run in one O(n) pass of the Cython kernel :mod:`traceflow.flows.flowsplit`,
which also numbers endpoint pairs with a hash table so no sort of the packets is needed.

Extra columns beyond the contract: ``ip_version``, ``frame_bytes`` (captured frames' wire lengths,
link header included, as Wireshark's ``frame.len``), ``synack_count``, the path RTT columns.
"""
import ipaddress
from pathlib import Path

import polars as pl
import pyarrow as pa

from traceflow.errors import InputFormatError
from traceflow.flows.pathrtt import RTT_COLUMNS
from traceflow.pcap.schema import ACK, FIN, RST, SYN, TCP

CLOSE_REASONS = ("FIN", "RST", "IDLE", "EOF")
HANDSHAKE_STATES = ("complete", "partial", "none")

_PACKET_COLUMNS = ["ts", "wirelen", "ip_version", "src", "dst", "ip_len", "proto", "sport",
                   "dport", "tcp_flags", "seq", "ack", "payload_len", "tsval", "tsecr"]
_ADDR = ["src_hi", "src_lo", "dst_hi", "dst_lo"]

FLOW_SCHEMA = {
    "flow_id": pl.Int64, "proto": pl.UInt8, "ip_version": pl.UInt8,
    "client_addr": pl.String, "client_port": pl.UInt16,
    "server_addr": pl.String, "server_port": pl.UInt16,
    "start": pl.Datetime("ns"), "end": pl.Datetime("ns"), "duration": pl.Duration("ns"),
    "packets": pl.Int64, "bytes": pl.Int64, "payload_bytes": pl.Int64, "frame_bytes": pl.Int64,
    "packets_c2s": pl.Int64, "bytes_c2s": pl.Int64, "payload_bytes_c2s": pl.Int64,
    "packets_s2c": pl.Int64, "bytes_s2c": pl.Int64, "payload_bytes_s2c": pl.Int64,
    "app_bytes_c2s": pl.Int64, "app_bytes_s2c": pl.Int64,
    "syn_count": pl.Int64, "synack_count": pl.Int64, "retransmissions": pl.Int64,
    "handshake": pl.String, "close": pl.String,
    "rtt_syn": pl.Float64, "rtt_ack": pl.Float64, "rtt_data1": pl.Float64,
    "rtt_data2": pl.Float64, "rtt_min3": pl.Float64, "rtt_handshake": pl.Float64,
    **RTT_COLUMNS,
}


def flows(packets, *, idle_timeout=300.0, partitions=1, timestamps=True):
    """Build the flow table of a packets table (see the module docstring for the rules).

    ``packets``: the path of a capture or packets Parquet table, or a pyarrow Table, Polars
    DataFrame or LazyFrame with the packets schema
    (:mod:`traceflow.pcap.schema`; only ts, wirelen, ip_version, src, dst, ip_len, proto, sport,
    dport, tcp_flags, seq, ack, payload_len, tsval, tsecr are read). ``idle_timeout``: seconds.
    ``partitions``: split the work into that many disjoint sets of endpoint pairs (hash of the
    pair), each collected separately from the lazy input, so memory is bounded by about
    1/partitions of the packets (useful for Parquet inputs larger than memory; each partition
    rescans the input). ``timestamps``: False samples the path RTT columns from sequence numbers
    only, ignoring the TCP timestamp option (:mod:`traceflow.flows.pathrtt`).

    Returns a Polars DataFrame, one row per flow, ordered by start, ``flow_id`` = 0, 1, ...
    """
    return _flow_tables(packets, idle_timeout, partitions, timestamps, False)[0]


def flows_with_rtt_samples(packets, *, idle_timeout=300.0, partitions=1, timestamps=True):
    """:func:`flows` and, from the same pass, every passive RTT sample: a DataFrame with
    :data:`traceflow.flows.pathrtt.SAMPLE_SCHEMA` (``connection`` is the ``flow_id``), by time."""
    return _flow_tables(packets, idle_timeout, partitions, timestamps, True)


def _flow_tables(packets, idle_timeout, partitions, timestamps, want_samples):
    if idle_timeout is None or not idle_timeout > 0:
        raise InputFormatError(f"idle timeout must be > 0 seconds, got {idle_timeout!r}")
    lf = scan_packets(packets) if isinstance(packets, (str, Path)) else _as_lazy(packets)
    missing = [c for c in _PACKET_COLUMNS if c not in lf.collect_schema().names()]
    if missing:
        raise InputFormatError(f"not a packets table: missing columns {', '.join(missing)}")
    lf = _endpoints(lf.select(_PACKET_COLUMNS).with_row_index("frame", offset=1)
                    .filter(pl.col("ip_version").is_not_null()))
    trace_end = lf.select(pl.col("ts").last()).collect().item()
    idle_ns = int(round(idle_timeout * 1e9))
    if partitions <= 1:
        parts = [_flows_of(lf.collect(), idle_ns, trace_end, timestamps)]
    else:
        # symmetric in the two endpoints, so both directions land in the same partition
        ends = [pl.struct(f"{side}_hi", f"{side}_lo", pl.col(port).fill_null(0)).hash(7)
                for side, port in (("src", "sport"), ("dst", "dport"))]
        part = (ends[0] ^ ends[1] ^ pl.col("proto").cast(pl.UInt64)) % partitions
        parts = [_flows_of(lf.filter(part == k).collect(), idle_ns, trace_end, timestamps)
                 for k in range(partitions)]
    out = pl.concat([table.with_columns(part=pl.lit(k)) for k, (table, _) in enumerate(parts)],
                    how="vertical")
    out = out.sort(["start", "proto", "client_addr", "client_port", "server_addr", "server_port"],
                   nulls_last=True, maintain_order=True)
    out = out.with_columns(flow_id=pl.int_range(pl.len(), dtype=pl.Int64))
    table = out.select([pl.col(c).cast(t) for c, t in FLOW_SCHEMA.items()])
    if not want_samples:
        return table, None
    from traceflow.flows.pathrtt import labelled_samples

    keys = out.select("part", "conn", "flow_id", "client_is_a")
    samples = pl.concat([labelled_samples(path, keys.filter(pl.col("part") == k).drop("part"))
                         for k, (_, path) in enumerate(parts)])
    return table, samples.sort("ts", "connection", maintain_order=True)


def _as_lazy(packets):
    if isinstance(packets, pl.LazyFrame):
        return packets
    if isinstance(packets, pl.DataFrame):
        return packets.lazy()
    if isinstance(packets, (pa.Table, pa.RecordBatch)):
        return pl.from_arrow(packets).lazy()
    raise TypeError(f"packets must be a pyarrow Table or a Polars (Lazy)DataFrame, "
                    f"not {type(packets).__name__}")


def _endpoints(lf):
    """Replace the 16-byte addresses by big-endian uint64 halves (``src_hi``, ``src_lo``, ...):
    hashing and comparing integers is several times faster than binaries, with the same order."""
    halves = []
    for side in ("src", "dst"):
        words = pl.col(side).bin.reinterpret(dtype=pl.Array(pl.UInt64, 2), endianness="big")
        halves += [words.arr.get(0).alias(f"{side}_hi"), words.arr.get(1).alias(f"{side}_lo")]
    return lf.with_columns(halves).drop("src", "dst")


def _flows_of(df, idle_ns, trace_end, timestamps):
    """Flows of the packets ``df`` (with endpoint columns, capture order), eagerly, with the
    kernel's connection index ``conn`` and ``client_is_a``; and the path RTT samples
    (:func:`traceflow.flows.pathrtt.path_samples`)."""
    from traceflow.flows.flowsplit import pair_ids, split_connections
    from traceflow.flows.pathrtt import connection_rtts, path_samples, sample_packets

    if df.height == 0:
        empty = {c: t for c, t in FLOW_SCHEMA.items() if c != "flow_id"}
        return pl.DataFrame(schema={**empty, "conn": pl.Int64, "client_is_a": pl.Boolean}), None
    df = df.with_columns(
        is_tcp=(pl.col("proto") == TCP) & pl.col("tcp_flags").is_not_null(),
        flags=pl.col("tcp_flags").fill_null(0).cast(pl.UInt16),
        payload=pl.col("payload_len").fill_null(0).cast(pl.Int64))
    inputs = df.select(
        ts=pl.col("ts").dt.epoch("ns"),
        is_tcp=pl.col("is_tcp").cast(pl.UInt8), flags="flags",
        seq=pl.col("seq").fill_null(0).cast(pl.UInt32), payload="payload")
    inputs = [inputs[c].to_numpy() for c in inputs.columns]
    keys = df.select(*_ADDR, pl.col("sport", "dport").fill_null(0), "proto")
    gid, fwd = pair_ids(*(keys[c].to_numpy() for c in keys.columns))
    packets, conns = split_connections(gid, inputs[0], fwd, *inputs[1:], idle_ns)
    packets["fwd"] = fwd.astype(bool)
    df = df.with_columns(pl.Series(name, values) for name, values in packets.items())
    events = pl.concat([_ends(df, conns), pl.DataFrame(conns)], how="horizontal")
    events = events.with_row_index("conn").with_columns(pl.col("conn").cast(pl.Int64))
    samples, summary = sample_packets(df, max_ns=idle_ns, timestamps=timestamps)
    path = path_samples(samples)
    conns = (_aggregate(df).join(events, on="conn", how="left")
             .join(connection_rtts(path, summary, events.height), on="conn", how="left"))
    conns = _close(_rtts(conns, idle_ns), idle_ns, trace_end)
    return _finish(_coverage(df, conns)), path


def _aggregate(df):
    """Counters per connection and direction, as columns ``<name>_a`` (sent by the pair's
    smaller endpoint) and ``<name>_b``: one group-by on (conn, direction) with plain sums and
    maxima (Polars' fast path), then the two directions side by side."""
    flags = pl.col("flags")
    # one integer key (2 * conn + direction) groups ~1.6x faster than the two columns
    per_dir = df.group_by(cd=pl.col("conn") * 2 + pl.col("fwd").cast(pl.Int64)).agg(
        packets=pl.len().cast(pl.Int64),
        bytes=pl.col("ip_len").cast(pl.Int64).sum(),
        payload=pl.col("payload").sum(),
        frame_bytes=pl.col("wirelen").cast(pl.Int64).sum(),
        syn=((flags & (SYN | ACK)) == SYN).sum().cast(pl.Int64),
        synack=((flags & (SYN | ACK)) == (SYN | ACK)).sum().cast(pl.Int64),
        fin=((flags & FIN) != 0).any(), rst=((flags & RST) != 0).any(),
        app=pl.col("new_bytes").sum(), irregular=pl.col("irregular").max().cast(pl.Boolean),
        retransmissions=pl.col("retrans").cast(pl.Int64).sum(),
        tcp=pl.col("is_tcp").any(),
    )
    names = ["packets", "bytes", "payload", "syn", "synack", "fin", "app", "irregular"]
    zero = {"packets": 0, "bytes": 0, "payload": 0, "syn": 0, "synack": 0, "fin": False,
            "app": 0, "irregular": False}
    per_dir = per_dir.with_columns(conn=pl.col("cd") // 2, fwd=(pl.col("cd") % 2) == 1)
    a = per_dir.filter("fwd").drop("fwd", "cd")
    b = per_dir.filter(~pl.col("fwd")).drop("fwd", "cd")
    both = a.join(b, on="conn", how="full", coalesce=True, suffix="_b")
    return both.select(
        "conn",
        *[pl.col(n).fill_null(zero[n]).alias(f"{n}_a") for n in names],
        *[pl.col(f"{n}_b").fill_null(zero[n]) for n in names],
        frame_bytes=pl.sum_horizontal("frame_bytes", "frame_bytes_b"),
        retransmissions=pl.sum_horizontal("retransmissions", "retransmissions_b"),
        rst=pl.col("rst").fill_null(False) | pl.col("rst_b").fill_null(False),
        tcp=pl.col("tcp").fill_null(False) | pl.col("tcp_b").fill_null(False),
    )


def _ends(df, conns):
    """Endpoint pair (a = smaller endpoint), IP version, start, end and first direction of each
    connection, gathered at the kernel's first/last packet indices."""
    fwd = pl.col("fwd")

    def a_or_b(a, b):
        return pl.when(fwd).then(a).otherwise(b)

    cols = [*_ADDR, "sport", "dport", "proto", "ip_version", "ts", "fwd"]
    first = df.select(cols)[conns["first"]].select(
        a_hi=a_or_b("src_hi", "dst_hi"), a_lo=a_or_b("src_lo", "dst_lo"),
        b_hi=a_or_b("dst_hi", "src_hi"), b_lo=a_or_b("dst_lo", "src_lo"),
        port_a=a_or_b("sport", "dport"), port_b=a_or_b("dport", "sport"),
        proto="proto", ip_version="ip_version", start="ts", first_fwd="fwd")
    return pl.concat([first, df.select(end="ts")[conns["last"]]], how="horizontal")


def _rtts(conns, idle_ns):
    """Client side, handshake state and RTT samples from the kernel's event times.

    Samples that are negative (clock stepped back) or longer than the idle timeout (a clock
    glitch: no round trip takes longer than the silence that ends a flow) are null.
    """
    def at(name):
        return pl.when(pl.col(name) >= 0).then(pl.col(name))

    # Karn's rule: no sample from a SYN or SYN/ACK that was sent more than once. Counted over
    # the whole connection: seen from the client, the server's first SYN/ACK may be lost before
    # the capture point and only its retransmission (and a later duplicate) seen.
    client_a = pl.col("client_is_a")
    syn_ok = pl.when(client_a).then("syn_a").otherwise("syn_b") <= 1
    sa_ok = pl.when(client_a).then("synack_b").otherwise("synack_a") <= 1

    def interval(since, until, ok=True):
        dt = at(until) - at(since)
        return pl.when(ok & (dt >= 0) & (dt <= idle_ns)).then(dt / 1e9)

    has_syn, has_sa, has_ack = (pl.col(c) >= 0 for c in ("t_syn", "t_synack", "t_ack"))
    return conns.with_columns(
        client_is_a=pl.when(pl.col("client_fwd") >= 0).then(pl.col("client_fwd") == 1)
        .otherwise(pl.col("first_fwd")),
    ).with_columns(
        rtt_syn=interval("t_syn", "t_synack", syn_ok & sa_ok),
        rtt_ack=interval("t_synack", "t_ack", sa_ok),
        rtt_data1=interval("t_ack", "t_data1", sa_ok),
        rtt_data2=interval("t_data1", "t_data2"),
        rtt_handshake=interval("t_syn", "t_ack", syn_ok & sa_ok),
        handshake=pl.when(has_syn & has_sa & has_ack).then(pl.lit("complete"))
        .when(~has_syn & ~has_sa).then(pl.lit("none")).otherwise(pl.lit("partial")),
    ).with_columns(rtt_min3=pl.min_horizontal("rtt_syn", "rtt_data1", "rtt_data2"))


def _close(conns, idle_ns, trace_end):
    quiet = (trace_end - pl.col("end")).dt.total_nanoseconds() <= idle_ns
    return conns.with_columns(
        close=pl.when(pl.col("rst")).then(pl.lit("RST"))
        .when(pl.col("fin_a") & pl.col("fin_b")).then(pl.lit("FIN"))
        .when((pl.col("last_of_pair") == 1) & quiet).then(pl.lit("EOF"))
        .otherwise(pl.lit("IDLE")))


def _coverage(df, conns):
    """Exact payload coverage for directions whose payload did not arrive in order.

    For the others the kernel's ``new_bytes`` already add up to the union of payload ranges.
    """
    odd = pl.concat([conns.filter("irregular_a").select("conn", fwd=pl.lit(True)),
                     conns.filter("irregular_b").select("conn", fwd=pl.lit(False))])
    if odd.height == 0:
        return conns
    ranges = (df.filter(pl.col("conn").is_in(odd["conn"].unique().implode())
                        & pl.col("is_tcp") & (pl.col("payload") > 0))
              .join(odd, on=["conn", "fwd"], how="semi")
              .select("conn", "fwd", d_start=pl.col("rel") + ((pl.col("flags") & SYN) != 0),
                      d_end=pl.col("rel") + ((pl.col("flags") & SYN) != 0) + pl.col("payload"))
              .sort(["conn", "fwd", "d_start"]))
    reach = pl.col("d_end").cum_max().shift(1).over("conn", "fwd")
    exact = ranges.with_columns(
        cover=(pl.col("d_end") - pl.max_horizontal("d_start", reach)).clip(lower_bound=0)
    ).group_by("conn").agg(exact_a=pl.col("cover").filter("fwd").sum(),
                           exact_b=pl.col("cover").filter(~pl.col("fwd")).sum())
    return conns.join(exact, on="conn", how="left").with_columns(
        app_a=pl.when("irregular_a").then("exact_a").otherwise("app_a"),
        app_b=pl.when("irregular_b").then("exact_b").otherwise("app_b"))


def _finish(conns):
    """Orient a/b columns as client/server and format addresses."""
    a = pl.col("client_is_a")

    def pick(col_a, col_b, client=True):
        return (pl.when(a).then(col_a).otherwise(col_b) if client
                else pl.when(a).then(col_b).otherwise(col_a))

    tcp = pl.col("tcp")
    out = conns.with_columns(
        client_hi=pick("a_hi", "b_hi"), client_lo=pick("a_lo", "b_lo"),
        server_hi=pick("a_hi", "b_hi", False), server_lo=pick("a_lo", "b_lo", False),
        client_port=pick("port_a", "port_b"), server_port=pick("port_a", "port_b", False),
        packets_c2s=pick("packets_a", "packets_b"),
        packets_s2c=pick("packets_a", "packets_b", False),
        bytes_c2s=pick("bytes_a", "bytes_b"), bytes_s2c=pick("bytes_a", "bytes_b", False),
        payload_bytes_c2s=pick("payload_a", "payload_b"),
        payload_bytes_s2c=pick("payload_a", "payload_b", False),
        app_bytes_c2s=pl.when(tcp).then(pick("app_a", "app_b")),
        app_bytes_s2c=pl.when(tcp).then(pick("app_a", "app_b", False)),
        syn_count=pick("syn_a", "syn_b"), synack_count=pick("synack_a", "synack_b", False),
        retransmissions=pl.when(tcp).then("retransmissions"),
    ).with_columns(
        packets=pl.col("packets_c2s") + pl.col("packets_s2c"),
        bytes=pl.col("bytes_c2s") + pl.col("bytes_s2c"),
        payload_bytes=pl.col("payload_bytes_c2s") + pl.col("payload_bytes_s2c"),
        duration=pl.max_horizontal(pl.col("end") - pl.col("start"), pl.duration(nanoseconds=0)),
    )
    ends = [out.select(hi=f"{side}_hi", lo=f"{side}_lo") for side in ("client", "server")]
    names = _address_strings(pl.concat(ends).unique())
    for side in ("client", "server"):
        rename = {"hi": f"{side}_hi", "lo": f"{side}_lo", "str": f"{side}_addr"}
        out = out.join(names.rename(rename), on=[f"{side}_hi", f"{side}_lo"], how="left")
    return out.select(*[c for c in FLOW_SCHEMA if c != "flow_id"], "conn", "client_is_a")


def _address_strings(halves):
    """Map addresses (uint64 halves) to text (IPv4-mapped → dotted quad), once per address."""
    text = []
    for hi, lo in halves.iter_rows():
        ip = ipaddress.IPv6Address((hi << 64) | lo)
        text.append(str(ip.ipv4_mapped) if ip.ipv4_mapped else str(ip))
    return halves.with_columns(str=pl.Series(text, dtype=pl.String))


# ----------------------------------------------------------------------------- inputs

PARQUET_MAGIC = b"PAR1"


def input_kind(path):
    """``"flows"``, ``"packets"`` (Parquet tables) or ``"capture"`` (anything else) for ``path``."""
    path = Path(path)
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic != PARQUET_MAGIC:
        return "capture"
    names = pl.read_parquet_schema(path).keys()
    if "flow_id" in names:
        return "flows"
    if "ts" in names and "src" in names:
        return "packets"
    raise InputFormatError("Parquet file is neither a packets nor a flows table", path=path)


def scan_packets(path):
    """Packets of one input as a LazyFrame: a packets Parquet (scanned lazily, together with the
    other chunk parts of the same capture when it is one) or a capture."""
    from traceflow.scale.parallel import chunk_parts

    kind = input_kind(path)
    if kind == "packets":
        return pl.scan_parquet(chunk_parts(path))
    if kind == "flows":
        raise InputFormatError("expected packets or a capture, got a flows table", path=path)
    from traceflow.pcap.reader import read_packets

    return pl.from_arrow(read_packets(path)).lazy()


def load_flows(inputs, *, idle_timeout=300.0, partitions=1, timestamps=True):
    """Flows of one or more inputs (captures, packets Parquet or flows Parquet), concatenated.

    Each input gets its own flows (two captures of the same traffic are never merged) and a
    ``source`` column with its file name; ``flow_id`` is renumbered 0, 1, ... over the result.
    ``idle_timeout``, ``partitions``, ``timestamps``: as :func:`flows`.
    """
    if isinstance(inputs, (str, Path)):
        inputs = [inputs]
    from traceflow.scale.parallel import whole_inputs

    tables = []
    for path in whole_inputs(inputs):
        if input_kind(path) == "flows":
            table = pl.read_parquet(path)
        else:
            table = flows(scan_packets(path), idle_timeout=idle_timeout, partitions=partitions,
                          timestamps=timestamps)
        tables.append(table.with_columns(source=pl.lit(Path(path).name)))
    if not tables:
        raise InputFormatError("no input files")
    out = pl.concat(tables, how="diagonal_relaxed")
    return out.with_columns(flow_id=pl.int_range(pl.len(), dtype=pl.Int64))

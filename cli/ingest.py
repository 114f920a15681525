"""``traceflow ingest``: decode captures into one packets table (Parquet or Arrow IPC)."""
import sys
from pathlib import Path

import click
import pyarrow as pa
import pyarrow.compute as pc

from traceflow.cli.options import echo_json, json_option, progress

ARROW_SUFFIXES = {".arrow", ".ipc", ".feather"}


def _format_for(dst, fmt):
    if fmt:
        return fmt
    return "arrow" if Path(dst).suffix.lower() in ARROW_SUFFIXES else "parquet"


class _Summary:
    """Per-protocol packet counts and bytes, accumulated batch by batch."""

    def __init__(self):
        self.counts = {"ipv4": 0, "ipv6": 0, "tcp": 0, "udp": 0, "icmp": 0, "other": 0}
        self.packets = 0
        self.ip_bytes = 0

    def add(self, batch):
        version, proto = batch.column("ip_version"), batch.column("proto")

        def count(mask):
            return int(pc.sum(pc.fill_null(mask, False).cast(pa.int64())).as_py() or 0)

        self.packets += batch.num_rows
        self.counts["ipv4"] += count(pc.equal(version, 4))
        self.counts["ipv6"] += count(pc.equal(version, 6))
        self.counts["tcp"] += count(pc.equal(proto, 6))
        self.counts["udp"] += count(pc.equal(proto, 17))
        self.counts["icmp"] += count(pc.or_(pc.equal(proto, 1), pc.equal(proto, 58)))
        self.counts["other"] += batch.num_rows - count(pc.is_valid(version))
        self.ip_bytes += int(pc.sum(batch.column("ip_len")).as_py() or 0)


def ingest_files(srcs, dst, *, fmt=None, decoder="fast", on_error="fail", batch_size=65536,
                 progress_cb=None):
    """Decode the captures ``srcs`` in order into one table at ``dst`` (written atomically).

    Returns a JSON-able summary: packets, per-protocol counts, skipped records/bytes, unsupported
    link types, bytes read and IP bytes, one entry per input under ``files``.
    """
    import pyarrow.parquet as pq

    from traceflow.atomic import atomic_path
    from traceflow.pcap.reader import ReadStats, iter_batches
    from traceflow.pcap.schema import PACKET_SCHEMA

    fmt = _format_for(dst, fmt)
    summary = _Summary()
    files = []
    with atomic_path(dst) as tmp:
        if fmt == "parquet":
            writer = pq.ParquetWriter(tmp, PACKET_SCHEMA, compression="zstd")
        else:
            writer = pa.ipc.new_file(str(tmp), PACKET_SCHEMA)
        with writer:
            for src in srcs:
                stats = ReadStats()
                for batch in iter_batches(src, decoder=decoder, on_error=on_error,
                                          batch_size=batch_size, stats=stats, progress=progress_cb):
                    writer.write_batch(batch)
                    summary.add(batch)
                files.append(stats.as_dict())
    unsupported = {}
    for f in files:
        for lt, n in f["unsupported_linktypes"].items():
            unsupported[lt] = unsupported.get(lt, 0) + n
    return {
        "output": str(dst), "format": fmt, "decoder": decoder, "packets": summary.packets,
        "protocols": summary.counts,
        "records": sum(f["records"] for f in files),
        "skipped_records": sum(f["skipped_records"] for f in files),
        "skipped_bytes": sum(f["skipped_bytes"] for f in files),
        "unsupported_linktypes": unsupported,
        "bytes_read": sum(f["bytes"] for f in files), "ip_bytes": summary.ip_bytes,
        "files": files,
    }


def ingest_file(src, dst, **opts):
    """Decode one capture into ``dst``; the unit of work a parallel executor can map over."""
    return ingest_files([src], dst, **opts)


@click.command("ingest")
@click.argument("pcaps", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Output table (.parquet, or .arrow for Arrow IPC).")
@click.option("--format", "fmt", type=click.Choice(["parquet", "arrow"]), default=None,
              help="Output format (default: from the output suffix, else parquet).")
@click.option("--decoder", type=click.Choice(["fast", "dpkt"]), default="fast", show_default=True,
              help="Cython decoder or the dpkt reference (identical tables).")
@click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail", show_default=True,
              help="Malformed records: stop with an error, or skip and count them.")
@click.option("--batch-size", type=click.IntRange(1), default=65536, show_default=True,
              help="Packets per record batch.")
@json_option
def command(pcaps, output, fmt, decoder, on_error, batch_size, as_json):
    """Decode PCAPS (pcap/pcapng, optionally .gz/.zst) into one packets table, in order."""
    opts = dict(fmt=fmt, decoder=decoder, on_error=on_error, batch_size=batch_size)
    if sys.stderr.isatty():
        total = sum(Path(p).stat().st_size for p in pcaps)
        with progress(length=total, label="ingest") as bar:
            summary = ingest_files(list(pcaps), output, progress_cb=bar.update, **opts)
    else:  # keep stderr to the one-line error contract when it is captured
        summary = ingest_files(list(pcaps), output, **opts)
    if as_json:
        echo_json(summary)
    else:
        p = summary["protocols"]
        click.echo(f"{summary['packets']} packets ({p['ipv4']} IPv4, {p['ipv6']} IPv6, {p['tcp']} TCP, "
                   f"{p['udp']} UDP) -> {summary['output']}")
        if summary["skipped_records"] or summary["unsupported_linktypes"]:
            click.echo(f"skipped {summary['skipped_records']} malformed records; unsupported link "
                       f"types {summary['unsupported_linktypes']}", err=True)

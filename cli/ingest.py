"""``traceflow ingest``: decode captures into one packets table (Parquet or Arrow IPC), or into a
partitioned Parquet dataset (one part per capture, or per chunk of a large one, decoded in
parallel)."""
import re
import sys
from functools import partial
from pathlib import Path

import click

from traceflow.cli.options import (check_stdout, echo_json, json_option, progress,
                                   table_output_option)
from traceflow.errors import TraceflowError
from traceflow.scale.parallel import executor_options

#: what a directory input is searched for (recursively)
CAPTURE_PATTERNS = ("*.pcap", "*.pcapng", "*.cap", "*.pcap.gz", "*.pcap.zst", "*.pcapng.gz",
                    "*.pcapng.zst")
DEFAULT_CHUNK_SIZE = 64 << 20
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "kb": 10**3, "m": 1 << 20, "mib": 1 << 20,
          "mb": 10**6, "g": 1 << 30, "gib": 1 << 30, "gb": 10**9}


def parse_size(text):
    """Bytes in a size like ``64MiB``, ``512KiB``, ``1.5GB`` or ``4096`` (K/M/G are binary)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise TraceflowError(f"not a size: {text!r} (use e.g. 64MiB, 512KiB, 4096)")
    size = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if size < 1:
        raise TraceflowError(f"size must be at least one byte: {text!r}")
    return size


class ByteSize(click.ParamType):
    name = "size"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        try:
            return parse_size(value)
        except TraceflowError as exc:
            self.fail(str(exc), param, ctx)


def check_format(dst, fmt):
    """The table format of the user's output ``dst`` (its suffix, :mod:`traceflow.output`);
    ``--format``, when given, must agree."""
    from traceflow.output import table_format

    found = table_format(dst)
    if fmt and found != fmt:
        raise TraceflowError(f"--format {fmt} but the suffix says {found}", path=dst)
    return found


def ingest_files(srcs, dst, *, fmt=None, decoder="fast", on_error="fail", batch_size=65536,
                 progress_cb=None, chunk=None, head=None):
    """Decode the captures ``srcs`` in order into one table at ``dst`` (written atomically, in
    format ``fmt``, by default that of its suffix: :mod:`traceflow.output`; ``-`` prints the first
    ``head`` rows);
    ``chunk`` (a :class:`traceflow.pcap.reader.Chunk` of the one source) decodes only that chunk.

    Returns a JSON-able summary: packets, per-protocol counts, skipped records/bytes, unsupported
    link types, bytes read and IP bytes, one entry per input under ``files``.
    """
    from traceflow.output import DEFAULT_HEAD, TableSink
    from traceflow.pcap.info import ProtocolCounts
    from traceflow.pcap.reader import ReadStats, iter_batches
    from traceflow.pcap.schema import PACKET_SCHEMA, PARQUET_OPTIONS

    files = []
    with TableSink(dst, schema=PACKET_SCHEMA, head=head or DEFAULT_HEAD, fmt=fmt,
                   parquet=PARQUET_OPTIONS) as sink:
        for src in srcs:
            stats, summary = ReadStats(), ProtocolCounts()
            for batch in iter_batches(src, decoder=decoder, on_error=on_error,
                                      batch_size=batch_size, stats=stats, progress=progress_cb,
                                      chunk=chunk):
                sink.write(batch)
                summary.add(batch)
            files.append({**stats.as_dict(), "protocols": summary.counts,
                          "ip_bytes": summary.ip_bytes})
    return {"output": str(dst), "format": sink.format, "decoder": decoder, **totals(files)}


def totals(files):
    """Summary fields summed over per-file summaries (ReadStats dicts plus protocols, ip_bytes)."""
    from traceflow.pcap.info import ProtocolCounts

    protocols = {k: sum(f["protocols"][k] for f in files) for k in ProtocolCounts.KEYS}
    unsupported = {}
    for f in files:
        for lt, n in f["unsupported_linktypes"].items():
            unsupported[lt] = unsupported.get(lt, 0) + n
    return {
        "packets": sum(f["packets"] for f in files), "protocols": protocols,
        "records": sum(f["records"] for f in files),
        "skipped_records": sum(f["skipped_records"] for f in files),
        "skipped_bytes": sum(f["skipped_bytes"] for f in files),
        "truncated_bytes": sum(f["truncated_bytes"] for f in files),
        "unsupported_linktypes": unsupported,
        "bytes_read": sum(f["bytes"] for f in files),
        "ip_bytes": sum(f["ip_bytes"] for f in files),
        "files": files,
    }


def ingest_file(src, dst, **opts):
    """Decode one capture into ``dst``; the unit of work a parallel executor can map over."""
    return ingest_files([src], dst, **opts)


def ingest_dataset(srcs, out_dir, *, decoder="fast", on_error="fail", batch_size=65536,
                   chunk_size=DEFAULT_CHUNK_SIZE, executor="local", workers=None, scheduler=None,
                   progress=True):
    """Decode every capture of ``srcs`` (paths, globs, directories) into Parquet parts of the
    dataset directory ``out_dir``, one task per file on ``executor``.

    An uncompressed capture larger than ``chunk_size`` bytes is cut at record boundaries into
    chunks of about that size (:func:`traceflow.pcap.reader.plan_chunks`; fast decoder only),
    one task and one part ``part-NNNNN-<name>-cKKKK.parquet`` each; the parts, in name order,
    hold the same rows as a single-file ingest. ``chunk_size=None`` keeps one task per file.
    ``out_dir`` appears whole and only on success. Returns the summary of :func:`ingest_files`
    (one entry per input file under ``files``, its chunks' counts added up) with ``parts`` and
    ``chunks`` added to each entry.
    """
    from traceflow.scale.parallel import map_files
    from traceflow.pcap.reader import plan_chunks

    split = None
    if decoder == "fast" and chunk_size:
        split = partial(plan_chunks, target_bytes=chunk_size)
    info = map_files(partial(ingest_file, fmt="parquet", decoder=decoder, on_error=on_error,
                             batch_size=batch_size),
                     srcs, out_dir, patterns=CAPTURE_PATTERNS, fn_writes=True, split=split,
                     executor=executor, workers=workers, scheduler=scheduler, label="ingest",
                     progress=progress)
    per_file = [[] for _ in info["files"]]
    for source, result, part in zip(info["sources"], info["results"], info["parts"]):
        per_file[source].append((result["files"][0], part))
    files = [{**_add_up([entry for entry, _ in pieces]), "parts": [part for _, part in pieces],
              "chunks": len(pieces)} for pieces in per_file]
    return {"output": str(out_dir), "format": "parquet-dataset", "decoder": decoder,
            **totals(files)}


def _add_up(entries):
    """One file's summary from the summaries of its chunks."""
    out = dict(entries[0])
    for key in ("records", "packets", "skipped_records", "skipped_bytes", "interfaces", "bytes",
                "ip_bytes", "truncated_bytes"):
        out[key] = sum(e[key] for e in entries)
    out["protocols"] = {k: sum(e["protocols"][k] for e in entries) for k in out["protocols"]}
    unsupported = {}
    for e in entries:
        for lt, n in e["unsupported_linktypes"].items():
            unsupported[lt] = unsupported.get(lt, 0) + n
    out["unsupported_linktypes"] = unsupported
    out["errors"] = [msg for e in entries for msg in e["errors"]][:20]
    return out


def check_dataset_output(output, dataset, fmt=None, executor=None, workers=None, scheduler=None):
    """Whether ``output`` is a dataset directory; a :class:`TraceflowError` for option clashes.

    An existing directory is only replaced when it holds nothing but Parquet parts: the dataset
    is swapped in whole, and ``-o .`` must never delete a working directory.
    """
    path = Path(output)
    dataset = dataset or path.is_dir()
    if not dataset:
        if executor or workers or scheduler:
            raise TraceflowError("--executor/--workers/--scheduler need --dataset (one Parquet "
                                 "part per input file)")
        return False
    if fmt == "arrow":
        raise TraceflowError("a --dataset is written as Parquet parts; drop --format arrow")
    if path.exists() and not path.is_dir():
        raise TraceflowError("exists and is not a directory (--dataset writes a directory)",
                             path=path)
    if path.is_dir():
        others = [p.name for p in path.iterdir() if not p.name.endswith(".parquet")]
        if others:
            raise TraceflowError(f"directory holds {others[0]!r}, not only Parquet parts; "
                                 "refusing to replace it", path=path)
    return True


@click.command("ingest")
@click.argument("pcaps", nargs=-1, required=True, type=click.Path())
@table_output_option("packets table", required=True,
                     extra=" With --dataset: a directory of Parquet parts.")
@click.option("--dataset", is_flag=True,
              help="Write one Parquet part per input file into the directory -o, decoding the "
                   "files in parallel (implied when -o is an existing directory).")
@click.option("--format", "fmt", type=click.Choice(["parquet", "arrow"]), default=None,
              help="Check that the output is this format (it comes from the suffix).")
@click.option("--decoder", type=click.Choice(["fast", "dpkt"]), default="fast", show_default=True,
              help="Cython decoder or the dpkt reference (identical tables).")
@click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail", show_default=True,
              help="Malformed records: stop with an error, or skip and count them.")
@click.option("--batch-size", type=click.IntRange(1), default=65536, show_default=True,
              help="Packets per record batch.")
@click.option("--chunk-size", type=ByteSize(), default=None, metavar="SIZE",
              help="With --dataset and the fast decoder: cut uncompressed captures larger than "
                   "SIZE into chunks of about SIZE decoded in parallel, one part each (e.g. "
                   "16MiB; default 64MiB).")
@executor_options
@json_option
def command(pcaps, output, head, dataset, fmt, decoder, on_error, batch_size, chunk_size,
            executor, workers, scheduler, as_json):
    """Decode PCAPS (pcap/pcapng, optionally .gz/.zst; files, globs or directories) into one
    packets table, in order, or with --dataset into one Parquet part per file.

    A capture that ends inside a record (tcpdump killed or still running) keeps its complete
    records with a warning; a malformed record elsewhere is an error unless --on-error skip.

    \b
    Examples:
      traceflow ingest trace.pcap.gz -o packets.parquet
      traceflow ingest a.pcap b.pcapng -o packets.arrow --on-error skip
      traceflow ingest trace.pcap -o - --head 5
      traceflow ingest 'captures/**/*.pcap*' -o packets_ds/ --dataset --workers 2
    """
    from traceflow.scale.parallel import expand_paths, resolve_executor

    check_stdout(output, as_json)
    opts = dict(decoder=decoder, on_error=on_error, batch_size=batch_size)
    if output != "-" and check_dataset_output(output, dataset, fmt, executor, workers, scheduler):
        summary = ingest_dataset(pcaps, output, executor=resolve_executor(executor, scheduler),
                                 workers=workers, scheduler=scheduler,
                                 chunk_size=chunk_size or DEFAULT_CHUNK_SIZE, **opts)
    else:
        if chunk_size is not None:
            raise TraceflowError("--chunk-size needs --dataset (one Parquet part per chunk)")
        fmt = check_format(output, fmt)  # an unknown suffix fails before the work
        srcs = expand_paths(pcaps, CAPTURE_PATTERNS)
        opts["head"] = head
        if sys.stderr.isatty() and output != "-":
            total = sum(p.stat().st_size for p in srcs)
            with progress(length=total, label="ingest") as bar:
                summary = ingest_files(srcs, output, fmt=fmt, progress_cb=bar.update, **opts)
        else:  # keep stderr to the one-line error contract when it is captured
            summary = ingest_files(srcs, output, fmt=fmt, **opts)
    if as_json:
        echo_json(summary)
        return
    from traceflow.pcap.info import linktype_name

    p = summary["protocols"]
    n = len(summary["files"])
    click.echo(f"{summary['packets']:,} packets ({p['ipv4']:,} IPv4, {p['ipv6']:,} IPv6, "
               f"{p['tcp']:,} TCP, {p['udp']:,} UDP) from {n} file{'s' * (n != 1)}"
               + ("" if output == "-" else f" -> {summary['output']}"),
               err=output == "-")
    if summary["skipped_records"]:
        click.echo(f"traceflow: warning: skipped {summary['skipped_records']} malformed "
                   f"records ({summary['skipped_bytes']:,} bytes)", err=True)
    for lt, count in summary["unsupported_linktypes"].items():
        click.echo(f"traceflow: warning: {count:,} records of link type {lt} "
                   f"({linktype_name(lt)}) not decoded", err=True)

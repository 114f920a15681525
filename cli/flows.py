"""``traceflow flows``: captures or packets tables → the flow table (Parquet, or a partitioned
Parquet dataset with one part per input file) and a summary."""
from functools import partial
from pathlib import Path

import click
import pyarrow.parquet as pq

from traceflow.cli.ingest import CAPTURE_PATTERNS, check_dataset_output
from traceflow.cli.options import (Duration, check_stdout, echo_json, filter_options, json_option,
                                   reorder_option, table_output_option, warn_reordering)
from traceflow.errors import TraceflowError
from traceflow.scale.parallel import executor_options

#: the flow columns the summary reads
SUMMARY_COLUMNS = ("proto", "close", "handshake", "packets", "bytes", "source")
#: what a directory input is searched for (recursively): captures and packets Parquet tables
INPUT_PATTERNS = CAPTURE_PATTERNS + ("*.parquet",)


def flows_of_file(path, idle_timeout=300.0, partitions=1):
    """The flow table of one capture or packets Parquet file; the task :func:`flows_dataset`
    maps over the input files (top level, so worker processes can import it)."""
    import polars as pl

    from traceflow.flows import flows

    table = flows(path, idle_timeout=idle_timeout, partitions=partitions)
    return table.with_columns(pl.col("start", "end").dt.replace_time_zone("UTC"))  # instants


def _columns(table, wanted):
    """``table`` with only the ``wanted`` columns in that order (all when None); an unknown one
    is a one-line error listing the table's."""
    if wanted is None:
        return table
    unknown = [c for c in wanted if c not in table.columns]
    if unknown:
        raise TraceflowError(f"--columns: no column {', '.join(unknown)}; the flow table has "
                             f"{', '.join(table.columns)}")
    return table.select(wanted)


def flows_dataset(inputs, out_dir, *, idle_timeout=300.0, partitions=1, executor="local",
                  workers=None, scheduler=None, progress=True):
    """Write the flows of every input file (paths, globs, directories) as one Parquet part each in
    ``out_dir``, one task per file on ``executor``; ``out_dir`` appears whole, only on success.

    Each part has a ``source`` column (the input's absolute path). ``flow_id`` numbers the flows
    within a part only: (``source``, ``flow_id``) identifies a flow in the dataset.
    Returns :func:`traceflow.scale.parallel.map_files`' dict.
    """
    from traceflow.scale.parallel import expand_paths, map_files, whole_inputs

    files = whole_inputs(expand_paths(inputs, INPUT_PATTERNS))  # a chunked capture is one task
    return map_files(partial(flows_of_file, idle_timeout=idle_timeout, partitions=partitions),
                     files, out_dir, patterns=INPUT_PATTERNS, source_column="source",
                     executor=executor, workers=workers, scheduler=scheduler, label="flows",
                     progress=progress)


@click.command("flows")
@click.argument("inputs", nargs=-1, required=True, type=click.Path())
@table_output_option("flow table", extra=" With --dataset: a directory of Parquet parts.")
@click.option("--dataset", is_flag=True,
              help="Write one Parquet part of flows per input file into the directory -o, "
                   "computed in parallel (implied when -o is an existing directory).")
@click.option("--idle-timeout", type=Duration(), default="300s", show_default=True,
              help="A flow ends after this much silence (e.g. 300s, 5m, 500ms).")
@click.option("--partitions", type=click.IntRange(min=1), default=1, show_default=True,
              help="Process the endpoint pairs in this many disjoint parts (bounds memory for "
                   "packet tables larger than RAM).")
@click.option("--columns", default=None, metavar="A,B,...",
              help="Write only these flow table columns, in this order (e.g. "
                   "flow_id,client_addr,server_addr,proto,handshake,close,bytes).")
@reorder_option
@executor_options
@filter_options("flows")
@json_option
def command(inputs, output, head, dataset, idle_timeout, partitions, columns, reorder, executor,
            workers, scheduler, filter_, proto, as_json):
    """Build the TCP/UDP flow table of INPUT... (captures, packets or flows Parquet; files, globs
    or directories).

    Each input gets its own flows (column ``source``); ``flow_id`` numbers the result. With
    --dataset, captures and packets tables only; ``flow_id`` restarts in every part and
    ``source`` holds the input's absolute path. Without --dataset, --workers N cuts each input
    into N ranges of its records, each decoded by its own process (--executor dask: a Dask
    task), and stitches the connections that cross a cut: the same table as one process. A
    compressed capture does not split (decompressing is serial), nor one whose timestamps run
    backwards: those are read by one process. --filter and --proto select flows
    (columns of the flow table); in text formats addresses are text, durations seconds and times
    UTC.

    \b
    Examples:
      traceflow flows trace.pcap
      traceflow flows trace.pcap -o flows.parquet
      traceflow flows trace.pcap -o flows.csv --proto tcp --filter "server_port = 443"
      traceflow flows trace.pcap -o - --head 10 --filter "bytes > 1e5"
      traceflow flows big.pcap -o flows.parquet --workers 2
      traceflow flows 'captures/*.pcap' -o flows_ds/ --dataset --workers 2
    """
    import polars as pl

    from traceflow import units
    from traceflow.flows.table import load_flows, write_flows
    from traceflow.flows.lifetimes import flows_summary
    from traceflow.output import table_format, utc_aware, write_table
    from traceflow.scale.parallel import expand_paths, resolve_executor
    from traceflow.selection import row_filter, select_rows

    check_stdout(output, as_json)
    if idle_timeout <= 0:
        raise TraceflowError("--idle-timeout must be > 0")
    # --workers, --executor, --scheduler alone are legal: they split a capture (below)
    to_dataset = bool(output) and output != "-" and check_dataset_output(
        output, dataset)
    if to_dataset and (row_filter(filter_, proto) is not None or columns):
        raise TraceflowError("--filter/--proto/--columns apply to a flow table, not to a "
                             "--dataset (select when reading it)")
    wanted = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    if to_dataset:
        info = flows_dataset(inputs, output, idle_timeout=idle_timeout, partitions=partitions,
                             executor=resolve_executor(executor, scheduler), workers=workers,
                             scheduler=scheduler)
        table = pl.scan_parquet(Path(output) / "*.parquet").collect()
        per_file = [{"file": f, "part": part, "flows": pq.read_metadata(part).num_rows}
                    for f, part in zip(info["files"], info["parts"])]
    else:
        if dataset:
            raise TraceflowError("--dataset needs -o DIR")
        files, notes = expand_paths(inputs, INPUT_PATTERNS), []
        # --workers N on a capture: N ranges of its records, each decoded by one worker
        parallel = dict(partitions=partitions, workers=workers or 1,
                        executor=resolve_executor(executor, scheduler), scheduler=scheduler)
        if output:
            table_format(output)  # an unknown suffix fails before the work
        if (output and table_format(output) == "parquet" and row_filter(filter_, proto) is None
                and not wanted):
            # streamed: the flows are written as they end, only the summary's columns are kept
            table = write_flows(files, output, columns=SUMMARY_COLUMNS, idle_timeout=idle_timeout,
                                reorder=reorder, notes=notes, **parallel)
        else:
            table = select_rows(load_flows(files, idle_timeout=idle_timeout, reorder=reorder,
                                           notes=notes, **parallel), filter_, proto)
            if output:  # start/end marked UTC in Parquet/Arrow, as write_flows writes them
                write_table(utc_aware(_columns(table, wanted).to_arrow()), output, head=head)
        warn_reordering(notes)
        per_file = [{"file": f, "flows": n} for f, n in
                    table.group_by("source", maintain_order=True).len().iter_rows()]
    summary = flows_summary(table)
    if as_json:
        echo_json({**summary, "output": output, "files": per_file})
        return
    tcp = summary["tcp"]
    n = len(per_file)
    # with -o - the table owns stdout: the summary goes to stderr
    echo = (lambda m: click.echo(m, err=True)) if output == "-" else click.echo
    echo(f"{summary['flows']} flows ({tcp['connections']} TCP) from {n} "
         f"file{'s' * (n != 1)}" + (f" -> {output}" if output and output != "-" else ""))
    echo("TCP close: " + (", ".join(f"{k} {v}" for k, v in tcp["by_close"].items()) or "none"))
    echo("TCP handshake: "
         + (", ".join(f"{k} {v}" for k, v in tcp["by_handshake"].items()) or "none"))
    for row in tcp["short_lived"] if tcp["connections"] else ():
        echo(f"lifetime < {row['threshold']} packets: "
             f"{units.share(row['short_share_connections'])} of connections, "
             f"{units.share(row['short_share_bytes'])} of bytes")

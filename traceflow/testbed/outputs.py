"""The run directory's tables: ``transfers.parquet`` (ground truth) and ``params.json``."""
import os
import platform

import polars as pl

from traceflow.jsonutil import dumps

TRANSFER_SCHEMA = {"client": pl.Int32, "port": pl.Int32, "size": pl.Int64, "start": pl.Float64,
                   "end": pl.Float64, "ok": pl.Int8}


def transfers(csv_path, params):
    """The client's transfer log as the ground-truth table, one row per transfer sorted by start:
    client (loop index), port (client TCP port; 0 if never connected), size (bytes requested),
    start, end (epoch seconds, client clock), ok (1 = all bytes arrived), rtt_class, rtt
    (configured round-trip propagation delay of the client, seconds)."""
    n = len(params.rtt)
    table = pl.read_csv(csv_path, schema=TRANSFER_SCHEMA)
    rtt_class = (pl.col("client") % n).cast(pl.Int32)
    return table.with_columns(
        rtt_class=rtt_class,
        rtt=rtt_class.replace_strict(list(range(n)), list(params.rtt), return_dtype=pl.Float64),
    ).sort("start", "client")


def host_steal_seconds():
    """CPU time (s, all CPUs) the hypervisor has taken from this machine since boot (/proc/stat
    "steal"): while a virtual CPU is stolen even a real-time relay cannot send, so a run records
    how much was stolen during it."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


def params_document(params, **measured):
    """params.json: every parameter, the kernel, and what the run measured (``measured``: qdisc
    counters, capture counters, relay counters, wall time...)."""
    return dumps({**params.to_dict(), "kernel": platform.release(), **measured})

"""Link time series: integer-ns binning, selections, aggregation, loading (traceflow.stats.series)."""
import json
import subprocess
import sys

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from click.testing import CliRunner

from conftest import shared_path
from traceflow.cli.main import cli
from traceflow.errors import TraceflowError
from traceflow.pcap.schema import PACKET_SCHEMA
from traceflow.stats.series import (aggregate, address_mask, bin_width, block_sums, link_series,
                              load_series, parse_duration, resample)

MS = 1_000_000


def v4(a):
    return b"\x00" * 10 + b"\xff\xff" + bytes(int(p) for p in a.split("."))


def packets(ts_ns, ip_len, src=None, dst=None, proto=None, wirelen=None):
    n = len(ts_ns)
    cols = {name: pa.nulls(n, typ) for name, typ in zip(PACKET_SCHEMA.names, PACKET_SCHEMA.types)}
    cols["ts"] = pa.array(ts_ns, pa.int64()).cast(pa.timestamp("ns"))
    cols["ip_len"] = pa.array(ip_len, pa.uint32())
    cols["wirelen"] = pa.array(wirelen if wirelen is not None else [x + 14 if x else 60 for x in ip_len],
                               pa.uint32())
    cols["src"] = pa.array([v4(s) for s in (src or ["10.0.0.1"] * n)], pa.binary(16))
    cols["dst"] = pa.array([v4(s) for s in (dst or ["10.0.0.2"] * n)], pa.binary(16))
    cols["proto"] = pa.array(proto or [6] * n, pa.uint8())
    return pa.table(cols, schema=PACKET_SCHEMA)


def test_parse_duration_exact():
    assert parse_duration("10ms") == 10 * MS
    assert parse_duration("0.1s") == 100 * MS  # no float round-off
    assert parse_duration("2.5ms") == 2_500_000
    assert parse_duration("100us") == 100_000
    assert parse_duration(7) == 7
    assert parse_duration("1min") == 60_000_000_000
    with pytest.raises(TraceflowError):
        parse_duration("ten ms")
    with pytest.raises(TraceflowError):
        parse_duration("0s")


def test_binning_by_hand_with_empty_bins_aligned_to_the_first_packet():
    t0 = 1_700_000_000_003 * MS  # not a multiple of 10 ms
    ts = [t0, t0 + 6 * MS, t0 + 10 * MS, t0 + 41 * MS]
    s = link_series(packets(ts, [100, 200, None, 400], wirelen=[114, 214, 60, 414]), "10ms")
    t = s.get_column("t").cast(pl.Int64).to_numpy()
    assert s.schema["t"] == pl.Datetime("ns")
    assert t[0] == t0 and np.all(np.diff(t) == 10 * MS)
    # first bin [t0, t0 + 10 ms): packets at +0, +6 ms; the second holds +10 ms; non-IP → wirelen
    assert s.get_column("packets").to_list() == [2, 1, 0, 0, 1]
    assert s.get_column("bytes").to_list() == [300, 60, 0, 0, 400]
    assert s.get_column("bytes").dtype == pl.Int64


def test_start_end_fix_the_range():
    ts = [5 * MS, 25 * MS]
    s = link_series(packets(ts, [10, 20]), "10ms", start=0, end=60 * MS)
    assert s.height == 6 and s.get_column("packets").to_list() == [1, 0, 1, 0, 0, 0]
    s2 = link_series(packets(ts, [10, 20]), "10ms", start=10 * MS, end=20 * MS)
    assert s2.get_column("packets").to_list() == [0]


def test_filter_and_direction():
    ts = [1 * MS, 2 * MS, 3 * MS, 4 * MS]
    pk = packets(ts, [100, 200, 300, 400], src=["10.0.0.1", "10.0.1.7", "192.168.1.1", "10.0.0.9"],
                 proto=[6, 17, 6, 6])
    assert link_series(pk, "10ms", filter="proto = 6").get_column("bytes").to_list() == [800]
    assert link_series(pk, "10ms", direction="src:10.0.0.0/24").get_column("bytes").to_list() == [500]
    assert link_series(pk, "10ms", direction="src:10.0.0.0/16").get_column("bytes").to_list() == [700]
    assert link_series(pk, "10ms", direction="dst:10.0.0.2").get_column("packets").to_list() == [4]
    both = link_series(pk, "10ms", direction="src:10.0.0.0/8", filter="ip_len >= 200")
    assert both.get_column("bytes").to_list() == [600]
    mask = address_mask(pk.column("src"), "10.0.0.0/25")
    assert mask.tolist() == [True, False, False, True]
    with pytest.raises(TraceflowError):
        link_series(pk, "10ms", direction="up:10.0.0.0/8")
    with pytest.raises(TraceflowError):
        link_series(pk, "10ms", filter="no_such_column = 1")


def test_aggregate_and_resample_conserve_totals():
    rng = np.random.default_rng(1)
    ts = np.sort(rng.integers(0, 10_000 * MS, 5000))
    sizes = rng.integers(40, 1500, ts.size)
    s = link_series(packets(ts.tolist(), sizes.tolist()), "10ms")
    assert s.get_column("bytes").sum() == sizes.sum() and s.get_column("packets").sum() == ts.size
    a = aggregate(s, 7)
    assert a.height == s.height // 7 and bin_width(a) == 70 * MS
    assert a.get_column("bytes").sum() == s.head(a.height * 7).get_column("bytes").sum()
    assert np.array_equal(a.get_column("bytes").to_numpy(),
                          block_sums(s.get_column("bytes").to_numpy(), 7))
    r = resample(s, "100ms")
    direct = link_series(packets(ts.tolist(), sizes.tolist()), "100ms")
    assert r.equals(direct.head(r.height))
    with pytest.raises(TraceflowError):
        resample(s, "15ms")


def test_load_series_kinds(tmp_path):
    pk = packets([1 * MS, 12 * MS, 13 * MS], [100, 200, 300])
    pq = tmp_path / "packets.parquet"
    pl.from_arrow(pk).write_parquet(pq)
    got = load_series(pq, column="packets")
    assert got.kind == "packets" and got.values.tolist() == [1.0, 2.0] and got.bin_ns == 10 * MS
    ser = tmp_path / "series.parquet"
    got.frame.write_parquet(ser)
    again = load_series(ser)
    assert again.kind == "series" and again.values.tolist() == [100.0, 500.0]
    csv = tmp_path / "x.csv"
    pl.DataFrame({"load": [1.5, 2.5, 3.0]}).write_csv(csv)
    plain = load_series(csv, column="load")
    assert plain.kind == "table" and plain.bin_ns is None and plain.values.tolist() == [1.5, 2.5, 3.0]
    with pytest.raises(TraceflowError):
        load_series(csv)  # no --column


def test_capture_totals_match_packets():
    path = shared_path("testbed", "alpha1.35", "client_side.pcap.gz")
    from traceflow.stats.series import read_packets

    pk = read_packets(path)
    s = link_series(pk, "10ms")
    total = pk.select(pl.col("ip_len").cast(pl.Int64).fill_null(pl.col("wirelen").cast(pl.Int64)).sum()).item()
    assert s.get_column("packets").sum() == pk.height
    assert s.get_column("bytes").sum() == total
    span = pk.get_column("ts").cast(pl.Int64)
    assert s.height == span.max() // (10 * MS) - span.min() // (10 * MS) + 1
    data = link_series(pk, "10ms", filter="payload_len > 0")
    assert 0 < data.get_column("packets").sum() < pk.height


def test_cli_series_writes_parquet(tmp_path):
    pk = packets([1 * MS, 12 * MS, 55 * MS], [100, 200, 300])
    pq = tmp_path / "packets.parquet"
    pl.from_arrow(pk).write_parquet(pq)
    out = tmp_path / "s.parquet"
    res = CliRunner().invoke(cli, ["series", str(pq), "--bin", "10ms", "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["bins"] == 6 and summary["packets"] == 3 and summary["empty_bins"] == 3
    s = pl.read_parquet(out)
    assert s.columns == ["t", "bytes", "packets"] and s.get_column("bytes").to_list() == [100, 200, 0, 0, 0, 300]
    res = CliRunner().invoke(cli, ["series", str(out), "--bin", "40ms", "--json"])
    # the trailing partial 40 ms block is kept, as the packets' own 40 ms series has it
    assert json.loads(res.output)["bytes"] == 600 and json.loads(res.output)["bins"] == 2


def test_cli_series_errors_one_line(tmp_path):
    pk = packets([1 * MS], [100])
    pq = tmp_path / "packets.parquet"
    pl.from_arrow(pk).write_parquet(pq)
    out = tmp_path / "s.parquet"
    for args in (["--filter", "proto = = 6"], ["--bin", "fast"], ["--direction", "src:300.1.1.1"]):
        r = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "series", str(pq), "-o", str(out), *args],
                           capture_output=True, text=True)
        assert r.returncode == 2, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
        assert not out.exists()

"""Record-range parallelism (issue 48): a capture cut into ranges of records, each decoded and
split on its own, stitched at the cuts, gives the table of one pass, every column, byte for
byte: at random cuts, and at cuts inside a handshake, a retransmission and an idle gap.

Oracle: the one-pass table (``flows``), itself held to tshark elsewhere
(tests/flows/test_flows_workers.py counts tshark's TCP conversations on the CLI's table)."""
import gzip
import shutil

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import CAPTURES, shared_path
from traceflow.flows import flows
from traceflow.scale.ranges import (_stitched, merge_ranges, plan_ranges, range_flows,
                                    range_part, row_ranges)

PACKETS = 200_000   # of alpha1.35's client side: 40 s of a testbed run, 1.5 k connections


@pytest.fixture(scope="module")
def alpha(tmp_path_factory):
    """The first PACKETS packets of alpha1.35's client side, their one-pass tables (idle
    timeouts 0.5 s and 300 s) and cut points of interest (packet indices)."""
    from traceflow.pcap.reader import read_packets

    src = shared_path("testbed", "alpha1.35", "client_side.pcap.gz")
    pcap = tmp_path_factory.mktemp("alpha") / "client_side.pcap"
    with gzip.open(src, "rb") as f, open(pcap, "wb") as out:
        shutil.copyfileobj(f, out, 1 << 20)
    table = read_packets(pcap).slice(0, PACKETS)
    df = pl.from_arrow(table).with_row_index("i")
    pair = [pl.min_horizontal(pl.col("src").bin.encode("hex") + pl.col("sport").cast(str),
                              pl.col("dst").bin.encode("hex") + pl.col("dport").cast(str)),
            pl.max_horizontal(pl.col("src").bin.encode("hex") + pl.col("sport").cast(str),
                              pl.col("dst").bin.encode("hex") + pl.col("dport").cast(str))]
    synack = df.filter(pl.col("tcp_flags") & 0x12 == 0x12)["i"]
    again = df.filter(pl.col("payload_len") > 0).filter(
        pl.struct("src", "sport", "dst", "dport", "seq").is_duplicated()
        & (pl.int_range(pl.len()).over("src", "sport", "dst", "dport", "seq") > 0))["i"]
    gaps = df.with_columns(gap=pl.col("ts").diff().over(pair).dt.total_nanoseconds(),
                           prev=pl.col("i").shift().over(pair)).filter(pl.col("gap") > 5e8)
    idle = pl.concat([gaps["i"], ((gaps["prev"] + gaps["i"]) // 2).cast(pl.UInt32)])
    special = {"handshake": synack.to_list(), "retransmission": again.to_list(),
               "idle gap": idle.to_list()}
    assert all(len(v) > 10 for v in special.values()), {k: len(v) for k, v in special.items()}
    whole = {idle: flows(table, idle_timeout=idle) for idle in (0.5, 300.0)}
    return table, whole, special


def _ranged(table, cuts, idle):
    ranges = row_ranges(table, table.num_rows, 0, cuts)
    parts = [range_part((r, idle, True, 1 << 14, i == len(ranges) - 1, None, False))
             for i, r in enumerate(ranges)]
    return parts, merge_ranges(parts, idle_timeout=idle, timestamps=True)


@settings(max_examples=16, deadline=None)
@given(data=st.data())
def test_random_cuts_give_the_one_pass_table(alpha, data):
    table, whole, special = alpha
    idle = data.draw(st.sampled_from([0.5, 300.0]), label="idle timeout")
    kinds = [st.sampled_from(v) for v in special.values()]
    cuts = data.draw(st.lists(st.one_of(st.integers(1, table.num_rows - 1), *kinds),
                              min_size=1, max_size=6), label="cuts")
    _, got = _ranged(table, cuts, idle)
    assert got.equals(whole[idle])


@pytest.mark.parametrize("kind", ["handshake", "retransmission", "idle gap"])
def test_a_cut_inside_a_connection_is_stitched(alpha, kind):
    """Cuts inside handshakes, retransmissions and idle gaps: the connections they split are
    fed again (stitched), and the table is the one-pass table."""
    table, whole, special = alpha
    points = special[kind]
    cuts = [points[len(points) // 4], points[len(points) // 2], points[3 * len(points) // 4]]
    for idle in (0.5, 300.0):
        parts, got = _ranged(table, cuts, idle)
        assert got.equals(whole[idle]), (kind, idle)
        if kind != "idle gap" or idle == 300.0:   # a cut in a 0.5 s gap splits nothing
            assert _stitched(parts, int(idle * 1e9)).height >= 1


def test_captures_split_at_record_boundaries():
    """Every shared pcap and pcapng capture whose clock runs forward, cut into 2 and 5 ranges
    of its records (framed without decoding): the one-pass table; the one whose clock steps
    back 44 s (ppa_ftp-crack) is not split (None) and ``flows(workers=2)`` reads it in one
    pass."""
    paths = sorted(CAPTURES.glob("*.pcap*")) if CAPTURES.is_dir() else []
    if not paths:
        pytest.skip("needs ../shared/datasets/captures (not present)")
    split = 0
    for path in paths:
        whole = flows(path, idle_timeout=5.0)
        for n in (2, 5):
            ranges = plan_ranges(path, n)
            got = range_flows(path, ranges=ranges, workers=1, idle_timeout=5.0)
            if path.name == "ppa_ftp-crack.pcap":
                assert len(ranges) == n and got is None
                assert flows(path, idle_timeout=5.0, workers=2).equals(whole)
            elif len(ranges) > 1:
                split += 1
                assert got.equals(whole), (path.name, n)
    assert split >= 20


def test_packets_parquet_splits_by_rows(tmp_path):
    """A packets Parquet in small row groups, cut at rows inside them: the one-pass table."""
    import pyarrow.parquet as pq

    from traceflow.pcap.reader import read_packets

    path = tmp_path / "packets.parquet"
    pq.write_table(read_packets(shared_path("captures", "slips_test-cc-capture-1.pcap")), path,
                   row_group_size=700)
    whole = flows(path)
    for n in (2, 3, 7):
        assert range_flows(path, ranges=plan_ranges(path, n), workers=1).equals(whole)
    assert flows(path, workers=3).equals(whole)


def test_compressed_capture_is_one_range():
    path = shared_path("testbed", "rtt3dev", "client_side.pcap.gz")
    assert len(plan_ranges(path, 4)) == 1


def test_dask_local_cluster_of_four_workers_gives_the_same_table():
    """Four Dask workers (threads of this process, to spare a 2-core machine): each range a
    task, only its result back."""
    distributed = pytest.importorskip("distributed")
    path = shared_path("captures", "slips_test-cc-capture-1.pcap")
    whole = flows(path)
    with distributed.LocalCluster(n_workers=4, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        got = flows(path, workers=4, executor="dask", scheduler=cluster.scheduler_address)
    assert got.equals(whole)


def test_a_table_in_memory_splits_too():
    path = shared_path("captures", "zeek_http_bro.org.pcap")
    from traceflow.pcap.reader import read_packets

    packets = read_packets(path)
    whole = flows(packets)
    assert range_flows(packets, ranges=plan_ranges(packets, 4), workers=1).equals(whole)


def test_rtt_samples_through_ranges(alpha):
    """The RTT samples table (``rtt --samples``) from ranges: the one-pass samples, every
    column (frame numbers too), with cuts inside handshakes."""
    from traceflow.flows import flows_with_rtt_samples

    table, _, special = alpha
    whole, samples = flows_with_rtt_samples(table, idle_timeout=300.0)
    points = special["handshake"]
    ranges = row_ranges(table, table.num_rows, 0, [points[len(points) // 3],
                                                   points[2 * len(points) // 3]])
    parts = [range_part((r, 300.0, True, 1 << 14, i == len(ranges) - 1, None, True))
             for i, r in enumerate(ranges)]
    got, got_samples = merge_ranges(parts, idle_timeout=300.0, timestamps=True,
                                    want_samples=True)
    assert got.equals(whole)
    assert got_samples.height > 10_000 and got_samples.equals(samples)
    path = shared_path("captures", "slips_test-cc-capture-1.pcap")
    one = flows_with_rtt_samples(path)
    split = range_flows(path, ranges=plan_ranges(path, 3), workers=1, want_samples=True)
    assert split[0].equals(one[0]) and split[1].equals(one[1])


def test_ranges_without_ip_packets():
    """Ranges holding no IP packet (the last one, or all): the one-pass table, empty or not."""
    from traceflow.pcap.reader import read_packets

    packets = pl.from_arrow(read_packets(shared_path("captures", "zeek_http_bro.org.pcap")))
    for last_ip in (-1, 400):
        table = packets.with_columns(ip_version=pl.when(pl.int_range(pl.len()) <= last_ip)
                                     .then("ip_version")).to_arrow()
        whole = flows(table)
        assert whole.height == (0 if last_ip < 0 else 6)
        assert range_flows(table, ranges=plan_ranges(table, 3), workers=1).equals(whole)

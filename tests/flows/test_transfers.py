"""Transfer times (request → last data byte) against the testbed's ground truth: transfers.csv
holds, per transfer, the client port, size and the client application's own clock at connect()
(start) and at reading EOF (end)."""
import numpy as np
import polars as pl
import pytest

from conftest import shared_path
from traceflow.flows.transfers import transfer_times


@pytest.fixture(scope="module", params=["devcubic", "rtt3dev"])
def matched(request):
    """Client-side transfers joined to the ground-truth rows (same client port, nearest start)."""
    from traceflow.pcap.reader import read_packets

    run = request.param
    tr = transfer_times(read_packets(shared_path("testbed", run, "client_side.pcap.gz")))
    gt = pl.read_csv(shared_path("testbed", run, "transfers.csv.gz")).with_columns(
        gt_start=(pl.col("start") * 1e9).cast(pl.Int64), gt_fct=pl.col("end") - pl.col("start"))
    tr = tr.with_columns(syn=pl.col("syn_ts").cast(pl.Int64),
                         client_port=pl.col("client_port").cast(pl.Int64)).sort("syn")
    j = tr.join_asof(gt.sort("gt_start"), left_on="syn", right_on="gt_start", by_left="client_port",
                     by_right="port", strategy="nearest", tolerance=500_000_000,
                     check_sortedness=False)
    return run, tr, gt, j


def test_every_transfer_found_with_its_size(matched):
    run, tr, gt, j = matched
    assert tr.height == gt.height                     # every (complete) transfer, no extra one
    assert j["gt_start"].null_count() == 0
    assert (j["size"] == j["size_right"]).all()       # the response bytes = the file size


def test_times_match_the_application_clock(matched):
    """The client sends its SYN right after connect() and reads EOF right after both the last
    data byte and the server's FIN arrived: measured on the capture, start and end agree with the
    application's clock within scheduling delays (< 2 ms for 90 % of transfers), and the
    measured transfer time (request → last byte) never exceeds the application's."""
    run, _, _, j = matched
    start = (j["syn"] - j["gt_start"]).to_numpy() / 1e9
    assert np.all(start >= 0) and np.quantile(start, 0.99) < 0.002
    end = j.select(d=pl.col("gt_fct") - (pl.max_horizontal("t_fin", "t_last") - pl.col("t_syn")))
    d = end["d"].drop_nulls().to_numpy()
    print(f"\n{run}: app end - capture end: median {np.median(d) * 1e3:.2f} ms, "
          f"90 % {np.quantile(d, 0.9) * 1e3:.2f} ms")
    assert d.size == j.height and np.all(d > -1e-4)
    assert np.mean(d < 0.002) >= 0.9
    assert np.all(j["fct"].to_numpy() <= j["gt_fct"].to_numpy())
    # the request follows the handshake: at least the SYN -> SYN/ACK -> ACK round trip later
    assert np.all(j["t_request"].to_numpy() >= j["t_syn"].to_numpy() + j["rtt"].fill_null(0).to_numpy() - 1e-9)


def test_empty_input():
    from traceflow.pcap.schema import PACKET_SCHEMA
    import pyarrow as pa

    assert transfer_times(pa.Table.from_pylist([], schema=PACKET_SCHEMA)).height == 0

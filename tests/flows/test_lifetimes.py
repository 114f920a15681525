"""Short/long lifetime classification and the paper's Table 3 shares."""
import numpy as np
import polars as pl
import pytest
from conftest import shared_path

from traceflow.errors import InputFormatError
from traceflow.flows.lifetimes import (ccdf, flows_summary, is_long, lifetime_ccdf, lifetime_quantiles,
                                 short_long_shares)


def table():
    # lifetimes 10, 49, 50, 99, 150, 400 packets carrying 1, 2, 3, 4, 10, 80 kB; plus a UDP flow
    return pl.DataFrame({
        "proto": [6, 6, 6, 6, 6, 6, 17],
        "packets": [10, 49, 50, 99, 150, 400, 5],
        "bytes": [1000, 2000, 3000, 4000, 10000, 80000, 999],
        "close": ["FIN"] * 5 + ["RST", "IDLE"],
        "handshake": ["complete"] * 6 + ["none"],
    })


def test_table3_shares():
    t = short_long_shares(table())
    assert t["threshold"].to_list() == [50, 100, 200]
    assert t["short_connections"].to_list() == [2, 4, 5]
    assert t["short_share_connections"].to_list() == pytest.approx([2 / 6, 4 / 6, 5 / 6])
    assert t["short_bytes"].to_list() == [3000, 10000, 20000]
    assert t["short_share_bytes"].to_list() == pytest.approx([0.03, 0.1, 0.2])
    assert short_long_shares(table(), [6], tcp_only=False)["short_connections"].item() == 1
    assert is_long(table(), 50).to_list() == [False, False, True, True, True, True, False]


def test_quantiles_ccdf_summary():
    q = lifetime_quantiles(table())
    assert q["p50"] == pytest.approx(np.median([10, 49, 50, 99, 150, 400])) and q["max"] == 400
    cc = lifetime_ccdf(table())
    assert cc["ccdf"][0] == 1.0 and (np.diff(cc["ccdf"].to_numpy()) < 0).all()
    assert ccdf([]).height == 0
    s = flows_summary(table())
    assert s["flows"] == 7 and s["by_proto"] == {"6": 6, "17": 1}
    assert s["tcp"]["by_close"] == {"FIN": 5, "RST": 1}
    assert s["tcp"]["short_lived"][0]["short_bytes"] == 3000
    with pytest.raises(InputFormatError):
        short_long_shares(pl.DataFrame({"x": [1]}))


def test_table3_on_testbed_matches_ground_truth_sizes():
    """Pareto(1.35) file sizes: most connections are short, but long ones carry a large share of
    bytes; the shares computed from flows agree with those computed from the transfer log."""
    from traceflow.flows import flows
    from traceflow.pcap.reader import read_packets

    run = shared_path("testbed", "alpha1.35")
    f = flows(read_packets(run / "client_side.pcap.gz"))
    t = short_long_shares(f)
    conn, byt = t["short_share_connections"].to_numpy(), t["short_share_bytes"].to_numpy()
    assert (np.diff(conn) >= 0).all() and (np.diff(byt) >= 0).all()
    assert conn[0] > 0.95 and byt[0] < conn[0]          # heavy tail: bytes sit in long flows
    # Flows carry exactly the logged transfers; a flow of 50+ packets (handshake, teardown and
    # ~1000-byte segments with their ACKs) is a transfer of well over 10 kB.
    sizes = pl.read_csv(run / "transfers.csv.gz")["size"].to_numpy()
    by_flow = f["app_bytes_s2c"].to_numpy()
    assert np.sort(by_flow).tolist() == np.sort(sizes).tolist()
    long_flows = f.filter(pl.col("packets") >= 50)
    assert long_flows["app_bytes_s2c"].min() > 10_000

"""RTT spectrum, classes and summaries (synthetic ground truth and the testbed's physics)."""
import json

import numpy as np
import polars as pl
import pytest
from conftest import shared_path

from traceflow.errors import InputFormatError
from traceflow.flows.rtt import (classify, fit_rtt_classes, fixed_rtt_classes, rtt_ccdf, rtt_quantiles,
                           rtt_spectrum, rtt_summary, rtt_values)


def three_classes(n=1000, seed=1):
    rng = np.random.default_rng(seed)
    centers = [0.01, 0.1, 1.0]
    x = np.concatenate([rng.lognormal(np.log(c), 0.15, n) for c in centers])
    return x, np.repeat(np.arange(3), n)


def test_spectrum_bins_log10_of_rtt_over_10us():
    s = rtt_spectrum([1e-5, 1e-4, 1e-3, 0.0, -1.0], bins=3, value_range=(0, 3))
    assert s["count"].to_list() == [1, 1, 1]
    assert s["frequency"].sum() == pytest.approx(1.0)
    assert s["left"].to_list() == [0.0, 1.0, 2.0]
    assert s["rtt_left"].to_list() == pytest.approx([1e-5, 1e-4, 1e-3])
    assert rtt_spectrum([], bins=4)["count"].sum() == 0


def test_fixed_classes_and_classify():
    c = fixed_rtt_classes([0.005, 0.02, 0.05, 0.2, 2.0], ["0.1", 0.01])
    assert c.boundaries == [0.01, 0.1] and c.n_classes == 3
    assert c.counts == [1, 2, 2] and c.medians == pytest.approx([0.005, 0.035, 1.1])
    assert classify([0.01, 0.0999, np.nan, None, 5], [0.01, 0.1]).tolist() == [1, 1, -1, -1, 2]
    with pytest.raises(InputFormatError):
        fixed_rtt_classes([0.1], [0.0, 0.1])


def test_gmm_bic_finds_three_rtt_classes():
    x, truth = three_classes()
    c = fit_rtt_classes(x, max_classes=4, random_state=0)
    assert c.n_components == 3 and c.n_classes == 3
    assert min(c.bic, key=c.bic.get) == 3
    # cuts near the geometric midpoints of the class centres
    assert c.boundaries == pytest.approx([np.sqrt(0.001), np.sqrt(0.1)], rel=0.15)
    assert (c.classify(x) == truth).mean() > 0.995
    assert c.medians == pytest.approx([0.01, 0.1, 1.0], rel=0.05)
    again = fit_rtt_classes(x, max_classes=4, random_state=0)
    assert again.boundaries == c.boundaries           # deterministic


def test_gmm_one_class_for_unimodal_data():
    x = np.random.default_rng(3).lognormal(np.log(0.05), 0.2, 2000)
    c = fit_rtt_classes(x, max_classes=4)
    assert c.n_classes == 1 and c.boundaries == [] and c.counts == [2000]
    with pytest.raises(InputFormatError):
        fit_rtt_classes([0.1])


def test_values_quantiles_ccdf_and_summary():
    f = pl.DataFrame({"rtt_min3": [0.01, None, 0.0, 0.02, 0.03], "proto": [6] * 5})
    assert rtt_values(f).tolist() == [0.01, 0.02, 0.03]
    with pytest.raises(InputFormatError, match="no column"):
        rtt_values(f, "rtt_bogus")
    q = rtt_quantiles([0.01, 0.02, 0.03])
    assert q["n"] == 3 and q["p50"] == pytest.approx(0.02) and rtt_quantiles([]) == {"n": 0}
    cc = rtt_ccdf([0.3, 0.1, 0.2, 0.2])
    assert cc["x"].to_list() == [0.1, 0.2, 0.3] and cc["ccdf"].to_list() == [1.0, 0.75, 0.25]
    x, _ = three_classes(500)
    s = rtt_summary(pl.DataFrame({"rtt_min3": x}), column="rtt_min3", per="connection", bins=10)
    assert s["classes"]["n_classes"] == 3 and len(s["spectrum"]) == 10
    assert json.loads(json.dumps(s, default=float))["quantiles"]["n"] == 1500
    one = {"column": "rtt_min3", "per": "connection"}
    assert rtt_summary(f, classes=[0.015], **one)["classes"]["counts"] == [1, 2]
    assert rtt_summary(f, classes=None, **one)["classes"] is None


def test_testbed_handshake_rtt_is_bounded_by_the_bottleneck_queue():
    """Server-side capture: the SYN/ACK crosses the 6000-byte DropTail queue at 1.5 Mbit/s, so
    SYN -> final ACK is at most one full queue plus one packet in service (~37.5 ms)."""
    from traceflow.flows import flows
    from traceflow.pcap.reader import read_packets

    run = shared_path("testbed", "alpha1.35")
    params = json.loads((run / "params.json").read_text())
    f = flows(read_packets(run / "server_side.pcap.gz"))
    rate = 1.5e6
    bound = (params["buffer"] + params["mtu"]) * 8 / rate
    hs = rtt_values(f, "rtt_handshake")
    assert hs.size > 0.95 * f.height
    assert hs.max() <= bound + 0.002
    assert np.quantile(hs, 0.99) > 0.5 * bound         # the queue does fill up
    # SYN -> SYN/ACK at the server is the server's own turnaround: well under a millisecond
    assert rtt_values(f, "rtt_syn").max() < 0.001

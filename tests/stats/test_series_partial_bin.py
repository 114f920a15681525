"""``series`` re-aggregating a Parquet series keeps the trailing partial bin (issue 46 item 7):
a capture's 10 ms series taken to 1 s gives the very bins of the capture's own 1 s series (was
one bin and its packets short)."""
import json

import polars as pl
from conftest import invoke, shared_path


def test_parquet_series_to_a_coarser_bin_equals_the_capture_series(tmp_path):
    capture = shared_path("testbed", "devcubic", "client_side.pcap.gz")
    fine, direct, coarse = (tmp_path / n for n in ("10ms.parquet", "1s.parquet", "re.parquet"))
    assert invoke("series", capture, "--bin", "10ms", "-o", fine).exit_code == 0
    assert invoke("series", capture, "--bin", "1s", "-o", direct).exit_code == 0
    res = invoke("series", fine, "--bin", "1s", "-o", coarse, "--json")
    assert res.exit_code == 0, res.output
    want, got = pl.read_parquet(direct), pl.read_parquet(coarse)
    assert got.equals(want)
    assert json.loads(res.stdout)["packets"] == want["packets"].sum()

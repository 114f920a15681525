"""``flows --columns`` (issue 46, flow table): only the named columns, in that order, and the
same rows (TCP packets summing to tshark's count of TCP frames); an unknown name is one line
listing the table's columns."""
import polars as pl
from conftest import invoke, shared_path, tshark_fields

from traceflow.errors import TraceflowError


def test_flows_columns_selects_and_orders(tmp_path):
    path = shared_path("captures", "zeek_wikipedia.pcap")
    out = tmp_path / "flows.csv"
    res = invoke("flows", path, "-o", out, "--columns", "server_port,proto,packets,close")
    assert res.exit_code == 0, res.output
    table = pl.read_csv(out)
    assert table.columns == ["server_port", "proto", "packets", "close"]
    tcp_frames = len(tshark_fields(path, "frame.number", display_filter="tcp"))
    assert table.filter(pl.col("proto") == 6)["packets"].sum() == tcp_frames
    bad = invoke("flows", path, "-o", tmp_path / "b.csv", "--columns", "flow_id,nope")
    assert isinstance(bad.exception, TraceflowError)
    assert "no column nope" in str(bad.exception) and "server_port" in str(bad.exception)
    assert not (tmp_path / "b.csv").exists()

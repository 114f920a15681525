"""``traceflow flows`` and ``traceflow rtt`` from the command line."""
import json
import subprocess
import sys

import polars as pl
import click
import pytest
from click.testing import CliRunner
from conftest import shared_path

from traceflow.cli.options import Duration
from traceflow.cli.main import cli


def run(args):
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_duration_option_in_seconds():
    seconds = Duration().convert
    assert seconds("300", None, None) == 300 and seconds("300s", None, None) == 300
    assert seconds("500ms", None, None) == pytest.approx(0.5) and seconds("5m", None, None) == 300
    assert seconds("1.5h", None, None) == 5400
    assert seconds("10us", None, None) == pytest.approx(1e-5)
    with pytest.raises(click.BadParameter):
        seconds("5 parsecs", None, None)


def test_flows_and_rtt_commands(tmp_path):
    cap = shared_path("captures", "sanders_http_espn.pcapng")
    out = tmp_path / "flows.parquet"
    summary = json.loads(run(["flows", str(cap), "-o", str(out), "--idle-timeout", "60s",
                              "--json"]))
    table = pl.read_parquet(out)
    assert summary["flows"] == table.height and summary["output"] == str(out)
    assert summary["tcp"]["connections"] == table.filter(pl.col("proto") == 6).height == 25
    assert sum(summary["tcp"]["by_close"].values()) == 25
    assert [r["threshold"] for r in summary["tcp"]["short_lived"]] == [50, 100, 200]
    text = run(["flows", str(out)])                        # a flows table passes through
    assert text.startswith(f"{table.height} flows (25 TCP)")
    rtt = json.loads(run(["rtt", str(out), "--classes", "5ms,30ms", "--column", "rtt_handshake",
                          "--bins", "8", "--json"]))
    assert rtt["quantiles"]["n"] == table["rtt_handshake"].drop_nulls().len()
    assert rtt["classes"]["boundaries"] == [0.005, 0.03] and sum(rtt["classes"]["counts"]) == 25
    assert sum(row["count"] for row in rtt["spectrum"]) == 25
    text = run(["rtt", str(cap), "--bins", "5"])
    assert "RTT classes (gmm-bic)" in text and "spectrum" in text


@pytest.mark.parametrize("args,needle", [
    (["flows", "missing.pcap"], "missing.pcap"),
    (["rtt", "missing.parquet"], "missing.parquet"),
    (["flows", "--idle-timeout", "5 parsecs", "x.pcap"], "bad duration"),
    (["rtt", "--classes", "fast,slow", "x.parquet"], "--classes"),
])
def test_errors_are_one_line(args, needle):
    proc = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", *args],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in proc.stderr


def test_not_a_table_is_an_input_error(tmp_path):
    junk = tmp_path / "junk.parquet"
    pl.DataFrame({"x": [1]}).write_parquet(junk)
    proc = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "flows", str(junk),
                           "-o", str(tmp_path / "out.parquet")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "neither a packets nor a flows table" in proc.stderr
    assert not (tmp_path / "out.parquet").exists()


def test_rtt_samples_paths_and_vantage(tmp_path):
    """``traceflow rtt --samples -o``: one row per sample, consistent with the flow table's path
    RTT columns; the same input writes the same bytes."""
    from traceflow.flows import load_flows

    cap = shared_path("captures", "sanders_http_espn.pcapng")
    out, again = tmp_path / "rtt.parquet", tmp_path / "again.parquet"
    s = json.loads(run(["rtt", str(cap), "--samples", "-o", str(out), "--json"]))
    run(["rtt", str(cap), "--samples", "-o", str(again), "--json"])
    assert out.read_bytes() == again.read_bytes()
    samples = pl.read_parquet(out)
    assert samples.columns == ["ts", "connection", "half", "rtt", "path_rtt", "frame",
                               "opening_frame"]
    assert set(samples["half"]) == {"client", "server"} and (samples["rtt"] >= 0).all()
    table = load_flows([cap]).filter(pl.col("rtt_samples") > 0)
    per_flow = (samples.drop_nulls("path_rtt").group_by("connection")
                .agg(n=pl.len(), lo=pl.col("path_rtt").min())
                .join(table, left_on="connection", right_on="flow_id"))
    assert per_flow.height == table.height > 10
    assert (per_flow["n"] == per_flow["rtt_samples"]).all()
    assert (per_flow["lo"] >= per_flow["rtt_min"] - 1e-12).all()   # a sum of minima is lower
    assert s["column"] == "rtt_min" and s["per"] == "pair" and s["vantage"] == "receiver"
    paths = pl.DataFrame(s["paths"])
    assert paths["connections"].sum() == s["quantiles"]["n"]
    assert paths["rtt_min"].min() == pytest.approx(table["rtt_min"].min())
    text = run(["rtt", str(cap), "--per", "/16", "--column", "rtt_handshake"])
    assert "paths, minimum RTT:" in text and "rtt_handshake, minimum per path (/16)" in text


def test_rtt_option_errors(tmp_path):
    cap = shared_path("captures", "sanders_http_espn.pcapng")
    flows_table = tmp_path / "flows.parquet"
    run(["flows", str(cap), "-o", str(flows_table)])
    for args, needle in [(["-o", str(tmp_path / "x.parquet")], "--samples and -o go together"),
                         (["--per", "/40"], "prefix lengths"),
                         (["--per", "hosts"], "path unit")]:
        proc = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "rtt", str(cap),
                               *args], capture_output=True, text=True)
        assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    proc = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "rtt",
                           str(flows_table), "--samples", "-o", str(tmp_path / "s.parquet")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and str(flows_table) in proc.stderr
    assert not (tmp_path / "s.parquet").exists()

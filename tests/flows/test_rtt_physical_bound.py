"""Timestamp RTT samples are round trips (issue 46 item 1): on every real-Linux testbed run, no
connection's path RTT median or 90th percentile, and no single sample, exceeds what the path can
physically give: the configured propagation RTT (0, or the largest ``--rtt`` class) plus the
time to drain a full bottleneck buffer at the shaped rate plus 250 ms (delayed ACKs, host
reaction). Before the Karn rule for timestamps, a client's pure ACK echoed by the server's
retransmission 30 s later was a 30 s sample (devcubic client side: 440 samples over 0.5 s)."""
import json

import polars as pl
import pytest
from conftest import DATASETS, shared_path

from traceflow.flows import flows_with_rtt_samples
from traceflow.values import parse_rate

SLACK = 0.25  # seconds: delayed ACK (Linux at most 200 ms) and host reaction
RUNS = sorted(p.name for p in (DATASETS / "testbed").glob("*") if (p / "params.json").exists())


def physical_bound(params):
    """Seconds: configured RTT + buffer drain + :data:`SLACK` of a testbed run's params.json."""
    buffer = params["buffer"]
    if params.get("buffer_unit") == "packets":
        buffer *= params.get("mtu", 1500)
    return max(params.get("rtt") or [0]) / 1e3 + buffer * 8 / parse_rate(params["rate"]) + SLACK


@pytest.mark.parametrize("side", ["client_side", "server_side"])
@pytest.mark.parametrize("run", RUNS or ["alpha1.35"])
def test_every_connection_rtt_within_the_physical_bound(run, side):
    run_dir = shared_path("testbed", run)
    bound = physical_bound(json.loads((run_dir / "params.json").read_text()))
    table, samples = flows_with_rtt_samples(str(run_dir / f"{side}.pcap.gz"))
    tcp = table.filter(pl.col("proto") == 6)
    timed = tcp.filter(pl.col("rtt_p90").is_not_null())
    # the rules keep most connections timed: only those whose every echo was ambiguous lose it
    assert timed.height >= 0.95 * tcp.filter(pl.col("rtt_handshake").is_not_null()).height
    over = timed.filter((pl.col("rtt_p90") > bound) | (pl.col("rtt_median") > bound))
    assert over.height == 0, (bound, over.select("flow_id", "rtt_median", "rtt_p90").head())
    assert samples["rtt"].max() <= bound
    assert samples["path_rtt"].max() <= bound


def test_rtt_samples_cli_has_no_sample_beyond_the_bound(tmp_path):
    """``traceflow rtt --samples`` on the capture where a 30.7 s sample was reported."""
    from click.testing import CliRunner

    from traceflow.cli.main import cli

    run_dir = shared_path("testbed", "devcubic")
    bound = physical_bound(json.loads((run_dir / "params.json").read_text()))
    out = tmp_path / "samples.parquet"
    result = CliRunner().invoke(cli, ["rtt", str(run_dir / "client_side.pcap.gz"), "--samples",
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    samples = pl.read_parquet(out)
    assert samples.height > 30_000          # the handshakes and most data segments stay timed
    assert samples["rtt"].max() <= bound and samples["path_rtt"].max() <= bound

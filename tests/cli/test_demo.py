"""``traceflow demo`` end to end on the bundled sample."""
import json

from click.testing import CliRunner


def test_demo_end_to_end(tmp_path):
    from traceflow.cli.main import cli

    out = tmp_path / "demo"
    r = CliRunner().invoke(cli, ["demo", "-o", str(out)])
    assert r.exit_code == 0, r.output
    for name in ("packets.parquet", "flows.parquet", "model.json", "comparison.json",
                 "run/summary.json", "run/g1-g2.pcap", "report/index.html"):
        assert (out / name).exists(), name
    cmp = json.loads((out / "comparison.json").read_text())
    u = cmp["metrics"]["utilization"]
    assert abs(u["predicted"] - u["measured"]) / u["measured"] < 0.05
    assert r.output.strip().splitlines()[-1] == f"report: {out / 'report' / 'index.html'}"
    # the headline is a result, never "... failed": each metric outside its tolerance is named
    # with what was measured and what the replay predicted
    head = r.stdout.strip().splitlines()[-2]
    judged = [k for k, m in cmp["metrics"].items() if m["pass"] is not None]
    assert f"{len(judged) - len(cmp['failed'])} of {len(judged)} metrics within tolerance" in head
    assert not head.rstrip().endswith("failed") and "failed:" not in head
    for name in cmp["failed"]:
        assert f"{name}, " in head
        phrase = head.split(f"{name}, ")[1].split(";")[0]
        if "critical_5pct" in cmp["metrics"][name]:     # a distribution: its KS distance
            assert "KS distance" in phrase
        elif not isinstance(cmp["metrics"][name]["measured"], list):
            assert " measured vs " in phrase
    # the product working on a real Linux capture: the model found the sample's network and
    # hosts (datasets/samples/testbed_cubic_rtt3.json: 1.5 Mbit/s HTB, 12000-byte bfifo, CUBIC,
    # IW 10) and the replay of the model meets every judged criterion
    model = json.loads((out / "model.json").read_text())
    assert abs(model["network"]["buffer_bytes"] - 12000) < 1200
    assert abs(model["network"]["rate_bps"] - 1.5e6 * 1040 / 1054) < 0.005 * 1.48e6
    assert model["hosts"]["initial_window"] == 10
    assert model["hosts"]["congestion_control"] == "cubic"
    assert cmp["pass"] and cmp["failed"] == []
    html = (out / "report" / "index.html").read_text()
    assert "Predicted vs measured" in html

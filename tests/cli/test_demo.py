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
    html = (out / "report" / "index.html").read_text()
    assert "Predicted vs measured" in html

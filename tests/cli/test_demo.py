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
        if not isinstance(cmp["metrics"][name]["measured"], list):
            assert " measured vs " in head.split(f"{name}, ")[1].split(";")[0]
    html = (out / "report" / "index.html").read_text()
    assert "Predicted vs measured" in html

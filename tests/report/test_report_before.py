"""``report --before`` (issue 46 item 7): the comparison's measured loss is exact, as with
``compare --before``, and matches the testbed queue's own drop counter (params.json); without it
the page says the loss is an estimate. Each warning is printed once."""
import json
import re

from conftest import invoke, shared_path


def _qdisc_drop_ratio(run):
    stats = json.loads((run / "params.json").read_text())["qdisc_stats"]
    sent, dropped = map(int, re.search(r"Sent \d+ bytes (\d+) pkt \(dropped (\d+)", stats).groups())
    return dropped / (sent + dropped)


def test_report_before_gives_the_queue_drop_ratio(tmp_path):
    run, other = shared_path("testbed", "devcubic"), shared_path("testbed", "devcubic24k")
    args = ["report", "--measured", run / "client_side.pcap.gz", "--predicted",
            other / "client_side.pcap.gz"]
    res = invoke(*args, "--before", run / "server_side.pcap.gz", "-o", tmp_path / "a", "--json")
    assert res.exit_code == 0, res.output
    loss = json.loads(res.stdout)["comparison"]["metrics"]["loss_rate"]
    assert loss["source"]["measured"] == "before/after"
    assert abs(loss["measured"] - _qdisc_drop_ratio(run)) < 0.001      # 0.15278 vs 0.15274
    page = (tmp_path / "a" / "index.html").read_text()
    assert "Measured loss: data packets seen before the queue and missing after it" in page
    plain = invoke(*args, "-o", tmp_path / "b")
    assert plain.exit_code == 0, plain.output
    assert "an estimate from retransmissions" in (tmp_path / "b" / "index.html").read_text()
    warnings = [line for line in plain.stderr.splitlines() if "warning" in line]
    assert len(warnings) == len(set(warnings))
    bad = invoke("report", run / "client_side.pcap.gz", "--before", run / "server_side.pcap.gz",
                 "-o", tmp_path / "c")
    assert "--before goes with --measured" in str(bad.exception)     # exit 2 from main()


def test_report_prints_each_warning_once(tmp_path):
    res = invoke("report", shared_path("testbed", "devcubic", "client_side.pcap.gz"),
                 "-o", tmp_path / "r")
    assert res.exit_code == 0, res.output
    warnings = [line for line in res.stderr.splitlines() if "warning" in line]
    assert any("RTT columns disagree" in w for w in warnings)   # printed twice before
    assert len(warnings) == len(set(warnings))

"""What-if (issue 43, item 4): a model fitted on one real-kernel run, replayed with one thing
changed, against the run made with that change (the shared what-if pairs: same set-up and seed).
The criteria of the defaults path (util 10 %, loss 25 %, per-bin median FCT 25 %, RTT KS, H 0.05);
"naive" is the guess that nothing changes (the first run's own capture against the second's)."""
import subprocess
import sys

import pytest

from conftest import shared_path
from traceflow import compare as C
from traceflow.experiments.testbed_replay import DEFAULTS_CRITERIA, criteria_rows, format_rows


def _cli(*args):
    # -P: the installed traceflow, not the checkout's (whose cli/ is not traceflow.cli)
    r = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", *map(str, args)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def _whatif(base, target, change, out):
    """``{mode: criteria rows}`` for trace, model and naive."""
    base, target = shared_path("testbed", base), shared_path("testbed", target)
    capture = base / "client_side.pcap.gz"
    _cli("fit", capture, "-o", out / "m.json")
    _cli("replay", out / "m.json", "-o", out / "model", "--set", change)
    _cli("replay", capture, "--model", out / "m.json", "-o", out / "trace", "--set", change)
    measured = C.load_side(target / "client_side.pcap.gz",
                           before=target / "server_side.pcap.gz")
    rows = {}
    for mode in ("trace", "model", "naive"):
        predicted = (C.load_side(capture, before=base / "server_side.pcap.gz") if mode == "naive"
                     else C.load_side(out / mode))
        measured.capacity_bps = predicted.capacity_bps = C.load_side(out / "trace").capacity_bps
        rows[mode] = criteria_rows(C.compare(measured, predicted), "trace", DEFAULTS_CRITERIA)
        print(f"\n{mode}\n{format_rows(rows[mode])}")
    return rows


def _failed(rows):
    return {r["criterion"].split(" median")[0] for r in rows if r["pass"] is False}


def _error(rows, name):
    return next(r["error"] for r in rows if r["criterion"] == name)


def test_cubic_to_bbr(tmp_path):
    """rtt3dev (CUBIC) fitted, replayed with tcp.cc = "bbr", against devbbr: the naive guess
    misses the loss by 40 %; trace mode meets every criterion, model mode all but the 64 kB-1 MB
    bin's median (34 transfers measured, 25 predicted: 1.40 s against 1.09 s)."""
    rows = _whatif("rtt3dev", "devbbr", 'tcp.cc="bbr"', tmp_path)
    assert _failed(rows["trace"]) == set()
    assert _failed(rows["model"]) <= {"fct 64k-1M"}
    assert "loss_rate" in _failed(rows["naive"])
    for mode in ("trace", "model"):
        assert _error(rows[mode], "loss_rate") < _error(rows["naive"], "loss_rate") / 2


def test_buffer_four_times(tmp_path):
    """devcubic (6000-byte bfifo) fitted, replayed with a 24000-byte buffer, against devcubic24k.
    The loss is the buffer's effect: the naive guess is 5x too high (15.3 % against 2.95 %), the
    replays within 50 % (trace 4.3 %, model 3.8 %). What they cannot know is that the second run
    carried 8 % less load with the same seed (utilization 0.651 against 0.708: its heavy-tailed
    transfers fell otherwise), which moves its handshake RTTs (idle link at more SYN/ACKs) and
    its small transfers' times; those criteria are not asserted."""
    rows = _whatif("devcubic", "devcubic24k", "topology.bottleneck.queue.limit_bytes=24000",
                   tmp_path)
    naive = _error(rows["naive"], "loss_rate")
    assert naive > 3
    for mode in ("trace", "model"):
        assert _error(rows[mode], "loss_rate") < 0.5
    assert "utilization" not in _failed(rows["trace"])

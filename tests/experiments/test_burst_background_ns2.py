"""Feng & Tinnakornsrisuphap 2000, Figs. 5-6 (replays/burst_bg20.toml, 50-packet gateway) against
ns-2 (tests/sim/ns2/feng_star.tcl background=20): clients added to 20 Reno background clients, the
added clients' loss and throughput behind the FIFO and the RED (10/40) gateway, seed 1, 200 s.

Measured, added loss % for 20/30/40/60 added clients (ns-2 / ours): RED Reno 1.07/1.06,
1.68/1.68, 2.26/2.24, 3.38/3.42; RED Vegas 0.90/0.86, 2.05/1.98, 2.62/2.57, 3.54/3.59; FIFO Reno
0.97/0.89, 1.55/1.48, 2.13/1.98, 3.21/3.08; FIFO Vegas 0.59/0.63, 1.49/1.40, 1.98/1.94, 2.39/2.32.
60 Vegas clients behind the FIFO carry more in ours: 43.1 vs 39.4 Mb/s (strict xfail); over seeds
1-5 they send 10 % more packets than ns-2's and the Reno background 35 % fewer, 30 and 40 Vegas
clients 4-6 % more; the packet-level cause is not found. Under RED the paper's "Vegas variants
produce lower packet loss" (feng...txt:135) fails in both simulators: mean over the added counts,
seeds 1-5, Vegas 1.49 vs Reno 1.40 % in ns-2, 1.53 vs 1.41 % in ours (claim 7). Until the oracle
sent 1500-byte Vegas packets (tcp-vegas.cc's output() adds no header, so packetSize_ 1460 put
1460 bytes on the wire beside Reno's 1500) ns-2 had Vegas at 1.38 %.
"""
import copy
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from traceflow.experiments import burstiness

TCL = Path(__file__).resolve().parents[1] / "sim" / "ns2" / "feng_star.tcl"
REPLAY = Path(__file__).resolve().parents[2] / "replays" / "burst_bg20.toml"
ADDED = (10, 20, 40, 60)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("ns") is None,
                                 reason="needs ns-2 ('ns' on PATH: apt-get install ns2)")]


def ns2(proto, added, gateway):
    queue = {"fifo": "DropTail", "red": "RED"}[gateway]
    cmd = ["ns", str(TCL), f"clients={20 + added}", "background=20", "duration=200", "seed=1",
           f"transport={proto}", f"queue={queue}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=900).stdout
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def ours(proto, added, gateway):
    spec = tomllib.loads(REPLAY.read_text())
    exp = spec["experiment"]
    task = burstiness._task(spec, {}, [("Reno", 20), (proto, added)],
                            copy.deepcopy(exp["gateways"][gateway]), duration=200.0, seed=1)
    return burstiness.simulate(task)["groups"][1]


def _params():
    for gateway in ("fifo", "red"):
        for proto in ("Reno", "Vegas"):
            for added in ADDED:
                marks = []
                if (proto, gateway, added) == ("Vegas", "fifo", 60):
                    marks = [pytest.mark.xfail(strict=True, reason=(
                        "ours 2.32 % loss, 43.1 Mb/s; ns-2 2.39 %, 39.4 Mb/s"))]
                yield pytest.param(proto, gateway, added, marks=marks,
                                   id=f"{proto}-{gateway}-{added}")


@pytest.mark.parametrize("proto, gateway, added", list(_params()))
def test_added_clients_match_ns2(proto, gateway, added):
    ref, got = ns2(proto, added, gateway), ours(proto, added, gateway)
    assert abs(got["loss_pct"] - ref["added_loss_pct"]) <= 0.2 * ref["added_loss_pct"] + 0.4, \
        (got, ref)
    assert got["throughput_mbps"] == pytest.approx(ref["added_throughput_mbps"], rel=0.06), \
        (got, ref)

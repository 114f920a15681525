"""Feng & Tinnakornsrisuphap 2000, Figs. 5-6 (replays/burst_bg20.toml, 50-packet gateway) against
ns-2 (tests/sim/ns2/feng_star.tcl background=20): clients added to 20 Reno background clients, the
added clients' loss and throughput behind the FIFO and the RED (10/40) gateway, seed 1, 200 s.

Measured, added loss % for 20/30/40/60 added clients (ns-2 / ours): RED Reno 1.10/1.75/2.44/3.70
vs 1.07/1.75/2.40/3.75, RED Vegas 0.52/1.84/2.49/3.43 vs 0.85/2.00/2.65/3.63; FIFO Reno 0.96/1.61/
2.20 vs 0.87/1.49/2.11, FIFO Vegas 0.10/1.37/1.82/2.28 vs 0.24/1.31/1.69/1.26 (no loss with 5 or
10 added clients in either). 60 Vegas clients behind the FIFO differ: ours lose 1.26 % and carry
43.9 Mb/s, ns-2's 2.28 % and 40.5 Mb/s (strict xfail; not explained). Under RED the paper's
"Vegas variants produce lower packet loss" (feng...txt:135) rests on a 0.1-point difference of
the means over the added counts: ns-2 1.38 vs 1.50 %, ours 1.52 vs 1.50 % (claim 7).
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
                        "ours 1.26 % loss, 43.9 Mb/s; ns-2 2.28 %, 40.5 Mb/s"))]
                yield pytest.param(proto, gateway, added, marks=marks,
                                   id=f"{proto}-{gateway}-{added}")


@pytest.mark.parametrize("proto, gateway, added", list(_params()))
def test_added_clients_match_ns2(proto, gateway, added):
    ref, got = ns2(proto, added, gateway), ours(proto, added, gateway)
    assert abs(got["loss_pct"] - ref["added_loss_pct"]) <= 0.2 * ref["added_loss_pct"] + 0.4, \
        (got, ref)
    assert got["throughput_mbps"] == pytest.approx(ref["added_throughput_mbps"], rel=0.06), \
        (got, ref)

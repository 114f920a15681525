"""Feng & Tinnakornsrisuphap 2000, Figs. 5-6 (replays/burst_bg20.toml, 50-packet gateway) against
ns-2 (tests/sim/ns2/feng_star.tcl background=20): clients added to 20 Reno background clients, the
added clients' loss and throughput behind the FIFO and the RED (10/40) gateway, seed 1, 200 s.

Measured, added loss % for 20/30/40/60 added clients (ns-2 / ours): RED Reno 1.07/1.06,
1.68/1.68, 2.26/2.24, 3.38/3.42; RED Vegas 0.90/0.86, 2.05/2.05, 2.62/2.66, 3.54/3.69; FIFO Reno
0.97/0.89, 1.55/1.48, 2.13/1.98, 3.21/3.08; FIFO Vegas 0.59/0.63, 1.49/1.38, 1.98/1.92, 2.39/2.41.
60 Vegas clients behind the FIFO carry more in ours: 43.0 vs 39.4 Mb/s (strict xfail); over seeds
1-5 (one traffic group per client) ours 43.0-43.2, ns-2 38.7-39.7 Mb/s, and ns-2's Reno
background sends 45-58 % more packets.
That is how the two simulators break exact ties, not TCP. Every client has the same links, so
ACK-clocked packets of different clients reach the gateway at exactly the same instant (times sit
on a lattice of transmission times), and packets reach the full buffer exactly as the transmitter
frees. Ours orders equal times by when the events were scheduled (ns-2's own rule for equal
times); ns-2's double-precision clock orders many of them by rounding. With client i's link i ns
longer in both (nothing physical; ties then go by time, alike) the rows agree
(test_added_clients_behind_fifo_match_ns2_with_ties_broken_alike, ns-2 / ours: 40 Vegas 2.61 /
2.75 %, 27.6 / 28.0 Mb/s; 60 Vegas 4.20 / 4.25 %, 30.7 / 30.8 Mb/s; 60 Reno 4.56 / 4.55 %,
28.2 / 27.9 Mb/s; 60 Vegas over seeds 1-5, one traffic group per client: ns-2 29.7-30.7, ours
30.1-30.3 Mb/s, background packets within 2 %), and packet for packet Feng's set-up agrees for
387681 departures, 93.8 s (tests/sim/test_vegas_star_ns2.py). The Vegas share moves from 30 to
43 Mb/s with the tie rule alone (1.3 us per client: ns-2 43.2, ours 44.1): in this set-up the
FIFO Vegas share (the paper's Fig. 5 too) depends on how the simulator breaks ties.
Under RED the paper's "Vegas variants produce lower packet loss" (feng...txt:135) fails in both
simulators: mean over the added counts, seeds 1-5, Vegas 1.49 vs Reno 1.40 % in ns-2, 1.54 vs
1.41 % in ours (claim 7). Until the oracle sent 1500-byte Vegas packets (tcp-vegas.cc's output()
adds no header, so packetSize_ 1460 put 1460 bytes on the wire beside Reno's 1500) ns-2 had Vegas
at 1.38 %.
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
TIE_STEP = 1e-9          # s: client i's link i ns longer in both simulators

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("ns") is None,
                                 reason="needs ns-2 ('ns' on PATH: apt-get install ns2)")]


def ns2(proto, added, gateway, step=0.0):
    queue = {"fifo": "DropTail", "red": "RED"}[gateway]
    cmd = ["ns", str(TCL), f"clients={20 + added}", "background=20", "duration=200", "seed=1",
           f"transport={proto}", f"queue={queue}", f"step={step}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=900).stdout
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def ours(proto, added, gateway, step=0.0):
    spec = tomllib.loads(REPLAY.read_text())
    exp = spec["experiment"]
    task = burstiness._task(spec, {}, [("Reno", 20), (proto, added)],
                            copy.deepcopy(exp["gateways"][gateway]), duration=200.0, seed=1)
    if step:
        delay = spec["topology"]["access"]["delay"]
        task["scenario"]["topology"]["links"] = {f"c{i}-gw": {"delay": delay + i * step}
                                                 for i in range(20 + added)}
    return burstiness.simulate(task)["groups"][1]


def _params():
    for gateway in ("fifo", "red"):
        for proto in ("Reno", "Vegas"):
            for added in ADDED:
                marks = []
                if (proto, gateway, added) == ("Vegas", "fifo", 60):
                    marks = [pytest.mark.xfail(strict=True, reason=(
                        "exact ties ordered differently (see the docstring): ours 2.41 % loss, "
                        "43.0 Mb/s; ns-2 2.39 %, 39.4 Mb/s"))]
                yield pytest.param(proto, gateway, added, marks=marks,
                                   id=f"{proto}-{gateway}-{added}")


def _check(got, ref):
    assert abs(got["loss_pct"] - ref["added_loss_pct"]) <= 0.2 * ref["added_loss_pct"] + 0.4, \
        (got, ref)
    assert got["throughput_mbps"] == pytest.approx(ref["added_throughput_mbps"], rel=0.06), \
        (got, ref)


@pytest.mark.parametrize("proto, gateway, added", list(_params()))
def test_added_clients_match_ns2(proto, gateway, added):
    _check(ours(proto, added, gateway), ns2(proto, added, gateway))


@pytest.mark.parametrize("proto, added", [("Vegas", 40), ("Vegas", 60), ("Reno", 60)])
def test_added_clients_behind_fifo_match_ns2_with_ties_broken_alike(proto, added):
    _check(ours(proto, added, "fifo", TIE_STEP), ns2(proto, added, "fifo", TIE_STEP))

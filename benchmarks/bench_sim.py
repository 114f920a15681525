"""Simulator benchmarks.

1. Bottleneck packets forwarded per wall-clock second on the dumbbell of ``replays/dumbbell.toml``
   (10 NewReno flows, 10 Mb/s / 20 ms bottleneck, 100-packet DropTail, 100 Mb/s / 5 ms access,
   300 s here so start-up is amortized). ``reference`` is ns-2 running the mirrored Tcl script
   ``tests/sim/ns2/dumbbell.tcl`` in the same process slot, timed the same way (best of 3, whole
   process); the row says so when ns-2 is absent. Target: traceflow >= 3x ns-2.
2. The linux profile (SACK, RACK-TLP, PRR, Linux Reno, Linux delayed ACKs, option headers) on
   ``replays/dumbbell_reno.toml`` against that file's classic ns-2 Reno: wall time per
   bottleneck packet, both measured here (best of 3). Target: the linux profile costs at most
   1.5x the classic Reno.
3. Wall time of the self-similarity paper's baseline (``replays/selfsim_baseline.toml``: 32
   clients, Pareto 1.05, 1.5 Mb/s, 6 kB buffer, 10,000 simulated s, including the sample-path
   normalization reruns); target < 60 s on one core.
4. Start-up: a whole process that imports the simulator and loads the bundled ``dumbbell``
   scenario, ready to run (best of 5), beside the bare interpreter; target < 0.2 s. The whole
   ``traceflow simulate`` of 10 simulated ms (which then imports pyarrow to write the run
   directory) is shown in the note.
"""
import copy
import math
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from timing import best_of, timed

REPO = Path(__file__).resolve().parents[1]
REPLAYS = REPO / "replays"
sys.path.insert(0, str(REPO / "tests" / "sim" / "ns2"))
from ns2 import available as ns2_available, run_ns2  # noqa: E402


def _ns2_rate(duration):
    """Bottleneck packets forwarded per wall-second by ns-2 (best of 3), or NaN without ns."""
    if not ns2_available():
        return float("nan")
    runs = [run_ns2(duration=duration) for _ in range(3)]
    return max(r["departures"] / r["wall_s"] for r in runs)


STARTUP = ("import traceflow.sim as sim, traceflow.sim.runner; "
           "from traceflow.replays import resolve_scenario; "
           "sim.load_scenario(resolve_scenario('dumbbell'), ['simulation.duration=0.01'])")


def _process_wall(args, runs=5):
    """Best wall time (s) of ``runs`` whole processes."""
    return best_of(lambda: subprocess.run(args, check=True, stdout=subprocess.DEVNULL), runs)[0]


def startup_row():
    python = [sys.executable, "-P"]
    ready = _process_wall([*python, "-c", STARTUP])
    bare = _process_wall([*python, "-c", "pass"])
    with tempfile.TemporaryDirectory() as tmp:
        whole = _process_wall([*python, "-m", "traceflow.cli.main", "simulate", "dumbbell",
                               "--set", "simulation.duration=0.01", "-o", f"{tmp}/run"])
    return {"benchmark": "sim start-up: import + load the dumbbell scenario (whole process)",
            "ours": ready, "reference": bare, "unit": "s", "ratio": ready / bare,
            "target": "< 0.2 s", "ok": ready < 0.2,
            "note": f"reference: bare interpreter; whole `traceflow simulate` of 10 ms: {whole:.3f} s"}


def run(quick=False):
    import traceflow.sim as sim

    rows = []
    duration = 30.0 if quick else 300.0
    sc = sim.load_scenario(REPLAYS / "dumbbell.toml", [f"simulation.duration={duration}"])
    sim.run(sc)                        # warm-up: imports, page cache
    wall, res = best_of(lambda: sim.run(sc))   # assemble + run + summary tables, end to end
    ours = res.summary["packets_forwarded"] / wall
    ref = _ns2_rate(duration)
    ratio = ours / ref if ref and not math.isnan(ref) else float("nan")
    rows.append({"benchmark": "sim dumbbell 10xNewReno: bottleneck pkts per wall-s",
                 "ours": ours, "reference": ref, "unit": "pkt/s", "ratio": ratio,
                 "target": ">= 3x ns-2" if ns2_available() else ">= 3x ns-2 (ns absent)",
                 "ok": bool(ratio >= 3)})

    classic = tomllib.loads((REPLAYS / "dumbbell_reno.toml").read_text())
    classic["simulation"]["duration"] = duration
    linux = copy.deepcopy(classic)
    linux["tcp"] = {"profile": "linux", "cc": "reno", "rwnd": classic["tcp"]["rwnd"]}
    rate = {}
    for name, raw in (("classic", classic), ("linux", linux)):
        sc = sim.load_scenario(raw)
        sim.run(sc)
        best, res = best_of(lambda: sim.run(sc))
        rate[name] = res.summary["packets_forwarded"] / best
    cost = rate["classic"] / rate["linux"]
    rows.append({"benchmark": "sim dumbbell 10xReno: linux profile vs classic, bottleneck pkts per wall-s",
                 "ours": rate["linux"], "reference": rate["classic"], "unit": "pkt/s",
                 "ratio": cost, "target": "cost <= 1.5x classic", "ok": bool(cost <= 1.5),
                 "note": "ratio = classic rate / linux rate (relative cost per packet)"})

    horizon = 1000.0 if quick else 10000.0
    sc = sim.load_scenario(REPLAYS / "selfsim_baseline.toml", [f"simulation.duration={horizon}"])
    res, wall = timed(sim.run, sc)
    limit = 60.0 * horizon / 10000.0
    rows.append({"benchmark": f"sim self-similarity baseline ({horizon:.0f} simulated s) wall time",
                 "ours": wall, "reference": limit, "unit": "s", "ratio": wall / limit,
                 "target": f"< {limit:.0f} s", "ok": wall < limit})
    rows.append(startup_row())
    return rows


if __name__ == "__main__":
    import sys

    for row in run(quick="--quick" in sys.argv):
        print(row)

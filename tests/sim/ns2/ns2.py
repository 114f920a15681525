"""Run the ns-2 dumbbell oracle (``dumbbell.tcl``) and parse its measurements."""
import shutil
import subprocess
import time
from pathlib import Path

TCL = Path(__file__).with_name("dumbbell.tcl")


def available():
    return shutil.which("ns") is not None


def run_ns2(**params):
    """Run ``ns dumbbell.tcl key=value...``; return the measurements plus ``wall_s``."""
    args = ["ns", str(TCL), *(f"{k}={v}" for k, v in params.items())]
    t0 = time.perf_counter()
    out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=600).stdout
    wall = time.perf_counter() - t0
    result = {k: float(v) for k, v in (line.split() for line in out.splitlines() if line.strip())}
    result["wall_s"] = wall
    return result

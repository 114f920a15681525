"""Run an ns-2 oracle script (default ``dumbbell.tcl``) and parse its measurements."""
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np

TCL = Path(__file__).with_name("dumbbell.tcl")


def available():
    return shutil.which("ns") is not None


def run_ns2(script=TCL, **params):
    """Run ``ns SCRIPT key=value...`` (a script beside this file, by name or path); return the
    measurements plus ``wall_s``."""
    args = ["ns", str(Path(__file__).with_name(str(script)) if not Path(script).is_absolute()
                      else script), *(f"{k}={v}" for k, v in params.items())]
    t0 = time.perf_counter()
    out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=600).stdout
    wall = time.perf_counter() - t0
    result = {k: float(v) for k, v in (line.split() for line in out.splitlines() if line.strip())}
    result["wall_s"] = wall
    return result


def write_sizes(directory, per_client, rng, extra=200):
    """Write ``directory/client<i>.txt``: the file sizes (bytes, one per line) client ``i`` of our
    run requested, in order, then ``extra`` more drawn by ``rng`` from all of them (ns-2's clients
    may ask for a few more files than ours did). The scripts' ``sizes_dir`` reads them."""
    drawn = np.concatenate([np.asarray(s) for s in per_client if len(s)])
    for i, sizes in enumerate(per_client):
        (Path(directory) / f"client{i}.txt").write_text(
            "\n".join(str(int(v)) for v in [*sizes, *rng.choice(drawn, extra)]))

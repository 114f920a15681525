"""What the TCP-MT experiments measure in a run (a :func:`.runs.simulate` record): reliable
throughput, the per-run columns every results table carries, TCP-MT's mean slope."""
from __future__ import annotations

import numpy as np


def reliable(run, i=0):
    """Reliable throughput (bit/s) of measured connection ``i`` of a :func:`simulate` result."""
    return float(run["measured"][i]["throughput_bps"])


def per_run(run):
    """Per-run columns every results table carries: utilization and the background's load."""
    s = run["summary"]
    return {"link_utilization": s["link_utilization"], "background_bps": s["background_bps"],
            "loss_rate": s["loss_rate"], "timeouts": int(run["measured"][0]["timeouts"])
            if run["measured"] else 0}


def mean_xi(run):
    """Time average of the slope TCP-MT applied (xi per T_L block)."""
    tr = run["measured"][0]["trace"]
    return float(np.mean(tr["xi"])) if tr is not None and tr["xi"].size else float("nan")

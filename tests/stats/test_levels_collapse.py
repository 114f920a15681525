"""A quantile level table whose levels collapse on ties is flagged (issue 46 item 5): on a web
session most 10 ms blocks are empty (counted here from tshark's frame times), so the quantile
edges below that fraction coincide and those levels hold no block."""
import json
import math

import numpy as np
from conftest import invoke, shared_path, tshark_fields

CAPTURE = ("captures", "zeek_wikipedia.pcap")


def test_levels_collapsed_by_empty_blocks_are_flagged():
    path = shared_path(*CAPTURE)
    times = np.array([float(r[0]) for r in tshark_fields(path, "frame.time_epoch")])
    res = invoke("levels", path, "--scale", "10ms", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    busy = np.unique(np.floor((times - math.floor(times[0] / 0.01) * 0.01) / 0.01)).size
    empty_share = 1 - busy / out["blocks"]
    assert empty_share > 0.5
    # the empty blocks all take level 1, so the levels up to that quantile stay empty
    empty_levels = sum(1 for m in out["marginal"] if m == 0)
    assert empty_levels >= math.floor(empty_share * out["h"]) - 1
    flags = [f for f in out["quality"]["flags"] if f["code"] == "collapsed"]
    assert len(flags) == 1 and flags[0]["message"].startswith(f"{empty_levels} of the 8")
    # one-second blocks are all busy: nothing collapses
    coarse = json.loads(invoke("levels", path, "--scale", "1s", "--levels", "4", "--json").stdout)
    if min(coarse["marginal"]) > 0:
        assert all(f["code"] != "collapsed" for f in coarse["quality"]["flags"])

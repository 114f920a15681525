"""Static routes (sim/topology.routes) against scipy's shortest paths, and the simulator's start-up
imports (issue 17: `traceflow simulate` should start without scipy's graph routines or pyarrow)."""
import itertools
import random
import subprocess
import sys

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from traceflow.sim.topology import Network, routes


def _hops(net, nxt, s, d):
    """Hop count from node s to d following next_hop, or None when unreachable."""
    idx = net.index()
    hops = 0
    while s != d:
        link = nxt[s, d]
        if link < 0:
            return None
        a, b, _ = net.links[link // 2]
        s = idx[b] if link % 2 == 0 else idx[a]
        hops += 1
    return hops


def test_routes_are_minimum_hop_paths_on_random_graphs():
    """Every route's hop count equals scipy's unweighted shortest-path distance (cyclic graphs,
    disconnected parts included); unreachable pairs get -1."""
    rng = random.Random(7)
    for _ in range(150):
        n = rng.randint(2, 9)
        nodes = [f"n{i}" for i in range(n)]
        pairs = list(itertools.combinations(nodes, 2))
        links = [(a, b, None) for a, b in rng.sample(pairs, rng.randint(1, len(pairs)))]
        net = Network(nodes, links, "")
        idx = net.index()
        rows = [idx[a] for a, b, _ in links] + [idx[b] for a, b, _ in links]
        cols = [idx[b] for a, b, _ in links] + [idx[a] for a, b, _ in links]
        dist = shortest_path(csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n)),
                             unweighted=True)
        nxt = routes(net)
        for s, d in itertools.permutations(range(n), 2):
            want = None if np.isinf(dist[s, d]) else int(dist[s, d])
            assert _hops(net, nxt, s, d) == want, (links, s, d)


def test_simulator_import_leaves_out_scipy_and_pyarrow():
    code = ("import sys, traceflow.sim, traceflow.sim.runner; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('scipy', 'pyarrow', 'polars')))")
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout

"""Topology builders: scenario ``[topology]`` → node names and duplex links, plus static routes.

- ``dumbbell``: hosts ``l0..l{left-1}`` on router ``g1``, hosts ``r0..r{right-1}`` on ``g2``;
  bottleneck ``g1-g2``; every host has its own access link ``lI-g1`` / ``rJ-g2``.
- ``star`` (M clients → one gateway → one server): ``c0..c{M-1}`` on ``gw``; bottleneck ``gw-srv``.
- ``chain`` (perturbation set-up): ``h0..h{n-1}`` on ``R1``; bottleneck ``R1-R2``; egress ``R2-dst``.
- ``custom``: ``nodes`` and ``[[topology.link]]`` with ``a``/``b``.

``[topology.links."a-b"]`` tables override keys of individual duplex links (per-host access delay,
pcap, loss ...). Routes are shortest paths in hops.
"""
from __future__ import annotations

import dataclasses
from collections import deque
from dataclasses import dataclass

import numpy as np

from traceflow.errors import ScenarioError

from .scenario import LinkSpec, build


@dataclass
class Network:
    nodes: list[str]
    links: list[tuple[str, str, LinkSpec]]      # duplex links (a, b, spec)
    bottleneck: str                              # directed name "a->b" (forward data direction)

    def index(self):
        return {n: i for i, n in enumerate(self.nodes)}


def _with_overrides(spec, over, path):
    base = {f.name: getattr(spec, f.name) for f in dataclasses.fields(LinkSpec)}
    out = dict(base)
    parsed = build(LinkSpec, over, path)      # validates keys and values
    for k in over:
        out[k] = getattr(parsed, k)
    return LinkSpec(**out)


def build_network(topo) -> Network:
    """The node list and duplex links of a validated Topology."""
    k = topo.kind
    if k == "dumbbell":
        left = [f"l{i}" for i in range(topo.left)]
        right = [f"r{i}" for i in range(topo.right)]
        nodes = left + right + ["g1", "g2"]
        links = [(h, "g1", topo.access) for h in left] + [(h, "g2", topo.access) for h in right]
        links.append(("g1", "g2", topo.bottleneck))
        bott = "g1->g2"
    elif k == "star":
        clients = [f"c{i}" for i in range(topo.clients)]
        nodes = clients + ["gw", "srv"]
        links = [(h, "gw", topo.access) for h in clients] + [("gw", "srv", topo.bottleneck)]
        bott = "gw->srv"
    elif k == "chain":
        hosts = [f"h{i}" for i in range(topo.sources)]
        nodes = hosts + ["R1", "R2", "dst"]
        links = [(h, "R1", topo.access) for h in hosts]
        links += [("R1", "R2", topo.bottleneck), ("R2", "dst", topo.egress or topo.access)]
        bott = "R1->R2"
    else:
        nodes = list(topo.nodes)
        if len(set(nodes)) != len(nodes) or not nodes:
            raise ScenarioError("topology.nodes: names must be unique and non-empty")
        links = []
        for i, cl in enumerate(topo.link):
            for end in (cl.a, cl.b):
                if end not in nodes:
                    raise ScenarioError(f"topology.link[{i}]: unknown node {end!r}")
            spec = LinkSpec(**{f.name: getattr(cl, f.name) for f in dataclasses.fields(LinkSpec)})
            links.append((cl.a, cl.b, spec))
        if not links:
            raise ScenarioError("topology.link: a custom topology needs links")
        bott = f"{links[0][0]}->{links[0][1]}"
    names = {f"{a}-{b}": i for i, (a, b, _) in enumerate(links)}
    for key, over in topo.links.items():
        if key not in names:
            raise ScenarioError(f"topology.links.{key}: no such link (known: "
                                f"{', '.join(list(names)[:8])}{' ...' if len(names) > 8 else ''})")
        if not isinstance(over, dict):
            raise ScenarioError(f"topology.links.{key}: expected a table")
        a, b, spec = links[names[key]]
        links[names[key]] = (a, b, _with_overrides(spec, over, f"topology.links.{key}"))
    return Network(nodes, links, bott)


def routes(net: Network):
    """next_hop[i][d]: index into the directed-link list for node i towards node d (-1: none).

    Directed links are numbered 2*j (a->b) and 2*j+1 (b->a) for duplex link j. Routes are
    minimum-hop paths, found by a breadth-first search from each destination (topologies are a
    few hundred nodes at most; a plain search keeps scipy's graph routines out of the
    simulator's start-up). Between equal-hop paths, the one found first in link order wins.
    """
    n = len(net.nodes)
    idx = net.index()
    into = [[] for _ in range(n)]       # into[v]: (u, directed link u->v), by link number
    for j, (a, b, _) in enumerate(net.links):
        ia, ib = idx[a], idx[b]
        into[ib].append((ia, 2 * j))
        into[ia].append((ib, 2 * j + 1))
    nxt = np.full((n, n), -1, dtype=np.int64)
    for d in range(n):
        seen = {d}
        frontier = deque([d])
        while frontier:
            v = frontier.popleft()
            for u, link in into[v]:
                if u not in seen:
                    seen.add(u)
                    nxt[u, d] = link
                    frontier.append(u)
    return nxt


def _hops(net: Network, nxt, src, dst):
    """(link spec, reverse) of each hop from node index src to dst along the routes."""
    v = src
    while v != dst:
        li = nxt[v, dst]
        if li < 0:
            raise ScenarioError(f"no route from {net.nodes[src]} to {net.nodes[dst]}")
        a, b, spec = net.links[li // 2]
        yield spec, li % 2 == 1
        v = net.index()[b if li % 2 == 0 else a]


def path_delay(net: Network, nxt, src, dst):
    """One-way propagation delay (s) from node index src to dst along the routes."""
    return sum(spec.delay for spec, _ in _hops(net, nxt, src, dst))


def path_transmission(net: Network, nxt, src, dst, size):
    """Transmission time (s) of one ``size``-byte packet from src to dst on idle links: at the
    shaped rate (counting the link's ``overhead``), or at the line rate where the direction is
    unshaped or its full token bucket lets the packet through."""
    total = 0.0
    for spec, reverse in _hops(net, nxt, src, dst):
        rate, line = spec.direction(reverse)
        nbytes = size + spec.overhead
        total += nbytes * 8 / (line if rate == 0 or spec.burst >= nbytes else rate)
    return total

"""Ground-truth generator: real Linux kernel TCP through a shaped bottleneck with real RTTs.

``traceflow testbed`` builds three network namespaces (server, router, clients), shapes the
router's egress toward the clients with HTB into a byte or packet FIFO, adds per-client propagation
delay with a user-space delay relay (this kernel has no netem), runs a Pareto file-transfer
workload over kernel TCP and captures both sides of the router, writing the per-transfer ground
truth next to the captures. Modules: :mod:`.params` (values), :mod:`.netns` (namespaces, veth,
qdisc, teardown), :mod:`.relay` (delay relay; loop in :mod:`._relay`), :mod:`.server`,
:mod:`.client` (workload), :mod:`.capture` (tcpdump), :mod:`.outputs`, :mod:`.run` (orchestration).
"""
from traceflow.testbed.params import Params
from traceflow.testbed.run import run_testbed

__all__ = ["Params", "run_testbed"]

"""Run a scenario with a CwndSampler on one TCP sender (shared by the window-trajectory tests)."""
import traceflow.sim as sim
from traceflow.sim import _sim
from traceflow.sim.runner import Built


def run_sampled(raw, period_ns, pcap_dir=None, flow=0):
    """Build and run ``raw`` (a scenario dict) with flow ``flow``'s sender sampled every
    ``period_ns`` ns; returns (Built, the sender, its CwndSampler)."""
    built = Built(sim.load_scenario(raw), pcap_dir)
    built.finalize_sizes()
    sender = next(a for a in built.sim.agents if isinstance(a, _sim.TcpSender) and a.flow == flow)
    sampler = _sim.CwndSampler(period_ns)
    sender.attach_hook(sampler)
    built.run()
    return built, sender, sampler

"""Packet-level discrete-event simulator (installed as ``traceflow.sim``).

``run(scenario) -> Result`` runs a scenario (TOML path, TOML text, dict or Scenario);
``load_scenario`` validates one. The kernel is the Cython extension ``traceflow.sim._sim``;
its extension points (Queue, CongestionOps, SenderHook, App) are described in sim/README.md.
"""
from .result import Result
from .scenario import Scenario, load_scenario, register_hook, register_queue


def run(scenario, **kwargs):
    """Run a scenario and return a :class:`Result` (see :func:`traceflow.sim.runner.run`)."""
    from .runner import run as _run

    return _run(scenario, **kwargs)


__all__ = ["run", "load_scenario", "Result", "Scenario", "register_queue", "register_hook"]

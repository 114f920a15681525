"""The five papers' experiments, run by ``traceflow reproduce`` (one module per paper, shared
output helpers in :mod:`.common`). May import every stage and :mod:`traceflow.sim`."""

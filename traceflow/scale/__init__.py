"""Running many things: the local process pool / Dask executors and file mapping
(:mod:`.parallel`) and parameter sweeps of simulator scenarios (:mod:`.sweep`).

May import every pipeline stage (it dispatches their work) and :mod:`traceflow.sim`.
"""

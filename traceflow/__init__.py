"""traceflow: trace analytics and replay toolkit for network researchers.

The heavy submodules (Polars, pyarrow, the Cython simulator) are imported lazily so that
``import traceflow`` and ``traceflow --version`` stay fast.
"""
import importlib

__version__ = "0.1.0"

# public name -> module that defines it
_LAZY = {
    "read_packets": "traceflow.pcap.reader",
    "iter_batches": "traceflow.pcap.reader",
    "TraceflowError": "traceflow.errors",
}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'traceflow' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__():
    return sorted([*globals(), *_LAZY])

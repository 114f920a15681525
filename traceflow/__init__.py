"""traceflow: trace analytics and replay toolkit for network researchers.

The heavy submodules (Polars, pyarrow, the Cython simulator) are imported lazily so that
``import traceflow`` and ``traceflow --version`` stay fast.

Tables: every analysis returns a Polars DataFrame (``load_packets``, ``traceflow.flows.flows`` and
``load_flows``, the series, fits and summaries' tables); ``.to_arrow()`` gives Arrow and
``.to_pandas()`` pandas (``pip install traceflow[pandas]``). Only the streaming decoder's own
interface, ``read_packets`` / ``iter_batches``, hands out the Arrow tables and batches it decodes
into (zero copy); every function that takes packets accepts either, or a path.
``with_address_strings(table)`` turns the 16-byte ``src``/``dst`` addresses into text.
"""
import importlib

__version__ = "0.1.0"

# public name -> module that defines it
_LAZY = {
    "read_packets": "traceflow.pcap.reader",
    "iter_batches": "traceflow.pcap.reader",
    "load_packets": "traceflow.stats.series",
    "load_flows": "traceflow.flows.table",
    "with_address_strings": "traceflow.pcap.addresses",
    "address_strings": "traceflow.pcap.addresses",
    "TraceflowError": "traceflow.errors",
    "TraceflowWarning": "traceflow.errors",
}

# modules the README names by their pre-stage path (``traceflow.rtt``) -> where they live now
_MODULES = {
    "rtt": "traceflow.flows.rtt", "lifetimes": "traceflow.flows.lifetimes",
    "hosts": "traceflow.flows.hosts", "series": "traceflow.stats.series",
    "tails": "traceflow.stats.tails", "hurst": "traceflow.stats.hurst", "fgn": "traceflow.stats.fgn",
    "dispersion": "traceflow.stats.dispersion", "levels": "traceflow.stats.levels",
    "fairness": "traceflow.stats.fairness", "model": "traceflow.models.model",
    "fit": "traceflow.models.fit", "capm": "traceflow.models.capm",
    "parallel": "traceflow.scale.parallel", "sweep": "traceflow.scale.sweep",
}


def __getattr__(name):
    if name in _MODULES:
        return importlib.import_module(_MODULES[name])
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'traceflow' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__():
    return sorted([*globals(), *_LAZY, *_MODULES])

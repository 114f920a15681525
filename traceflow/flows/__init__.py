"""Stage 2 of the pipeline: packets → connections.

Holds the flow table (:mod:`.table`, with the compiled splitter :mod:`.flowsplit`), passive path
RTTs over whole connections (:mod:`.pathrtt`, with the compiled sampler :mod:`.rttsample`), RTT
distribution and classes (:mod:`.rtt`), lifetimes (:mod:`.lifetimes`) and what a trace reveals about
its end hosts (:mod:`.hosts`). May import :mod:`traceflow.pcap`, :mod:`traceflow.stats` and the
shared helpers (``atomic``, ``errors``, ``jsonutil``, ``values``); never the model, replay or report
stages.

``from traceflow.flows import flows, load_flows`` keeps working: the table's public names are
re-exported lazily, so importing a sibling submodule does not load Polars.
"""
import importlib

_TABLE = ("flows", "flows_with_rtt_samples", "load_flows", "packet_batches", "scan_packets",
          "input_kind", "FLOW_SCHEMA", "CLOSE_REASONS", "HANDSHAKE_STATES")


def __getattr__(name):
    if name in _TABLE:
        return getattr(importlib.import_module("traceflow.flows.table"), name)
    raise AttributeError(f"module 'traceflow.flows' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_TABLE])

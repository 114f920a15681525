"""Packet-level discrete-event simulator (installed as ``traceflow.sim``)."""

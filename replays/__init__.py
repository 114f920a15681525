"""Scenario files reproducing the source papers' experiments (installed as traceflow.replays)."""

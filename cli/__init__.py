"""Click command-line interface (installed as ``traceflow.cli``)."""

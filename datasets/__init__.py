"""Dataset registry and small generated samples (installed as traceflow.datasets)."""

"""Paper experiments run by `traceflow reproduce` (one module per source paper)."""

"""Stage 1 of the pipeline: captures → Arrow packet tables (fast Cython decoder, dpkt reference,
container readers, the packet schema). Imports only the shared helpers."""

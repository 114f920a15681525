"""What the readers must do with any bytes, checked by the fuzz target and the regression tests.

Read the capture with the fast reader (Cython decoder) in both error modes and with the dpkt
reference. The only acceptable failure is :class:`~traceflow.errors.TraceflowError` (bad input,
named in one line); when both decoders read the capture without error their tables are equal
(README: the two decoders "produce identical tables")."""
from traceflow.errors import TraceflowError
from traceflow.pcap.reader import read_packets

BATCH = 16  # small batches: batch boundaries fall inside every input


def read(path, decoder, on_error):
    try:
        return read_packets(path, decoder=decoder, on_error=on_error, batch_size=BATCH)
    except TraceflowError:
        return None


def check(path):
    """Raise on anything but a TraceflowError or equal tables (see the module docstring)."""
    fast = read(path, "fast", "fail")
    read(path, "fast", "skip")
    reference = read(path, "dpkt", "fail")
    if fast is not None and reference is not None and not fast.equals(reference):
        diff = [c for c in fast.column_names if not fast[c].equals(reference[c])]
        raise AssertionError(f"{path}: fast and dpkt decoders differ in {diff}")

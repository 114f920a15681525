"""Coverage-guided fuzz target (atheris, i.e. libFuzzer) for the capture readers and the Cython
decoder.

Each input is the bytes of a capture file, checked by :func:`oracle.check` (fast reader in both
error modes, dpkt reference, equal tables); any other exception, or a crash in native code, is a
finding.

Run through ``run.py`` (it builds the instrumented decoder and bounds the time); by hand:
``TRACEFLOW_FUZZ_NATIVE=DIR python fuzz_readers.py CORPUS -max_total_time=60``.
"""
import os
import sys
import tempfile
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))

with atheris.instrument_imports(include=["traceflow"]):
    import instrumented

    if os.environ.get("TRACEFLOW_FUZZ_NATIVE"):
        instrumented.load(os.environ["TRACEFLOW_FUZZ_NATIVE"], ["traceflow.pcap._decode"])
    import traceflow.pcap.reader as reader
    from oracle import check

# Small reads: records and pcapng blocks span reads, so the refill and carry-over code runs, and
# a run takes ~1 ms instead of the ~25 ms that zero-filling the default 4 MiB buffer costs.
reader.CHUNK = 4096
CAPTURE = Path(tempfile.mkdtemp(prefix="traceflow-fuzz-", dir="/dev/shm"
                                if os.path.isdir("/dev/shm") else None)) / "input.pcap"


def test_one_input(data):
    CAPTURE.write_bytes(data)
    check(CAPTURE)


def main():
    # libFuzzer's -merge runs argv[0] as a program: run.py passes an executable wrapper
    argv = [os.environ.get("TRACEFLOW_FUZZ_SELF", sys.argv[0]), *sys.argv[1:]]
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

"""Every input the fuzzer (tests/fuzz) found crashing a reader stays a regression test, and its
committed corpus runs through the same oracle: only a one-line TraceflowError may end a read, and
the fast and dpkt decoders give equal tables whenever both read the capture.

Found by fuzzing, fixed in traceflow/pcap/dpkt_decoder.py:
- dpkt-ethernet-frame-shorter-than-header.pcap: dpkt raised struct.error, not NeedData.
- dpkt-pcapng-option-not-utf8.pcapng: dpkt decodes pcapng text options as UTF-8 and raised.
- tcp-timestamp-option-overruns-header.pcap: a timestamp option whose length (31) runs past the
  TCP header; dpkt cut it short and the reference read tsval/tsecr the decoder (rightly) does not.
"""
import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parents[1] / "fuzz"
sys.path.insert(0, str(FUZZ))
from oracle import check  # noqa: E402

CRASHES = sorted((FUZZ / "crashes").iterdir())


@pytest.fixture(autouse=True)
def small_reads(monkeypatch):
    """Read in 4 KiB pieces, as the fuzz target does: records span reads."""
    import traceflow.pcap.reader as reader

    monkeypatch.setattr(reader, "CHUNK", 4096)


@pytest.mark.parametrize("path", CRASHES, ids=[p.name for p in CRASHES])
def test_crash_input_is_read_or_rejected_in_one_line(path):
    check(path)


def test_committed_corpus_passes_the_oracle():
    corpus = sorted((FUZZ / "corpus").iterdir())
    assert len(corpus) >= 20
    for path in corpus:
        check(path)

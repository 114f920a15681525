"""A compressed capture cut short (issue 46 item 2) is read as tshark and capinfos read it:
every complete record, one warning naming the offset in the decompressed stream, exit 0; for
gzip and zstd, pcap and pcapng. Corrupt compressed data stays an error
(tests/pcap/test_ingest_errors.py)."""
import gzip
import json
import re
import subprocess

import pytest
from conftest import invoke, require_tool, shared_path

RUN = ("testbed", "devcubic", "client_side.pcap.gz")


def capinfos_packets(path):
    """The packet count capinfos reads from ``path`` (it reads what a cut-short file holds)."""
    require_tool("capinfos")
    out = subprocess.run(["capinfos", "-M", "-c", str(path)], capture_output=True, text=True,
                         timeout=300).stdout
    return int(re.search(r"Number of packets:\s+(\d+)", out).group(1))


def check_reads_like_capinfos(path):
    res = invoke("info", path, "--json")
    assert res.exit_code == 0, res.output
    warnings = res.stderr.strip().splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("traceflow: warning: "), warnings
    assert str(path) in warnings[0]
    assert re.search(r"at offset \d+ of the decompressed stream", warnings[0]), warnings[0]
    info = json.loads(res.stdout)
    assert info["packets"] == capinfos_packets(path) > 1000
    return info


def test_gzip_capture_cut_at_one_megabyte(tmp_path):
    """The issue's reproduction: ``head -c 1000000 client_side.pcap.gz`` (44,353 packets)."""
    path = tmp_path / "trunc.pcap.gz"
    path.write_bytes(shared_path(*RUN).read_bytes()[:1_000_000])
    check_reads_like_capinfos(path)


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
@pytest.mark.parametrize("compression", ["gzip", "zstd"])
def test_cut_short_compressed_capture(tmp_path, fmt, compression):
    require_tool("editcap")
    plain = tmp_path / f"first.{fmt}"
    subprocess.run(["editcap", "-F", fmt, "-r", str(shared_path(*RUN)), str(plain), "1-20000"],
                   check=True, capture_output=True, timeout=300)
    if compression == "gzip":
        packed = gzip.compress(plain.read_bytes())
    else:
        zstandard = pytest.importorskip("zstandard")
        # one frame, as the zstd tool writes (Wireshark 4.0 misreads a file of several)
        packed = zstandard.ZstdCompressor().compress(plain.read_bytes())
    path = tmp_path / f"trunc.{fmt}.{'gz' if compression == 'gzip' else 'zst'}"
    path.write_bytes(packed[:int(len(packed) * 0.6)])
    info = check_reads_like_capinfos(path)
    assert info["format"] == fmt and info["compression"] == compression

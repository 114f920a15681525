"""Issue 19: ``traceflow info`` against capinfos (packets, bytes, span, link type) on every shared
capture it reads, and captures cut short (a killed tcpdump) against tshark."""
import json
import subprocess
from datetime import datetime, timezone
from decimal import Decimal

import pytest
from conftest import CAPTURES, FORMATS, REFERENCE, invoke, require_tool, shared_path, tshark_fields

from traceflow.errors import InputFormatError, TraceflowError

#: capinfos' encapsulation names -> LINKTYPE numbers, for the encapsulations of the shared captures
ENCAPSULATIONS = {"ether": {1}, "linux-sll": {113}, "linux-sll2": {276}, "rawip": {12, 14, 101},
                  "rawip4": {228}, "rawip6": {229}, "null": {0, 108}, "chdlc": {104},
                  "ipnet": {226}, "ip-ib": {242}, "nflog": {239}, "pktap": {258},
                  "fddi-swapped": {10}}


def capinfos(path):
    """capinfos' machine-readable table row of ``path``, or None when it cannot read it."""
    proc = subprocess.run(["capinfos", "-T", "-r", "-M", "-t", "-E", "-c", "-d", "-a", "-e",
                           "-S", str(path)], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    cells = proc.stdout.rstrip("\n").split("\t")
    return dict(zip(("file", "type", "encapsulation", "packets", "bytes", "first", "last"), cells))


def all_captures():
    names = [p for d in (CAPTURES, FORMATS) if d.exists() for p in sorted(d.iterdir())
             if p.name != "MANIFEST.tsv" and ".erf" not in p.name and "legacy" not in p.name]
    return names or [pytest.param(None, marks=pytest.mark.skip("needs ../shared"))]


@pytest.mark.parametrize("path", all_captures(), ids=lambda p: getattr(p, "name", "none"))
def test_info_agrees_with_capinfos(path):
    require_tool("capinfos")
    theirs = capinfos(path)
    res = invoke("info", path, "--json", "--on-error", "skip")
    if theirs is None:
        pytest.skip("capinfos cannot read it either")
    assert res.exit_code == 0, res.output
    ours = json.loads(res.stdout)
    # a record skipped as malformed (``--on-error skip``) is still a record of the file
    assert ours["records"] + ours["truncation"]["skipped_records"] == int(theirs["packets"])
    if ours["unsupported_linktypes"] or ours["truncation"]["skipped_records"]:
        return  # records the decoder does not read have no known length
    assert ours["bytes"] == int(theirs["bytes"])
    if theirs["encapsulation"] in ENCAPSULATIONS:
        assert {int(k) for k in ours["linktypes"]} <= ENCAPSULATIONS[theirs["encapsulation"]]
    if ours["records"] and "per-packet" != theirs["encapsulation"] and ours["first_ns"]:
        for key in ("first", "last"):  # capinfos prints the file's own resolution (µs or ns)
            digits = len(theirs[key].partition(".")[2])
            assert ours[f"{key}_ns"] // 10 ** (9 - digits) == int(Decimal(theirs[key])
                                                                  * 10 ** digits), key


def test_info_text_names_protocols_connections_and_utc_span():
    capture = shared_path("captures", "ndpi_netflix.pcap")
    reference = json.loads((REFERENCE / "ndpi_netflix.pcap.packets.json").read_text())
    res = invoke("info", capture)
    assert res.exit_code == 0, res.output
    text = res.stdout
    assert "ETHERNET (1): 1,793" in text and "1,006,416 on the wire" in text
    assert f"TCP {reference['tcp']:,}, UDP {reference['udp']:,}" in text
    assert f"{reference['tcp_streams']} connections" in text
    first = datetime.fromtimestamp(1484319030.789585, timezone.utc)
    assert f"first packet:  {first:%Y-%m-%d %H:%M:%S}.789585 UTC" in text
    assert "None" not in text and "{}" not in text


@pytest.mark.parametrize("cut", [5, 100])
def test_capture_cut_short_warns_and_keeps_the_complete_records(tmp_path, cut):
    """The normal case of a killed tcpdump: exit 0, one warning line, and exactly the packets
    tshark reads from the same file."""
    src = shared_path("captures", "zeek_wikipedia.pcap")
    path = tmp_path / "cut.pcap"
    path.write_bytes(src.read_bytes()[:-cut])
    res = invoke("flows", path, "--json")
    assert res.exit_code == 0, res.output
    warnings = res.stderr.strip().splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("traceflow: warning: ")
    assert str(path) in warnings[0] and "capture ends inside record" in warnings[0]
    info = json.loads(invoke("info", path, "--json").stdout)
    assert info["records"] == len(tshark_fields(path, "frame.number"))
    assert info["truncation"]["last_record_cut_bytes"] > 0


def test_corruption_in_the_middle_stays_an_error_suggesting_skip(tmp_path):
    src = shared_path("captures", "zeek_wikipedia.pcap").read_bytes()
    data = bytearray(src)
    data[24 + 8:24 + 12] = (0x7FFFFFF0).to_bytes(4, "little")  # first record: impossible length
    path = tmp_path / "bad.pcap"
    path.write_bytes(bytes(data))
    res = invoke("flows", path)
    assert isinstance(res.exception, InputFormatError)
    message = str(res.exception)
    assert str(path) in message and message.endswith("traceflow ingest --on-error skip")
    proc = subprocess.run(["traceflow", "info", str(path)], capture_output=True, text=True)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert isinstance(res.exception, TraceflowError)

"""Every rate, H and dispersion says what it counts (issue 46 item 6), and the label is true:
the bytes ``series`` calls "IP bytes" sum to tshark's ip.len, its "frame bytes" to frame.len;
``hurst`` and ``dispersion`` name the same definition and the direction; the report's dispersion
figure counts bytes, as its comparison figure does."""
import json

import pytest
from conftest import invoke, shared_path, tshark_fields

CAPTURE = ("captures", "zeek_wikipedia.pcap")


def _tshark_bytes(path, size):
    """Per frame: its IP length (IPv6: payload + 40) or, for non-IP frames and ``wirelen``, its
    frame length (traceflow.stats.series' definition)."""
    total = 0
    for ip, ip6, frame in tshark_fields(path, "ip.len", "ipv6.plen", "frame.len"):
        if size == "wirelen" or not (ip or ip6):
            total += int(frame)
        else:
            total += int(ip.split(",")[0]) if ip else int(ip6.split(",")[0]) + 40
    return total


@pytest.mark.parametrize("size,label", [("ip_len", "IP bytes"), ("wirelen", "frame bytes")])
def test_series_bytes_are_what_the_label_says(size, label):
    path = shared_path(*CAPTURE)
    want = _tshark_bytes(path, size)
    res = invoke("series", path, "--bin", "1s", "--size", size, "--json")
    summary = json.loads(res.stdout)
    assert summary["bytes"] == want
    assert summary["bytes_counted"] == f"{label}, both directions"
    assert f"({label}, both directions)" in invoke("series", path, "--bin", "1s", "--size",
                                                    size).stdout


def test_hurst_and_dispersion_name_their_counts():
    path = shared_path(*CAPTURE)
    h = invoke("hurst", path, "--bin", "1ms")
    assert h.exit_code == 0, h.output
    assert h.stdout.startswith("n = ") and "bins of 1ms (IP bytes, both directions)" in h.stdout
    d = json.loads(invoke("dispersion", path, "--column", "bytes", "--direction",
                          "dst:141.142.220.0/24", "--json").stdout)
    assert d["counts"] == "IP bytes, direction dst:141.142.220.0/24"
    text = invoke("dispersion", path).stdout
    assert text.startswith("packets, both directions:") and "2H - 1 only for" in text


def test_report_dispersion_counts_bytes_like_the_comparison(tmp_path):
    res = invoke("report", shared_path(*CAPTURE), "-o", tmp_path / "r", "--json")
    assert res.exit_code == 0, res.output
    page = (tmp_path / "r" / "index.html").read_text()
    assert "variance / mean of the IP bytes of both directions per interval" in page
    assert "Hurst exponent of the IP bytes of both directions per 10 ms bin" in page

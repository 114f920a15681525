"""Issue 19: a report of a real capture as a browser shows it (headless Chromium screenshot: not
blank, the figures drawn), human units and UTC times in the page, axes that state their units."""
import json
import subprocess
import tempfile

import numpy as np
import pytest
from conftest import invoke, read_page, require_tool, shared_path

from traceflow.report import figures

#: the figures' first line colour (matplotlib tab:blue); the page's own CSS never uses it
FIGURE_BLUE = np.array([0x1F, 0x77, 0xB4]) / 255


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    capture = shared_path("captures", "ndpi_netflix.pcap")
    out = tmp_path_factory.mktemp("shot") / "report"
    res = invoke("report", capture, "-o", out, "--json")
    assert res.exit_code == 0, res.output
    return out, json.loads(res.stdout)


def test_screenshot_is_not_blank_and_shows_the_figures(report):
    require_tool("chromium")
    from matplotlib.image import imread

    out, summary = report
    shot = out.parent / "shot.png"
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", "--no-first-run", "--disable-sync",
                        "--disable-background-networking", "--disable-component-update",
                        f"--user-data-dir={profile}", "--window-size=1400,6000",
                        "--virtual-time-budget=10000", f"--screenshot={shot}",
                        (out / "index.html").as_uri()],
                       capture_output=True, text=True, timeout=180)
    assert shot.exists(), "chromium wrote no screenshot"
    pixels = imread(shot)[..., :3]
    assert pixels.shape[:2] == (6000, 1400)
    ink = np.any(pixels < 0.9, axis=-1)
    assert ink.mean() > 0.02  # text, tables and figures, not a blank page
    blue = np.all(np.abs(pixels - FIGURE_BLUE) < 0.06, axis=-1)
    # the figures' curves and bars: thousands of tab:blue pixels, spread down the page
    assert blue.sum() > 5000
    rows_with_blue = np.flatnonzero(blue.any(axis=1))
    assert rows_with_blue.max() - rows_with_blue.min() > 1200  # four rows of figures
    figures_on_page = len(read_page(out / "index.html").images)
    assert figures_on_page == len(summary["sections"][0]["figures"]) == 8


def test_page_has_human_units_utc_and_quality(report):
    out, summary = report
    html = (out / "index.html").read_text()
    for text in ("kbit/s", " ms", "UTC", "quality", "only 61 values in the tail"):
        assert text in html, text
    assert "None" not in html and "{}" not in html and ">nan<" not in html
    rows = {r["quantity"]: r for r in summary["sections"][0]["rows"]}
    assert rows["mean rate"]["value"].endswith("kbit/s") and rows["mean rate"]["unit"] == "bit/s"
    assert rows["first packet"]["value"] == "2017-01-13 14:50:30.789585 UTC"
    # the RTT of this receiver-side capture: the column and path unit rtt and fit pick
    rtt = json.loads(invoke("rtt", shared_path("captures", "ndpi_netflix.pcap"), "--json").stdout)
    assert rtt["column"] == "rtt_min" and rtt["per"] == "pair"
    assert rows["RTT median"]["note"].startswith("rtt_min per host pair")
    assert rows["RTT median"]["raw"] == rtt["quantiles"]["p50"]
    assert rows["RTT median"]["value"].endswith(" ms")
    assert not any("RTT columns disagree" in w for w in summary["sections"][0]["warnings"])


def test_axes_state_seconds_and_milliseconds(monkeypatch, tmp_path):
    """Hurst plots give block lengths in seconds (with the bin width), the RTT spectrum RTTs in ms."""
    from traceflow.flows import flows
    from traceflow.flows.rtt import fit_rtt_classes, rtt_spectrum, rtt_values
    from traceflow.stats.hurst import estimate
    from traceflow.stats.series import load_series

    drawn = []
    monkeypatch.setattr(figures, "save", lambda fig, path: drawn.append(fig) or path)
    capture = shared_path("captures", "ndpi_netflix.pcap")
    x = load_series(capture).values
    figures.hurst_figure(estimate(x, ("vt", "rs", "wavelet")), tmp_path / "h.png", bin_s=0.01)
    vt, rs, wavelet = drawn[0].axes
    assert vt.get_xlabel() == "log10 block length m (s); bins of 10 ms"
    assert rs.get_xlabel() == "log10 block length d (s); bins of 10 ms"
    assert wavelet.get_xlabel() == "octave j (time scale 2^j x 10 ms)"
    # the first V-T point is one 10 ms bin: log10(0.01 s) = -2
    assert vt.lines[0].get_xdata()[0] == pytest.approx(-2.0)
    rtts = rtt_values(flows(capture), "rtt_handshake")
    figures.rtt_spectrum_figure(rtt_spectrum(rtts), tmp_path / "r.png",
                                boundaries=fit_rtt_classes(rtts).boundaries)
    ax = drawn[1].axes[0]
    assert ax.get_xlabel().startswith("RTT (ms, log scale")
    ticks = {t.get_text(): t.get_position()[0] for t in ax.get_xticklabels()}
    assert ticks["20"] == pytest.approx(np.log10(20e-3 / 1e-5))  # 20 ms at log10(RTT/10 µs)

"""The report's wide figures take the page's width (issue 46: the three-panel Hurst figure was
shrunk to a third of it): exactly the PNGs wider than twice their height."""
import re

from conftest import invoke, shared_path
from matplotlib.image import imread


def test_wide_figures_are_full_width(tmp_path):
    res = invoke("report", shared_path("captures", "ndpi_netflix.pcap"), "-o", tmp_path / "r")
    assert res.exit_code == 0, res.output
    page = (tmp_path / "r" / "index.html").read_text()
    figures = re.findall(r'<figure( class="wide")?><img src="([^"]+)"', page)
    assert any(src.endswith("hurst.png") and wide for wide, src in figures)
    for wide, src in figures:
        height, width = imread(tmp_path / "r" / src).shape[:2]
        assert bool(wide) == (width / height > 2.0), src
    assert "figure.wide img" in page

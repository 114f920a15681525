"""Shared fixtures: locations of ../shared data and skips for optional tools."""
import os
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TRACEFLOW_SHARED", REPO.parent / "shared"))
DATASETS = SHARED / "datasets"
CAPTURES = DATASETS / "captures"
FORMATS = DATASETS / "formats"
REFERENCE = DATASETS / "reference"
TESTBED = DATASETS / "testbed"


def shared_path(*parts):
    """Path under ../shared/datasets, or skip the test when ../shared is absent."""
    path = DATASETS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs ../shared/datasets/{'/'.join(parts)} (not present)")
    return path


def require_tool(name):
    """Skip unless the executable ``name`` is on PATH."""
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"needs {name!r} on PATH (apt-get install it)")
    return path


@pytest.fixture
def shared():
    return shared_path()


class _Page(HTMLParser):
    """The images and the rows marked ``class="disagree"`` of an HTML page."""

    def __init__(self):
        super().__init__()
        self.images, self.disagree = [], 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs["src"])
        if tag == "tr" and attrs.get("class") == "disagree":
            self.disagree += 1


def read_page(path):
    """Parse the HTML file ``path`` (images, disagreeing rows)."""
    page = _Page()
    page.feed(Path(path).read_text())
    return page

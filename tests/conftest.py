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


def invoke(*args):
    """Run ``traceflow ARGS`` through Click's test runner (stdout and stderr kept apart); the
    arguments may be paths or numbers."""
    from click.testing import CliRunner

    from traceflow.cli.main import cli

    return CliRunner().invoke(cli, [str(a) for a in args])


def tshark_fields(capture, *fields, display_filter=None):
    """Rows of tshark ``-T fields`` output (lists of strings), or skip without tshark."""
    import subprocess

    require_tool("tshark")
    cmd = ["tshark", "-n", "-r", str(capture), "-T", "fields", "-E", "separator=\t"]
    if display_filter:
        cmd += ["-Y", display_filter]
    for field in fields:
        cmd += ["-e", field]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout
    return [line.split("\t") for line in out.splitlines()]


def nolds_measures():
    """nolds' ``measures`` module (DFA, R/S reference implementations), or skip without nolds.
    nolds 0.6.3's package ``__init__`` fails on Python 3.11 (its datasets loader); measures.py
    stands alone."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("nolds")
    if spec is None:
        pytest.skip("nolds not installed")
    mspec = importlib.util.spec_from_file_location(
        "nolds_measures", os.path.join(spec.submodule_search_locations[0], "measures.py"))
    module = importlib.util.module_from_spec(mspec)
    mspec.loader.exec_module(module)
    return module

"""Shared fixtures: locations of ../shared data and skips for optional tools."""
import fcntl
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
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
TESTBED_RUNS = Path(os.environ.get("TRACEFLOW_TESTBED_RUNS", REPO / ".testbed-runs"))

# Reference runs of `traceflow testbed` with three RTT classes (issue 16), made on first use
# (root; `tox -e slow`) under TESTBED_RUNS rather than committed: 300 s each, ~40 MB of pcap.
DELAYED_RUNS = {
    "tb_reno_rtt3_1m5": dict(clients=32, alpha=1.35, mean=4100.0, idle=1.0, rate=1_500_000,
                             buffer=12000, rtt=(0.01, 0.06, 0.18), cc="reno", duration=300.0,
                             seed=1),
    "tb_cubic_rtt3_10m": dict(clients=48, alpha=1.5, mean=10000.0, idle=0.5, rate=10_000_000,
                              buffer=50000, rtt=(0.01, 0.06, 0.18), cc="cubic", duration=300.0,
                              seed=1),
    "tb_bbr_rtt3_5m": dict(clients=32, alpha=1.35, mean=10000.0, idle=1.0, rate=5_000_000,
                           buffer=30000, rtt=(0.01, 0.06, 0.18), cc="bbr", duration=180.0, seed=1),
}


# Timing-sensitive tests (the testbed's relay, issue 16) take this lock exclusively, every other
# test shares it: under pytest-xdist on 2 cores, another worker's test held the relay off the CPU
# (34 of 113 packets late by up to 4.6 ms in one CI run, twice in a row) even though the relay
# keeps its 0.5 ms with both cores busy in user space (test_testbed_reference.py). The shared lock
# is held for a test's whole run protocol, so a module-scoped fixture's work (a fit, a replay, a
# report), which pytest sets up before any function-scoped fixture, is covered too; when only the
# test function was, such a fixture ran beside the relay test (CI, c77bbd8: 38 of 113 late, up to
# 4.2 ms, twice in a row). POSIX record locks (lockf), not flock: a process a test forks (a worker
# pool that outlives the test) does not inherit them, so it cannot hold the exclusive test off for
# ever.
CPU_LOCK = Path(tempfile.gettempdir()) / "traceflow-tests-cpu.lock"
CPU_GATE = Path(tempfile.gettempdir()) / "traceflow-tests-cpu.gate"


@contextmanager
def cpus(exclusive=False):
    """Hold CPU_LOCK shared, or exclusively for a timing-sensitive run. POSIX locks do not
    favour a waiting exclusive taker: the other worker's tests, one after another, could hold
    the lock shared for as long as they last. So an exclusive taker first holds CPU_GATE, which
    a shared taker passes through before it takes the lock: once one waits, no test starts."""
    with open(CPU_GATE, "a+") as gate, open(CPU_LOCK, "a+") as lock:
        fcntl.lockf(gate, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        if not exclusive:
            fcntl.lockf(gate, fcntl.LOCK_UN)
        fcntl.lockf(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Hold the CPUs shared (:func:`cpus`) through a test's setup, call and teardown (module
    fixtures included), except for tests marked ``exclusive``, which take them exclusively
    themselves (testbed_checks.run_alone)."""
    if "PYTEST_XDIST_WORKER" not in os.environ or item.get_closest_marker("exclusive"):
        yield
        return
    with cpus():
        yield


def shared_path(*parts):
    """Path under ../shared/datasets, or skip the test when ../shared is absent."""
    path = DATASETS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs ../shared/datasets/{'/'.join(parts)} (not present)")
    return path


def delayed_testbed_run(name):
    """Directory of the reference testbed run ``name`` (a key of DELAYED_RUNS), running
    `traceflow testbed` first (about 6 minutes) when it is absent or was made with other
    parameters; skips when a testbed cannot run here (not root, no tcpdump, ...)."""
    from traceflow.errors import TraceflowError
    from traceflow.testbed import Params, run_testbed
    from traceflow.testbed.netns import check_environment

    wanted = Params(**DELAYED_RUNS[name])
    path = TESTBED_RUNS / name
    made = json.loads((path / "params.json").read_text()) if (path / "params.json").exists() \
        else {}
    if any(made.get(key) != value for key, value in wanted.to_dict().items()):
        try:
            check_environment(wanted.cc)
        except TraceflowError as exc:
            pytest.skip(f"testbed run {name} absent and cannot be made here: {exc}")
        run_testbed(wanted, path)
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
    """The images, the rows marked ``class="disagree"`` / ``"uncompared"`` and the banners
    (``<p class="banner">``) of an HTML page."""

    def __init__(self):
        super().__init__()
        self.images, self.disagree, self.uncompared, self.banner = [], 0, 0, 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs["src"])
        if tag == "tr" and attrs.get("class") == "disagree":
            self.disagree += 1
        if tag == "tr" and attrs.get("class") == "uncompared":
            self.uncompared += 1
        if tag == "p" and attrs.get("class") == "banner":
            self.banner += 1


def read_page(path):
    """Parse the HTML file ``path`` (images, (dis)agreeing and uncompared rows, banners)."""
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


def _needs_datasets(report):
    """Whether a skipped test's reason is that ../shared (the external datasets) is absent."""
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return "../shared" in reason or str(SHARED) in reason


def pytest_terminal_summary(terminalreporter):
    """One line saying how many tests skipped for want of the external datasets, and how to get
    them (README: "External datasets")."""
    missing = sum(_needs_datasets(r) for r in terminalreporter.stats.get("skipped", []))
    if missing:
        terminalreporter.write_line(
            f"{missing} test{'s' * (missing != 1)} skipped: they need the external datasets under {SHARED} "
            "(a checkout of the project's shared/ directory next to this repository, or "
            "TRACEFLOW_SHARED=/path/to/shared; `traceflow datasets list` says what is present)")

"""``traceflow report``: figures from real analytics, a comparison, every image present (and
rendered by headless Chromium when installed), determinism, one-line errors."""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from conftest import read_page, require_tool, shared_path

from traceflow.cli.main import cli
from traceflow.report import figures
from traceflow.stats.tails import ccdf_data, fit_pareto

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ALPHA = 1.3


@pytest.fixture(scope="module")
def flows_table(tmp_path_factory):
    """A flows table whose sizes are Pareto(α = 1.3, xmin = 1000 B)."""
    rng = np.random.default_rng(7)
    n = 3000
    sizes = 1000 * (1 - rng.random(n)) ** (-1 / ALPHA)
    lifetimes = 0.05 * (1 - rng.random(n)) ** (-1 / 1.6)
    path = tmp_path_factory.mktemp("flows") / "flows.parquet"
    pl.DataFrame({"flow_id": np.arange(n), "bytes": sizes.astype(np.int64),
                  "duration": (lifetimes * 1e9).astype(np.int64)}).with_columns(
        pl.col("duration").cast(pl.Duration("ns"))).write_parquet(path)
    return path


def _check_images(out):
    page = read_page(out / "index.html")
    assert page.images
    for src in page.images:
        data = (out / src).read_bytes()
        assert data.startswith(PNG_MAGIC), src
    assert sorted(page.images) == sorted(p.name for p in out.glob("*.png"))
    return page


def _row(summary, section, quantity):
    rows = summary["sections"][section]["rows"]
    return next(r["raw"] for r in rows if r["quantity"] == quantity)


@pytest.fixture(scope="module")
def capture_report(tmp_path_factory, flows_table):
    """A report of the synthetic flows table and a real capture: (directory, report.json)."""
    capture = shared_path("captures", "pcapplusplus_example.pcap")
    out = tmp_path_factory.mktemp("report") / "report"
    res = CliRunner().invoke(cli, ["report", str(flows_table), str(capture), "-o", str(out),
                                   "--workers", "2", "--json"])
    assert res.exit_code == 0, res.output
    return out, json.loads(res.output)


def test_report_of_flows_and_capture(capture_report):
    out, summary = capture_report
    page = _check_images(out)
    # The flows input: both CCDFs; the fitted α is the one we drew.
    assert "01-flows-ccdf-bytes.png" in page.images
    assert abs(_row(summary, 0, "Pareto α of flow size") - ALPHA) < 0.1
    # The capture: every analysis of a trace; H in (0, 1.5).
    names = set(summary["sections"][1]["figures"])
    for kind in ("series", "hurst", "levels", "dispersion", "rtt-spectrum", "ccdf-bytes"):
        assert f"02-pcapplusplus_example-{kind}.png" in names
    assert 0 < _row(summary, 1, "Hurst H (vt)") < 1.5
    assert _row(summary, 1, "packets") > 1000


def test_report_renders_in_headless_chromium(capture_report):
    require_tool("chromium")
    _chromium_loads_all_images(capture_report[0])


def _chromium_loads_all_images(out):
    """Open the page in headless Chromium and read back, from the DOM, whether every <img>
    decoded (complete and naturalWidth > 0)."""
    probe = out / ".probe.html"
    script = ('<script>window.addEventListener("load",()=>{const p=document.createElement("pre");'
              'p.id="probe";p.textContent=[...document.images].map(i=>i.getAttribute("src")+"="+'
              '(i.complete&&i.naturalWidth>0?"ok":"broken")).join(" ");'
              'document.body.appendChild(p);});</script></body>')
    probe.write_text((out / "index.html").read_text().replace("</body>", script))
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", f"--user-data-dir={profile}", "--virtual-time-budget=10000",
             "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120)
    probe.unlink()
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    start = dom.index('<pre id="probe">') + len('<pre id="probe">')
    states = dict(item.split("=") for item in dom[start:dom.index("</pre>", start)].split())
    assert states and set(states.values()) == {"ok"}, states
    assert set(states) == set(read_page(out / "index.html").images)


def test_report_of_a_simulator_run(tmp_path):
    sim = pytest.importorskip("traceflow.sim")
    from importlib.resources import files

    result = sim.run(files("traceflow.replays") / "dumbbell.toml",
                     overrides=["simulation.duration=30"])
    run_dir = result.write(tmp_path / "run")
    out = tmp_path / "report"
    res = CliRunner().invoke(cli, ["report", str(run_dir), "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    _check_images(out)
    assert {f"01-run-{k}.png" for k in ("series", "hurst", "levels", "dispersion")} <= set(
        summary["sections"][0]["figures"])
    # The report's rate of the bottleneck series is the simulator's own throughput.
    rate = _row(summary, 0, "mean rate")
    assert rate == pytest.approx(result.summary["throughput_bps"], rel=0.01)


def test_comparison_section_highlights_failures(tmp_path):
    measured = shared_path("captures", "pcapplusplus_example.pcap")
    other = shared_path("captures", "ndpi_netflix.pcap")
    same = tmp_path / "same"
    res = CliRunner().invoke(cli, ["report", "--measured", str(measured), "--predicted",
                                   str(measured), "--capacity", "1e7", "-o", str(same), "--json"])
    assert res.exit_code == 0, res.output
    metrics = json.loads(res.output)["comparison"]["metrics"]
    # A side compared with itself: every computable error is zero.
    errors = [m["error"] for m in metrics.values() if m["error"] is not None]
    assert errors and all(e == 0 for e in errors)
    _check_images(same)
    diff = tmp_path / "diff"
    res = CliRunner().invoke(cli, ["report", "--measured", str(measured), "--predicted",
                                   str(other), "--capacity", "1e7", "-o", str(diff), "--json"])
    assert res.exit_code == 0, res.output
    comparison = json.loads(res.output)["comparison"]
    assert comparison["failed"]
    assert read_page(diff / "index.html").disagree == len(comparison["failed"])
    _check_images(diff)


def test_figures_are_deterministic(tmp_path):
    x = 1000 * (1 - np.random.default_rng(1).random(500)) ** (-1 / 1.5)
    fit = fit_pareto(x)
    a = figures.ccdf_figure(ccdf_data(x, fit), tmp_path / "a.png", fit=fit, label="bytes")
    b = figures.ccdf_figure(ccdf_data(x, fit), tmp_path / "b.png", fit=fit, label="bytes")
    assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize("args", [["no-such.pcap", "-o", "r"],
                                  ["--measured", "tests", "-o", "r"],
                                  ["-o", "r"]])
def test_report_errors_are_one_line(tmp_path, args):
    proc = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "report", *args],
                          capture_output=True, text=True, cwd=Path(__file__).parents[2])
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not (Path(__file__).parents[2] / "r").exists()

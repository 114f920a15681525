"""``traceflow reproduce``: the experiment contract, summary.json, index.html, --list, errors."""
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
import pytest  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from conftest import read_page  # noqa: E402
from traceflow.cli.main import cli  # noqa: E402
from traceflow.cli.reproduce import experiment_files, load_experiment, load_runner  # noqa: E402
from traceflow.scale.parallel import map_tasks  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def square(x):
    return x * x


def fake_runner(spec, out_dir, *, quick, executor, workers):
    """An experiment following the runner contract: one figure, one table, a comparison."""
    n = 4 if quick else 8
    ys = map_tasks(square, range(n), executor=executor, workers=workers, progress=False)
    fig, ax = plt.subplots()
    ax.plot(range(n), ys)
    fig.savefig(out_dir / "squares.png")
    plt.close(fig)
    pl.DataFrame({"x": list(range(n)), "y": ys}).write_parquet(out_dir / "squares.parquet")
    paper = spec["experiment"]["paper"]
    return {"figures": ["squares.png"], "tables": {"squares": "squares.parquet"},
            "comparison": [
                {"quantity": "sum of squares", "paper": paper["sum"], "ours": sum(ys),
                 "agree": sum(ys) == paper["sum"], "note": "exact"},
                {"quantity": "count", "paper": 8, "ours": n, "agree": n == 8, "note": ""}],
            "text": f"{n} squares."}


def broken_runner(spec, out_dir, *, quick, executor, workers):
    (out_dir / "half.png").write_bytes(b"")
    raise RuntimeError("runner crashed")


def _experiment(tmp_path, runner="test_reproduce:fake_runner"):
    path = tmp_path / "squares.toml"
    path.write_text(f'[experiment]\ntitle = "Squares"\nreproduces = "Nobody 2026, Fig. 1"\n'
                    f'runner = "{runner}"\npaper = {{ sum = 140 }}\n')
    return path


@pytest.mark.parametrize("quick,counts", [(False, (2, 0, 0)), (True, (0, 0, 2))])
def test_reproduce_writes_summary_and_page(tmp_path, quick, counts):
    # the quick run's count test fails (4 != 8), yet a quick run decides nothing: both rows
    # are "not compared", never "agree", and the page carries the quick-run banner
    out = tmp_path / "out"
    args = ["reproduce", str(_experiment(tmp_path)), "-o", str(out), "--workers", "2"]
    res = CliRunner().invoke(cli, args + (["--quick"] if quick else []))
    assert res.exit_code == 0, res.output
    agree, disagree, uncompared = counts
    assert (f"{agree} agree, {disagree} disagree, {uncompared} not compared (of 2 quantities)"
            in res.output)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["title"] == "Squares" and summary["reproduces"] == "Nobody 2026, Fig. 1"
    assert summary["quick"] is quick and summary["figures"] == ["squares.png"]
    page = read_page(out / "index.html")
    assert page.images == ["squares.png"]
    assert (out / "squares.png").read_bytes().startswith(PNG_MAGIC)
    assert (page.disagree, page.uncompared, page.banner) == (disagree, uncompared, int(quick))
    assert summary["verdicts"] == {"agree": agree, "disagree": disagree, "not_compared": uncompared}
    if quick:
        assert "the test fails" in summary["comparison"][1]["note"]
    # Running again replaces the earlier output.
    res = CliRunner().invoke(cli, args + ["--quick"])
    assert res.exit_code == 0, res.output


def test_reproduce_on_one_local_dask_cluster(tmp_path):
    pytest.importorskip("distributed")
    experiment = str(_experiment(tmp_path))
    runs = {}
    for executor in ("local", "dask"):
        out = tmp_path / executor
        res = CliRunner().invoke(cli, ["reproduce", experiment, "--quick", "--executor", executor,
                                       "--workers", "2", "-o", str(out)])
        assert res.exit_code == 0, res.output
        runs[executor] = json.loads((out / "summary.json").read_text())
    assert runs["dask"]["executor"] == "dask"
    assert runs["dask"]["comparison"] == runs["local"]["comparison"]


def test_failed_runner_leaves_no_output(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="runner crashed"):
        experiment = _experiment(tmp_path, "test_reproduce:broken_runner")
        CliRunner().invoke(cli, ["reproduce", str(experiment), "-o", str(out)],
                           catch_exceptions=False)
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["squares.toml"]


def test_refuses_to_replace_a_foreign_directory(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    proc = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "reproduce",
                           str(_experiment(tmp_path)), "-o", str(out)],
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              str(p) for p in (Path(__file__).parent, Path(__file__).parents[1]))})
    assert proc.returncode == 2 and "not an earlier reproduce output" in proc.stderr
    assert (out / "thesis.tex").read_text() == "precious"


def test_unknown_experiment_is_one_line_error():
    proc = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "reproduce", "no-such-exp"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "unknown experiment" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_installed_experiments_follow_the_contract():
    """Every replays/*.toml with [experiment] names a loadable runner with the agreed signature."""
    res = CliRunner().invoke(cli, ["reproduce", "--list", "--json"])
    assert res.exit_code == 0, res.output
    listed = json.loads(res.output)
    assert [row["name"] for row in listed] == list(experiment_files())
    for name in experiment_files():
        spec = load_experiment(name)
        runner = load_runner(spec["experiment"]["runner"])
        params = inspect.signature(runner).parameters
        positional = [p for p in params.values() if p.kind == p.POSITIONAL_OR_KEYWORD]
        assert len(positional) >= 2, f"{name}: runner must take (spec, out_dir, ...)"
        for keyword in ("quick", "executor", "workers"):
            assert keyword in params, f"{name}: runner lacks {keyword}="


def test_not_compared_rows_never_count_as_agreeing(tmp_path):
    # issue 18's audit: Table III showed "38 of 39 agree" with 1 agreeing, 1 disagreeing and
    # 37 rows without a verdict
    from traceflow.report.html import experiment_page, verdict_counts

    rows = ([{"quantity": "a", "paper": 1, "ours": 1, "agree": True, "note": ""},
             {"quantity": "b", "paper": 1, "ours": 2, "agree": False, "note": ""}]
            + [{"quantity": f"c{i}", "paper": 1, "ours": 3, "agree": None, "note": ""}
               for i in range(37)])
    assert verdict_counts(rows) == {"agree": 1, "disagree": 1, "not_compared": 37}
    experiment_page({"title": "T", "comparison": rows}, tmp_path)
    text = (tmp_path / "index.html").read_text()
    assert "1 agree, 1 disagree, 37 not compared (of 39 quantities)" in text
    page = read_page(tmp_path / "index.html")
    assert (page.disagree, page.uncompared, page.banner) == (1, 37, 0)


def test_list_shows_the_measured_run_times():
    """`--list` gives each experiment's measured quick and full wall times (replays/timings.toml),
    '?' where none was measured; the timings name installed experiments only."""
    from traceflow.cli.reproduce import timings

    measured = timings()
    assert set(measured) <= set(experiment_files())
    assert all(set(t) <= {"quick", "full"} and all(v > 0 for v in t.values())
               for t in measured.values())
    out = CliRunner().invoke(cli, ["reproduce", "--list", "--json"])
    rows = {r["name"]: r["seconds"] for r in json.loads(out.output)}
    assert rows["burst_fig2_4"] == measured["burst_fig2_4"]
    text = CliRunner().invoke(cli, ["reproduce", "--list"]).output
    line = next(ln for ln in text.splitlines() if ln.startswith("burst_fig2_4 "))
    assert f"{measured['burst_fig2_4']['quick']:.0f} s quick" in line and "min full" in line

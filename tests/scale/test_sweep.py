"""Sweeps: grid expansion and seeds, resume, failures, a Dask cluster losing a worker, SIGINT."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from traceflow.cli.main import cli
from traceflow.errors import TraceflowError
from traceflow.scale.sweep import cell_scenario, derive_seed, expand, parse_grid, run_sweep

TESTS = Path(__file__).resolve().parent

BASE = {"simulation": {"seed": 11, "duration": 0.05}, "link": {"rate": 10.0, "buffer": 5}}
GRID = {"link.rate": [1.0, 2.0], "link.buffer": [5, 20]}


def synthetic_run(scenario):
    """A cheap deterministic stand-in for a simulation: a function of the scenario and its seed."""
    time.sleep(scenario["simulation"]["duration"])
    if scenario["link"].get("fail"):
        raise RuntimeError("cell exploded")
    rng = np.random.default_rng(scenario["simulation"]["seed"])
    load = rng.exponential(scenario["link"]["rate"], size=1000)
    return {"utilization": float(np.minimum(load / scenario["link"]["buffer"], 1).mean()),
            "queue": {"mean": float(load.mean()), "max": float(load.max())}}


def test_grid_expansion_and_seeds():
    cells = expand(GRID, replications=3, base_seed=11)
    assert len(cells) == 12
    assert [c.params for c in cells[:4]] == [{"link.rate": 1.0, "link.buffer": 5}] * 3 + [
        {"link.rate": 1.0, "link.buffer": 20}]
    assert len({c.seed for c in cells}) == 12 and len({c.key for c in cells}) == 12
    # A cell's seed depends on its own values only: growing the grid keeps the old seeds.
    bigger = expand({"link.rate": [0.5, 1.0, 2.0], "link.buffer": [5, 20]}, 3, base_seed=11)
    old = {(c.key, c.seed) for c in cells}
    assert old <= {(c.key, c.seed) for c in bigger}
    assert derive_seed(12, cells[0].params, 0) != cells[0].seed
    scenario = cell_scenario(BASE, cells[5])
    assert scenario["link"] == {"rate": 1.0, "buffer": 20}
    assert scenario["simulation"]["seed"] == cells[5].seed
    assert BASE["link"]["rate"] == 10.0  # the base scenario is not modified


def test_parse_grid_values():
    grid = parse_grid(["link.rate=1.5e6,3e6", "queue.kind=red,droptail", "tcp.sack=true,false"])
    assert grid == {"link.rate": [1.5e6, 3e6], "queue.kind": ["red", "droptail"],
                    "tcp.sack": [True, False]}
    for bad in ["link.rate", "=1,2", "link.rate="]:
        with pytest.raises(TraceflowError):
            parse_grid([bad])


def test_sweep_resumes_and_reports_failures_without_losing_cells(tmp_path):
    out = tmp_path / "sweep"
    grid = {"link.rate": [1.0, 2.0], "link.fail": [False, True]}
    result = run_sweep(BASE, grid, out, replications=2, task=synthetic_run, workers=2, retries=1,
                       progress=False)
    assert (result.total, result.ran, len(result.failed)) == (8, 4, 4)
    assert all(f["error"] == "RuntimeError: cell exploded" and f["attempts"] == 2
               for f in result.failed)
    assert len(json.loads((out / "failed.json").read_text())) == 4
    frame = pl.read_parquet(out / "results.parquet")
    assert frame.height == 4 and not frame["link.fail"].any()
    assert {"utilization", "queue.mean", "queue.max", "seed", "replication"} <= set(frame.columns)
    # Each cell's metrics equal a direct run with its seed.
    for row in frame.iter_rows(named=True):
        direct = synthetic_run({"simulation": {"seed": row["seed"], "duration": 0},
                                "link": {**BASE["link"], "rate": row["link.rate"], "fail": False}})
        assert row["utilization"] == direct["utilization"]
    again = run_sweep(BASE, grid, out, replications=2, task=synthetic_run, workers=2, retries=0,
                      progress=False)
    assert (again.skipped, again.ran, len(again.failed)) == (4, 0, 4)
    assert pl.read_parquet(out / "results.parquet").equals(frame)
    # Growing the grid and the replications keeps every finished cell.
    grown = run_sweep(BASE, {"link.rate": [1.0, 2.0, 3.0], "link.fail": [False]}, out,
                      replications=3, task=synthetic_run, workers=1, progress=False)
    assert (grown.total, grown.skipped, grown.ran) == (9, 4, 5)
    assert grown.results.filter(pl.col("replication") < 2, pl.col("link.rate") < 3).drop(
        "link.fail").equals(frame.drop("link.fail"))
    with pytest.raises(TraceflowError, match="another scenario"):
        run_sweep(BASE, grid, out, base_seed=12, task=synthetic_run, progress=False)


# Real simulations: the ns-2 comparison dumbbell (10 NewReno flows), 20 simulated seconds at
# 20-50 Mb/s, about 0.05-0.4 s of wall time per run.
SIM_SETS = ["simulation.duration=20"]
SIM_GRID = ["topology.bottleneck.rate=2e7,3e7,4e7,5e7", "topology.bottleneck.queue.limit=20,100"]


@pytest.fixture(scope="module")
def dumbbell():
    """(base scenario, grid) of a real simulator sweep; skipped when the simulator is absent."""
    pytest.importorskip("traceflow.sim")
    from importlib.resources import files

    from traceflow.scale.sweep import load_scenario
    from traceflow.values import parse_value, set_dotted

    base, _ = load_scenario(files("traceflow.replays") / "dumbbell.toml")
    for item in SIM_SETS:
        key, _, value = item.partition("=")
        set_dotted(base, key, parse_value(value))
    return base, parse_grid(SIM_GRID)


def test_dask_cluster_survives_a_killed_worker(tmp_path, dumbbell):
    distributed = pytest.importorskip("distributed")
    base, grid = dumbbell
    out = tmp_path / "dask"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        killed, finished = {}, threading.Event()

        def kill_one_worker():
            try:
                while len(list((out / "cells").glob("*.parquet"))) < 2:
                    if finished.wait(0.01):
                        return
                pids = client.run(os.getpid)
                killed["done_before"] = len(list((out / "cells").glob("*.parquet")))
                killed["pid"] = sorted(pids.values())[0]
                os.kill(killed["pid"], signal.SIGKILL)
            except Exception as exc:  # noqa: BLE001 - reported by the assertion below
                killed["error"] = repr(exc)

        killer = threading.Thread(target=kill_one_worker)
        killer.start()
        try:
            result = run_sweep(base, grid, out, replications=2, executor="dask",
                               scheduler=cluster.scheduler_address, retries=0, progress=False)
        finally:
            finished.set()
            killer.join()
    assert "pid" in killed, killed
    assert killed["done_before"] < 16  # killed while cells were still pending
    assert [f["error"] for f in result.failed] == []
    assert (result.total, result.ran) == (16, 16)
    frame = pl.read_parquet(out / "results.parquet")
    assert frame.height == 16 and frame["cell"].n_unique() == 16
    assert len(list((out / "cells").glob("*.parquet"))) == 16
    assert frame["link_utilization"].is_between(0.3, 1.0).all()
    local = run_sweep(base, grid, tmp_path / "local", replications=2, workers=2, progress=False)
    assert local.results.equals(frame)


def _sweep_cmd(out, *extra):
    args = [sys.executable, "-P", "-m", "traceflow.cli.main", "sweep", "replays/dumbbell.toml",
            "--replications", "2", "-o", str(out), *extra]
    for item in SIM_SETS:
        args += ["--set", item]
    for item in SIM_GRID:
        args += ["--grid", item]
    return args


def test_sigint_then_rerun_finishes_only_missing_cells(tmp_path, dumbbell):
    out = tmp_path / "sweep"
    repo = TESTS.parents[1]
    # one worker: the 15 cells left after the first run one after another, which leaves the
    # signal seconds to arrive on a loaded machine (the rerun below uses two). SIGINT as a
    # terminal delivers it: an xdist worker ignores it, and an ignored SIGINT is inherited
    proc = subprocess.Popen(_sweep_cmd(out, "--workers", "1"), cwd=repo,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    while not list(out.glob("cells/*.parquet")) and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    done = len(list(out.glob("cells/*.parquet")))
    assert 1 <= done < 16
    assert not [p for p in out.rglob("*") if ".tmp" in p.name]
    assert len(list(out.glob("cells/*.json"))) == done  # no half-written cell
    rerun = subprocess.run(_sweep_cmd(out, "--workers", "2", "--json"), cwd=repo,
                           capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    summary = json.loads(rerun.stdout)
    assert (summary["skipped"], summary["ran"], summary["failed"]) == (done, 16 - done, [])
    frame = pl.read_parquet(out / "results.parquet")
    assert frame.height == 16 and frame["cell"].n_unique() == 16
    # The interrupted-and-resumed sweep equals an uninterrupted one.
    base, grid = dumbbell
    whole = run_sweep(base, grid, tmp_path / "whole", replications=2, workers=2, progress=False)
    assert whole.results.equals(frame)


def test_cli_sweep_and_errors(tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text('[simulation]\nseed = 3\nduration = 0.0\n[link]\nrate = 1\nbuffer = 5\n'
                        '[sweep]\ngrid = {"link.rate" = [1, 2]}\nreplications = 2\n')
    res = CliRunner().invoke(cli, ["sweep", str(scenario), "--task", "test_sweep:synthetic_run",
                                   "--set", "link.buffer=7", "--workers", "1",
                                   "-o", str(tmp_path / "out"), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["cells"] == 4
    frame = pl.read_parquet(tmp_path / "out" / "results.parquet")
    assert frame.height == 4 and frame["link.rate"].to_list() == [1, 1, 2, 2]
    repo = TESTS.parents[1]
    for args in (["--grid", "link.rate"],                                  # malformed grid
                 ["--grid", "topology.bottleneck.rat=1e6"]):              # unknown scenario key
        bad = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "sweep",
                              "replays/dumbbell.toml", *args, "-o", str(tmp_path / "bad")],
                             capture_output=True, text=True, cwd=repo)
        assert bad.returncode == 2, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr
        assert not (tmp_path / "bad").exists()

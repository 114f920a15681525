"""traceflow.scale.parallel: ordered maps on the local pool, inline and Dask; retries; dead workers;
many files into a partitioned Parquet dataset."""
import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from traceflow.errors import TraceflowError
from traceflow.scale.parallel import (TaskError, check_executor, expand_paths, iter_tasks, map_files,
                                map_tasks)


# Task functions live at module top level: worker processes import them by name.
def draw(seed):
    """A deterministic 'simulation': mean of 20k normal draws for this seed."""
    return float(np.random.default_rng(seed).normal(size=20_000).mean())


def fail_on_three(x):
    if x == 3:
        raise ValueError("three is bad")
    return x * 10


def flaky(args):
    """Fails on the first attempt (a marker file remembers attempts across processes)."""
    marker, value = args
    marker = Path(marker)
    if not marker.exists():
        marker.write_text("tried")
        raise RuntimeError("transient")
    return value


def die_once(args):
    """Kills its worker process on the first attempt: the pool breaks and must be rebuilt."""
    marker, value = args
    marker = Path(marker)
    if not marker.exists():
        marker.write_text("died")
        os._exit(17)
    return value


def record_pid_and_sleep(args):
    folder, seconds = args
    (Path(folder) / str(os.getpid())).write_text("")
    time.sleep(seconds)
    return seconds


def read_and_double(path):
    frame = pl.read_csv(path)
    return frame.with_columns((pl.col("x") * 2).alias("x2"))


def batches_of(path):
    frame = pl.read_csv(path)
    return (frame.slice(i, 2).to_arrow() for i in range(0, frame.height, 2))


def test_local_pool_matches_inline_in_input_order():
    seeds = list(range(12))
    expected = [draw(s) for s in seeds]
    assert map_tasks(draw, seeds, workers=1, progress=False) == expected
    assert map_tasks(draw, seeds, workers=2, progress=False) == expected


def test_failure_is_reported_with_its_index_and_others_still_finish():
    outcomes = sorted(iter_tasks(fail_on_three, range(6), workers=2, retries=1, progress=False),
                      key=lambda o: o.index)
    assert [o.ok for o in outcomes] == [True, True, True, False, True, True]
    assert [o.value for o in outcomes if o.ok] == [0, 10, 20, 40, 50]
    assert outcomes[3].error == "ValueError: three is bad"
    assert outcomes[3].attempts == 2
    assert "fail_on_three" in outcomes[3].traceback
    with pytest.raises(TaskError, match="task 3 failed"):
        map_tasks(fail_on_three, range(6), workers=2, progress=False)


@pytest.mark.parametrize("workers", [1, 2])
def test_retry_recovers_a_transient_failure(tmp_path, workers):
    items = [(tmp_path / f"m{i}", i) for i in range(4)]
    assert map_tasks(flaky, items, workers=workers, retries=1, progress=False) == [0, 1, 2, 3]
    with pytest.raises(TaskError, match="transient"):
        map_tasks(flaky, [(tmp_path / "fresh", 9)], workers=workers, retries=0, progress=False)


def always_die(x):
    os._exit(17)


def test_dead_worker_process_is_replaced_and_its_tasks_rerun(tmp_path):
    items = [(tmp_path / ("m" if i == 2 else f"never{i}"), i) for i in range(6)]
    for i in range(6):
        if i != 2:
            (tmp_path / f"never{i}").write_text("")  # only task 2 kills its worker
    # No retries needed: a worker's death is not counted against the tasks it took down.
    assert map_tasks(die_once, items, workers=2, progress=False) == list(range(6))
    with pytest.raises(TaskError, match="BrokenProcessPool"):
        map_tasks(always_die, [1, 2], workers=2, progress=False)


def _alive(pid):
    """Running (a zombie left unreaped by an init that does not reap counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return not stat.parent.parent.exists()  # no /proc: trust kill(pid, 0)


def test_workers_stop_when_their_parent_is_killed(tmp_path):
    code = ("import sys; from traceflow.scale.parallel import map_tasks; import test_parallel as t; "
            f"map_tasks(t.record_pid_and_sleep, [({str(tmp_path)!r}, 60)] * 2, workers=2)")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    parent = subprocess.Popen([sys.executable, "-P", "-c", code], env=env)
    deadline = time.monotonic() + 60
    while len(list(tmp_path.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = [int(p.name) for p in tmp_path.iterdir()]
    assert len(workers) == 2 and all(_alive(pid) for pid in workers)
    parent.send_signal(signal.SIGTERM)  # no cleanup runs in the parent
    parent.wait(timeout=30)
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers)


def test_dask_local_cluster_matches_local_pool():
    pytest.importorskip("distributed")
    seeds = list(range(8))
    assert (map_tasks(draw, seeds, executor="dask", workers=2, progress=False)
            == map_tasks(draw, seeds, workers=2, progress=False))


def test_bad_executor_options():
    with pytest.raises(TraceflowError, match="unknown executor"):
        check_executor("threads")
    with pytest.raises(TraceflowError, match="needs --executor dask"):
        check_executor("local", scheduler="tcp://localhost:8786")
    with pytest.raises(TraceflowError, match="at least 1"):
        check_executor("local", workers=0)


def _csv_files(root, sizes):
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, n in enumerate(sizes):
        path = root / f"f{i}.csv"
        pl.DataFrame({"x": list(range(i * 100, i * 100 + n))}).write_csv(path)
        paths.append(path)
    return paths


def test_map_files_writes_a_dataset_polars_scans_lazily(tmp_path):
    _csv_files(tmp_path / "in" / "sub", [3, 5, 4])
    out = tmp_path / "out"
    info = map_files(read_and_double, [tmp_path / "in"], out, patterns=("*.csv",),
                     source_column="source", workers=2, progress=False)
    assert info["rows"] == 12 and len(info["parts"]) == 3
    frame = pl.scan_parquet(out / "*.parquet").collect().sort("x")
    assert frame.height == 12
    assert (frame["x2"] == frame["x"] * 2).all()
    assert frame.group_by("source").len().sort("source")["len"].to_list() == [3, 5, 4]
    # A generator of batches streams into one part per file; a glob selects files.
    info = map_files(batches_of, str(tmp_path / "in" / "**" / "f[01].csv"), tmp_path / "b",
                     workers=1, progress=False)
    assert info["rows"] == 8
    assert pl.scan_parquet(tmp_path / "b" / "*.parquet").select(pl.len()).collect().item() == 8


def write_doubled(path, part):
    read_and_double(path).write_parquet(part)
    return {"source": path.name}


def test_map_files_with_a_writing_function(tmp_path):
    paths = _csv_files(tmp_path / "in", [2, 3])
    info = map_files(write_doubled, paths, tmp_path / "out", fn_writes=True, workers=2,
                     progress=False)
    assert info["rows"] == 5 and info["results"] == [{"source": "f0.csv"}, {"source": "f1.csv"}]
    frame = pl.scan_parquet(tmp_path / "out" / "*.parquet").collect()
    assert sorted(frame["x2"].to_list()) == [0, 2, 200, 202, 204]


def test_map_files_failure_leaves_no_output(tmp_path):
    paths = _csv_files(tmp_path / "in", [3, 3])
    paths[1].write_text("y\n1\n")  # no column x
    with pytest.raises(TraceflowError, match="f1.csv"):
        map_files(read_and_double, paths, tmp_path / "out", workers=2, progress=False)
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in"]


def test_expand_paths_errors(tmp_path):
    with pytest.raises(TraceflowError, match="no such file"):
        expand_paths([tmp_path / "absent.pcap"])
    with pytest.raises(TraceflowError, match="matches no files"):
        expand_paths([str(tmp_path / "*.pcap")])
    paths = _csv_files(tmp_path / "in", [1, 1])
    assert expand_paths([paths[0], tmp_path / "in"], patterns=("*.csv",)) == paths


def test_map_runs_simulates_each_scenario_in_order():
    pytest.importorskip("traceflow.sim")
    from importlib.resources import files

    from traceflow.scale.parallel import map_runs
    from traceflow.scale.sweep import load_scenario
    from traceflow.values import set_dotted

    base, _ = load_scenario(files("traceflow.replays") / "dumbbell.toml")
    set_dotted(base, "simulation.duration", 5.0)
    scenarios = []
    for rate in (2e6, 5e6, 1e7):
        scenario = copy.deepcopy(base)
        set_dotted(scenario, "topology.bottleneck.rate", rate)
        scenarios.append(scenario)
    pooled = map_runs(scenarios, workers=2, progress=False)
    inline = map_runs(scenarios, workers=1, progress=False)
    assert [s["bottleneck_rate_bps"] for s in pooled] == [2e6, 5e6, 1e7]
    for a, b in zip(pooled, inline):
        assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)

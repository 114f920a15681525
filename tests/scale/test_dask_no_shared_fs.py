"""Dask without a shared file system: workers send every part back and the client writes it.

Two workers run as separate ``dask worker`` processes, each in its own working and local
directory; the client runs the ``traceflow`` command from a third directory with relative paths.
As root the workers also get a private mount namespace in which the client's directory is an
empty tmpfs: a part written on a worker would vanish, and the test would fail."""
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "faults"))
from faultkit import traceflow, write_pcap  # noqa: E402

distributed = pytest.importorskip("distributed")


def _hide_from_workers(client_dir):
    """The prefix that runs a worker where ``client_dir`` is an empty tmpfs (root), or []."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return []
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode:
        return []
    return ["unshare", "-m", "--propagation", "private", "sh", "-c",
            f'mount -t tmpfs tmpfs "{client_dir}" && exec "$0" "$@"']


@pytest.fixture
def cluster(tmp_path):
    client_dir = tmp_path / "client"
    client_dir.mkdir()
    hide = _hide_from_workers(client_dir)
    scheduler = distributed.LocalCluster(n_workers=0, processes=True, dashboard_address=None,
                                         scheduler_port=0)
    workers = []
    for i in range(2):
        home = tmp_path / f"worker{i}"
        (home / "local").mkdir(parents=True)
        workers.append(subprocess.Popen(
            [*hide, sys.executable, "-m", "distributed.cli.dask_worker",
             scheduler.scheduler_address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
             "--local-directory", str(home / "local")],
            cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        (client_dir / "probe").mkdir()
        with distributed.Client(scheduler) as client:
            client.wait_for_workers(2, timeout=120)
            seen = client.run(os.path.isdir, str(client_dir / "probe"))
        (client_dir / "probe").rmdir()
        if hide:  # the workers really cannot see the client's directory
            assert not any(seen.values())
        yield scheduler.scheduler_address, client_dir
    finally:
        for w in workers:
            w.terminate()
        for w in workers:
            w.wait(timeout=30)
        scheduler.close()


def test_ingest_and_flows_datasets_written_by_the_client(cluster, tmp_path):
    address, client_dir = cluster
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for seed in (1, 2):
        write_pcap(inputs / f"trace{seed}.pcap", 2000, seed=seed)
    for command in ("ingest", "flows"):
        proc = traceflow(command, "../inputs", "--dataset", "-o", command, "--scheduler", address,
                         cwd=client_dir, timeout=300)
        assert proc.returncode == 0, proc.stderr
        local = traceflow(command, "../inputs", "--dataset", "-o", f"{command}-local",
                          "--workers", "1", cwd=client_dir, timeout=300)
        assert local.returncode == 0, local.stderr
        parts = sorted(p.name for p in (client_dir / command).iterdir())
        assert parts == sorted(p.name for p in (client_dir / f"{command}-local").iterdir())
        assert len(parts) == 2
        for name in parts:
            assert pl.read_parquet(client_dir / command / name).equals(
                pl.read_parquet(client_dir / f"{command}-local" / name))
    for worker in (tmp_path / "worker0", tmp_path / "worker1"):
        assert not list(worker.rglob("*.parquet"))  # nothing left on the workers' side

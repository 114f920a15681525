"""Nothing outlives its parent and nothing half-written survives a kill: SIGKILL an ingest mid-write
and rerun (no temporary left), SIGKILL a sweep's coordinator (its pool workers are gone within
2 s, even mid-simulation with the GIL held), signals reach the command through its guard."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faultkit import DUMBBELL, descendants, leftovers, running, write_pcap
from traceflow.atomic import atomic_path, remove_stale, temp_prefix

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")


def start(*args, cwd, env=None):
    env = {**{k: v for k, v in os.environ.items() if k != "TRACEFLOW_GUARD"}, **(env or {})}
    return subprocess.Popen([sys.executable, "-P", "-m", "traceflow.cli.main", *map(str, args)],
                            cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def wait_for(predicate, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if (value := predicate()):
            return value
        time.sleep(0.01)
    pytest.fail(f"timed out waiting for {what}")


def temps(directory):
    return [p for p in directory.iterdir() if ".tmp-" in p.name]


def written_temp(directory):
    """A temporary that already holds data (the kill lands mid-write)."""
    for p in temps(directory):
        files = [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file()]
        if any(f.stat().st_size > 0 for f in files):
            return p
    return None


@pytest.fixture(scope="module")
def big_capture(tmp_path_factory):
    return write_pcap(tmp_path_factory.mktemp("cap") / "big.pcap", 60_000)


@pytest.mark.parametrize("dataset", [False, True], ids=["file", "dataset"])
def test_sigkill_mid_write_then_rerun_leaves_no_temporary(dataset, big_capture, tmp_path):
    out = "ds" if dataset else "packets.parquet"
    # the dpkt decoder and small batches: slow enough to be caught mid-write
    args = ["ingest", big_capture, "-o", out, "--decoder", "dpkt", "--batch-size", "500"]
    args += ["--dataset", "--workers", "1"] if dataset else []
    proc = start(*args, cwd=tmp_path)
    stale = wait_for(lambda: written_temp(tmp_path), 60, "a temporary with data")
    killed = [proc.pid, *descendants(proc.pid)]
    os.killpg(proc.pid, signal.SIGKILL)  # the guard and the command at once: no cleanup runs
    proc.wait()
    # a killed process blocked in a write exits only when the write returns (seen on a loaded
    # machine): until then its temporary is rightly not stale
    wait_for(lambda: not any(running(pid) for pid in killed), 60, "the killed processes to exit")
    assert stale.exists() and not (tmp_path / out).exists()
    assert stale.name.startswith(f".{out}.tmp-")
    fast = [a for a in args if a not in ("--decoder", "dpkt")]  # the rerun need not be slow
    rerun = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", *map(str, fast)],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert temps(tmp_path) == []
    assert leftovers(tmp_path, keep=()) == sorted(
        [out] + ([f"{out}/{p.name}" for p in (tmp_path / out).iterdir()] if dataset else []))


def test_stale_temporaries_of_dead_processes_only_are_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    target = tmp_path / "out.parquet"
    (tmp_path / f".out.parquet.tmp-{dead}-abcd").write_text("left by a killed writer")
    (tmp_path / f".out.parquet.tmp-{dead}-dir").mkdir()
    live = tmp_path / f".out.parquet.tmp-{os.getppid()}-live"  # pytest's parent: alive
    live.write_text("being written")
    other = tmp_path / f".other.parquet.tmp-{dead}-abcd"  # another output's: not ours to touch
    other.write_text("")
    assert sorted(remove_stale(target)) == sorted([f".out.parquet.tmp-{dead}-abcd",
                                                   f".out.parquet.tmp-{dead}-dir"])
    with atomic_path(target) as tmp:
        assert tmp.name.startswith(temp_prefix(target)) and tmp.name.startswith(".out.parquet.tmp-")
        tmp.write_text("done")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [live.name, other.name, "out.parquet"])


def test_a_reused_pid_does_not_keep_a_stale_temporary(tmp_path):
    """A temporary last written before its pid's current process started is stale."""
    tmp = tmp_path / f".x.tmp-{os.getppid()}-abcd"  # a live pid
    tmp.write_text("")
    os.utime(tmp, (0, 0))  # written in 1970, long before any live process started
    assert remove_stale(tmp_path / "x") == [tmp.name]


def test_sweep_workers_die_within_2s_of_their_coordinator(tmp_path):
    """Both cells hold the GIL for ever (no watchdog thread of theirs can run); SIGKILL the
    coordinator, not the guard."""
    proc = start("sweep", DUMBBELL, "--grid", "tcp.cc=reno,newreno", "--workers", "2",
                 "--task", "faultkit:hold_the_gil", "-o", "sweep", cwd=tmp_path,
                 env={"PYTHONPATH": str(Path(__file__).parent)})
    everything = []
    try:
        def workers():
            found = [p for p in descendants(proc.pid) if "spawn_main" in _cmdline(p)]
            return found if len(found) == 2 and all(_busy(p) for p in found) else None

        pool = wait_for(workers, 120, "two simulating pool workers")
        coordinator = next(p for p in descendants(proc.pid) if "traceflow" in _cmdline(p)
                           and "spawn_main" not in _cmdline(p))
        everything += descendants(proc.pid)
        os.kill(coordinator, signal.SIGKILL)
        killed = time.monotonic()
        wait_for(lambda: not any(running(p) for p in everything), 2.0, "the workers to exit")
        assert time.monotonic() - killed < 2.0
        assert proc.wait(timeout=5) == -signal.SIGKILL  # the guard dies of the same signal
        assert set(pool) <= set(everything)
    finally:
        for pid in [proc.pid, *everything]:  # a failed run must not leave GIL hogs behind
            if running(pid):
                os.kill(pid, signal.SIGKILL)


def test_sigterm_to_the_command_reaches_it_through_the_guard(tmp_path):
    proc = start("simulate", DUMBBELL, "--set", "simulation.duration=3000", "-o", "run",
                 cwd=tmp_path)
    try:
        child = wait_for(lambda: [p for p in descendants(proc.pid) if _busy(p)], 60,
                         "the simulation")[0]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == -signal.SIGTERM
        wait_for(lambda: not running(child), 2.0, "the command to exit")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _busy(pid):
    """Whether ``pid`` has used more than 0.3 s of CPU (it is simulating)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") > 0.3

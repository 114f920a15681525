"""Every failure to write is one line naming the path the user typed, exit status 2, and leaves
nothing behind: full disk (a real full tmpfs, and a file-size limit), read-only file system, a
file where a directory should be, and memory running out (an address-space limit)."""
import errno
import resource

import pytest

from faultkit import (DUMBBELL, fill, leftovers, mount_tmpfs, one_error_line, traceflow,
                      umount, write_pcap)
from traceflow.atomic import atomic_dir, atomic_path
from traceflow.errors import OutputError, output_error

# (command, output as typed, relative to the test's working directory)
WRITERS = {
    "ingest": lambda cap, out: (["ingest", cap, "-o", f"{out}/p.parquet"], f"{out}/p.parquet"),
    "ingest-dataset": lambda cap, out: (["ingest", cap, "--dataset", "-o", f"{out}/ds"],
                                        f"{out}/ds"),
    "flows": lambda cap, out: (["flows", cap, "-o", f"{out}/f.parquet"], f"{out}/f.parquet"),
    "series": lambda cap, out: (["series", cap, "--bin", "10ms", "-o", f"{out}/s.parquet"],
                                f"{out}/s.parquet"),
    "fit": lambda cap, out: (["fit", cap, "-o", f"{out}/m.json"], f"{out}/m.json"),
    "simulate": lambda cap, out: (["simulate", DUMBBELL, "--set", "simulation.duration=0.5",
                                   "-o", f"{out}/run"], f"{out}/run"),
    "sweep": lambda cap, out: (["sweep", DUMBBELL, "--set", "simulation.duration=0.2",
                                "--grid", "tcp.cc=reno,newreno", "--workers", "1",
                                "-o", f"{out}/sweep"], f"{out}/sweep"),
}


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    """A capture whose tables are far larger than a full disk's last free byte."""
    return write_pcap(tmp_path_factory.mktemp("cap") / "trace.pcap", 3000)


@pytest.fixture
def full_disk(tmp_path):
    disk = mount_tmpfs(tmp_path / "full", "size=512k")
    fill(disk)
    yield disk
    umount(disk)


slow = pytest.mark.slow


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A model fitted to the bundled sample capture (real flows: replay has sizes to sample)."""
    from traceflow.datasets.registry import get

    path = tmp_path_factory.mktemp("model") / "model.json"
    capture = get("sample-sim-dumbbell").file_path("sim_dumbbell_a135.pcap.gz")
    assert traceflow("fit", capture, "-o", path).returncode == 0
    return path


@pytest.mark.parametrize("name", [*sorted(WRITERS), pytest.param("report", marks=slow),
                                  pytest.param("replay", marks=slow)])
def test_full_disk_is_one_line_and_leaves_nothing(name, capture, full_disk, tmp_path, request):
    if name == "report":
        args, typed = ["report", capture, "-o", "full/report"], "full/report"
    elif name == "replay":
        args = ["replay", request.getfixturevalue("model"), "--set", "simulation.duration=2",
                "-o", "full/run"]
        typed = "full/run"
    else:
        args, typed = WRITERS[name](capture, "full")
    proc = traceflow(*args, cwd=tmp_path)
    line = one_error_line(proc, typed)
    assert line.endswith("cannot write: no space left on device"), line
    # The sweep keeps its (empty) directory: it is where a rerun resumes.
    assert [p for p in leftovers(full_disk) if not (full_disk / p).is_dir()] == []
    if name != "sweep":
        assert leftovers(full_disk) == []


@pytest.mark.parametrize("name", ["ingest", "flows", pytest.param("fit", marks=slow)])
def test_file_size_limit_is_one_line(name, capture, tmp_path):
    args, typed = WRITERS[name](capture, "out")
    (tmp_path / "out").mkdir()
    proc = traceflow(*args, cwd=tmp_path, limits=[(resource.RLIMIT_FSIZE, 512)])
    assert one_error_line(proc, typed).endswith("file too large (file-size limit)")
    assert leftovers(tmp_path / "out") == []


@pytest.mark.parametrize("name", ["ingest", "simulate",
                                  pytest.param("ingest-dataset", marks=slow)])
def test_read_only_file_system(name, capture, tmp_path):
    ro = mount_tmpfs(tmp_path / "ro", "size=64k,ro")
    try:
        args, typed = WRITERS[name](capture, "ro")
        line = one_error_line(traceflow(*args, cwd=tmp_path), typed)
        assert line.endswith("read-only file system"), line
    finally:
        umount(ro)


@pytest.mark.parametrize("name", ["ingest", "ingest-dataset", "fit",
                                  pytest.param("simulate", marks=slow)])
def test_a_file_where_a_directory_should_be(name, capture, tmp_path):
    (tmp_path / "afile").write_text("not a directory\n")
    args, typed = WRITERS[name](capture, "afile")
    line = one_error_line(traceflow(*args, cwd=tmp_path), typed)
    assert line.endswith("cannot create: afile is not a directory"), line
    assert (tmp_path / "afile").read_text() == "not a directory\n"


#: address-space limits (MiB) at which each command runs out, each in another place (measured
#: on a 3000-packet capture, with the allocator options of :func:`traceflow.scale.memory.
#: one_arena`, which this test process's Polars import no longer keeps from the commands):
#: flows 300-420 loading Polars' binary, 450 a native allocation, 480 starting a thread; fit
#: 400 loading Arrow, 450-600 no room left for the Gaussian mixtures' BLAS buffers (mapped
#: first: :func:`traceflow.scale.memory.reserve_blas_buffer`). Not near 500-520 for flows nor
#: 650-775 for fit: there a command either completes or a native allocation fails, depending on
#: its threads' timing. Below ~270 MiB neither has room for BLAS, which is loaded first. Every
#: limit, every 6 MiB: test_out_of_memory.py (slow).
MEMORY_LIMITS = [pytest.param("flows", 300, marks=slow), ("flows", 400), ("flows", 450),
                 pytest.param("flows", 480, marks=slow),
                 ("fit", 400), ("fit", 500), pytest.param("fit", 600, marks=slow)]


@pytest.mark.parametrize("name,limit_mib", MEMORY_LIMITS)
def test_memory_limit_is_one_line_naming_what_ran_out(name, limit_mib, capture, tmp_path):
    """Never a hang (OpenBLAS retries a buffer it cannot map forever) nor a traceback: one line
    naming the command, exit status 2, no output left."""
    (tmp_path / "out").mkdir()
    args, typed = WRITERS[name](capture, "out")
    proc = traceflow(*args, cwd=tmp_path, limits=[(resource.RLIMIT_AS, limit_mib << 20)],
                     timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"traceflow: error: {name}: out of memory ("), lines[0]
    assert f"address-space limit (ulimit -v) {limit_mib} MiB" in lines[0]
    assert leftovers(tmp_path / "out") == []


def test_output_error_tells_output_failures_from_input_ones(tmp_path):
    temp = tmp_path / ".x.tmp-1-abc"
    full = OSError(errno.ENOSPC, "No space left on device")
    assert str(output_error(full, "x")) == "x: cannot write: no space left on device"
    arrow = OSError("Error writing bytes to file. Detail: [errno 122] Disk quota exceeded")
    assert str(output_error(arrow, "x")) == "x: cannot write: disk quota exceeded"
    rust = RuntimeError("parquet: underlying IO error: Read-only file system (os error 30)")
    assert str(output_error(rust, "x")) == "x: cannot write: read-only file system"
    missing_input = FileNotFoundError(errno.ENOENT, "No such file", "capture.pcap")
    assert output_error(missing_input, "x", temp) is None
    temp_gone = FileNotFoundError(errno.ENOENT, "No such file", str(temp))
    assert str(output_error(temp_gone, "x", temp)) == "x: cannot write: no such file or directory"


def test_atomic_outputs_raise_output_errors_naming_the_output(tmp_path):
    (tmp_path / "afile").write_text("")
    with pytest.raises(OutputError, match=r"^afile/out: cannot create: .*afile is not a dir"):
        with atomic_path(tmp_path / "afile" / "out", shown="afile/out"):
            pass
    with pytest.raises(OutputError, match=r"^run: cannot write: no space left on device$"):
        with atomic_dir(tmp_path / "run", shown="run"):
            raise OSError(errno.ENOSPC, "No space left on device")
    (tmp_path / "taken").mkdir()
    with pytest.raises(OutputError, match=r"^taken: cannot write: is a directory$"):
        with atomic_path(tmp_path / "taken", shown="taken") as tmp:
            tmp.write_text("x")
    assert leftovers(tmp_path) == ["afile", "taken"]


def test_a_spool_on_a_full_disk_is_an_output_error_and_leaves_nothing(tmp_path):
    """fit's spool (traceflow.scale.spool) in a full $TMPDIR: the error names the spool's
    directory and says what to do; closing it leaves no file behind."""
    import numpy as np
    import polars as pl

    from traceflow.scale.spool import Spool

    disk = mount_tmpfs(tmp_path / "full", "size=64k")
    try:
        spool = Spool(0, dir=disk)
        frame = pl.DataFrame({"v": np.arange(100_000)})
        with pytest.raises(OutputError, match="cannot keep temporary data: no space left on "
                                              r"device \(set TMPDIR"):
            for _ in range(10):
                spool.append("a", frame)
        spool.close()
        assert leftovers(disk) == []
    finally:
        umount(disk)

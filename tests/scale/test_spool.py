"""The spool of a long pass's per-connection results (traceflow.scale.spool): frames come back
as they went in, in memory or from disk; its files go when it does; a full disk is an
OutputError naming the spool's directory (a real full disk: tests/faults/test_output_errors.py)."""
import errno
import gc
import os

import numpy as np
import polars as pl
import pytest

from traceflow.errors import OutputError
from traceflow.scale.spool import Spool


def _frames():
    """Frames of mixed types, one of them empty: categories differ from frame to frame."""
    rng = np.random.default_rng(3)
    frames = [pl.DataFrame({
        "n": rng.integers(0, 1 << 40, 7),
        "x": pl.Series(rng.random(7)).set(pl.Series([False, True] + [False] * 5), None),
        "addr": pl.Series([f"10.0.{i}.{k}" for k in range(7)], dtype=pl.Categorical),
        "close": pl.Series(["FIN", "RST"] * 3 + ["EOF"], dtype=pl.Enum(["FIN", "RST", "EOF"])),
        "ok": [True, False] * 3 + [None],
        "t": pl.Series(range(7), dtype=pl.Datetime("ns")),
    }) for i in range(6)]
    frames.insert(2, frames[0].clear())
    return frames


@pytest.mark.parametrize("budget", [1 << 30, 600, 0], ids=["memory", "midway", "disk"])
def test_frames_come_back_in_order_with_their_schema(budget, tmp_path):
    spool = Spool(budget, dir=tmp_path)
    frames = _frames()
    for frame in frames:
        spool.append("flows", frame)
        spool.append("gaps", frame.select("x"))
    assert (spool.path is None) == (budget == 1 << 30)
    assert spool.count("flows") == len(frames) and spool.count("other") == 0
    back = list(spool.frames("flows"))
    assert [f.schema for f in back] == [f.schema for f in frames]
    assert all(a.equals(b) for a, b in zip(back, frames))
    assert spool.concat("flows").equals(pl.concat(frames))
    assert spool.concat("gaps").equals(pl.concat([f.select("x") for f in frames]))
    assert spool.concat("other") is None
    spool.drop("flows")
    assert spool.count("flows") == 0 and spool.count("gaps") == len(frames)
    spool.append("flows", frames[1])        # a dropped name starts again, beside the others
    assert spool.concat("flows").equals(frames[1])
    assert spool.concat("gaps").equals(pl.concat([f.select("x") for f in frames]))


def test_the_directory_goes_with_the_spool(tmp_path):
    closed = Spool(0, dir=tmp_path)
    closed.append("a", pl.DataFrame({"v": [1, 2]}))
    collected = Spool(0, dir=tmp_path)
    collected.append("a", pl.DataFrame({"v": [1, 2]}))
    assert len(os.listdir(tmp_path)) == 2
    closed.close()
    del collected
    gc.collect()
    assert os.listdir(tmp_path) == []


def test_a_full_disk_names_the_spool_and_says_what_to_do(tmp_path, monkeypatch):
    import pyarrow as pa

    def full(*args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    spool = Spool(0, dir=tmp_path)
    monkeypatch.setattr(pa, "OSFile", full)
    with pytest.raises(OutputError) as err:
        spool.append("a", pl.DataFrame({"v": [1]}))
    assert str(err.value) == (f"{spool.path}: cannot keep temporary data: no space left on "
                              f"device (set TMPDIR to a file system with room)")


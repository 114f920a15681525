"""Same scenario and seed, same bytes: two runs of ``traceflow simulate`` give identical run
directories, file for file, except ``timing.json`` (the one file the README names as
non-deterministic); a different seed changes them."""
import json

import pyarrow.parquet as pq

from faultkit import DUMBBELL, traceflow

ARGS = ["simulate", DUMBBELL, "--set", "simulation.duration=3", "--set",
        "topology.bottleneck.pcap=true"]


def test_two_runs_are_byte_identical_but_timing(tmp_path):
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        proc = traceflow(*ARGS, "--seed", seed, "-o", name, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    a, b, c = (tmp_path / n for n in "abc")
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir())
    assert "timing.json" in names and any(n.endswith(".pcap") for n in names)
    assert "wall_s" not in json.loads((a / "summary.json").read_text())
    assert json.loads((a / "timing.json").read_text())["wall_s"] > 0
    for name in names:
        if name != "timing.json":
            assert (a / name).read_bytes() == (b / name).read_bytes(), name
    # The Parquet footer names its writer and nothing about the run's time or host.
    meta = pq.read_metadata(a / "flows.parquet")
    assert meta.created_by.startswith("parquet-cpp-arrow")
    assert set(meta.metadata or {}) <= {b"ARROW:schema"}
    differ = [n for n in names if n not in ("timing.json", "links.parquet")
              and (a / n).read_bytes() != (c / n).read_bytes()]
    assert {"summary.json", "scenario.json", "flows.parquet"} <= set(differ)

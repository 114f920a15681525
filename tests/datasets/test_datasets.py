"""The dataset registry and ``traceflow datasets``."""
import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import SHARED

from traceflow.cli.main import cli
from traceflow.datasets import registry
from traceflow.errors import InputFormatError, TraceflowError


def test_registry_entries_are_complete():
    sets = registry.load_registry()
    names = [d.name for d in sets]
    assert "sample-sim-dumbbell" in names and "testbed-alpha1.35" in names
    for d in sets:
        assert d.description and d.provenance and d.licence and d.files
        for f in d.files:
            assert len(f.sha256) == 64 and f.size > 0
    bundled = [d for d in sets if d.bundled]
    assert bundled and all(d.present for d in bundled)
    # bundled samples stay small
    assert all(sum(f.size for f in d.files) < 2_000_000 for d in bundled)
    # external datasets are not inside the package
    for d in sets:
        if not d.bundled:
            assert registry.HERE not in d.root.parents


def test_bundled_samples_verify():
    for d in registry.load_registry():
        if d.bundled:
            assert {r["status"] for r in registry.verify(d)} == {"ok"}


def test_external_testbed_verifies_when_present(monkeypatch):
    # an installed package cannot find ../shared next to a checkout by itself: point it there
    monkeypatch.setenv("TRACEFLOW_SHARED", str(SHARED))
    d = registry.get("testbed-alpha1.35")
    if not d.present:
        pytest.skip(f"{SHARED}/datasets/testbed not present")
    rows = registry.verify(d)
    assert [r["status"] for r in rows] == ["ok"] * len(d.files)


def test_verify_detects_corruption(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.bin").write_bytes(b"hello")
    reg = tmp_path / "registry.toml"
    reg.write_text(f'''
[[dataset]]
name = "x"
description = "d"
provenance = "p"
licence = "CC0-1.0"
bundled = false
location = "{data}"
files = [{{ path = "a.bin", size = 5, sha256 = "{registry.sha256(data / 'a.bin')}" }},
         {{ path = "b.bin", size = 1, sha256 = "{'0' * 64}" }}]
''')
    (d,) = registry.load_registry(reg)
    assert [r["status"] for r in registry.verify(d)] == ["ok", "missing"]
    (data / "a.bin").write_bytes(b"hellO")
    assert registry.verify(d)[0]["status"] == "sha256"
    (data / "a.bin").write_bytes(b"hello!")
    assert registry.verify(d)[0]["status"] == "size"


def test_malformed_registry(tmp_path):
    reg = tmp_path / "r.toml"
    reg.write_text('[[dataset]]\nname = "x"\ncolour = 1\n')
    with pytest.raises(InputFormatError, match="colour"):
        registry.load_registry(reg)
    reg.write_text('[[dataset]]\nname = "x"\n')
    with pytest.raises(InputFormatError, match="missing"):
        registry.load_registry(reg)
    with pytest.raises(TraceflowError, match="unknown dataset"):
        registry.get("nope")


def test_cli_list_verify_path():
    r = CliRunner().invoke(cli, ["datasets", "list", "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert any(x["name"] == "sample-sim-dumbbell" and x["bundled"] for x in rows)
    r = CliRunner().invoke(cli, ["datasets", "list"])
    assert "external, not bundled" in r.output
    r = CliRunner().invoke(cli, ["datasets", "verify", "sample-sim-dumbbell"])
    assert r.exit_code == 0 and r.output.startswith("ok")
    r = CliRunner().invoke(cli, ["datasets", "path", "sample-sim-dumbbell", "sim_dumbbell_a135.pcap.gz"])
    assert r.exit_code == 0 and r.output.strip().endswith("samples/sim_dumbbell_a135.pcap.gz")


def test_cli_unknown_dataset_is_one_line_error():
    p = subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", "datasets", "path", "nope"],
                       capture_output=True, text=True)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_bundled_sample_is_what_the_simulator_makes(tmp_path):
    """The demo's sample is reproducible: rerunning its stored scenario gives the same capture
    byte for byte (a simulator change that alters it must regenerate it: make_samples.py)."""
    import gzip
    from importlib.resources import files

    from traceflow.sim import run

    samples = files("traceflow.datasets") / "samples"
    run(samples / "sim_dumbbell_a135.toml", pcap_dir=tmp_path)
    bundled = gzip.decompress((samples / "sim_dumbbell_a135.pcap.gz").read_bytes())
    assert (tmp_path / "g1-g2.pcap").read_bytes() == bundled

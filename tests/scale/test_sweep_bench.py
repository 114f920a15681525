"""benchmarks/run_all.py: one table, whatever the benchmark modules do."""
import json
import subprocess
import sys
from pathlib import Path

RUN_ALL = Path(__file__).resolve().parents[2] / "benchmarks" / "run_all.py"

MODULES = {
    "bench_good.py": '''
def run(quick=False):
    print("progress chatter")
    return [{"benchmark": "good", "ours": 2.0, "reference": 1.0, "unit": "x/s", "ratio": 2.0,
             "target": ">= 1.5", "ok": True},
            {"benchmark": "slow", "ours": 1.0, "reference": 1.0, "unit": "x/s", "ratio": 1.0,
             "target": ">= 1.5", "ok": False}]
''',
    "bench_crash.py": "def run(quick=False):\n    raise RuntimeError('boom')\n",
    "bench_oracle.py": "import no_such_oracle_module\n\ndef run(quick=False):\n    return []\n",
    "bench_partial.py": "def run(quick=False):\n    return [{'benchmark': 'half', 'ours': 1.0}]\n",
}


def _run(tmp_path, *args):
    for name, text in MODULES.items():
        (tmp_path / name).write_text(text)
    return subprocess.run([sys.executable, str(RUN_ALL), "--dir", str(tmp_path), "--quick",
                           "--json", str(tmp_path / "rows.json"), *args],
                          capture_output=True, text=True, timeout=120)


def test_one_table_with_a_row_per_failure(tmp_path):
    proc = _run(tmp_path)
    assert proc.returncode == 1  # a benchmark crashed
    lines = proc.stdout.strip().splitlines()
    assert lines[0].split()[:7] == ["benchmark", "ours", "reference", "unit", "ratio", "target",
                                    "ok"]
    assert "progress chatter" not in proc.stdout and "progress chatter" in proc.stderr
    rows = {r["benchmark"]: r for r in json.loads((tmp_path / "rows.json").read_text())}
    assert rows["good"]["status"] == "ok" and rows["good"]["ratio"] == 2.0
    assert rows["slow"]["status"] == "MISS"
    assert rows["crash"]["status"] == "ERROR" and "boom" in rows["crash"]["note"]
    assert rows["oracle"]["status"] == "SKIP" and "no_such_oracle_module" in rows["oracle"]["note"]
    assert rows["half"]["status"] == "ERROR" and "lacks" in rows["half"]["note"]
    assert len(lines) == 2 + len(rows)


def test_only_and_strict(tmp_path):
    assert _run(tmp_path, "--only", "good").returncode == 0
    assert _run(tmp_path, "--only", "good", "--strict").returncode == 1

"""The command-line surface: version, help on every command, one-line errors with exit code 2."""
import subprocess
import sys

import pytest
from click.testing import CliRunner

from traceflow import __version__
from traceflow.cli.main import COMMANDS, cli


def run_cli(*args):
    return subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", *args],
                          capture_output=True, text=True, timeout=120)


def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"traceflow, version {__version__}"


def test_top_level_help_lists_every_command():
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        assert name in result.output


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help(name):
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Usage: cli {name}") or f" {name} " in result.output.splitlines()[0]


def _assert_one_line_error(proc):
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("traceflow: error:")
    assert "Traceback" not in proc.stderr


def test_unknown_command_is_one_line_usage_error():
    _assert_one_line_error(run_cli("no-such-command"))


def test_missing_input_file_is_one_line_error(tmp_path):
    _assert_one_line_error(run_cli("flows", str(tmp_path / "absent.pcap"), "-o", str(tmp_path / "f.parquet")))
    assert not (tmp_path / "f.parquet").exists()


def test_garbage_capture_is_one_line_error(tmp_path):
    bad = tmp_path / "garbage.pcap"
    bad.write_bytes(b"this is not a capture file at all" * 10)
    out = tmp_path / "p.parquet"
    proc = run_cli("ingest", str(bad), "-o", str(out))
    _assert_one_line_error(proc)
    assert str(bad) in proc.stderr
    assert not out.exists()
    assert not list(tmp_path.glob(".p.parquet*"))

"""`traceflow testbed` from the command line: refusals, and a clean stop on Ctrl-C."""
import os
import signal
import subprocess
import sys
import time

import pytest
from testbed_checks import require_testbed

from traceflow.cli.main import main


def run_main(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(["testbed", *args])
    return exc.value.code, capsys.readouterr().err


def test_without_root_one_line_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(sys, "platform", "linux")
    code, err = run_main(capsys, str(tmp_path / "out"), "--duration", "1s")
    assert code == 2
    assert err.count("\n") == 1 and "testbed needs root" in err
    assert not (tmp_path / "out").exists()


def test_not_linux_one_line_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    code, err = run_main(capsys, str(tmp_path / "out"))
    assert code == 2 and err.count("\n") == 1 and "needs Linux" in err


@pytest.mark.parametrize("option,value,message", [
    ("--buffer", "12000", "bytes like 12000B or packets like 40p"),
    ("--rate", "fast", "bad rate 'fast'"),
    ("--rtt", "10parsecs", "bad duration"),
])
def test_bad_values_one_line_exit_2(tmp_path, capsys, option, value, message):
    code, err = run_main(capsys, str(tmp_path / "out"), option, value)
    assert code == 2 and err.count("\n") == 1 and message in err


def _namespaces():
    return set(subprocess.run(["ip", "netns", "list"], capture_output=True,
                              text=True).stdout.split())


def test_ctrl_c_removes_namespaces_processes_and_output(tmp_path):
    require_testbed()
    before = _namespaces()
    proc = subprocess.Popen([sys.executable, "-P", "-m", "traceflow.cli.main", "testbed",
                             str(tmp_path / "out"), "--rtt", "10ms,60ms", "--clients", "4",
                             "--duration", "60s"], stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    # the command runs in a child of the `traceflow` guard process (cli/guard.py)
    while time.time() < deadline and not _children(proc.pid) and proc.poll() is None:
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()[1]
    command = int(_children(proc.pid)[0])
    while time.time() < deadline and not _children(command, "traceflow.testbed.client"):
        time.sleep(0.2)
    children = _children(command)
    ours = {ns for ns in _namespaces() - before if ns.startswith(f"tf{command}")}
    # 2 relays, 2 tcpdumps, server, clients, and a spinner per CPU (traceflow/testbed/awake.py)
    assert len(ours) == 3 and len(children) == 6 + len(os.sched_getaffinity(0))
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted by SIGINT" in err and err.count("\n") == 1
    assert not (ours & _namespaces())
    assert list(tmp_path.iterdir()) == []                # neither the output nor its temp dir
    assert not [pid for pid in children if os.path.exists(f"/proc/{pid}")]


def _children(pid, pattern=None):
    args = ["pgrep", "-P", str(pid)] + (["-f", pattern] if pattern else [])
    return subprocess.run(args, capture_output=True, text=True).stdout.split()

"""Helpers of the fault tests: run the real ``traceflow`` command (under its guard), make small
captures, mount small or read-only file systems, list what a command left behind."""
import errno
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DUMBBELL = REPO / "replays" / "dumbbell.toml"


def traceflow(*args, cwd=None, limits=(), timeout=180, **kwargs):
    """Run ``traceflow ARGS`` as a user would (a new process, the guard on); ``limits`` are
    ``(resource.RLIMIT_*, bytes)`` pairs applied to it."""
    def apply_limits():
        import resource

        for which, value in limits:
            resource.setrlimit(which, (value, value))

    env = {k: v for k, v in os.environ.items() if k != "TRACEFLOW_GUARD"}
    return subprocess.run([sys.executable, "-P", "-m", "traceflow.cli.main", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env,
                          preexec_fn=apply_limits if limits else None, **kwargs)


def one_error_line(proc, typed):
    """Assert the contract: exit 2, stderr is one line naming ``typed`` (the user's path) and no
    hidden temporary, no traceback. Returns the line."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith(f"traceflow: error: {typed}"), line
    assert ".tmp" not in line and "Traceback" not in proc.stderr
    return line


def write_pcap(path, packets, seed=1):
    """A valid Ethernet/IPv4/TCP pcap: 64 connections opened by a handshake, ``packets`` data
    segments of random sizes at Poisson times among them, each closed by FINs both ways (enough
    variety for every analysis, fit included)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    t_us = 10_000 + np.cumsum(rng.exponential(2000.0, packets)).astype(np.int64)
    sizes = rng.integers(0, 1400, packets)
    seq = [1000] * 64
    events = []  # (time µs, connection, client to server, seq, ack, flags, payload)
    for conn in range(64):
        events += [(10 * conn, conn, True, 999, 0, 0x02, 0),
                   (10 * conn + 3, conn, False, 0, 1000, 0x12, 0),
                   (10 * conn + 6, conn, True, 1000, 1, 0x10, 0)]
    for i in range(packets):
        conn, payload = i % 64 if rng.random() < 0.5 else int(rng.integers(0, 8)), int(sizes[i])
        events.append((int(t_us[i]), conn, True, seq[conn], 1, 0x18, payload))
        seq[conn] += payload
    end = int(t_us[-1]) + 1000
    for conn in range(64):
        events += [(end + 10 * conn, conn, True, seq[conn], 1, 0x11, 0),
                   (end + 10 * conn + 3, conn, False, 1, seq[conn] + 1, 0x11, 0),
                   (end + 10 * conn + 6, conn, True, seq[conn] + 1, 2, 0x10, 0)]
    records = []
    for i, (t, conn, up, sq, ack, flags, payload) in enumerate(sorted(events)):
        ports = (40000 + conn, 80) if up else (80, 40000 + conn)
        tcp = struct.pack("!HHIIBBHHH", *ports, sq, ack, 0x50, flags, 65535, 0, 0)
        client, server = bytes([10, 0, 0, 1 + conn % 4]), bytes([10, 0, 1, 1])
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + payload, i & 0xFFFF, 0, 64,
                         6, 0, *((client, server) if up else (server, client)))
        frame = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + tcp + b"x" * payload
        records.append(struct.pack("<IIII", t // 10**6, t % 10**6, len(frame), len(frame))
                       + frame)
    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    Path(path).write_bytes(header + b"".join(records))
    return Path(path)


def mount_tmpfs(where, options):
    """Mount a tmpfs on ``where`` (root only), or skip the test."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small or read-only tmpfs needs root and mount(8)")
    where.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                          capture_output=True, text=True)
    if proc.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    return where


def umount(where):
    subprocess.run(["umount", "-l", str(where)], check=False)


def fill(directory):
    """Fill the file system of ``directory`` to the last byte (one file, ``filler``)."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT)
    block = b"\0" * 4096
    try:
        while True:
            os.write(fd, block)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


def leftovers(directory, keep=("filler",)):
    """Every file and directory under ``directory`` but ``keep``."""
    return sorted(str(p.relative_to(directory)) for p in Path(directory).rglob("*")
                  if p.name not in keep)


def descendants(pid):
    """The pids of every live descendant of ``pid`` (Linux /proc)."""
    children = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def running(pid):
    """Whether ``pid`` exists and has not exited (a zombie has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def hold_the_gil(scenario):
    """A sweep task that never lets another thread of its process run: one regular-expression
    match of exponential cost (the re module keeps the GIL for the whole match)."""
    import re

    return {"matched": bool(re.fullmatch(r"(a+)+", "a" * 64 + "!"))}

"""Benchmark: pcap → flows.parquet against ``tshark -q -z conv,tcp`` on the same file.

The largest testbed capture is decompressed once (not timed); then, side by side:

- processing time: our library call (read_packets + flows + write Parquet, in this process)
  against tshark's time minus its fixed start-up cost (tshark on a header-only pcap), as wall
  time and as CPU time (all threads; steadier on a shared, loaded machine), best of the runs,
  target ≥ 10x faster;
- end to end: ``traceflow flows FILE -o OUT`` as a subprocess (interpreter start and imports
  included) against the plain tshark run;
- peak resident memory of those two subprocesses (``wait4`` rusage), target: no more than tshark;
- ``traceflow flows FILE --workers 2`` against ``--workers 1`` on time-shifted copies of the
  capture holding at least 10 M packets (``scaled_capture.py``; issue 48), interleaved, best
  of the runs: CPU time of the whole process tree (target <= 1.15x of one worker: what cutting
  the capture into record ranges costs) and wall time (target <= 0.8x); the same for
  ``traceflow series`` and ``traceflow fit`` (its split is still hash partitions: target
  <= 1.25x CPU). Each wall row notes how many cores one worker keeps busy already.
  ``TRACEFLOW_BENCH_ONLY=flows,series`` runs those commands only.

Run alone: ``python benchmarks/bench_flows.py [--quick]``.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import run_child

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TRACEFLOW_SHARED", REPO.parent / "shared"))
TESTBED = SHARED / "datasets" / "testbed"


def _child(cmd):
    """Run ``cmd``; return (wall seconds, CPU seconds, peak RSS in MB) of that child alone."""
    elapsed, cpu, peak, code = run_child(cmd)
    if code != 0:
        raise RuntimeError(f"{cmd[0]} failed with exit code {code}")
    return elapsed, cpu, peak


def _ours(pcap, out):
    """pcap → flows.parquet in this process: (wall seconds, CPU seconds of all threads)."""
    from traceflow.flows import flows
    from traceflow.pcap.reader import read_packets

    start, cpu = time.perf_counter(), time.process_time()
    flows(read_packets(pcap)).write_parquet(out)
    return time.perf_counter() - start, time.process_time() - cpu


#: packets of the capture the --workers rows split (issue 48: at least 10 M)
WORKERS_PACKETS = 10_000_000


def _workers(source, tmp, repeats):
    """Best (wall, CPU) seconds of ``flows``, ``series`` and ``fit`` with ``--workers 1`` and
    ``--workers 2`` on copies of ``source`` holding at least :data:`WORKERS_PACKETS` packets:
    ``({command: [(wall, CPU) at 1, at 2]}, copies)``."""
    from scaled_capture import read_capture

    copies = -(-WORKERS_PACKETS // len(read_capture(source)[1]))
    big = tmp / f"x{copies}.pcap"
    subprocess.run([sys.executable, str(Path(__file__).with_name("scaled_capture.py")),
                    str(source), str(big), "--copies", str(copies)], check=True,
                   stdout=subprocess.DEVNULL)
    commands = {"flows": ([], "parquet"), "series": (["--bin", "1ms"], "parquet"),
                "fit": ([], "json")}
    only = os.environ.get("TRACEFLOW_BENCH_ONLY")
    if only:
        commands = {c: v for c, v in commands.items() if c in only.split(",")}
    runs = {(c, n): [] for c in commands for n in (1, 2)}
    for _ in range(repeats):
        for (command, n), got in runs.items():
            extra, suffix = commands[command]
            got.append(_child([sys.executable, "-P", "-m", "traceflow.cli.main", command,
                               str(big), *extra, "-o", str(tmp / f"{command}{n}.{suffix}"),
                               "--workers", str(n)])[:2])
    big.unlink()
    return {c: [(min(r[0] for r in runs[c, n]), min(r[1] for r in runs[c, n])) for n in (1, 2)]
            for c in commands}, copies


def _largest_capture():
    captures = sorted(TESTBED.glob("*/*.pcap.gz"), key=lambda p: p.stat().st_size)
    return captures[-1] if captures else None


def _row(name, ours, reference, unit, ratio, target, ok):
    return {"benchmark": name, "ours": ours, "reference": reference, "unit": unit,
            "ratio": ratio, "target": target, "ok": bool(ok)}


def run(quick=False):
    source = _largest_capture()
    if source is None:
        print(f"bench_flows: no testbed capture under {TESTBED}; skipped", file=sys.stderr)
        return []
    tshark = shutil.which("tshark")
    if tshark is None:
        print("bench_flows: tshark not on PATH; comparison rows skipped", file=sys.stderr)
        return []
    import gzip

    repeats = 2 if quick else 4
    with tempfile.TemporaryDirectory(prefix="bench_flows.") as tmp:
        tmp = Path(tmp)
        pcap = tmp / source.name.removesuffix(".gz")
        with gzip.open(source, "rb") as src, open(pcap, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        empty = tmp / "header_only.pcap"
        with open(pcap, "rb") as f:
            empty.write_bytes(f.read(24))      # the pcap file header alone
        label = f"{source.parent.name}/{pcap.name}"
        ts_cmd = [tshark, "-q", "-z", "conv,tcp", "-r"]
        cli_cmd = [sys.executable, "-P", "-m", "traceflow.cli.main", "flows", str(pcap), "-o",
                   str(tmp / "cli.parquet")]
        ours, tshark_runs, startup, cli = [], [], [], []
        for i in range(repeats):               # interleaved, so both see the same machine load
            ours.append(_ours(pcap, tmp / "flows.parquet"))
            startup.append(_child([*ts_cmd, str(empty)]))
            if i < max(1, repeats // 2):
                tshark_runs.append(_child([*ts_cmd, str(pcap)]))
                cli.append(_child(cli_cmd))
        workers, copies = _workers(source, tmp, max(1, repeats // 2))

    ours_s, ours_cpu = min(t for t, _ in ours), min(c for _, c in ours)
    ts_s, ts_cpu = min(r[0] for r in tshark_runs), min(r[1] for r in tshark_runs)
    start_s, start_cpu = min(r[0] for r in startup), min(r[1] for r in startup)
    work, work_cpu = max(ts_s - start_s, 1e-9), max(ts_cpu - start_cpu, 1e-9)
    cli_s = min(r[0] for r in cli)
    cli_rss, ts_rss = max(r[2] for r in cli), max(r[2] for r in tshark_runs)
    print(f"bench_flows: {label}: ours {ours_s:.3f} s ({ours_cpu:.3f} s CPU), tshark {ts_s:.3f} s "
          f"({ts_cpu:.3f} s CPU; start-up {start_s:.3f} s)", file=sys.stderr)
    target = ">= 10x faster than tshark -z conv,tcp"
    rows = []
    cores = len(os.sched_getaffinity(0))
    for command, ((one_s, one_cpu), (two_s, two_cpu)) in workers.items():
        name = f"{command} {label} x{copies}: --workers 2 vs 1"
        wall = _row(f"{name}, wall", two_s, one_s, "s", two_s / one_s,
                    "<= 0.8x" if command != "fit" else "-",
                    two_s / one_s <= 0.8 or command == "fit")
        # one worker already runs threads (decode beside split)
        wall["note"] = f"one worker keeps {one_cpu / one_s:.2f} cores busy ({cores} cores)"
        bound = 1.25 if command == "fit" else 1.15
        rows += [wall,
                 _row(f"{name}, CPU (all processes)", two_cpu, one_cpu, "s",
                      two_cpu / one_cpu, f"<= {bound}x", two_cpu / one_cpu <= bound)]
    return [
        *rows,
        _row(f"flows {label}: pcap -> flows.parquet, wall", ours_s, work, "s", work / ours_s,
             target, work / ours_s >= 10),
        _row(f"flows {label}: pcap -> flows.parquet, CPU", ours_cpu, work_cpu, "s",
             work_cpu / ours_cpu, target, work_cpu / ours_cpu >= 10),
        _row(f"flows {label}: CLI end to end (with start-up), wall", cli_s, ts_s, "s",
             ts_s / cli_s, ">= 2x faster than tshark", ts_s / cli_s >= 2),
        _row(f"flows {label}: peak RSS of the CLI", cli_rss, ts_rss, "MB", ts_rss / cli_rss,
             "<= tshark's peak RSS", cli_rss <= ts_rss),
    ]


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(f"{row['benchmark']}: ours {row['ours']:.3f} {row['unit']}, reference "
              f"{row['reference']:.3f} {row['unit']}, ratio {row['ratio']:.1f} "
              f"(target {row['target']}) {'OK' if row['ok'] else 'MISSED'}"
              + (f"; {row['note']}" if row.get("note") else ""))

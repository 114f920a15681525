"""Benchmark: peak memory and speed of the analytics as the capture grows (issue 17).

From ``../shared/datasets/testbed/dev10m`` (server side, a real 10 Mbit/s capture) it builds 1x,
4x and 16x captures by time- and address-shifted copies (``scaled_capture.py``; never more
concurrent connections than at 1x), then runs ``traceflow flows``, ``rtt``, ``series`` and
``fit`` on each as subprocesses and reports, side by side in one run, each command's peak RSS
(``wait4`` rusage) at 16x against its peak at 1x (target <= 1.3x and <= 1 GB) and ``fit``'s
packet rate (target >= 1 M packets/s), and every command's packet rate. ``TRACEFLOW_BENCH_64X=1``
adds a 64x capture (~4.5 GB, generated on the fly and deleted) that every command must complete;
it takes several minutes, so it is opt-in. ``TRACEFLOW_BENCH_COMMANDS=fit,flows`` measures only
those commands. A command running longer than
``TRACEFLOW_BENCH_TIMEOUT`` seconds (default 900) is killed and reported as such. The issue's
table (peak RSS and wall time per command and scale) is printed on stderr as Markdown.

Each command runs ``TRACEFLOW_BENCH_REPEATS`` times (default 3) at every scale up to 16x, and the
median peak RSS and median wall time are reported, with the range of the peaks: one run's peak
moves by up to ~30 MB between identical runs at 1x (thread timing decides how many batches are in
flight when the last connections are finished), which is as much as the 1.3x criterion's margin.

Run alone: ``python benchmarks/bench_memory.py [--quick]`` (quick: 1x and 2x).
"""
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import run_child

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TRACEFLOW_SHARED", REPO.parent / "shared"))
SOURCE = SHARED / "datasets" / "testbed" / "dev10m" / "server_side.pcap.gz"
GB = 1024.0


NAMES = ("flows", "rtt", "series", "fit")


def selected():
    """The commands to measure (``TRACEFLOW_BENCH_COMMANDS``, default all)."""
    names = os.environ.get("TRACEFLOW_BENCH_COMMANDS")
    return [n for n in NAMES if n in names.split(",")] if names else list(NAMES)


def commands(capture, out):
    """The measured commands on ``capture`` (outputs under ``out``)."""
    tf = [sys.executable, "-m", "traceflow.cli.main"]
    every = {
        "flows": [*tf, "flows", str(capture), "-o", str(out / "flows.parquet")],
        "rtt": [*tf, "rtt", str(capture), "--json"],
        "series": [*tf, "series", str(capture), "--bin", "10ms", "-o", str(out / "series.parquet")],
        "fit": [*tf, "fit", str(capture), "-o", str(out / "model.json")],
    }
    return {name: every[name] for name in selected()}


def measure(cmd, timeout):
    """(wall seconds, peak RSS in MB, exit code) of one child process (killed after ``timeout``
    seconds: exit code -9)."""
    elapsed, _, peak, code = run_child(cmd, timeout)
    return elapsed, peak, code


def _packets(capture):
    with open(capture, "rb") as f:
        f.seek(24)
        n = 0
        while header := f.read(16):
            f.seek(int.from_bytes(header[8:12], "little"), 1)
            n += 1
    return n


def _row(name, ours, reference, unit, ratio, target, ok, note=""):
    return {"benchmark": name, "ours": ours, "reference": reference, "unit": unit,
            "ratio": ratio, "target": target, "ok": bool(ok), "note": note}


def run(quick=False):
    if not SOURCE.exists():
        raise FileNotFoundError(SOURCE)
    scales = (1, 2) if quick else (1, 4, 16)
    if os.environ.get("TRACEFLOW_BENCH_64X") and not quick:
        scales = (*scales, 64)
    results = {}
    timeout = float(os.environ.get("TRACEFLOW_BENCH_TIMEOUT", 900))
    repeats = int(os.environ.get("TRACEFLOW_BENCH_REPEATS", 3))
    with tempfile.TemporaryDirectory(prefix="tf-bench-mem-") as tmp:
        tmp = Path(tmp)
        for scale in scales:
            capture = tmp / f"x{scale}.pcap"
            # in a child: a forked child starts with its parent's resident set, which would
            # count in every command's peak RSS if the copies were built in this process
            subprocess.run([sys.executable, str(Path(__file__).with_name("scaled_capture.py")),
                            str(SOURCE), str(capture), "--copies", str(scale)], check=True,
                           stdout=subprocess.DEVNULL)
            packets = _packets(capture)
            for name, cmd in commands(capture, tmp).items():
                runs = [measure(cmd, timeout) for _ in range(repeats if scale <= 16 else 1)]
                walls, peaks, rcs = zip(*runs)
                results[name, scale] = (statistics.median(walls), statistics.median(peaks),
                                        max(rcs, key=abs), packets, (min(peaks), max(peaks)))
                print(f"{name} {scale}x: " + ", ".join(f"{w:.1f} s {r:.0f} MB rc {c}"
                                                       for w, r, c in runs), file=sys.stderr)
            capture.unlink()
    rows = []
    top = max(s for s in scales if s <= 16)
    for name in selected():
        w1, r1, c1, _, span1 = results[name, 1]
        wt, rt, ct, _, spant = results[name, top]
        ok = c1 == 0 and ct == 0 and rt <= 1.3 * r1 and rt <= GB
        rows.append(_row(f"{name} peak RSS {top}x vs 1x (medians)", rt, r1, "MB", rt / r1,
                         "<= 1.3 and <= 1 GB", ok,
                         f"rc {c1}/{ct}; peaks 1x {span1[0]:.0f}-{span1[1]:.0f}, "
                         f"{top}x {spant[0]:.0f}-{spant[1]:.0f} MB"))
        if 64 in scales:
            w64, r64, c64, _, _ = results[name, 64]
            rows.append(_row(f"{name} at 64x completes", r64, r1, "MB", r64 / r1, "rc 0",
                             c64 == 0, f"{w64:.0f} s"))
    for name in selected():
        wall, _, rc, packets, _ = results[name, top]
        rate = packets / wall / 1e6
        target = ">= 1" if name == "fit" else "-"
        rows.append(_row(f"{name} packet rate at {top}x", rate, 1.0, "M pkt/s", rate, target,
                         rc == 0 and (rate >= 1.0 or name != "fit"),
                         "whole process, imports included"))
    print(markdown(results, scales), file=sys.stderr)
    return rows


def markdown(results, scales):
    """The issue's table: peak RSS and wall time of every command at every scale."""
    top = max(s for s in scales if s <= 16)
    lines = ["| command | " + " | ".join(f"{s}x" for s in scales) + f" | {top}x/1x RSS |",
             "|---" * (len(scales) + 2) + "|"]
    for name in selected():
        cells = []
        for scale in scales:
            wall, rss, rc, packets, (lo, hi) = results[name, scale]
            note = "" if rc == 0 else (" killed" if rc == -9 else f" rc {rc}")
            spread = f" ({lo:.0f}-{hi:.0f})" if hi > lo else ""
            cells.append(f"{rss:.0f} MB{spread}, {wall:.1f} s ({packets / wall / 1e6:.2f} M pkt/s)"
                         f"{note}")
        ratio = results[name, top][1] / results[name, 1][1]
        lines.append(f"| `{name}` | " + " | ".join(cells) + f" | {ratio:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    from run_all import format_table

    print(format_table(run(quick="--quick" in sys.argv)))

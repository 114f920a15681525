"""Run traceflow's Cython extensions under AddressSanitizer: ``python tests/fuzz/asan.py``.

Builds the decoder, the flow splitter and the simulator with ``-fsanitize=address`` (gcc; clang
when gcc is absent) into a scratch directory, then re-runs itself with the ASan runtime preloaded
into Python and the rebuilt modules loaded in place of the installed ones, and feeds them: every
capture of ``../shared/datasets/formats`` (when present), the fuzz corpus and crash inputs (both
error modes, and chunked decoding of uncompressed captures), the flow table of each, and a short
simulation writing a pcap. ASan aborts on the first invalid access; otherwise one line of counts.
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FORMATS = Path(os.environ.get("TRACEFLOW_SHARED", REPO.parent / "shared")) / "datasets" / "formats"
sys.path.insert(0, str(HERE))
import instrumented  # noqa: E402


def build(work):
    cc = shutil.which("gcc") or shutil.which("clang")
    flags = ["-fsanitize=address", "-fno-omit-frame-pointer", "-g", "-O1"]
    instrumented.build(work, cc=cc, cflags=flags, ldflags=["-fsanitize=address"])
    runtime = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True,
                             text=True, check=True).stdout.strip()
    return runtime


def inputs():
    files = sorted((HERE / "corpus").iterdir()) + sorted((HERE / "crashes").iterdir())
    if FORMATS.is_dir():
        files = sorted(p for p in FORMATS.iterdir() if p.suffix != ".tsv") + files
    else:
        print("asan: ../shared/datasets/formats not found: corpus and crash inputs only",
              file=sys.stderr)
    return files


def exercise(work):
    """In the ASan-preloaded child: drive the rebuilt extensions."""
    maps = Path("/proc/self/maps")
    if maps.exists() and "libasan" not in maps.read_text():
        raise SystemExit("asan: the ASan runtime is not loaded")
    instrumented.load(work)
    from traceflow.errors import TraceflowError
    from traceflow.flows import flows
    from traceflow.pcap.reader import plan_chunks, read_packets

    files = inputs()
    counts = {"captures": len(files), "packets": 0, "rejected": 0, "chunked": 0, "flows": 0}
    for path in files:
        for on_error in ("fail", "skip"):
            try:
                table = read_packets(path, on_error=on_error, batch_size=4096)
            except TraceflowError:
                counts["rejected"] += 1
                continue
            if on_error == "skip":
                counts["packets"] += table.num_rows
                counts["flows"] += flows(table).height if table.num_rows else 0
        try:
            chunks = plan_chunks(path, target_bytes=64 << 10)
            for chunk in chunks if len(chunks) > 1 else []:
                read_packets(path, chunk=chunk, on_error="skip")
                counts["chunked"] += 1
        except TraceflowError:
            pass
    from traceflow import sim

    result = sim.run(REPO / "replays" / "dumbbell.toml",
                     overrides=["simulation.duration=2", "topology.bottleneck.pcap=true"],
                     pcap_dir=work / "pcaps")
    counts["sim_events"] = result.summary["events"]
    print("asan: no error; " + ", ".join(f"{k} {v}" for k, v in counts.items()))


def main():
    if os.environ.get("TRACEFLOW_ASAN_BUILD"):
        exercise(Path(os.environ["TRACEFLOW_ASAN_BUILD"]))
        return 0
    work = Path(tempfile.mkdtemp(prefix="traceflow-asan-"))
    try:
        runtime = build(work)
        env = {**os.environ, "TRACEFLOW_ASAN_BUILD": str(work), "LD_PRELOAD": runtime,
               # CPython's own allocations are never freed at exit: leaks are not findings here
               "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1"}
        return subprocess.run([sys.executable, __file__], env=env).returncode
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""Fuzz the capture readers for a bounded time: ``python tests/fuzz/run.py [--seconds 60]``.

With clang on PATH the Cython decoder is rebuilt with libFuzzer coverage and AddressSanitizer
(``-fsanitize=address,fuzzer-no-link``, the runtime preloaded from atheris' ``asan_with_fuzzer.so``),
so coverage guides mutations into the decoder's C code and memory errors there are caught; without
clang only the Python readers are coverage-guided and the installed decoder runs uninstrumented.

Seeds: the committed corpus (``tests/fuzz/corpus``) and the small captures of
``../shared/datasets/formats`` when present. New inputs go to a scratch corpus, not the repository.
Crash-inducing inputs are written to ``--artifacts`` (default ``tests/fuzz/crashes``): commit them,
fix the bug, and ``tests/pcap/test_fuzz_regressions.py`` keeps them as regression tests. Prints one
line of stats (runs, seconds, coverage, crashes); exits 1 if any input crashed.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FORMATS = Path(os.environ.get("TRACEFLOW_SHARED", REPO.parent / "shared")) / "datasets" / "formats"
MAX_LEN = 4096  # bytes per input: enough for tens of records, small enough for ~100 runs/s


def seeds(into):
    """The committed corpus and the shared format captures (their first MAX_LEN bytes: a header
    and the first records) into ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    sources = sorted((HERE / "corpus").glob("*"))
    if FORMATS.is_dir():
        sources += sorted(p for p in FORMATS.iterdir() if p.is_file() and p.suffix != ".tsv")
    for src in sources:
        with open(src, "rb") as f:
            (into / src.name).write_bytes(f.read(MAX_LEN))
    return len(sources)


def instrument(work):
    """Build the decoder with coverage + ASan; the environment that loads it, or {} (no clang)."""
    clang = shutil.which("clang")
    if clang is None:
        print("fuzz: clang not found: the Cython decoder runs uninstrumented", file=sys.stderr)
        return {}
    import atheris

    sys.path.insert(0, str(HERE))
    import instrumented

    flags = ["-fsanitize=address,fuzzer-no-link", "-fno-omit-frame-pointer", "-g", "-O1"]
    instrumented.build(work / "native", cc=clang, cflags=flags, ldflags=["-fsanitize=address"],
                       modules=["traceflow.pcap._decode"])
    return {"TRACEFLOW_FUZZ_NATIVE": str(work / "native"),
            "LD_PRELOAD": str(Path(atheris.path()) / "asan_with_fuzzer.so"),
            "ASAN_OPTIONS": "detect_leaks=0:allocator_may_return_null=1"}


def _wrapper(work):
    """An executable that runs the fuzz target (libFuzzer re-runs its argv[0] to merge)."""
    path = work / "fuzz_readers"
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{HERE / "fuzz_readers.py"}" "$@"\n')
    path.chmod(0o755)
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--artifacts", type=Path, default=HERE / "crashes")
    ap.add_argument("--merge", type=Path, default=None, metavar="DIR",
                    help="after fuzzing, add to DIR (e.g. tests/fuzz/corpus) the fewest inputs "
                         "that reach the coverage DIR lacks")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="traceflow-fuzz-run-"))
    try:
        env = {**os.environ, **instrument(work), "TRACEFLOW_FUZZ_SELF": str(_wrapper(work))}
        corpus = work / "corpus"
        n = seeds(corpus)
        args.artifacts.mkdir(parents=True, exist_ok=True)
        before = set(args.artifacts.iterdir())
        cmd = [sys.executable, str(HERE / "fuzz_readers.py"), str(corpus),
               f"-max_total_time={args.seconds}", "-timeout=20", "-rss_limit_mb=4096",
               f"-max_len={MAX_LEN}", f"-artifact_prefix={args.artifacts}/", "-print_final_stats=1"]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        log = proc.stdout + proc.stderr
        (work / "fuzz.log").write_text(log)
        crashes = sorted(set(args.artifacts.iterdir()) - before)
        if args.merge and not crashes:
            args.merge.mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, str(HERE / "fuzz_readers.py"), "-merge=1",
                            f"-max_len={MAX_LEN}", str(args.merge), str(corpus)], env=env,
                           capture_output=True, check=True)
        runs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", log)
        cov = re.findall(r"\bcov: (\d+) ft: (\d+)", log)
        print(f"fuzz: {runs[-1] if runs else '?'} runs in {args.seconds} s from {n} seeds, "
              f"coverage {cov[-1][0] if cov else '?'} edges / {cov[-1][1] if cov else '?'} "
              f"features, {'native+python' if env.get('TRACEFLOW_FUZZ_NATIVE') else 'python'} "
              f"coverage, {len(crashes)} crashes")
        if crashes or proc.returncode not in (0,):
            print(log[-6000:], file=sys.stderr)
            for c in crashes:
                print(f"fuzz: crash input {c}", file=sys.stderr)
            return 1
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""Fit every capture under a datasets directory with two traceflow installs and diff the models
(a change that must not alter ``traceflow fit``'s output, e.g. a speed-up).

    python benchmarks/fit_identity.py --ref python --new /path/to/venv/bin/python \
        --datasets ../shared/datasets --out /tmp/fitdiff [--ref-only | --skip-ref]

``--ref`` / ``--new``: commands that run a Python importing each install's ``traceflow``.

For each capture (pcap/pcapng/erf, plain or .gz/.zst; never copied) it runs
``PY -m traceflow.cli.main fit CAPTURE -o OUT.json`` with each interpreter (from ``--ref-cwd`` so
``traceflow`` resolves to that interpreter's install), and for each testbed directory with a
client and a server capture also ``fit client_side --hosts-from server_side``. A case is
*identical* when both exit codes agree and, on success, the JSON files are byte-identical; on
failure the last stderr lines (the refusal message) must agree.
"""
import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

SUFFIXES = (".pcap", ".pcapng", ".erf", ".gz", ".zst")


def cases(root):
    out = []
    for p in sorted(root.rglob("*")):
        if (p.is_file() and "reference" not in p.parts and p.name.endswith(SUFFIXES)
                and ".csv" not in p.name):
            out.append((p.relative_to(root).as_posix(), [str(p)]))
    for d in sorted(root.rglob("*")):
        client, server = d / "client_side.pcap.gz", d / "server_side.pcap.gz"
        if client.exists() and server.exists():
            out.append((d.relative_to(root).as_posix() + "/client+hosts-from-server",
                        [str(client), "--hosts-from", str(server)]))
    return out


def run(py, cwd, args, out):
    cmd = [*shlex.split(py), "-m", "traceflow.cli.main", "fit", *args, "-o", str(out)]
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    tail = [l for l in p.stderr.strip().splitlines() if l.strip()][-1:]
    return p.returncode, tail


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", default="python")
    ap.add_argument("--new", default=None)
    ap.add_argument("--ref-cwd", default="/tmp")
    ap.add_argument("--datasets", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--skip-ref", action="store_true", help="reuse the reference outputs in --out")
    ap.add_argument("--only", default=None, help="substring of the case names to run")
    ap.add_argument("--ref-only", action="store_true", help="only compute the reference outputs")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    summary = {}
    for name, args in cases(a.datasets.resolve()):
        if a.only and a.only not in name:
            continue
        tag = name.replace("/", "__")
        ref_json, new_json = a.out / f"{tag}.ref.json", a.out / f"{tag}.new.json"
        ref_meta = a.out / f"{tag}.ref.meta"
        if a.skip_ref and ref_meta.exists():
            rc_r, tail_r = json.loads(ref_meta.read_text())
        else:
            ref_json.unlink(missing_ok=True)
            rc_r, tail_r = run(a.ref, a.ref_cwd, args, ref_json)
            ref_meta.write_text(json.dumps([rc_r, tail_r]))
        if a.ref_only:
            print(f"{name}: reference rc {rc_r}", flush=True)
            continue
        new_json.unlink(missing_ok=True)
        rc_n, tail_n = run(a.new, a.ref_cwd, args, new_json)
        if rc_r != rc_n:
            verdict = f"DIFFERENT exit codes {rc_r} vs {rc_n}: {tail_r} / {tail_n}"
        elif rc_r == 0:
            same = ref_json.read_bytes() == new_json.read_bytes()
            verdict = "identical model" if same else "DIFFERENT model JSON"
        else:
            verdict = ("identical refusal" if tail_r == tail_n
                       else f"DIFFERENT refusal: {tail_r} / {tail_n}")
        summary[name] = verdict
        print(f"{name}: {verdict}", flush=True)
    bad = [k for k, v in summary.items() if v.startswith("DIFFERENT")]
    ok_models = sum(v == "identical model" for v in summary.values())
    print(f"{len(summary)} cases, {ok_models} identical models, "
          f"{len(summary) - ok_models - len(bad)} identical refusals, {len(bad)} different")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

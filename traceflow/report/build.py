"""Assemble a report directory: one section per input, an optional comparison, ``index.html``.

The inputs are analysed as independent tasks through :mod:`traceflow.scale.parallel` (one per input;
each task writes its PNGs, so on a multi-machine Dask cluster the inputs and the output directory
must be on a shared file system); the directory appears whole, only on success.
"""
import json
from dataclasses import dataclass
from pathlib import Path

from traceflow.errors import TraceflowError
from traceflow.scale.parallel import default_workers, map_tasks
from traceflow.report.html import render_page


@dataclass(frozen=True)
class _InputJob:
    path: str
    out_dir: str
    index: int
    filter: str | None = None
    proto: str | None = None


def _input_job(job):
    from traceflow.report.sections import input_section

    return input_section(job.path, job.out_dir, job.index, job.filter, job.proto)


def check_replaceable(out_dir):
    """Refuse to replace a non-empty directory that is not an earlier report."""
    out_dir = Path(out_dir)
    if out_dir.exists() and (not out_dir.is_dir() or (
            any(out_dir.iterdir()) and not (out_dir / "index.html").exists())):
        raise TraceflowError("exists and is not an earlier report; choose another -o", path=out_dir)


def build_report(inputs, out_dir, *, measured=None, predicted=None, tolerances=None,
                 capacity_bps=None, title="traceflow report", executor="local", workers=None,
                 scheduler=None, progress=True, filter=None, proto=None, log=None, before=None):
    """Write ``out_dir/index.html`` (+ PNGs, + ``report.json``); returns the report.json dict.

    ``filter``/``proto`` select the packets of every input (:mod:`traceflow.selection`);
    ``log(message)`` hears each stage as it starts; ``before``: a capture of the measured
    traffic upstream of the queue (the comparison's measured loss is then exact)."""
    from traceflow.atomic import atomic_dir
    from traceflow.report.sections import comparison_section

    log = log or (lambda message: None)

    if (measured is None) != (predicted is None):
        raise TraceflowError("--measured and --predicted go together")
    if before is not None and measured is None:
        raise TraceflowError("--before goes with --measured (the capture it precedes)")
    if not inputs and measured is None:
        raise TraceflowError("nothing to report: give INPUT files or --measured/--predicted")
    for path in [*inputs, *([measured, predicted] if measured else []),
                 *([before] if before else [])]:
        if not Path(path).exists():
            raise TraceflowError("no such file or directory", path=path)
    out_dir = Path(out_dir)
    check_replaceable(out_dir)
    with atomic_dir(out_dir) as tmp:
        jobs = [_InputJob(str(Path(p).resolve()), str(tmp.resolve()), i + 1, filter, proto)
                for i, p in enumerate(inputs)]
        sections = []
        if jobs:
            log(f"analyse {len(jobs)} input{'s' * (len(jobs) != 1)}: "
                + ", ".join(Path(p).name for p in inputs))
            sections = map_tasks(_input_job, jobs, executor=executor, scheduler=scheduler,
                                 workers=workers or min(len(jobs), default_workers()),
                                 label="inputs", progress=progress)
        comparison = None
        if measured is not None:
            log(f"compare {Path(measured).name} (measured) with {Path(predicted).name} "
                "(predicted)")
            section, comparison = comparison_section(measured, predicted, tmp,
                                                     tolerances=tolerances,
                                                     capacity_bps=capacity_bps, before=before)
            sections.insert(0, section)
        log("write the page")
        summary = {
            "title": title, "inputs": [str(p) for p in inputs],
            "sections": [{"heading": s.heading, "figures": [f.src for f in s.figures],
                          "warnings": s.warnings, "rows": s.tables[0].rows if s.tables else []}
                         for s in sections],
            "filter": filter, "proto": proto,
            "comparison": comparison}
        from traceflow.jsonutil import jsonable

        (tmp / "report.json").write_text(json.dumps(jsonable(summary), indent=2) + "\n")
        render_page(title, sections, tmp / "index.html")
    summary["index"] = str(out_dir / "index.html")
    return summary

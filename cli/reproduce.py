"""``traceflow reproduce NAME -o OUT_DIR``: rerun an experiment of the source papers.

Experiments are the ``replays/<NAME>.toml`` files with an ``[experiment]`` table::

    [experiment]
    title = "..."
    reproduces = "Park, Kim & Crovella 1997, Fig. 3"
    runner = "traceflow.experiments.module:function"
    paper = { ... }            # optional: the paper's numbers, for the runner to compare against

The runner is called as ``fn(spec, out_dir, quick=..., executor=..., workers=...)`` (plus
``scheduler=`` if it accepts it) and returns ``{"title", "reproduces", "figures", "tables",
"comparison", "text"}``. This command writes ``summary.json`` and ``index.html`` next to the
runner's figures; the output directory appears whole, only when the experiment succeeds.
``summary.json`` counts the comparison rows that agree, disagree and were not compared
(``verdicts``) and judges the papers' claims that read them (``claims``, from
:mod:`traceflow.report.claims`); ``--claims DIR`` lists all the claims judged on the
``DIR/*/summary.json`` of earlier full runs. A quick run decides nothing: every row's ``agree``
becomes None and its note says what the full test would have said of the quick numbers.
"""
import importlib
import importlib.resources
import inspect
import json
import time
import tomllib
from pathlib import Path

import click

from traceflow.cli.options import echo_json, json_option
from traceflow.jsonutil import jsonable
from traceflow.errors import ScenarioError, TraceflowError
from traceflow.scale.parallel import executor_options, resolve_executor

REQUIRED = ("title", "reproduces", "runner")


def experiment_files():
    """``{name: resource}`` for every replay file in ``traceflow.replays`` with an [experiment]."""
    found = {}
    for resource in importlib.resources.files("traceflow.replays").iterdir():
        if resource.name.endswith(".toml"):
            spec = _parse(resource)
            if "experiment" in spec:
                found[resource.name.removesuffix(".toml")] = resource
    return dict(sorted(found.items()))


def _parse(resource):
    try:
        return tomllib.loads(resource.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"invalid TOML: {exc}", path=str(resource)) from None


def load_experiment(name):
    """The parsed replay file of experiment ``name`` (or of a path to such a .toml file)."""
    path = Path(name)
    if path.suffix == ".toml" and path.is_file():
        spec = _parse(path)
        origin = str(path)
    else:
        files = experiment_files()
        if name not in files:
            known = ", ".join(files) or "none installed"
            raise TraceflowError(f"unknown experiment {name!r} (known: {known}); "
                                 "see traceflow reproduce --list")
        spec = _parse(files[name])
        origin = str(files[name])
    experiment = spec.get("experiment")
    if not isinstance(experiment, dict):
        raise ScenarioError("no [experiment] table", path=origin)
    missing = [k for k in REQUIRED if k not in experiment]
    if missing:
        raise ScenarioError(f"[experiment] lacks {', '.join(missing)}", path=origin)
    return spec


def load_runner(target):
    """The function named by ``"package.module:function"``."""
    module_name, sep, attr = target.partition(":")
    if not sep:
        raise ScenarioError(f"runner {target!r} is not of the form 'module:function'")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ScenarioError(f"cannot load runner {target!r}: {exc}") from None


def run_experiment(name, out_dir, *, quick=False, executor="local", workers=None, scheduler=None):
    """Reproduce experiment ``name`` into ``out_dir`` (summary.json, index.html, figures);
    returns the summary dict."""
    from traceflow.atomic import atomic_dir
    from traceflow.scale.parallel import check_executor, shared_dask_cluster
    from traceflow.report.claims import judge
    from traceflow.report.html import experiment_page, verdict_counts

    check_executor(executor, workers, scheduler)
    spec = load_experiment(name)
    runner = load_runner(spec["experiment"]["runner"])
    out_dir = Path(out_dir)
    _check_replaceable(out_dir)
    kwargs = {"quick": quick, "executor": executor, "workers": workers}
    if "scheduler" in inspect.signature(runner).parameters:
        kwargs["scheduler"] = scheduler
    start = time.perf_counter()
    with atomic_dir(out_dir) as tmp, shared_dask_cluster(executor, workers, scheduler):
        result = runner(spec, tmp, **kwargs)
        summary = _check_result(result, tmp, spec)
        if quick:
            summary["comparison"] = [_undecided(row) for row in summary["comparison"]]
        summary["verdicts"] = verdict_counts(summary["comparison"])
        summary["claims"] = judge(Path(name).stem, summary["comparison"])
        summary.update(name=Path(name).stem, quick=quick, executor=executor, workers=workers,
                       seconds=round(time.perf_counter() - start, 1))
        (tmp / "summary.json").write_text(json.dumps(jsonable(summary), indent=2) + "\n")
        experiment_page(summary, tmp)
    return summary


def _undecided(row):
    # quick runs are too short to decide a paper's claim; keep what the test said, as a note
    said = {True: "passes", False: "fails", None: "no test"}[row.get("agree")]
    note = f"quick run, not decided (the test {said} on these numbers)"
    return {**row, "agree": None, "note": f"{note}; {row['note']}" if row.get("note") else note}


def _check_replaceable(out_dir):
    # The output directory is replaced whole; never delete a directory we did not write.
    if out_dir.exists() and (not out_dir.is_dir() or
                             (any(out_dir.iterdir()) and not (out_dir / "summary.json").exists())):
        raise TraceflowError("exists and is not an earlier reproduce output; choose another -o",
                             path=out_dir)


def _check_result(result, out_dir, spec):
    if not isinstance(result, dict):
        raise TypeError(f"runner returned {type(result).__name__}, expected a dict")
    summary = dict(result)
    experiment = spec["experiment"]
    summary.setdefault("title", experiment["title"])
    summary.setdefault("reproduces", experiment["reproduces"])
    summary.setdefault("figures", [])
    summary.setdefault("tables", {})
    summary.setdefault("comparison", [])
    summary.setdefault("text", "")
    named = list(summary["figures"]) + list(summary["tables"].values())
    absent = [n for n in named if not (out_dir / n).is_file()]
    if absent:
        raise RuntimeError(f"runner {experiment['runner']} listed outputs it did not write: "
                           f"{', '.join(absent)}")
    return summary


@click.command("reproduce")
@click.argument("name", required=False)
@click.option("--list", "list_only", is_flag=True, help="List the experiments and exit.")
@click.option("--claims", "claims_dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=None, help="List the papers' claims judged on DIR/*/summary.json and exit.")
@click.option("--quick", is_flag=True, help="Fewer runs and shorter simulations (a smoke run).")
@executor_options
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Output directory (default: reproduce-NAME).")
@json_option
def command(name, list_only, claims_dir, quick, executor, workers, scheduler, out_dir, as_json):
    """Reproduce an experiment of the source papers (see --list) into OUTPUT/index.html.

    \b
    Examples:
      traceflow reproduce --list
      traceflow reproduce tcpmt_fig9 -o out/fig9 --quick
      traceflow reproduce selfsim_fig4 -o out/selfsim_fig4 --workers 2
      traceflow reproduce --claims out
    """
    if list_only:
        rows = []
        measured = timings()
        for exp_name in experiment_files():
            experiment = load_experiment(exp_name)["experiment"]
            rows.append({"name": exp_name, "title": experiment["title"],
                         "reproduces": experiment["reproduces"],
                         "seconds": measured.get(exp_name, {})})
        if as_json:
            echo_json(rows)
        else:
            for row in rows:
                t = row["seconds"]
                click.echo(f"{row['name']:<22} {_duration(t.get('quick')):>6} quick "
                           f"{_duration(t.get('full')):>7} full  {row['title']}  "
                           f"[{row['reproduces']}]")
        return
    if claims_dir is not None:
        _print_claims(claims_dir, as_json)
        return
    if not name:
        raise click.UsageError("give an experiment NAME (or --list)")
    out_dir = out_dir or Path(f"reproduce-{Path(name).stem}")
    summary = run_experiment(name, out_dir, quick=quick,
                             executor=resolve_executor(executor, scheduler), workers=workers,
                             scheduler=scheduler)
    if as_json:
        echo_json(summary)
        return
    from traceflow.report.html import verdict_sentence
    quick_note = " [quick run: nothing decided]" if quick else ""
    click.echo(f"{summary['title']}: {verdict_sentence(summary['verdicts'])} with the paper"
               f"{quick_note} ({summary['seconds']} s)")
    click.echo(f"report: {out_dir / 'index.html'}")


def timings():
    """``{name: {"quick": s, "full": s}}``: wall times measured for each experiment
    (``replays/timings.toml``; one worker on the 2-core development machine)."""
    resource = importlib.resources.files("traceflow.replays") / "timings.toml"
    return tomllib.loads(resource.read_text()).get("seconds", {}) if resource.is_file() else {}


def _duration(seconds):
    if seconds is None:
        return "?"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _print_claims(root, as_json):
    """The claims judged on the full (not quick) runs under ``root``, one line each."""
    from traceflow.report.claims import closing_table

    comparisons = {}
    for path in sorted(root.glob("*/summary.json")):
        summary = json.loads(path.read_text())
        if not summary.get("quick"):
            comparisons[summary.get("name", path.parent.name)] = summary.get("comparison", [])
    rows = closing_table(comparisons)
    if as_json:
        echo_json(rows)
        return
    word = {True: "holds", False: "does not hold", None: "undecided"}
    for r in rows:
        click.echo(f"claim {r['claim']:>2} [{r['source']}]: {word[r['holds']]} in these runs; "
                   f"{r['state']} ({r['reason']}). Paper: {r['paper']}; ns-2: {r['ns-2']}; "
                   f"ours: {r['ours']}")
    from traceflow.report.claims import STATES
    counts = [(sum(r["state"] == state for r in rows), state) for state in STATES]
    click.echo("; ".join(f"{n} {state}" for n, state in counts if n))

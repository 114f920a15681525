"""``traceflow report INPUT... -o report/``: an HTML report with figures of each input."""
from pathlib import Path

import click

from traceflow.cli.options import echo_json, json_option
from traceflow.scale.parallel import executor_options, resolve_executor


@click.command("report")
@click.argument("inputs", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--measured", type=click.Path(exists=True, path_type=Path), default=None,
              help="Measured side of a comparison (capture, packets Parquet, run or analytics "
                   "directory).")
@click.option("--predicted", type=click.Path(exists=True, path_type=Path), default=None,
              help="Predicted side of a comparison (usually a run directory).")
@click.option("--tol", "tolerances", multiple=True, metavar="METRIC=VALUE",
              help="Comparison tolerance for one metric (see traceflow compare).")
@click.option("--capacity", type=float, default=None, metavar="BIT/S",
              help="Bottleneck capacity for utilization (default: from the run).")
@click.option("--title", default="traceflow report", show_default=True)
@executor_options
@click.option("-o", "--out", "out_dir", required=True,
              type=click.Path(file_okay=False, path_type=Path), help="Report directory.")
@json_option
def command(inputs, measured, predicted, tolerances, capacity, title, executor, workers,
            scheduler, out_dir, as_json):
    """Write OUT/index.html with PNG figures for each INPUT (capture, packets or flows Parquet,
    run directory): CCDFs with Pareto fits, RTT spectrum, Hurst plots, conditional-level heat
    map, dispersion curve, link series at several scales; with --measured and --predicted, the
    predicted-vs-measured comparison first."""
    from traceflow.compare import parse_tolerances
    from traceflow.report.build import build_report

    summary = build_report(list(inputs), out_dir, measured=measured, predicted=predicted,
                           tolerances=parse_tolerances(tolerances), capacity_bps=capacity,
                           title=title, executor=resolve_executor(executor, scheduler),
                           workers=workers, scheduler=scheduler)
    if as_json:
        echo_json(summary)
        return
    for section in summary["sections"]:
        for warning in section["warnings"]:
            click.echo(f"warning: {section['heading']}: {warning}", err=True)
    click.echo(f"report: {summary['index']}")

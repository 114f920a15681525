"""``traceflow report INPUT... -o report/``: an HTML report with figures of each input."""
from pathlib import Path

import click

from traceflow.cli.fit import progress_option, stage_log
from traceflow.cli.options import Rate, echo_json, filter_options, json_option
from traceflow.scale.parallel import executor_options, resolve_executor


@click.command("report")
@click.argument("inputs", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--measured", type=click.Path(exists=True, path_type=Path), default=None,
              help="Measured side of a comparison (capture, packets Parquet, run or analytics "
                   "directory).")
@click.option("--predicted", type=click.Path(exists=True, path_type=Path), default=None,
              help="Predicted side of a comparison (usually a run directory).")
@click.option("--before", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="With --measured: a capture of the same traffic upstream of the "
                                 "queue, so the measured loss is exact (as compare --before).")
@click.option("--tol", "tolerances", multiple=True, metavar="METRIC=VALUE",
              help="Comparison tolerance for one metric (names: traceflow compare --help).")
@click.option("--capacity", type=Rate(), default=None, metavar="RATE",
              help="Bottleneck capacity for utilization, e.g. 10Mbit (default: from the run).")
@click.option("--title", default="traceflow report", show_default=True)
@filter_options("packets")
@executor_options
@click.option("-o", "--output", "out_dir", required=True,
              type=click.Path(file_okay=False, path_type=Path), help="Report directory.")
@progress_option
@json_option
def command(inputs, measured, predicted, before, tolerances, capacity, title, filter_, proto,
            executor, workers, scheduler, out_dir, progress, as_json):
    """Write OUTPUT/index.html with PNG figures for each INPUT (capture, packets or flows Parquet,
    run directory): CCDFs with Pareto fits, RTT spectrum, Hurst plots, conditional-level heat
    map, dispersion curve, link series at several scales; with --measured and --predicted, the
    predicted-vs-measured comparison first. Every estimate shows its quality; values are in
    human units and times in UTC.

    \b
    Examples:
      traceflow report trace.pcap -o report/
      traceflow report trace.pcap --proto tcp --filter "dport = 443 OR sport = 443" -o report/
      traceflow report --measured trace.pcap --predicted run/ -o report/
      traceflow report --measured after.pcap --before before.pcap --predicted run/ -o report/
    """
    from traceflow.compare import parse_tolerances
    from traceflow.report.build import build_report

    log = stage_log(progress)
    summary = build_report(list(inputs), out_dir, measured=measured, predicted=predicted,
                           tolerances=parse_tolerances(tolerances), capacity_bps=capacity,
                           title=title, executor=resolve_executor(executor, scheduler),
                           workers=workers, scheduler=scheduler, filter=filter_, proto=proto,
                           log=log, progress=log is not None, before=before)
    if as_json:
        echo_json(summary)
        return
    for section in summary["sections"]:
        for warning in section["warnings"]:
            click.echo(f"traceflow: warning: {section['heading']}: {warning}", err=True)
    click.echo(f"report: {summary['index']}")

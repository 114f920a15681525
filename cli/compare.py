"""``traceflow compare MEASURED PREDICTED [--before CAPTURE] [-o comparison.json] [--tol metric=value ...]``."""
import click

from traceflow.cli.options import echo_json, json_option


@click.command(name="compare")
@click.argument("measured", type=click.Path(exists=True))
@click.argument("predicted", type=click.Path(exists=True))
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the comparison as JSON here.")
@click.option("--tol", "tolerances", multiple=True, metavar="METRIC=VALUE",
              help="Tolerance of a metric (repeatable), e.g. --tol utilization=0.1 --tol size_ks=0.05.")
@click.option("--before", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Capture (or packets table) of the measured traffic upstream of the bottleneck "
                   "queue: measured loss becomes exact (packets seen before the queue and missing "
                   "after it); without it, it is estimated from retransmissions.")
@click.option("--capacity", type=float, default=None,
              help="Link capacity (bit/s) for utilization (default: the run's bottleneck).")
@click.option("--strict", is_flag=True, help="Exit with code 1 when a metric fails its tolerance.")
@json_option
def command(measured, predicted, output, tolerances, before, capacity, strict, as_json):
    """Compare PREDICTED against MEASURED traffic with error measures and pass/fail.

    Each side is a capture, a packets table, a run directory (from `traceflow simulate` or
    `traceflow replay`) or a directory with flows.parquet and series.parquet. The same analytics
    run on both: throughput, utilization, loss and retransmission rates, transfer time (request
    to last data byte) per size bin (median, p90, count; the tolerance applies to the median of
    every bin with >= 30 measured transfers), KS distances of flow sizes and RTTs, Hurst
    estimates, dispersion curve and conditional-level tables.
    """
    import json

    from traceflow.atomic import write_text
    from traceflow.jsonutil import jsonable
    from traceflow.compare import compare_paths, format_table, parse_tolerances

    result = compare_paths(measured, predicted, tolerances=parse_tolerances(tolerances),
                           capacity_bps=capacity, before=before)
    if output:
        write_text(output, json.dumps(jsonable(result), indent=2) + "\n")
    if as_json:
        echo_json(result)
    else:
        click.echo(format_table(result))
        click.echo(f"overall: {'pass' if result['pass'] else 'FAIL (' + ', '.join(result['failed']) + ')'}")
    if strict and not result["pass"]:
        raise click.exceptions.Exit(1)

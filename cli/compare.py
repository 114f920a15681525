"""``traceflow compare MEASURED PREDICTED [--before CAPTURE] [-o comparison.json] [--tol metric=value ...]``."""
import click

from traceflow.cli.options import Rate, check_json_output, echo_json, json_option


def _tolerance_help():
    from traceflow.compare import DEFAULT_TOLERANCES

    names = ", ".join(f"{k} ({v[1]:g})" for k, v in DEFAULT_TOLERANCES.items())
    return ("Tolerance of a metric (repeatable), e.g. --tol utilization=0.1 --tol size_ks=0.05. "
            f"Metrics (default tolerance): {names}.")


class _TolOption(click.Option):
    """--tol whose help lists the metric names (from traceflow.compare, read when help is shown)."""

    def get_help_record(self, ctx):
        self.help = _tolerance_help()
        return super().get_help_record(ctx)


@click.command(name="compare")
@click.argument("measured", type=click.Path(exists=True))
@click.argument("predicted", type=click.Path(exists=True))
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the comparison as JSON here (.json).")
@click.option("--tol", "tolerances", multiple=True, metavar="METRIC=VALUE", cls=_TolOption)
@click.option("--before", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Capture (or packets table) of the measured traffic upstream of the bottleneck "
                   "queue: measured loss becomes exact (packets seen before the queue and missing "
                   "after it); without it, it is estimated from retransmissions.")
@click.option("--capacity", type=Rate(), default=None, metavar="RATE",
              help="Link capacity for utilization, e.g. 10Mbit (default: the run's bottleneck).")
@click.option("--strict", is_flag=True, help="Exit with code 1 when a metric fails its tolerance.")
@json_option
def command(measured, predicted, output, tolerances, before, capacity, strict, as_json):
    """Compare PREDICTED against MEASURED traffic with error measures and pass/fail.

    Each side is a capture, a packets table, a run directory (from `traceflow simulate` or
    `traceflow replay`) or a directory with flows.parquet and series.parquet. The same analytics
    run on both: throughput, utilization, loss and retransmission rates, transfer time (request
    to last data byte) per size bin (median, p90, count; the tolerance applies to the median of
    every bin with >= 30 measured transfers), KS distances of flow sizes and RTTs, Hurst
    estimates, dispersion curve and conditional-level tables. Each row says what its values are
    and in which unit; a metric that cannot be computed (e.g. utilization without a capacity) is
    n/a, not a failure.

    \b
    Examples:
      traceflow compare trace.pcap run/
      traceflow compare trace.pcap run/ --tol utilization=0.1 --tol rtt_ks=0.2 -o cmp.json
      traceflow compare trace.pcap other.pcap --capacity 10Mbit --strict
      traceflow compare after.pcap run/ --before before.pcap
    """
    import json

    from traceflow.atomic import write_text
    from traceflow.compare import compare_paths, parse_tolerances
    from traceflow.jsonutil import jsonable
    from traceflow.report.comparison import format_text

    check_json_output(output)
    result = compare_paths(measured, predicted, tolerances=parse_tolerances(tolerances),
                           capacity_bps=capacity, before=before)
    if output:
        write_text(output, json.dumps(jsonable(result), indent=2) + "\n")
    if as_json:
        echo_json(result)
    else:
        click.echo(format_text(result))
    if strict and not result["pass"]:
        raise click.exceptions.Exit(1)

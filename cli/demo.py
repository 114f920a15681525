"""``traceflow demo [-o OUT]``: ingest → flows → fit → replay → compare → report on the bundled
sample."""
import click

from traceflow.cli.options import echo_json, json_option


@click.command(name="demo")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default="traceflow-demo",
              show_default=True, help="Directory for the demo's outputs.")
@click.option("--sample", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Use this capture instead of the bundled sample.")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the replay.")
@json_option
def command(out_dir, sample, seed, as_json):
    """Run the main job end to end on the bundled sample (about a minute): ingest the capture, build
    flows, fit a model, replay it through the simulator, compare predicted with measured, and
    write an HTML report. Progress goes to stderr; the report's path is printed last.

    \b
    Examples:
      traceflow demo
      traceflow demo -o /tmp/demo --seed 2
      traceflow demo --sample my_capture.pcap -o demo-mine
    """
    from traceflow.demo import run_demo

    summary = run_demo(out_dir, sample=sample, seed=seed, log=lambda m: click.echo(m, err=True))
    if as_json:
        echo_json(summary)
        return
    click.echo(summary["headline"])
    click.echo(f"report: {summary['report']}")

"""``traceflow replay MODEL.json|FLOWS.parquet|CAPTURE [--scenario X.toml] [--set k=v ...] -o RUN_DIR``."""
import click

from traceflow.cli.options import echo_json, json_option


@click.command(name="replay")
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), required=True,
              help="Run directory to write (summary.json, tables, g1-g2.pcap).")
@click.option("--scenario", type=click.Path(dir_okay=False),
              help="Scenario TOML for the bottleneck, TCP flavor and hosts "
                   "(e.g. replays/replay_testbed.toml).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a scenario key, e.g. --set topology.bottleneck.rate=2e6 (repeatable).")
@click.option("--model", "model_path", type=click.Path(exists=True, dir_okay=False),
              help="Trace-driven mode: fitted model supplying the capacity and end-host parameters.")
@click.option("--duration", type=float, default=None, help="Simulated seconds (default: the trace's span).")
@click.option("--seed", type=int, default=None, help="Random seed (default: the scenario's).")
@click.option("--rtt", "rtt_mode", type=click.Choice(["path", "handshake"]), default="path",
              show_default=True,
              help="Trace mode: each flow's RTT is its path's propagation RTT (the nearest "
                   "unqueued handshake of its host pair; from a capture with --model, the "
                   "packet-pair test tells which met no queue; the simulated bottleneck adds the "
                   "queueing), or "
                   "its own handshake RTT (queueing included, so counted twice: for comparison).")
@click.option("--no-normalize", is_flag=True,
              help="Model mode: keep the raw sampled sizes (no sample-path normalization to the "
                   "fitted mean rate).")
@json_option
def command(source, out_dir, scenario, overrides, model_path, duration, seed, rtt_mode, no_normalize,
            as_json):
    """Replay a fitted model (flows sampled from it), or a flows table or a capture (the measured
    connections as they were: request, response, path RTT) closed-loop through the simulated TCP
    and bottleneck.

    The bottleneck capacity defaults to the model's estimate; the end-host parameters inferred
    from the trace (segment size, header bytes, initial window, receiver window, minimum and
    initial RTO, delayed ACKs, SACK, timestamps; the linux TCP profile when the trace shows SACK)
    are used unless the scenario or --set names them.
    """
    import sys

    from traceflow.replay import replay

    state = {"bar": None, "done": 0.0}

    def progress(now_s, duration_s):
        if not sys.stderr.isatty():
            return
        if state["bar"] is None:
            from traceflow.cli.options import progress as bar

            state["bar"] = bar(length=max(1, int(duration_s)), label="simulating").__enter__()
        step = int(now_s) - int(state["done"])
        if step > 0:
            state["bar"].update(step)
            state["done"] = now_s

    try:
        result = replay(source, out_dir, scenario=scenario, overrides=overrides, model=model_path,
                        duration_s=duration, seed=seed, normalize=not no_normalize, rtt=rtt_mode,
                        progress=progress)
    finally:
        if state["bar"] is not None:
            state["bar"].__exit__(None, None, None)
    s = result.summary
    if as_json:
        echo_json(s)
        return
    r = s["replay"]
    click.echo(f"wrote {out_dir} ({r['mode']} mode, {r['flows']} flows, {s['duration_s']:.1f} s)")
    click.echo(f"bottleneck {s['bottleneck_rate_bps'] / 1e6:.3f} Mb/s: utilization "
               f"{s['link_utilization']:.3f}, loss {s['loss_rate']:.4f}, "
               f"mean response time {s['mean_response_time_s']:.3f} s")

"""``traceflow replay MODEL.json|FLOWS.parquet|CAPTURE [--scenario X.toml] [--set k=v ...] -o RUN_DIR``."""
import click

from traceflow.cli.options import Duration, echo_json, json_option


@click.command(name="replay")
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), required=True,
              help="Run directory to write (summary.json, tables, g1-g2.pcap).")
@click.option("--scenario", metavar="SCENARIO",
              help="Scenario for the bottleneck, TCP flavor and hosts: a TOML file or a bundled "
                   "name (e.g. replay_testbed; traceflow scenarios list).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a scenario key, e.g. --set topology.bottleneck.rate=2e6 (repeatable).")
@click.option("--model", "model_path", type=click.Path(exists=True, dir_okay=False),
              help="Trace-driven mode: fitted model supplying the capacity and end-host parameters.")
@click.option("--duration", type=Duration(), default=None, metavar="DURATION",
              help="Simulated time, e.g. 60s, 5min (default: the trace's span).")
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
    are used unless the scenario or --set names them. A run whose senders time out without any
    loss at the bottleneck gets a warning (the capacity or the minimum RTO does not fit).

    \b
    Examples:
      traceflow replay model.json -o run/
      traceflow replay model.json -o run/ --scenario replay_testbed --duration 60s --seed 2
      traceflow replay flows.parquet --model model.json -o run/ --set tcp.cc="newreno"
    """
    import sys

    from traceflow import units
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

    from traceflow.replays import resolve_scenario

    scenario = resolve_scenario(scenario) if scenario else None
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
    click.echo(f"wrote {out_dir} ({r['mode']} mode, {r['flows']:,} flows, "
               f"{units.duration(s['duration_s'])} simulated)")
    click.echo(f"bottleneck {units.rate(s['bottleneck_rate_bps'])}: throughput "
               f"{units.rate(s['throughput_bps'])}, utilization "
               f"{units.number(s['link_utilization'])}, loss {units.share(s['loss_rate'])}, "
               f"{s['timeouts']:,} timeouts, mean response time "
               f"{units.duration(s['mean_response_time_s'])}")
    for line in settings_lines(r.get("settings", ())):
        click.echo(line)


def settings_lines(settings):
    """What the replay used, a line per source: ``model`` values with their quality flag where
    it is not ``ok`` (a default, a lower bound, a guess), then the scenario's and the
    simulator's defaults (each marked so)."""
    from traceflow import units

    def value(row):
        v, fmt = row["value"], row["format"]
        if fmt == "rate":
            return "unshaped" if v in ("line", 0) else units.rate(v)
        if fmt == "bytes":
            return units.size(v)
        if fmt == "seconds":
            return units.duration(v)
        if fmt == "segments":
            return f"{v:g} segments"
        return str(v)

    parts = {"model": [], "scenario": [], "default": []}
    for row in settings:
        mark = ""
        if row["source"] == "model" and row["quality"] and not row["quality"].startswith("ok"):
            mark = f" [{row['quality'].split(':')[0]}]"
        parts[row["source"]].append(f"{row['label']} {value(row)}{mark}")
    heads = {"model": "from the model", "scenario": "from the scenario / --set",
             "default": "simulator defaults (not in the model)"}
    return [f"{heads[k]}: {', '.join(v)}" for k, v in parts.items() if v]

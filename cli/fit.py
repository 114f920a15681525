"""``traceflow fit INPUT... -o model.json``: fit a replayable traffic model."""
from pathlib import Path

import click

from traceflow.cli.options import echo_json, json_option


@click.command(name="fit")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
              help="Model JSON file to write.")
@click.option("--hosts-from", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Infer end-host parameters (initial window, RTO...) from this capture of the same "
                   "traffic taken nearer the senders (repeatable).")
@click.option("--capacity", type=float, default=None,
              help="Link capacity in bit/s (default: estimated from the peak rate).")
@json_option
def command(inputs, output, hosts_from, capacity, as_json):
    """Fit a traffic model to captures (pcap/pcapng, .gz/.zst) or packets tables.

    The model (JSON, with schema_version) holds the capture span, link capacity, flow arrival
    process, flow size and lifetime distributions (Pareto tail + empirical body), short/long
    shares, RTT classes, end-host parameters, Hurst estimates, dispersion curve and the
    conditional-level table: everything `traceflow replay` needs.
    """
    from traceflow.models.fit import fit

    model = fit(list(inputs), hosts_from=list(hosts_from) or None, capacity_bps=capacity)
    model.save(output)
    if as_json:
        echo_json(model.to_dict())
        return
    s, h = model.sizes, model.hosts
    click.echo(f"wrote {Path(output)}")
    click.echo(f"span {model.span.duration_s:.1f} s, {model.arrivals.n_flows} flows "
               f"({model.arrivals.rate_per_s:.2f}/s), capacity {model.link.capacity_bps / 1e6:.3f} Mb/s, "
               f"utilization {model.link.utilization:.3f}")
    if s is not None and s.tail is not None:
        click.echo(f"flow sizes: mean {s.mean:.0f} B, Pareto tail alpha {s.tail.alpha:.3f} above "
                   f"{s.tail.xmin:.0f} B ({s.tail.n_tail} flows)")
    click.echo(f"hosts: MSS {h.mss}, segment {h.segment_size} B, header {h.header_bytes} B, "
               f"initial window {h.initial_window} "
               f"({'observed' if h.initial_window_observable else 'lower bound'}), min RTO "
               f"{h.min_rto_s if h.min_rto_s is None else round(h.min_rto_s, 3)} s "
               f"({h.rto_samples} timeouts), initial RTO "
               f"{h.initial_rto_s if h.initial_rto_s is None else round(h.initial_rto_s, 3)} s, "
               f"delayed ACK {h.delayed_ack}, SACK {h.sack}, timestamps {h.timestamps}, "
               f"window scale {h.window_scale}")
    click.echo("Hurst: " + ", ".join(f"{k} {v:.3f}" for k, v in model.hurst.items()))

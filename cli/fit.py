"""``traceflow fit INPUT... -o model.json``: fit a replayable traffic model."""
import sys
import time
from pathlib import Path

import click

from traceflow.cli.options import Rate, check_json_output, echo_json, filter_options, json_option


def stage_log(enabled):
    """A ``log(message)`` printing ``[  1.2 s] message`` lines on stderr (as ``demo`` does), or a
    no-op; ``enabled`` None means: when stderr is a terminal."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    t0 = time.perf_counter()
    return lambda message: click.echo(f"[{time.perf_counter() - t0:5.1f} s] {message}", err=True)


def progress_option(f):
    return click.option("--progress/--no-progress", default=None,
                        help="Print each stage on stderr as it starts (default: when stderr is "
                             "a terminal).")(f)


@click.command(name="fit")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
              help="Model JSON file to write (.json).")
@click.option("--hosts-from", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Infer end-host parameters (initial window, RTO...) from this capture of the same "
                   "traffic taken nearer the senders (repeatable).")
@click.option("--capacity", type=Rate(), default=None, metavar="RATE",
              help="Bottleneck capacity, e.g. 10Mbit, 1.5e6 (default: estimated from the peak "
                   "rates; the output says how and warns when it is a guess).")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Split the connections into this many hash partitions, each streamed by a "
                   "process of its own (every process reads every packet; the model is the "
                   "same). One process already keeps about 1.4 cores busy: on 2 cores, 2 "
                   "processes are slower than one.")
@filter_options("packets")
@progress_option
@json_option
def command(inputs, output, hosts_from, capacity, workers, filter_, proto, progress, as_json):
    """Fit a traffic model to captures (pcap/pcapng, .gz/.zst) or packets tables.

    The model (JSON, with schema_version) holds the capture span, link capacity, flow arrival
    process, flow size and lifetime distributions (Pareto tail + empirical body), short/long
    shares, RTT classes, end-host parameters, Hurst estimates, dispersion curve and the
    conditional-level table: everything `traceflow replay` needs. A capture that cannot fill
    one (fewer than 10 complete TCP transfers) is refused. Each estimate's quality is printed
    (and under "quality" with --json); problems are also warnings on stderr.

    \b
    Examples:
      traceflow fit trace.pcap.gz -o model.json
      traceflow fit trace.pcap -o model.json --capacity 10Mbit --proto tcp
      traceflow fit receiver_side.pcap -o model.json --hosts-from sender_side.pcap
      traceflow fit big.pcap -o model.json --workers 4
    """
    from traceflow import units
    from traceflow.errors import warn
    from traceflow.models.checks import model_quality
    from traceflow.models.fit import fit

    check_json_output(output)
    model = fit(list(inputs), hosts_from=list(hosts_from) or None, capacity_bps=capacity,
                filter=filter_, proto=proto, log=stage_log(progress), workers=workers)
    model.save(output)
    quality = model_quality(model)
    for name, q in quality.items():
        for flag in q.flags:
            warn(f"{name}: {flag.message}")
    if as_json:
        echo_json({**model.to_dict(), "quality": {k: q.to_dict() for k, q in quality.items()}})
        return
    s, h, link = model.sizes, model.hosts, model.link
    click.echo(f"wrote {Path(output)}")
    click.echo(f"span {units.duration(model.span.duration_s)} from "
               f"{units.timestamp(model.span.start_ns)}, {model.arrivals.n_flows:,} connections "
               f"({model.arrivals.rate_per_s:.3g}/s)")
    peaks = ", ".join(f"{units.rate(v)} ({k})" for k, v in link.peak_rate_bps.items())
    click.echo(f"capacity {units.rate(link.capacity_bps)}: {link.method}; peak rates {peaks}; "
               f"mean rate {units.rate(link.mean_rate_bps)}, utilization "
               f"{units.number(link.utilization)}"
               + ("" if capacity else " (override: --capacity RATE)"))
    if s is not None and s.tail is not None:
        click.echo(f"flow sizes: mean {units.size(s.mean)}, Pareto tail alpha {s.tail.alpha:.3f} "
                   f"above {units.size(s.tail.xmin)} ({s.tail.n_tail} transfers)")
    iw = "n/a" if h.initial_window is None else f"{h.initial_window:g} segments"
    iw_q = h.quality.get("initial_window", "ok").split(":")[0]
    net = model.network
    if net is not None:
        def flag(name):
            q = net.quality.get(name, "ok")
            return "" if q == "ok" else f" ({q.split(':')[0]})"

        click.echo(f"network (capture {net.side} of the bottleneck): rate "
                   f"{units.rate(net.rate_bps)}{flag('rate')}, buffer "
                   f"{units.size(net.buffer_bytes)}{flag('buffer')} (full queue "
                   f"{units.duration(net.full_queue_delay_s)}), burst "
                   f"{units.size(net.burst_bytes)}{flag('burst')}, reverse path "
                   + (units.rate(net.reverse_rate_bps) if net.reverse_rate_bps else "unshaped")
                   + f"{flag('reverse')}")
    click.echo(f"hosts (capture next to the data {h.vantage}s): MSS {units.number(h.mss)}, "
               f"segment {units.size(h.segment_size)}, header {units.size(h.header_bytes)}, "
               f"initial window {iw} "
               f"({'observed' if iw_q == 'ok' else iw_q}), min RTO "
               f"{units.duration(h.min_rto_s)} ({h.rto_samples} timeouts), initial RTO "
               f"{units.duration(h.initial_rto_s)}, delayed ACK {units.number(h.delayed_ack)}, "
               f"SACK {units.number(h.sack)}, timestamps {units.number(h.timestamps)}, "
               f"window scale {units.number(h.window_scale)}")
    from traceflow.flows.congestion import describe as describe_cc

    click.echo("congestion control: " + describe_cc(h.congestion_control,
                                                 h.congestion_control_confidence,
                                                 h.congestion_control_evidence))
    click.echo("Hurst (IP bytes of the data direction per 10 ms bin): " + ", ".join(
        f"{k} {units.NA if units.missing(v) else f'{v:.3f}'}" for k, v in model.hurst.items()))
    for name, q in quality.items():
        click.echo(f"quality {name}: {q.text()}")
    for part, flags in (("network", net.quality if net is not None else {}),
                        ("hosts", h.quality)):
        for name, q in flags.items():
            click.echo(f"quality {part}.{name}: {q}")

"""``traceflow info CAPTURE...``: what a capture holds, at a glance (as capinfos)."""
import click

from traceflow.cli.options import echo_json, json_option

#: a link series (series, fit) of 10 ms bins cannot span more (bins.MAX_BINS of them: 31 days)
SERIES_BIN_NS = 10_000_000


@click.command("info")
@click.argument("captures", nargs=-1, required=True, type=click.Path())
@click.option("--decoder", type=click.Choice(["fast", "dpkt"]), default="fast", show_default=True,
              help="Cython decoder or the dpkt reference.")
@click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail", show_default=True,
              help="Malformed records: stop with an error, or skip and count them.")
@json_option
def command(captures, decoder, on_error, as_json):
    """Summarize each CAPTURE (pcap/pcapng, optionally .gz/.zst): format, link types, snapshot
    length, packets, bytes (the frames' original lengths, capinfos' data size), time span in UTC
    and time order, protocols, TCP connections and truncation. CAPTURE may be a file, a glob or
    a directory (searched for captures), as for every command. A span a link series cannot hold
    (a clock step: packets years before the rest) is a warning naming the gap.

    \b
    Examples:
      traceflow info trace.pcap
      traceflow info 'captures/*.pcap*' --json
      traceflow info captures/
    """
    from traceflow.cli.ingest import CAPTURE_PATTERNS
    from traceflow.pcap.info import capture_info
    from traceflow.scale.parallel import expand_paths

    infos = []
    for path in expand_paths(captures, CAPTURE_PATTERNS):
        infos.append(capture_info(path, decoder=decoder, on_error=on_error))
        warn_clock_step(infos[-1])
    if as_json:
        echo_json(infos if len(infos) > 1 else infos[0])
        return
    for i, info in enumerate(infos):
        if i:
            click.echo()
        click.echo(format_info(info))


def warn_clock_step(info):
    """Warn (as ``series`` and ``fit`` refuse) when the capture's span is too long for a link
    series of 10 ms bins, naming the longest gap between its timestamps."""
    from traceflow import units
    from traceflow.errors import InputFormatError, warn
    from traceflow.stats.bins import check_span

    if info["first_ns"] is None:
        return
    try:
        check_span(info["first_ns"], info["last_ns"], SERIES_BIN_NS)
    except InputFormatError as exc:
        n, gap = info["gap_after_packets"], units.duration(info["longest_gap_s"])
        warn(f"{n:,} packet{'s come' if n != 1 else ' comes'} {gap} before the rest; series, fit "
             f"and report will refuse it: {exc.reason}", path=info["file"])


def _snaplens(lengths):
    shown = ", ".join(f"{n:,} bytes" if n else "unlimited" for n in lengths) or "n/a"
    return shown + (" (per interface)" if len(lengths) > 1 else "")


def format_info(info):
    """The text block of one :func:`traceflow.pcap.info.capture_info` summary."""
    from traceflow import units

    compression = f", {info['compression']}-compressed" if info["compression"] else ""
    types = ", ".join(f"{v['name']} ({k}): {v['records']:,}" for k, v in info["linktypes"].items())
    p, tcp, cut = info["protocols"], info["tcp"], info["truncation"]
    lines = [
        f"file:          {info['file']} ({units.size(info['file_bytes'])})",
        f"format:        {info['format']}{compression}, {info['interfaces']} interface"
        f"{'s' * (info['interfaces'] != 1)}",
        f"link types:    {types or 'none'}",
        f"snapshot len:  {_snaplens(info['snaplens'])}",
        f"packets:       {info['records']:,} ({info['packets']:,} decoded)",
        f"bytes:         {info['bytes']:,} on the wire ({units.size(info['bytes'])}), "
        f"{info['captured_bytes']:,} captured",
        f"first packet:  {units.timestamp(info['first_ns'])}",
        f"last packet:   {units.timestamp(info['last_ns'])}",
        f"duration:      {units.duration(info['duration_s'])}",
        "time order:    " + ("strict (no timestamp earlier than the one before it)"
                             if info["time_ordered"] else "not strict (timestamps go back)"),
        f"mean rate:     " + (units.rate(8 * info["bytes"] / info["duration_s"])
                              if info["duration_s"] else "n/a"),
        f"protocols:     IPv4 {p['ipv4']:,}, IPv6 {p['ipv6']:,}, TCP {p['tcp']:,}, "
        f"UDP {p['udp']:,}, ICMP {p['icmp']:,}, non-IP {p['other']:,}",
        f"TCP:           {tcp['connections']:,} connections, {tcp['syn']:,} with a SYN, "
        f"{tcp['complete_handshakes']:,} complete handshakes",
        f"truncation:    {cut['snaplen_cut']:,} packets cut to the snapshot length; last record "
        + (f"cut short ({cut['last_record_cut_bytes']} bytes)" if cut["last_record_cut_bytes"]
           else "complete")
        + (f"; {cut['skipped_records']:,} malformed records skipped" if cut["skipped_records"]
           else ""),
    ]
    return "\n".join(lines)

"""``traceflow levels``: conditional traffic levels Pr{L2|L1}, E[L2|L1] (Park & Tuan 2000, sec. 2.2)."""
import json
from pathlib import Path

import click

from traceflow.cli.options import (Duration, check_json_output, echo_json, filter_options,
                                   json_option)
from traceflow.cli.series import DIRECTION_HELP
from traceflow.errors import TraceflowError


def block_series(path, scale_ns, *, column=None, bin_ns=None, direction=None, filter=None,
                 proto=None):
    """Per-block totals of INPUT at ``scale_ns`` (float64).

    Captures and packets tables are binned (10 ms) and aggregated to the scale, dropping the first
    and last blocks, which the capture's start and end cut short; series tables are aggregated to
    the scale (a multiple of their bin); a plain table's ``column`` is read as consecutive bins of
    ``bin_ns`` (default: each row is one block) and summed into blocks. ``direction`` (as
    ``series --direction``), ``filter``/``proto`` select packets (:mod:`traceflow.selection`).
    """
    from traceflow.stats.series import block_sums, format_duration, load_series, resample

    loaded = load_series(path, column=column, direction=direction, filter=filter, proto=proto)
    if loaded.frame is not None:
        if bin_ns is not None:
            raise TraceflowError("--bin applies to a plain table column only", path=path)
        values = resample(loaded.frame, scale_ns).get_column(loaded.column).to_numpy().astype(float)
        return values[1:-1] if loaded.kind in ("capture", "packets") else values
    bin_ns = bin_ns or scale_ns
    if scale_ns % bin_ns:
        raise TraceflowError(f"--scale {format_duration(scale_ns)} is not a multiple of --bin "
                             f"{format_duration(bin_ns)}")
    return block_sums(loaded.values, scale_ns // bin_ns)


def _format(result):
    h = result.h
    lines = [f"blocks: {result.x.size}  scale: {result.scale_s:g} s  levels: {h}  map: {result.method}"
             + ("  (reversed)" if result.reverse else "")]
    lines.append("Pr{L2|L1}  rows L1 = 1..h, columns L2 = 1..h;  E[L2|L1];  h_l")
    for lvl in range(h):
        row = " ".join("  -  " if p != p else f"{p:5.3f}" for p in result.prob[lvl])
        cm = result.cond_mean[lvl]
        cms = "-" if cm != cm else f"{cm:.2f}"
        lines.append(f"L1={lvl + 1:<2d} {row}   {cms:>5}  {result.table[lvl, h]}")
    lines.append("Pr{L2}     " + " ".join(f"{p:5.3f}" for p in result.marginal))
    s = result.summary
    lines.append(str(result.quality()))
    lines.append(f"mutual information {s['mutual_information']:.4f} bit ({s['mi_normalized']:.1%} of H(L2)); "
                 f"TV(cond, marginal) {s['tv_distance']:.3f}; diagonal mass {s['diagonal_mass']:.3f} "
                 f"(independent: {s['diagonal_mass_independent']:.3f}); R2 of E[L2|L1] {s['r2']:.3f}; "
                 f"chi2 p {s['chi2_pvalue']:.3g}")
    return "\n".join(lines)


@click.command("levels")
@click.argument("input", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--scale", default="2s", type=Duration("ns"), show_default=True,
              help="Block length T (time scale of L1, L2).")
@click.option("--levels", "h", default=8, type=click.IntRange(2, 1000), show_default=True,
              help="Number of levels h.")
@click.option("--map", "method", type=click.Choice(["quantile", "linear"]), default="quantile",
              show_default=True, help="Level map: equal-probability (quantile) or equal-width (linear) bins.")
@click.option("--reverse", is_flag=True,
              help="Reversed meaning (TCP-MT): high traffic = level 1 (low contention for own throughput).")
@click.option("--column", default=None, help="Column to analyse (default: bytes).")
@click.option("--bin", "bin_ns", type=Duration("ns"), default=None,
              help="Row spacing of a plain table column (default: each row is one block).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the result (incl. the CondProb table, usable as an SSC a-priori table) "
                   "as JSON (a .json file).")
@click.option("--direction", default=None, help=DIRECTION_HELP)
@filter_options("packets")
@json_option
def command(input, scale, h, method, reverse, column, bin_ns, output, direction, filter_, proto,
            as_json):
    """Conditional traffic levels of INPUT: the map L onto [1, h], the h x (h+1) CondProb table,
    Pr{L2|L1}, E[L2|L1] and how predictable L2 is from L1.

    INPUT is a capture, a series table (t, bytes, packets) or any Parquet/CSV file (--column).
    The quality line flags a table with fewer than 5 transitions per cell (also a warning on
    stderr and "quality" in the JSON).

    \b
    Examples:
      traceflow levels trace.pcap --scale 1s --levels 4
      traceflow levels trace.pcap --scale 2s --proto tcp --reverse -o table.json
      traceflow levels trace.pcap --direction dst:10.0.1.0/24 --scale 1s
      traceflow levels series.parquet --column packets --json
    """
    from traceflow.atomic import write_text
    from traceflow.errors import warn
    from traceflow.jsonutil import jsonable
    from traceflow.stats.levels import analyze_levels

    check_json_output(output)
    x = block_series(input, scale, column=column, bin_ns=bin_ns, direction=direction,
                     filter=filter_, proto=proto)
    result = analyze_levels(x, h, method=method, reverse=reverse, scale_s=scale / 1e9)
    for flag in result.quality().flags:
        warn(f"levels: {flag.message}")
    doc = result.to_dict()
    doc["column"] = column or "bytes"  # the unit of the edges (an SSC a-priori table needs it)
    if output is not None:
        write_text(output, json.dumps(jsonable(doc), indent=2))
    if as_json:
        echo_json(doc)
    else:
        click.echo(_format(result))

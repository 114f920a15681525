"""``traceflow tail``: heavy-tail fits of a flow-table column (Pareto MLE, Hill, chi-square, LR)."""
from pathlib import Path

import click

from traceflow.cli.options import filter_options, json_option, warn_then_json


def load_column(path, column, filter_=None, proto=None):
    """Values of ``column`` from a flows table, a capture / packets table (flows are built), or
    any Parquet/CSV table, after ``--filter``/``--proto`` (:mod:`traceflow.selection`) on that
    table. Durations become seconds."""
    from traceflow.selection import select_rows
    from traceflow.stats.series import column_values, is_packets, read_table, table_kind

    kind = table_kind(path)
    if kind == "capture":
        from traceflow.flows import load_flows  # lazy: decoding a capture is heavy

        table = load_flows(path)
    else:
        table = read_table(path)
        if is_packets(table) and "flow_id" not in table.columns:
            from traceflow.flows import load_flows

            table = load_flows(path)
    return column_values(select_rows(table, filter_, proto), column, path=path)


@click.command("tail")
@click.argument("flows", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--column", default="packets", show_default=True,
              help="Column to fit: packets, bytes, duration (seconds), app_bytes_s2c, ... or any "
                   "numeric column of a Parquet/CSV table.")
@click.option("--threshold", type=float, default=None,
              help="Fix xmin (and the chi-square threshold) instead of the KS search, e.g. 50 packets "
                   "as in the lifetime paper.")
@click.option("--bootstrap", type=click.IntRange(0), default=0, show_default=True,
              help="Replicates for the goodness-of-fit p-value (0 = skip).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
@click.option("--min-tail", type=click.IntRange(10), default=50, show_default=True,
              help="Smallest tail size the xmin search considers.")
@click.option("--discrete/--continuous", default=None,
              help="Treat values as integers (continuity correction) or reals [default: auto].")
@filter_options("flows")
@json_option
def command(flows, column, threshold, bootstrap, seed, min_tail, discrete, filter_, proto,
            as_json):
    """Fit a Pareto tail to COLUMN of FLOWS (a flows table, a capture, or any table).

    alpha is the tail exponent, P(X > x) = (xmin/x)^alpha; beta is the lifetime paper's location
    parameter of the whole-population Pareto, xmin * (n_tail/n)^(1/alpha). LR > 0 favours the
    Pareto over the alternative; p is the significance of its sign. The quality line (and
    "quality" in the JSON) flags a tail with too few points, rejected by its KS or bootstrap test,
    or where an alternative distribution fits better; each flag is also a warning on stderr.

    \b
    Examples:
      traceflow tail trace.pcap --column bytes
      traceflow tail flows.parquet --column duration --proto tcp --bootstrap 200
      traceflow tail flows.parquet --column packets --threshold 50 --filter "server_port = 80"
    """
    from traceflow.stats.tails import analyze

    values = load_column(flows, column, filter_, proto)
    report = analyze(values, threshold=threshold, bootstrap=bootstrap, seed=seed,
                     discrete=discrete, min_tail=min_tail)
    summary = {"column": column, **report.summary()}
    quality = report.quality()
    if warn_then_json(quality, f"{column} tail", summary, as_json):
        return
    p, h, c = report.pareto, report.hill, report.chi2
    click.echo(f"{column}: n = {p.n}" + (f" ({report.dropped} non-positive dropped)" if report.dropped else "")
               + (" [discrete]" if p.discrete else ""))
    click.echo(f"Pareto MLE   alpha = {p.alpha:.3f} ± {p.alpha_se:.3f}  xmin = {p.xmin:g}  "
               f"n_tail = {p.n_tail}  KS = {p.ks:.4f}  beta = {p.beta:.4g}")
    click.echo(f"Hill (k={h.k})  alpha = {h.alpha:.3f} ± {h.se:.3f}")
    if c is not None:
        click.echo(f"chi-square   alpha = {c.alpha:.3f}  beta = {c.beta:.4g}  above {c.threshold:g}: "
                   f"chi2 = {c.chi2:.1f} on {c.dof} dof, p = {c.p_value:.3g}")
    for alt, r in report.lr.items():
        verdict = ("inconclusive (p > 0.1: the sign of R may be chance)"
                   if r["favours"] == "inconclusive" else f"favours {r['favours']}")
        click.echo(f"vs {alt:12s} R = {r['R']:.4g}  normalized = {r['normalized']:.3g}  "
                   f"p = {r['p']:.3g}  -> {verdict}")
    if report.bootstrap:
        b = report.bootstrap
        click.echo(f"bootstrap    p = {b['p']:.3f} ({b['reps']} replicates, seed {b['seed']})")
    click.echo(str(quality))

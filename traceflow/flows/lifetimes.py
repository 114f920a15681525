"""Connection lifetimes: short/long classification and the share of short-lived demand.

After Wu & Nikolaidis (2002), section 2.1: a connection's lifetime is its length in packets (the
``packets`` column of the flow table); connections shorter than a threshold (50, 100 or 200
packets) are short-lived. Table 3 of the paper gives, per threshold, the share of the bytes carried
by short-lived connections ("bandwidth demand"); :func:`short_long_shares` gives that and the share
of connections.
"""
import numpy as np
import polars as pl

from traceflow.errors import InputFormatError

DEFAULT_THRESHOLDS = (50, 100, 200)
DEFAULT_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)


def _tcp(flows, tcp_only):
    for col in ("packets", "bytes", "proto"):
        if col not in flows.columns:
            raise InputFormatError(f"not a flows table: missing column {col!r}")
    return flows.filter(pl.col("proto") == 6) if tcp_only else flows


def is_long(flows, threshold=50, *, column="packets"):
    """Boolean Series: the flow's lifetime (``column``, packets) is at least ``threshold``."""
    return flows.get_column(column) >= threshold


def short_long_shares(flows, thresholds=DEFAULT_THRESHOLDS, *, tcp_only=True):
    """The paper's Table 3: per lifetime threshold (packets), how much is short-lived.

    Returns a DataFrame with one row per threshold: ``threshold``, ``connections``,
    ``short_connections``, ``short_share_connections`` (fraction of connections shorter than the
    threshold), ``bytes``, ``short_bytes``, ``short_share_bytes`` (fraction of IP bytes carried by
    them, the paper's "bandwidth demand of short-lived flows"). ``tcp_only``: count TCP flows
    only, as the paper does.
    """
    flows = _tcp(flows, tcp_only)
    n = flows.height
    total = flows.get_column("bytes").sum() if n else 0
    rows = []
    for threshold in thresholds:
        short = flows.filter(pl.col("packets") < threshold)
        short_bytes = short.get_column("bytes").sum() if short.height else 0
        rows.append({
            "threshold": int(threshold), "connections": n, "short_connections": short.height,
            "short_share_connections": short.height / n if n else float("nan"),
            "bytes": int(total), "short_bytes": int(short_bytes),
            "short_share_bytes": short_bytes / total if total else float("nan"),
        })
    return pl.DataFrame(rows, schema={
        "threshold": pl.Int64, "connections": pl.Int64, "short_connections": pl.Int64,
        "short_share_connections": pl.Float64, "bytes": pl.Int64, "short_bytes": pl.Int64,
        "short_share_bytes": pl.Float64})


def lifetime_quantiles(flows, quantiles=DEFAULT_QUANTILES, *, tcp_only=True):
    """Quantiles of the lifetime in packets, ``{"p50": ..., ...}`` plus ``mean`` and ``max``."""
    values = _tcp(flows, tcp_only).get_column("packets").to_numpy()
    if values.size == 0:
        return {}
    out = {f"p{q * 100:g}": float(np.quantile(values, q)) for q in quantiles}
    out.update(mean=float(values.mean()), max=int(values.max()))
    return out


def ccdf(values):
    """Empirical complementary CDF: DataFrame ``x`` (distinct positive values, ascending) and
    ``ccdf`` = P(X >= x), for log-log tail plots (the paper's Figure 3 style)."""
    from traceflow.stats.tails import ccdf_data

    data = ccdf_data(values, max_points=None)
    return pl.DataFrame({"x": data["x"], "ccdf": data["p"]},
                        schema={"x": pl.Float64, "ccdf": pl.Float64})


def lifetime_ccdf(flows, *, tcp_only=True):
    """CCDF of the lifetime in packets (see :func:`ccdf`)."""
    return ccdf(_tcp(flows, tcp_only).get_column("packets").to_numpy())


def flows_summary(flows, thresholds=DEFAULT_THRESHOLDS):
    """JSON-ready summary of a flow table: counts by protocol, close reason and handshake state
    (TCP), lifetime quantiles and the Table-3 shares."""
    tcp = flows.filter(pl.col("proto") == 6)

    def counts(df, col):
        return {str(k): int(v) for k, v in df.group_by(col).len().sort(col).iter_rows()}

    return {
        "flows": flows.height,
        "by_proto": counts(flows, "proto"),
        "tcp": {
            "connections": tcp.height,
            "by_close": counts(tcp, "close"),
            "by_handshake": counts(tcp, "handshake"),
            "lifetime_packets": lifetime_quantiles(flows),
            "short_lived": short_long_shares(flows, thresholds).to_dicts(),
        },
    }

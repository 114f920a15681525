"""Passive RTT analytics on the flow table: path RTTs, distribution, spectrum and RTT classes.

After Wu & Nikolaidis (2002), section 2.2: the "RTT spectrum" (their Figure 4) is the histogram of
log10(RTT / 10 µs) over connections, and flows are grouped into a handful of RTT classes; the
paper leaves the number of classes open — :func:`fit_rtt_classes` chooses it from the data with a
Gaussian mixture on log10(RTT) and the BIC. The paper estimates a connection's RTT from its first
packets (``rtt_min3`` of :mod:`traceflow.flows`); its classes are defined by propagation delay
("the difference of RTT is reflected by the variation of propagation delays", section 3), and its
FairShare looks a flow's RTT up by address pair (``rttlookup(p.src, p.dst)``, Figure 14). Here the
default RTT of a connection is the propagation part of its *path*: the per-connection minimum path
RTT (``rtt_min``, both halves of the path summed, :mod:`traceflow.flows.pathrtt`), lowered to the
minimum over every connection between the same two hosts (:func:`path_minima`), so the queueing
one short connection happened to meet does not split a path class. All RTTs are in seconds.
"""
import ipaddress
from dataclasses import asdict, dataclass, field

import numpy as np
import polars as pl

from traceflow.errors import InputFormatError
from traceflow.flows.lifetimes import ccdf

SPECTRUM_UNIT = 1e-5  # seconds: the paper's x axis is log10(RTT / 10^-5)
RTT_COLUMNS = ("rtt_min", "rtt_median", "rtt_p90", "rtt_handshake", "rtt_min3", "rtt_syn",
               "rtt_ack", "rtt_data1", "rtt_data2")
DEFAULT_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
IPV6_PREFIX = 48  # the /N of ``per="/N"`` applies to IPv4; IPv6 paths use /48 unless given
# Wu & Nikolaidis, section 3: "its propagation delay is a random number between -10% and +10% of
# the average propagation delay of its class"
MIN_CLASS_SPREAD = 0.1
#: medians of two RTT columns further apart than this factor draw a warning
DISAGREEMENT_FACTOR = 3.0
#: why each column can be the default (:func:`rtt_column`)
WHY = {"rtt_min": "per-connection minimum path RTT, both halves around the capture summed",
       "rtt_handshake": "handshake RTT (SYN to final ACK): fewer connections have a path RTT "
                        "in both halves"}


@dataclass(frozen=True)
class RTTColumn:
    """Which RTT column a command analyses (:func:`rtt_column`): the ``column``, the capture's
    ``vantage`` point ("sender", "receiver" or "unknown"), why (``reason``) and a ``warning``
    when the column disagrees strongly with the handshake RTT (None otherwise)."""

    column: str
    vantage: str
    reason: str
    warning: str | None = None

    def to_dict(self):
        return asdict(self)


def flow_vantage(flows):
    """The capture's vantage point from a flow table's handshake legs, by
    :func:`traceflow.flows.hosts.vantage` (the rule ``fit`` applies to packets): "sender",
    "receiver" or "unknown"."""
    return RttRows.of(flows, per="connection").vantage()


def rtt_column(flows, column="auto"):
    """The RTT column ``rtt``, ``report`` and ``fit`` analyse (``column="auto"``), or ``column``
    as given, with the vantage point, the reason and a disagreement warning.

    The automatic choice is the per-connection minimum path RTT ``rtt_min``: it sums the two
    halves around the capture point (:mod:`traceflow.flows.pathrtt`), so it measures the whole
    path at every vantage point, with more samples of the far half than the handshake has (at a
    sender-side capture every ACK times it, at a receiver-side one every timestamp echo; without
    timestamps only the handshake and each request do, so it is then the handshake rule itself).
    ``rtt_handshake`` (SYN → final ACK, Wireshark's initial_rtt, also the whole path anywhere) is
    chosen only where fewer connections have an ``rtt_min`` (one-way captures, flows tables
    without the column). ``rtt_min3`` (the lifetime paper's minimum of three samples, taken at a
    gateway) is never automatic: next to an end host one of its samples is that host's own
    reaction time, ~0 rather than a round trip.

    The warning says when the medians of the column and of ``rtt_handshake`` (what ``compare``
    times, and the far-half-free reference) over the connections having both differ by more than
    :data:`DISAGREEMENT_FACTOR` times.
    """
    return RttRows.of(flows, column, per="connection").choice()


def rtt_values(flows, column="rtt_min3", per="connection"):
    """Positive, finite RTT samples (seconds) of ``column`` as a float64 NumPy array, one per
    connection with a sample (:func:`connection_rtts`). Zero intervals (e.g. an ACK immediately
    followed by the client's request, both captured at the client) have no logarithm and are
    dropped.
    """
    return RttRows.of(flows, column, per).values(column)


def connection_rtts(flows, column="rtt_min3", per="connection"):
    """Each connection's RTT (seconds, float64, aligned with ``flows``; null without one).

    ``per``: "connection" (the connection's own ``column``), or "pair" / "/N" / "/N,/M": each
    connection takes the minimum positive ``column`` over its path (:func:`path_minima`)."""
    return RttRows.of(flows, column, per).connection_rtts(column)


def path_minima(flows, *, per="pair", column="rtt_min"):
    """Minimum path RTT per path (seconds): per host pair (``per="pair"``) or per pair of
    networks (``per="/24"``: IPv4 /24, IPv6 /48; ``"/N,/M"`` sets both), over the connections
    with a positive ``column``, in either direction. Columns ``host_a``, ``host_b`` (the two
    ends, in text order), ``connections``, ``rtt_min`` (minimum of ``column``) and
    ``rtt_median`` (median of ``column`` over the path's connections), by ``rtt_min``."""
    return RttRows.of(flows, column, per).path_minima(column)


class RttRows:
    """What the RTT analytics read of a flow table, kept compact so that a flow table streamed
    chunk by chunk (:meth:`add`, in table order) need not be held: per flow, whether it is TCP,
    its handshake legs (the vantage point), the RTT columns a choice of ``column`` can read
    (``rtt_min``, ``rtt_handshake`` and ``column``) and the id of its path (``per``), with the
    text of each path kept once — about 50 bytes per flow instead of its row."""

    def __init__(self, column="auto", per="pair"):
        if per != "connection" and per != "pair":
            _prefixes(per)  # a bad path unit fails before any flow is read
        self.column, self.per = column, per
        self.names = None   # the flow table's columns
        self.parts = []
        self.paths = pl.DataFrame(schema={"host_a": pl.String, "host_b": pl.String,
                                          "path": pl.UInt32})
        self._rows = None

    @classmethod
    def of(cls, flows, column="auto", per="pair"):
        """The rows of a whole flow table."""
        rows = cls(column, per)
        rows.add(flows)
        return rows

    def add(self, flows):
        """Take the next flows of the table (a DataFrame with flow table columns)."""
        if self.names is None:
            self.names = flows.columns
            if self.column != "auto":
                _check_column(self.names, self.column)
        legs = {"rtt_syn", "rtt_ack", "payload_bytes_c2s", "payload_bytes_s2c"} <= set(self.names)
        keep = [c for c in ("rtt_min", "rtt_handshake", self.column) if c in self.names]
        cols = [(pl.col("proto") == 6) if "proto" in self.names else pl.repeat(True, pl.len())]
        if legs:
            cols += [pl.col("rtt_syn").alias("leg_syn"), pl.col("rtt_ack").alias("leg_ack"),
                     (pl.col("payload_bytes_s2c") >= pl.col("payload_bytes_c2s"))
                     .alias("sender_is_server")]
        part = flows.select(cols[0].alias("tcp"), *cols[1:], *dict.fromkeys(keep))
        if self.per != "connection":
            part = part.with_columns(path=self._path_ids(flows))
        self.parts.append(part)
        self._rows = None

    def _path_ids(self, flows):
        """The id of each flow's path, new paths numbered on."""
        keys = ["host_a", "host_b"]
        # the paths are worked out once per distinct (client, server), in order of appearance,
        # and each flow takes its path by the addresses' integer codes (joins on text over every
        # flow took ~350 MB on a 64x capture's 1.7 M flows)
        key = flows.select(_key=pair_key())["_key"]
        pairs = _path_keys(flows.select("client_addr", "server_addr").with_columns(_key=key)
                           .unique("_key", maintain_order=True)
                           .with_columns(pl.col("client_addr", "server_addr").cast(pl.String)),
                           self.per)
        new = (pairs.select(keys).join(self.paths, on=keys, how="anti", nulls_equal=True)
               .unique(maintain_order=True))
        if new.height:
            first = self.paths.height
            self.paths = pl.concat([self.paths, new.with_columns(
                path=pl.int_range(first, first + new.height, dtype=pl.UInt32))])
        ids = pairs.join(self.paths, on=keys, how="left", nulls_equal=True, maintain_order="left")
        return key.replace_strict(ids["_key"], ids["path"], return_dtype=pl.UInt32).rename("path")

    @property
    def rows(self):
        if self._rows is None:
            self._rows = pl.concat(self.parts) if len(self.parts) > 1 else self.parts[0]
            self.parts = [self._rows]
        return self._rows

    def vantage(self):
        """:func:`flow_vantage` of the flows."""
        from traceflow.flows.hosts import vantage

        if "leg_syn" not in self.rows.columns:
            return "unknown"
        return vantage(self._tcp("leg_syn", "leg_ack", "sender_is_server"))

    def _tcp(self, *columns):
        """``columns`` of the TCP flows' rows (filtering only these: a copy of all of them took
        60 MB on a 64x capture's 1.7 M flows)."""
        return self.rows.select(*columns, "tcp").filter("tcp").drop("tcp")

    def choice(self):
        """:func:`rtt_column` of the flows."""
        column = self.column
        tcp = self._tcp(*dict.fromkeys(c for c in ("rtt_min", "rtt_handshake", column)
                                       if c in self.rows.columns))
        where = self.vantage()
        have = {c: int(tcp.select((pl.col(c) > 0).sum()).item()) if c in tcp.columns else 0
                for c in ("rtt_min", "rtt_handshake")}
        if column == "auto":
            column = ("rtt_min" if have["rtt_min"] and have["rtt_min"] >= have["rtt_handshake"]
                      else "rtt_handshake")
            reason = WHY[column]
        else:
            reason = "chosen by --column"
        other = "rtt_min" if column == "rtt_handshake" else "rtt_handshake"
        warning = None
        if other in tcp.columns:
            both = tcp.filter((pl.col(column) > 0) & (pl.col(other) > 0))
            if both.height:
                mine, theirs = float(both[column].median()), float(both[other].median())
                ratio = max(mine, theirs) / min(mine, theirs)
                if ratio > DISAGREEMENT_FACTOR:
                    warning = (f"RTT columns disagree {ratio:.0f}x: median {column} "
                               f"{mine * 1e3:.3g} ms vs {other} {theirs * 1e3:.3g} ms over "
                               f"{both.height} flows (vantage point: {where}); using {column}")
        return RTTColumn(column, where, reason, warning)

    def connection_rtts(self, column):
        """:func:`connection_rtts` of the flows (``column``: one the rows keep)."""
        _check_column(self.names, column)
        if self.per == "connection":
            return self.rows.get_column(column).cast(pl.Float64)
        return self.rows.select(pl.col(column).filter(pl.col(column) > 0).min()
                                .over("path")).to_series().cast(pl.Float64)

    def values(self, column):
        """:func:`rtt_values` of the flows."""
        x = self.connection_rtts(column).drop_nulls().to_numpy()
        return x[np.isfinite(x) & (x > 0)]

    def path_minima(self, column):
        """:func:`path_minima` of the flows."""
        _check_column(self.names, column)
        value = pl.col(column)
        return (self.rows.filter(value > 0).group_by("path")
                .agg(connections=pl.len().cast(pl.Int64), rtt_min=value.min(),
                     rtt_median=value.median())
                .join(self.paths, on="path", how="left")
                .sort("rtt_min", "host_a", "host_b")
                .select("host_a", "host_b", "connections", "rtt_min", "rtt_median"))

    def summary(self, *, classes="auto", bins=40, max_classes=6, random_state=0):
        """:func:`rtt_summary` of the flows."""
        choice = self.choice()
        column = choice.column
        x = self.values(column)
        out = {"column": column, "column_reason": choice.reason, "per": self.per,
               "vantage": choice.vantage, "warning": choice.warning, "flows": self.rows.height,
               "quantiles": rtt_quantiles(x), "spectrum": rtt_spectrum(x, bins=bins).to_dicts(),
               "paths": None if self.per == "connection" else
               self.path_minima(column).to_dicts()}
        if classes is None or (classes == "auto" and x.size < 2):
            out["classes"] = None
        elif classes == "auto":
            out["classes"] = fit_rtt_classes(x, max_classes=max_classes,
                                             random_state=random_state).to_dict()
        else:
            out["classes"] = fixed_rtt_classes(x, classes).to_dict()
        return out


def pair_key():
    """An expression: each flow's (client, server) addresses as one 64-bit integer, their
    category codes side by side (a missing address as 2^32 - 1): a key to group or look up
    host pairs by, without their text."""
    def code(column):
        return (pl.col(column).cast(pl.Categorical).to_physical().cast(pl.UInt64)
                .fill_null((1 << 32) - 1))

    return code("client_addr") * (1 << 32) + code("server_addr")


def _check_column(names, column):
    if column not in names:
        raise InputFormatError(f"flows table has no column {column!r} (choose from "
                               f"{', '.join(c for c in RTT_COLUMNS if c in names)})")


def _prefixes(per):
    """(IPv4, IPv6) prefix lengths of a ``per`` of the form "/N" or "/N,/M"."""
    parts = [p.strip() for p in per.split(",")]
    try:
        lengths = [int(p[1:]) for p in parts if p.startswith("/")]
    except ValueError:
        lengths = []
    if len(lengths) != len(parts) or not 1 <= len(parts) <= 2:
        raise InputFormatError(f"path unit must be 'connection', 'pair', '/N' or '/N,/M', "
                               f"got {per!r}")
    v4, v6 = lengths[0], lengths[1] if len(lengths) == 2 else IPV6_PREFIX
    if not (0 <= v4 <= 32 and 0 <= v6 <= 128):
        raise InputFormatError(f"prefix lengths must be /0../32 (IPv4) and /0../128 (IPv6), "
                               f"got {per!r}")
    return v4, v6


def _path_keys(flows, per):
    """``flows`` with the path's ends ``host_a`` <= ``host_b`` (a round trip has no direction):
    the two addresses ("pair") or their networks ("/N", "/N,/M")."""
    client, server = pl.col("client_addr"), pl.col("server_addr")
    if per != "pair":
        v4, v6 = _prefixes(per)
        addrs = pl.concat([flows["client_addr"], flows["server_addr"]]).unique().drop_nulls()
        nets = [str(ipaddress.ip_network(f"{a}/{v4 if ':' not in a else v6}", strict=False))
                for a in addrs]
        mapping = dict(zip(addrs.to_list(), nets))
        client, server = (c.replace_strict(mapping, return_dtype=pl.String)
                          for c in (client, server))
    return flows.with_columns(host_a=pl.min_horizontal(client, server),
                              host_b=pl.max_horizontal(client, server))


def rtt_spectrum(rtts, *, bins=40, value_range=None):
    """Histogram of log10(RTT / 10 µs) — the paper's Figure 4.

    ``rtts`` in seconds (non-positive values ignored); ``bins`` equal-width bins over
    ``value_range`` = (lo, hi) in log10 units (default: the data range). Returns a DataFrame with
    ``left``, ``right`` (bin edges, log10 units), ``rtt_left``/``rtt_right`` (seconds), ``count``
    and ``frequency`` (count / number of samples).
    """
    x = np.asarray(rtts, dtype=float)
    x = np.log10(x[np.isfinite(x) & (x > 0)] / SPECTRUM_UNIT)
    if x.size == 0:
        counts, edges = np.zeros(bins, dtype=np.int64), np.linspace(0.0, 1.0, bins + 1)
    else:
        counts, edges = np.histogram(x, bins=bins, range=value_range)
    return pl.DataFrame({
        "left": edges[:-1], "right": edges[1:],
        "rtt_left": SPECTRUM_UNIT * 10.0 ** edges[:-1],
        "rtt_right": SPECTRUM_UNIT * 10.0 ** edges[1:],
        "count": counts.astype(np.int64),
        "frequency": counts / x.size if x.size else np.zeros(bins),
    })


def rtt_ccdf(rtts):
    """CCDF of RTT samples (seconds): DataFrame ``x``, ``ccdf`` = P(RTT >= x)."""
    return ccdf(rtts)


def rtt_quantiles(rtts, quantiles=DEFAULT_QUANTILES):
    """``{"n", "mean", "p5", ...}`` of RTT samples in seconds (empty samples: ``{"n": 0}``)."""
    x = np.asarray(rtts, dtype=float)
    if x.size == 0:
        return {"n": 0}
    out = {"n": int(x.size), "mean": float(x.mean())}
    out.update({f"p{q * 100:g}": float(np.quantile(x, q)) for q in quantiles})
    return out


@dataclass
class RTTClasses:
    """RTT classes as intervals of RTT: class i holds boundaries[i-1] <= RTT < boundaries[i].

    ``boundaries``: ascending, seconds (k-1 of them for k classes). ``counts``, ``medians``
    (seconds): per class, over the samples classified. ``method``: "fixed" or "gmm-bic";
    for "gmm-bic", ``n_components`` chosen and ``bic`` per candidate number of components.
    """
    boundaries: list
    counts: list
    medians: list
    method: str
    n_components: int = 0
    bic: dict = field(default_factory=dict)

    @property
    def n_classes(self):
        return len(self.boundaries) + 1

    def classify(self, rtts):
        """Class index (0 = shortest RTTs) of each RTT in seconds; -1 for missing/invalid."""
        return classify(rtts, self.boundaries)

    def to_dict(self):
        return {**asdict(self), "n_classes": self.n_classes}


def classify(rtts, boundaries):
    """Class index of each RTT (seconds) given ascending ``boundaries``; -1 for NaN/None/<=0."""
    x = np.asarray(rtts, dtype=float)
    out = np.searchsorted(np.asarray(boundaries, dtype=float), x, side="right").astype(np.int64)
    out[~(np.isfinite(x) & (x > 0))] = -1
    return out


def _describe(rtts, boundaries, method, **extra):
    x = np.asarray(rtts, dtype=float)
    labels = classify(x, boundaries)
    counts, medians = [], []
    for k in range(len(boundaries) + 1):
        members = x[labels == k]
        counts.append(int(members.size))
        medians.append(float(np.median(members)) if members.size else float("nan"))
    return RTTClasses([float(b) for b in boundaries], counts, medians, method, **extra)


def fixed_rtt_classes(rtts, boundaries):
    """Classes from user-given boundaries (seconds, any order)."""
    b = sorted(float(v) for v in boundaries)
    if any(v <= 0 for v in b) or len(set(b)) != len(b):
        raise InputFormatError(f"RTT class boundaries must be distinct and > 0, got {boundaries}")
    return _describe(rtts, b, "fixed")


def fit_rtt_classes(rtts, *, max_classes=6, random_state=0, max_samples=20000, grid=2000,
                    min_spread=MIN_CLASS_SPREAD, min_share=0.01):
    """Learn RTT classes: Gaussian mixtures on log10(RTT) with 1..``max_classes`` components,
    keep the one with the lowest BIC among those whose every component holds at least
    ``min_share`` of the samples, and cut log10(RTT) between each pair of neighbouring
    components (by mean) where their weighted densities cross (searched on ``grid`` points), so
    k components give k classes.

    No component is narrower than a class of RTTs spread uniformly within ±``min_spread`` of
    its centre (the variance floor of every component): the paper's classes are that wide,
    so paths a few percent apart (e.g. per-path minima, each one value) form one class, not one
    class each.

    Why ``min_share``: propagation RTTs are sharp (a class's handshakes within ~0.1 ms of each
    other), so a mixture buys a large likelihood gain, and a lower BIC, with a component around
    any two or three stragglers (handshakes that waited in a queue); on real-kernel testbed runs
    with three configured RTTs the BIC alone made classes of 1 and 2 flows out of 367.

    The mixtures are fitted on at most ``max_samples`` samples (a seeded random subset); counts
    and medians use all samples. Deterministic for a given ``random_state``. Needs at least 2
    samples; with few distinct values the candidate numbers of components are limited.
    """
    from sklearn.mixture import GaussianMixture

    x = np.asarray(rtts, dtype=float)
    x = x[np.isfinite(x) & (x > 0)]
    if x.size < 2:
        raise InputFormatError(f"need at least 2 RTT samples to learn classes, got {x.size}")
    z = np.log10(x).reshape(-1, 1)
    if z.shape[0] > max_samples:
        pick = np.random.default_rng(random_state).choice(z.shape[0], max_samples, replace=False)
        z = z[np.sort(pick)]
    k_max = max(1, min(int(max_classes), np.unique(z).size, z.shape[0] // 2 or 1))
    floor = np.log10((1 + min_spread) / (1 - min_spread)) ** 2 / 12  # variance of uniform ±spread
    fits, bic = {}, {}
    for k in range(1, k_max + 1):
        gm = GaussianMixture(n_components=k, covariance_type="full", n_init=1,
                             random_state=random_state, reg_covar=floor).fit(z)
        fits[k], bic[k] = gm, float(gm.bic(z))
    eligible = [k for k in fits if k == 1 or fits[k].weights_.min() >= min_share]
    best = min(eligible, key=bic.get)
    gm = fits[best]
    order = np.argsort(gm.means_.ravel())
    mu = gm.means_.ravel()[order]
    sd = np.sqrt(gm.covariances_.reshape(-1)[order])
    logw = np.log(gm.weights_[order])
    cuts = []
    for i in range(best - 1):
        # Between two neighbouring components (by mean), cut where their weighted densities
        # are closest to equal: one boundary per pair, so k components give k classes.
        pts = np.linspace(mu[i], mu[i + 1], grid)
        left = logw[i] - np.log(sd[i]) - 0.5 * ((pts - mu[i]) / sd[i]) ** 2
        right = logw[i + 1] - np.log(sd[i + 1]) - 0.5 * ((pts - mu[i + 1]) / sd[i + 1]) ** 2
        cuts.append(10.0 ** pts[np.argmin(np.abs(left - right))])
    return _describe(x, cuts, "gmm-bic", n_components=int(best), bic=bic)


def rtt_summary(flows, *, column="auto", per="pair", classes="auto", bins=40, max_classes=6,
                random_state=0):
    """JSON-ready RTT summary of a flow table (its flows with a positive ``column``).

    ``column``: "auto" or a flow table RTT column (:func:`rtt_column`). ``per``: the path
    unit whose minimum each connection takes (:func:`rtt_values`; "connection" keeps each
    connection's own value). ``classes``: "auto" (learned, :func:`fit_rtt_classes`), a list of
    boundaries in seconds (:func:`fixed_rtt_classes`) or None. Contains the column, the vantage
    point, the quantiles, the spectrum, the classes and (``per`` not "connection") the minimum
    RTT of every path. A flow table streamed chunk by chunk: :meth:`RttRows.summary`.
    """
    return RttRows.of(flows, column, per).summary(classes=classes, bins=bins,
                                                  max_classes=max_classes,
                                                  random_state=random_state)

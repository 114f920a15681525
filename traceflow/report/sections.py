"""The analytics sections of ``traceflow report``: one input → figures + summary table.

An input is a capture, a packets or flows Parquet table, a run directory (``summary.json`` + the
bottleneck pcap) or a directory of analytics outputs (``flows.parquet`` + ``series.parquet``).
Each available analysis is drawn by :mod:`traceflow.report.figures`; an analysis the input cannot
support (too few flows for a tail fit, a series too short for Hurst) becomes a warning line in the
section instead of failing the report.
"""
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from traceflow.errors import InputFormatError, TraceflowError
from traceflow.report import figures
from traceflow.report.html import Figure, Section, Table

BIN = "10ms"
BIN_S = 0.01
SERIES_FACTORS = (1, 10, 100)  # 10 ms, 100 ms, 1 s
LEVEL_SCALES_S = (1.0, 0.1)    # the first giving at least MIN_LEVEL_BLOCKS blocks
MIN_LEVEL_BLOCKS = 200
MIN_RTT_SAMPLES = 10
#: what the link series of an input counts (traceflow.stats.series.link_series)
SERIES_BYTES = "IP bytes of both directions"
LEVELS_H = 8


@dataclass
class Loaded:
    """What one input offers: a flows table and/or a link series (bytes per 10 ms bin)."""

    name: str
    kind: str
    flows: pl.DataFrame | None
    series: np.ndarray | None
    packets: int | None = None
    start_ns: int | None = None       # first packet (UTC ns since the epoch)
    rtt_samples: pl.DataFrame | None = None  # traceflow.flows.pathrtt.SAMPLE_SCHEMA


def load_input(path, *, filter=None, proto=None):
    """Read one report input (see the module docstring) into :class:`Loaded`; ``filter`` and
    ``proto`` select the packets of a capture, packets table or run (the flows of a flows table)
    before anything is computed (:mod:`traceflow.selection`)."""
    from traceflow.flows import input_kind
    from traceflow.selection import row_filter, select_rows

    path = Path(path)
    if not path.exists():
        raise TraceflowError("no such file or directory", path=path)
    selecting = row_filter(filter, proto) is not None
    if path.is_dir():
        if (path / "summary.json").exists():
            return _load_run(path, filter, proto)
        if selecting:
            raise TraceflowError("--filter/--proto need packets: a capture, packets table or run",
                                 path=path)
        if (path / "flows.parquet").exists() and (path / "series.parquet").exists():
            return Loaded(path.name, "analytics", pl.read_parquet(path / "flows.parquet"),
                          _series_table(path / "series.parquet"))
        raise InputFormatError("directory is neither a run (summary.json) nor analytics outputs "
                               "(flows.parquet + series.parquet)", path=path)
    kind = input_kind(path)
    if kind == "flows":
        return Loaded(path.name, "flows", select_rows(pl.read_parquet(path), filter, proto), None)
    packets = pl.read_parquet(path) if kind == "packets" else _read_packets(path)
    return _from_packets(path.name, kind, select_rows(packets, filter, proto), path)


def _from_packets(name, kind, packets, path):
    from traceflow.flows import flows_with_rtt_samples

    if packets.height == 0:
        raise InputFormatError("no packets", path=path)
    start = int(packets.get_column("ts").cast(pl.Int64).min())
    table, samples = flows_with_rtt_samples(packets)
    return Loaded(name, kind, table, _series(packets), packets.height, start, samples)


def _load_run(path, filter=None, proto=None):
    """A simulator run directory: its bottleneck capture when it wrote one (the same analytics
    as a measured trace), else its own bottleneck series and finished transfers."""
    import json

    from traceflow.compare import run_pcap
    from traceflow.selection import row_filter, select_rows

    summary = json.loads((path / "summary.json").read_text())
    try:
        packets = _read_packets(run_pcap(path, summary))
    except InputFormatError:
        packets = None
    if packets is not None:
        return _from_packets(path.name, "run", select_rows(packets, filter, proto), path)
    if row_filter(filter, proto) is not None:
        raise TraceflowError("--filter/--proto need the run's bottleneck pcap", path=path)
    link = summary.get("bottleneck")
    series = pl.read_parquet(path / "series.parquet")
    if link is not None and "link" in series.columns:
        series = series.filter(pl.col("link") == link)
    if series.height < 2:
        raise InputFormatError("run has neither a pcap nor a bottleneck series", path=path)
    transfers = (pl.read_parquet(path / "transfers.parquet")
                 .filter(pl.col("end").is_not_null())
                 .select(bytes=pl.col("size"), duration=pl.col("end") - pl.col("start")))
    return Loaded(f"{path.name} [{link}]", "run", transfers, _resampled(series))


def _read_packets(path):
    from traceflow.pcap.reader import read_packets

    table = read_packets(path)
    return table if isinstance(table, pl.DataFrame) else pl.from_arrow(table)


def _series(packets):
    """IP bytes per 10 ms bin of a packets table."""
    from traceflow.stats.series import link_series

    return _bytes(link_series(packets, BIN))


def _series_table(path):
    return _resampled(pl.read_parquet(path))


def _resampled(frame):
    from traceflow.stats.series import bin_width, parse_duration, resample

    frame = frame.select("t", "bytes", "packets")
    if bin_width(frame) != parse_duration(BIN):
        frame = resample(frame, BIN)
    return _bytes(frame)


def _bytes(frame):
    return frame["bytes"].cast(pl.Float64).to_numpy()


def slug(text):
    """A file-name-safe version of ``text``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.") or "input"


class _Collector:
    """Gathers one section's figures, summary rows and warnings; turns failures into warnings."""

    def __init__(self, out_dir, prefix):
        self.out_dir, self.prefix = Path(out_dir), prefix
        self.figures, self.rows, self.warnings = [], [], []

    def path(self, name):
        return self.out_dir / f"{self.prefix}-{name}.png"

    def attempt(self, what, fn, *args):
        try:
            with np.errstate(divide="ignore", invalid="ignore"):  # log10(0) of empty blocks
                return fn(*args)
        except (TraceflowError, ValueError, np.linalg.LinAlgError) as exc:
            self.warnings.append(f"{what}: not computed ({exc})")
            return None

    def figure(self, path, caption):
        self.figures.append(Figure(path.name, caption))

    def row(self, quantity, value, unit="", note="", quality=None):
        """A summary row: ``value`` shown in its ``unit`` (:func:`traceflow.units.value`),
        ``raw`` kept for report.json; a :class:`~traceflow.stats.quality.Quality` goes into
        the row's quality column (and its flags into the section's warnings)."""
        from traceflow import units

        self.rows.append({"quantity": quantity, "value": units.value(value, unit), "raw": value,
                          "unit": unit, "note": note,
                          "quality": None if quality is None else quality.text()})
        if quality is not None:
            self.warnings.extend(f"{quantity}: {f.message}" for f in quality.flags)


def input_section(path, out_dir, index=0, filter=None, proto=None):
    """Analyse one input; write its PNGs into ``out_dir``; return its :class:`Section`."""
    from traceflow import units

    data = load_input(path, filter=filter, proto=proto)
    c = _Collector(out_dir, f"{index:02d}-{slug(Path(path).stem)}")
    if data.packets is not None:
        c.row("packets", data.packets)
    if data.start_ns is not None:
        c.row("first packet", units.timestamp(data.start_ns))
    if data.flows is not None:
        c.row("flows", data.flows.height)
        for column, label, unit in (("bytes", "flow size", "B"),
                                    ("duration", "flow lifetime", "s")):
            c.attempt(f"CCDF of {label}", _tail, c, data.flows, column, label, unit)
        classes = c.attempt("RTT spectrum", _rtt, c, data.flows)
        if data.rtt_samples is not None:
            c.attempt("RTT over time", _rtt_time, c, data.rtt_samples, classes)
    if data.series is not None:
        c.row("duration", data.series.size * BIN_S, "s")
        c.row("mean rate", 8 * data.series.sum() / max(data.series.size * BIN_S, BIN_S), "bit/s",
              note=SERIES_BYTES)
        c.attempt("link series", _series_fig, c, data.series)
        c.attempt("Hurst estimates", _hurst, c, data.series)
        c.attempt("conditional levels", _levels, c, data.series)
        c.attempt("dispersion curve", _dispersion, c, data.series)
    return Section(f"{data.name} ({data.kind})", figures=c.figures,
                   tables=[Table(c.rows, columns=["quantity", "value", "note", "quality"])],
                   warnings=c.warnings)


def _column_values(flows, column):
    series = flows.get_column(column)
    if series.dtype == pl.Duration:
        series = series.dt.total_nanoseconds().cast(pl.Float64) / 1e9
    return series.cast(pl.Float64).drop_nulls().to_numpy()


def _tail(c, flows, column, label, unit):
    from traceflow import units
    from traceflow.stats.tails import ccdf_data, fit_pareto, likelihood_ratios
    from traceflow.stats.quality import tail_quality

    x = _column_values(flows, column)
    x = x[x > 0]
    fit = fit_pareto(x)
    label_unit = f"{label} ({'bytes' if unit == 'B' else unit})"
    path = figures.ccdf_figure(ccdf_data(x, fit), c.path(f"ccdf-{column}"), fit=fit,
                               label=label_unit)
    c.figure(path, f"Log-log CCDF of {label_unit} with the Pareto fit above xmin (MLE, KS-chosen "
                   "xmin).")
    c.row(f"Pareto α of {label}", fit.alpha,
          note=f"xmin = {units.value(fit.xmin, unit)}, {fit.n_tail} of {fit.n} in the tail, "
               f"KS {fit.ks:.3f}",
          quality=tail_quality(fit.n_tail, fit.ks, lr=likelihood_ratios(x, fit)))


def _rtt(c, flows):
    """RTT spectrum and classes of the default RTT (:func:`traceflow.flows.rtt.rtt_column`,
    minimum per host pair); returns the classes."""
    from traceflow import units
    from traceflow.flows import rtt

    tcp = flows.filter(pl.col("proto") == 6) if "proto" in flows.columns else flows
    choice = rtt.rtt_column(tcp)
    column = choice.column
    if choice.warning:
        c.warnings.append(choice.warning)
    x = rtt.rtt_values(tcp, column, "pair")
    if x.size < MIN_RTT_SAMPLES:
        raise TraceflowError(f"{x.size} flows with an RTT sample ({column}), need "
                             f"{MIN_RTT_SAMPLES}")
    classes = rtt.fit_rtt_classes(x)
    path = figures.rtt_spectrum_figure(rtt.rtt_spectrum(x), c.path("rtt-spectrum"),
                                       boundaries=classes.boundaries, medians=classes.medians)
    c.figure(path, f"RTT spectrum (Wu & Nikolaidis Fig. 4): histogram over connections of "
                   f"log10(RTT / 10 µs), each connection taking the minimum {column} of its host "
                   f"pair, the column for this vantage point ({choice.vantage}), with the RTT "
                   f"classes learned from it (Gaussian mixture, BIC).")
    c.row("RTT median", float(np.median(x)), "s",
          note=f"{column} per host pair, {x.size} flows with a sample; vantage point "
               f"{choice.vantage}")
    c.row("RTT classes", classes.n_classes,
          note="medians " + ", ".join(units.duration(m) for m in classes.medians))
    return classes


def _rtt_time(c, samples, classes):
    from traceflow import units

    s = samples.drop_nulls("path_rtt").filter(pl.col("path_rtt") > 0)
    if s.height == 0:
        raise TraceflowError("no path RTT samples (no connection timed in both halves)")
    t = (s["ts"].dt.epoch("ns") - s["ts"].dt.epoch("ns").min()) / 1e9
    path = figures.rtt_time_figure(t.to_numpy(), s["path_rtt"].to_numpy(), c.path("rtt-time"),
                                   classes=classes.boundaries if classes else ())
    c.figure(path, "Path RTT over time: every passive sample of one half of a connection's path "
                   "(TCP timestamp echo, or data to covering ACK with Karn's rule) plus the "
                   "nearest-in-time sample of its other half; dashed: RTT class boundaries.")
    c.row("path RTT samples", s.height,
          note=f"median {units.duration(float(s['path_rtt'].median()))}")


def _series_fig(c, x):
    path = figures.series_figure(x, BIN_S, c.path("series"), factors=SERIES_FACTORS, unit="bit")
    c.figure(path, "Link rate (bit/s) in 10 ms, 100 ms and 1 s bins from the first packet.")


def _hurst(c, x):
    from traceflow.stats.hurst import estimate
    from traceflow.stats.quality import Flag, Quality, hurst_quality

    report = estimate(x, ("vt", "rs", "wavelet"))
    path = figures.hurst_figure(report, c.path("hurst"), bin_s=BIN_S)
    c.figure(path, f"Hurst exponent of the {SERIES_BYTES} per 10 ms bin: variance-time, R/S "
                   "pox plot, wavelet logscale diagram (block lengths in seconds).")
    for method, result in report.results.items():
        c.row(f"Hurst H ({method})", result.H, note=f"{SERIES_BYTES} per 10 ms bin",
              quality=hurst_quality(result.H, report.n, method))
    if report.warning:
        c.row("Hurst spread", report.spread,
              quality=Quality([Flag("disagree", report.warning)]))


def _levels(c, x):
    from traceflow.stats.levels import analyze_levels
    from traceflow.stats.quality import levels_quality
    from traceflow.stats.series import block_sums

    for scale in LEVEL_SCALES_S:
        blocks = block_sums(x, int(round(scale / BIN_S)))
        if blocks.size >= MIN_LEVEL_BLOCKS:
            break
    analysis = analyze_levels(blocks, LEVELS_H, scale_s=scale)
    path = figures.levels_figure(analysis, c.path("levels"))
    c.figure(path, f"Pr{{L2 | L1}} of consecutive {scale:g} s blocks (quantile map, h = "
                   f"{LEVELS_H}); white: E[L2 | L1].")
    c.row("level blocks", int(blocks.size), note=f"{scale:g} s blocks, h = {LEVELS_H}",
          quality=levels_quality(int(analysis.table[:, :-1].sum()), LEVELS_H))


def _dispersion(c, series):
    from traceflow.stats.dispersion import dispersion_curve

    # bytes, as the comparison's dispersion figure and metric
    curve = dispersion_curve(series, int(BIN_S * 1e9), column="bytes")
    path = figures.dispersion_figure(curve, c.path("dispersion"))
    c.figure(path, f"Index of dispersion (variance / mean of the {SERIES_BYTES} per interval) "
                   "from 10 ms to 100 s; flat for Poisson arrivals.")
    c.row("dispersion slope", curve.slope,
          note="log-log slope of variance / mean against the time scale, over the scales "
               "shown; 2H − 1 only for exactly self-similar counts, so it need not match H")


# -- predicted vs measured ---------------------------------------------------------------------

#: what the measured loss rate is, by :attr:`traceflow.compare.Analytics.loss_source`
LOSS_NOTES = {"drops": "the run's queue drop counter (exact)",
              "before/after": "data packets seen before the queue and missing after it (exact)",
              "estimate: retransmissions": "an estimate from retransmissions (give --before with "
                                           "a capture upstream of the queue for the exact loss)"}


def comparison_section(measured, predicted, out_dir, *, tolerances=None, capacity_bps=None,
                       before=None):
    """The ``traceflow compare`` table of two sides and its figures; ``(section, result dict)``.
    The rows read as in the terminal (:mod:`traceflow.report.comparison`): what each value is,
    its unit, pass / FAIL / n/a, and a small table per list-valued metric. ``before``: a capture
    of the measured traffic upstream of the queue (exact measured loss, as ``compare --before``)."""
    from traceflow import compare
    from traceflow.report import comparison

    m = compare.load_side(measured, capacity_bps=capacity_bps, before=before)
    p = compare.load_side(predicted, capacity_bps=capacity_bps)
    if capacity_bps is None:
        cap = p.capacity_bps or m.capacity_bps
        m.capacity_bps, p.capacity_bps = m.capacity_bps or cap, p.capacity_bps or cap
    with np.errstate(divide="ignore", invalid="ignore"):
        result = compare.compare(m, p, tolerances)
    rows = comparison.rows(result)
    for row, metric in zip(rows, result["metrics"].values()):
        row["pass"] = metric["pass"]  # drives the row's colour; n/a stays uncoloured
    c = _Collector(out_dir, "compare")
    c.attempt("series comparison", _compare_series, c, m, p)
    c.attempt("FCT comparison", _compare_fct, c, result)
    c.attempt("dispersion comparison", _compare_dispersion, c, result)
    c.attempt("size comparison", _compare_ccdfs, c, m, p, "sizes", "sizes",
              "transfer size (bytes)", "CCDF of complete transfer sizes, measured and predicted.")
    c.attempt("RTT comparison", _compare_ccdfs, c, m, p, "rtt", "rtt", "handshake RTT (s)",
              "CCDF of handshake RTTs (SYN to final ACK), measured and predicted.")
    text = (f"Measured: {m.source} ({m.kind}). Predicted: {p.source} ({p.kind}). "
            f"{comparison.summary_line(result)}. Measured loss: "
            f"{LOSS_NOTES.get(m.loss_source, m.loss_source)}.")
    tables = [Table(rows, columns=comparison.COLUMNS, verdict="pass")]
    tables += [Table(detail_rows, caption=title, columns=columns)
               for title, columns, detail_rows in comparison.detail_tables(result).values()]
    section = Section("Predicted vs measured", text, figures=c.figures, warnings=c.warnings,
                      tables=tables)
    return section, result


def _compare_series(c, m, p):
    path = figures.overlay_series_figure({"measured": m.series, "predicted": p.series}, BIN_S,
                                         c.path("series"), factor=100)
    c.figure(path, "Throughput of the data direction in 1 s bins, measured and predicted.")


def _compare_fct(c, result):
    from traceflow.compare import size_bin_labels

    fct = result["metrics"]["fct"]
    path = figures.bars_figure(size_bin_labels(), {"measured": fct["measured"],
                                                   "predicted": fct["predicted"]},
                               c.path("fct"), ylabel="median transfer time (s, log scale)",
                               xlabel="transfer size bin (bytes)",
                               title="Flow completion time by size", log=True)
    c.figure(path, "Median transfer time (request to last data byte) per size bin, on a log "
                   "axis: the bins span milliseconds to seconds.")


def _compare_dispersion(c, result):
    metric = result["metrics"]["dispersion"]
    scales = metric["scales_s"]
    path = figures.curves_figure(
        {"measured": (scales, metric["measured"][:len(scales)]),
         "predicted": (scales, metric["predicted"][:len(scales)])},
        c.path("dispersion"), xlabel="time scale (s)", ylabel="index of dispersion (bytes)",
        title="Dispersion across time scales", loglog=True)
    c.figure(path, "Index of dispersion (variance / mean of bytes per block) across scales.")


def _compare_ccdfs(c, m, p, attr, name, label, caption):
    from traceflow.stats.tails import ccdf_data

    curves = {}
    for side_name, side in (("measured", m), ("predicted", p)):
        values = getattr(side, attr)
        values = values[np.isfinite(values) & (values > 0)]
        if values.size:
            d = ccdf_data(values)
            curves[side_name] = (d["x"], d["p"])
    if not curves:
        raise TraceflowError(f"no {label} on either side")
    path = figures.curves_figure(curves, c.path(name), xlabel=label, ylabel="P(X ≥ x)",
                                 title=label[0].upper() + label[1:], loglog=True, marker=".")
    c.figure(path, caption)

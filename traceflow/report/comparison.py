"""How a comparison (:func:`traceflow.compare.compare`) reads: the same rows in the terminal
(``traceflow compare``) and in the report.

Each metric row says what its values are and in which unit (``median transfer size``, ``B``), shows
them in human units, names its error measure, and ends in ``pass``, ``FAIL`` or ``n/a`` (the error
could not be computed: a side lacks what the metric needs). A metric whose sides are lists
(completion time per size bin, dispersion per time scale, the level table) gets a small table of its
own below the main one, instead of a "[8]".
"""
from __future__ import annotations

import math

from traceflow import units

#: metric -> (what its measured/predicted values are, their unit for :func:`traceflow.units.value`)
METRICS = {
    "throughput": ("throughput of the data direction", "bit/s"),
    "utilization": ("throughput / bottleneck capacity", ""),
    "loss_rate": ("packets lost at the bottleneck", "%"),
    "retransmission_rate": ("retransmitted / data segments", "%"),
    "fct": ("median transfer time per size bin", "s"),
    "size_ks": ("median transfer size", "B"),
    "rtt_ks": ("median handshake RTT", "s"),
    "hurst_vt": ("Hurst H, variance-time (10 ms bins)", ""),
    "hurst_rs": ("Hurst H, rescaled range (10 ms bins)", ""),
    "hurst_wavelet": ("Hurst H, wavelet (10 ms bins)", ""),
    "hurst_whittle": ("Hurst H, local Whittle (10 ms bins)", ""),
    "dispersion": ("index of dispersion of bytes per time scale", ""),
    "levels": ("conditional traffic levels Pr{L2|L1}", ""),
}
#: error measure -> how the error column reads
MEASURES = {"relative": "relative error", "absolute": "absolute difference",
            "mape": "mean abs. % error", "ks": "KS distance", "rms_log10": "RMS log10 ratio",
            "total_variation": "total variation"}
COLUMNS = ["metric", "what", "unit", "measured", "predicted", "error", "measure", "tolerance",
           "verdict"]


def verdict(metric):
    """``pass``, ``FAIL`` or ``n/a`` for one metric entry."""
    return {True: "pass", False: "FAIL", None: "n/a"}[metric["pass"]]


def side_value(value, unit):
    """A side of a metric as text: scalars in their unit, distribution summaries as their median
    (and count), lists as a pointer to the table below."""
    if isinstance(value, dict):
        if not value.get("n"):
            return units.NA
        return f"{units.value(value.get('median'), unit)} (n={value['n']:,})"
    if isinstance(value, (list, tuple)):
        return "table below"
    return units.value(value, unit)


def rows(result):
    """One row per metric: the :data:`COLUMNS` as text."""
    out = []
    for name, m in result["metrics"].items():
        what, unit = METRICS.get(name, (name, ""))
        error = m["error"]
        out.append({
            "metric": name, "what": what, "unit": {"": "-", "%": "share"}.get(unit, unit),
            "measured": side_value(m["measured"], unit),
            "predicted": side_value(m["predicted"], unit),
            "error": units.number(error) if not units.missing(error) else units.NA,
            "measure": MEASURES.get(m["measure"], m["measure"]),
            "tolerance": units.number(m["tolerance"]), "verdict": verdict(m)})
    return out


def detail_tables(result):
    """``{metric: (title, columns, rows)}`` for the metrics whose sides are lists."""
    out = {}
    for name, m in result["metrics"].items():
        if not isinstance(m["measured"], list) and not isinstance(m["predicted"], list):
            continue
        if name == "levels":
            table = _levels_table(m)
        else:
            table = _list_table(name, m)
        if table is not None:
            out[name] = table
    return out


def _list_table(name, m):
    """Rows indexed by the metric's bins (``bins``) or scales (``scales_s``); one column per
    list-valued field of the entry that has one value per row (measured, predicted, counts,
    per-bin errors...)."""
    what, unit = METRICS.get(name, (name, ""))
    if "bins" in m:
        index, label = list(m["bins"]), "size bin (bytes)"
    elif "scales_s" in m:
        index, label = [units.duration(s) for s in m["scales_s"]], "time scale"
    else:
        n = max(len(v) for v in m.values() if isinstance(v, list))
        index, label = list(range(1, n + 1)), "#"
    fields = [k for k, v in m.items()
              if isinstance(v, list) and k not in ("bins", "scales_s") and len(v) >= len(index)]
    rows_ = []
    for i, key in enumerate(index):
        row = {label: key}
        for field in fields:
            value = m[field][i]
            is_side = field in ("measured", "predicted") or field.endswith(("_measured",
                                                                            "_predicted"))
            row[field] = (units.value(value, unit) if is_side and not field.startswith("count")
                          else _cell(value))
        rows_.append(row)
    return f"{name}: {what}", [label, *fields], rows_


def _levels_table(m):
    """Per level L1: how many blocks sat there and E[L2 | L1], measured and predicted."""
    from traceflow.stats.levels import conditional_mean

    import numpy as np

    sides = {k: m[k] for k in ("measured", "predicted") if isinstance(m.get(k), list)}
    if not sides:
        return None
    h = len(next(iter(sides.values())))
    rows_ = []
    means = {k: conditional_mean(np.asarray(v, dtype=float)) for k, v in sides.items()}
    for lvl in range(h):
        row = {"L1": lvl + 1}
        for k, table in sides.items():
            row[f"blocks {k}"] = int(table[lvl][-1])
            row[f"E[L2|L1] {k}"] = _cell(float(means[k][lvl]))
        rows_.append(row)
    scale = m.get("scale_s")
    title = (f"levels: conditional traffic levels (h = {m.get('h', h)}"
             + (f", {units.duration(scale)} blocks" if scale else "") + ")")
    return title, list(rows_[0]), rows_


def _cell(value):
    if isinstance(value, bool) or value is None:
        return units.NA if value is None else ("yes" if value else "no")
    if isinstance(value, float):
        return units.number(value) if math.isfinite(value) else units.NA
    return value


def text_table(columns, rows_, indent=""):
    """Rows of text cells as aligned columns."""
    cells = [[str(c) for c in columns]] + [[str(r.get(c, "")) for c in columns] for r in rows_]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    return "\n".join(indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
                     for row in cells)


def summary_line(result):
    """``overall: pass (12 of 13 judged within tolerance; n/a: utilization)``."""
    metrics = result["metrics"]
    judged = [k for k, m in metrics.items() if m["pass"] is not None]
    passed = [k for k in judged if metrics[k]["pass"]]
    head = "pass" if result["pass"] else ("FAIL" if result["failed"] else "n/a")
    text = f"overall: {head} ({len(passed)} of {len(judged)} judged metrics within tolerance"
    if result["failed"]:
        text += f"; failed: {', '.join(result['failed'])}"
    unjudged = [k for k in result["not_computed"] if "not_judged" in metrics[k]]
    missing = [k for k in result["not_computed"] if k not in unjudged]
    if missing:
        text += f"; n/a (not computable): {', '.join(missing)}"
    for k in unjudged:
        text += f"; not judged: {k} ({metrics[k]['not_judged']})"
    return text + ")"


def outside(result):
    """One phrase per metric outside its tolerance: what it is, measured against predicted (or
    its error against the tolerance for a list-valued metric)."""
    phrases = []
    for name in result["failed"]:
        m = result["metrics"][name]
        what, unit = METRICS.get(name, (name, ""))
        if "critical_5pct" in m:
            detail = (f"KS distance {units.number(m['error'])} > {units.number(m['tolerance'])} "
                      f"(medians {units.value(_median(m['measured']), unit)} measured, "
                      f"{units.value(_median(m['predicted']), unit)} predicted)")
        elif isinstance(m["measured"], list) or isinstance(m["predicted"], list):
            detail = (f"{MEASURES.get(m['measure'], m['measure'])} {units.number(m['error'])} > "
                      f"{units.number(m['tolerance'])}")
        else:
            sides = [v.get("median") if isinstance(v, dict) else v
                     for v in (m["measured"], m["predicted"])]
            detail = (f"{units.value(sides[0], unit)} measured vs "
                      f"{units.value(sides[1], unit)} predicted")
        phrases.append(f"{name}, {what}: {detail}")
    return phrases


def _median(side):
    return side.get("median") if isinstance(side, dict) else side


def notes(result):
    """Where the sides' numbers come from, when a metric says: the loss source (a run's drop
    counter, a before/after capture pair, or an estimate from retransmissions) and what the
    transfer times measure (request to last data byte, or flow duration)."""
    out = []
    m = result["metrics"]
    loss = m.get("loss_rate", {}).get("source")
    if loss:
        out.append(f"loss: measured from {loss['measured']}, predicted from {loss['predicted']}")
    ks = {k: v for k, v in m.items() if "critical_5pct" in v}
    if ks:
        out.append("KS distances pass within the larger of the tolerance and the 5 % two-sample "
                   "critical value for the sample sizes: " + ", ".join(
                       f"{k} {units.number(v['critical_5pct'])} (n {v['n_measured']:,} / "
                       f"{v['n_predicted']:,})" for k, v in ks.items()))
    fct = m.get("fct", {})
    if "transfer_time" in fct:
        t = fct["transfer_time"]
        same = t["measured"] == t["predicted"]
        out.append(f"fct: transfer time = {t['measured']}" + (
            "" if same else f" (measured) vs {t['predicted']} (predicted): not like with like, "
                            "never a pass")
            + (f"; bins with >= {fct['min_count']} measured transfers are judged"
               if "min_count" in fct else ""))
    return out


def format_text(result):
    """The whole comparison as text: the metric table, the list tables, the overall line."""
    parts = [text_table(COLUMNS, rows(result))]
    parts.extend(f"  ({line})" for line in notes(result))
    for title, columns, rows_ in detail_tables(result).values():
        parts.append(f"\n{title}\n" + text_table(columns, rows_, indent="  "))
    parts.append("\n" + summary_line(result))
    return "\n".join(parts)

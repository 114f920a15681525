"""The paper's sentences as tests: curve shapes with a stated noise tolerance, orderings, ratios.

Every function returns comparison rows (:func:`traceflow.experiments.common.row`) whose ``agree``
is the verdict of the test the paper's sentence implies; ``None`` only where the paper gives a
number without a claim about it (shown beside ours, not compared).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

from traceflow.experiments.common import row

#: steps smaller than this fraction of the curve's largest value count as flat (run-to-run noise)
NOISE = 0.01


def _finite(y):
    y = np.asarray(y, dtype=float)
    return y.size > 1 and bool(np.all(np.isfinite(y)))


def shape(y, noise=NOISE, noise_abs=0.0):
    """'increasing', 'decreasing', 'unimodal', 'flat' or 'irregular' for a curve sampled left to
    right. A step is up (down) when it exceeds max(``noise`` x the largest |value|, ``noise_abs``);
    'unimodal': no step down before the maximum and no step up after it, and the maximum stands
    above both ends."""
    y = np.asarray(y, dtype=float)
    if not _finite(y):
        return "irregular"
    eps = max(noise * np.max(np.abs(y)), noise_abs)
    d = np.diff(y)
    up, down = d > eps, d < -eps
    rise, fall = y[-1] - y[0] > eps, y[0] - y[-1] > eps
    if not up.any() and not down.any():
        return "flat"
    if not down.any() and rise:
        return "increasing"
    if not up.any() and fall:
        return "decreasing"
    p = int(np.argmax(y))
    if (0 < p < y.size - 1 and not down[:p].any() and not up[p:].any()
            and y[p] - y[0] > eps and y[p] - y[-1] > eps):
        return "unimodal"
    return "irregular"


def shape_rows(label, x, y, paper_shape, paper_peak=None, source="", noise=NOISE, noise_abs=0.0):
    """Rows testing "the curve is <paper_shape> [with peak at <paper_peak>]" on (x, y)."""
    got = shape(y, noise, noise_abs)
    peak = x[int(np.nanargmax(y))] if _finite(y) else float("nan")
    flat = f"{noise:.0%} of the maximum" + (f" or {noise_abs:g}" if noise_abs else "")
    note = (f"steps within {flat} count as flat; values "
            + ", ".join(f"{a:g}: {b:.4g}" for a, b in zip(x, y)) + (f"; {source}" if source else ""))
    rows = [row(f"{label}: shape", paper_shape, got, got == paper_shape if _finite(y) else None, note)]
    if paper_peak is not None:
        rows.append(row(f"{label}: peak at", paper_peak, peak,
                        peak == paper_peak if _finite(y) else None, "argmax of the curve"))
    return rows


def spearman(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3:
        return float("nan")
    return float(stats.spearmanr(x[ok], y[ok]).statistic)


def order_row(label, values, paper_order, source=""):
    """"``paper_order``" (names, first = smallest) against ``values`` {name: number}."""
    got = sorted(values, key=lambda k: values[k])
    ok = all(math.isfinite(v) for v in values.values())
    return row(label, " < ".join(paper_order), " < ".join(got), got == list(paper_order) if ok else None,
               ", ".join(f"{k} {v:.4g}" for k, v in values.items()) + (f"; {source}" if source else ""))


def ratio_row(label, num, den, paper_min, source=""):
    """The paper's "a factor of ``paper_min`` or more": num >= paper_min x den with num > 0 (so a
    non-positive denominator passes when num is positive). ``ours`` is [num, den]."""
    ok = math.isfinite(num) and math.isfinite(den) and num > 0 and num >= paper_min * den
    r = f"ratio {num / den:.3g}" if den > 0 else "denominator <= 0"
    return row(label, f">= {paper_min:g}x", [num, den], ok if math.isfinite(num + den) else None,
               r + (f"; {source}" if source else ""))


def within_row(label, paper, ours, tol, source=""):
    """|ours - paper| <= tol."""
    ok = math.isfinite(ours) and abs(ours - paper) <= tol
    return row(label, paper, ours, ok if math.isfinite(ours) else None,
               f"agree = within {tol:g}" + (f"; {source}" if source else ""))


def shown_row(label, paper, ours, note):
    """A number the paper reports without a claim about it: beside ours, not compared."""
    return row(label, paper, ours, None, note)


def gain(mt, tcp):
    """Performance gain nu = (Lambda_TCP-MT - Lambda_TCP) / Lambda_TCP (PT:268)."""
    return mt / tcp - 1.0 if tcp > 0 else float("nan")


def tracking(series, period_s, measured, background):
    """Correlation coefficient, over T_L blocks, of the measured connection's and the background's
    bytes at the bottleneck egress (PT:259; first block dropped)."""
    m, b = series.get(measured), series.get(background)
    if m is None or b is None:
        return float("nan")
    k = max(1, int(round(period_s)))
    n = min(m.size, b.size) // k
    if n < 4:
        return float("nan")
    mb = m[:n * k].reshape(n, k).sum(axis=1)[1:]
    bb = b[:n * k].reshape(n, k).sum(axis=1)[1:]
    if mb.std() == 0 or bb.std() == 0:
        return float("nan")
    return float(np.corrcoef(mb, bb)[0, 1])

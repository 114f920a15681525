"""Quality flags: whether an estimate can be trusted at a glance.

Every estimate the commands print (tail exponents, Hurst exponents, level tables, the fitted model)
carries a :class:`Quality`: empty when nothing is wrong, else one :class:`Flag` per problem. Codes:

``too_few_points``  the sample is too small for the estimate to mean much (the rule is stated
                    in the message: α's standard error above 10 %, fewer than 1000 samples for
                    a Hurst estimate, fewer than 5 transitions per cell of a level table)
``out_of_range``    the value lies outside the range where the model is defined (H outside
                    (0, 1): not a stationary long-range dependent series)
``rejected``        the fit fails its own test (the Pareto tail's KS distance above the KS
                    test's 5 % critical value, or a bootstrap p below 0.1)
``alternative``     a likelihood-ratio test significantly prefers another distribution
``disagree``        estimators that should agree do not (Hurst methods more than 0.15 apart)

Text output shows ``quality: ok`` or the messages; JSON has ``{"ok": ..., "flags": [...]}``; the
report puts them beside the value.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

#: the relative standard error of α (1/√n_tail) above which a tail has too few points
MAX_ALPHA_RSE = 0.1
#: Clauset, Shalizi & Newman (2009), sec. 4.1: the power law is ruled out when p <= 0.1
BOOTSTRAP_P = 0.1
#: the likelihood-ratio sign is significant below this p (Clauset et al. 2009, sec. 5)
LR_P = 0.1
#: Kolmogorov's asymptotic 5 % critical value of sqrt(n) * D
KS_CRITICAL_5 = 1.358
#: samples a Hurst estimate needs: three decades of time scales
MIN_HURST_SAMPLES = 1000
#: Cochran's rule for contingency tables: an expected count of at least 5 per cell
MIN_PER_CELL = 5


@dataclass(frozen=True)
class Flag:
    code: str
    message: str

    def to_dict(self):
        return {"code": self.code, "message": self.message}


@dataclass
class Quality:
    """The flags of one estimate (no flags: ok)."""

    flags: list = field(default_factory=list)

    @property
    def ok(self):
        return not self.flags

    def add(self, code, message):
        self.flags.append(Flag(code, message))
        return self

    def extend(self, other):
        self.flags.extend(other.flags)
        return self

    def to_dict(self):
        return {"ok": self.ok, "flags": [f.to_dict() for f in self.flags]}

    def text(self):
        return "ok" if self.ok else "; ".join(f.message for f in self.flags)

    def __str__(self):
        return f"quality: {self.text()}"


def tail_quality(n_tail, ks, *, bootstrap_p=None, lr=None):
    """Flags of a Pareto tail fit with ``n_tail`` points above xmin and KS distance ``ks``;
    ``bootstrap_p`` the goodness-of-fit p-value when computed, ``lr`` the
    :func:`traceflow.stats.tails.likelihood_ratios` dict when computed."""
    q = Quality()
    need = round(1 / MAX_ALPHA_RSE ** 2)
    if n_tail < need:
        q.add("too_few_points", f"only {n_tail} values in the tail (< {need}): alpha's standard "
                                f"error alpha/sqrt(n) is {1 / math.sqrt(max(n_tail, 1)):.0%} of "
                                "alpha")
    critical = KS_CRITICAL_5 / math.sqrt(max(n_tail, 1))
    if ks is not None and ks > critical:
        q.add("rejected", f"KS distance {ks:.3f} exceeds the 5 % critical value {critical:.3f} "
                          f"for {n_tail} tail values: the Pareto tail does not fit")
    if bootstrap_p is not None and bootstrap_p <= BOOTSTRAP_P:
        q.add("rejected", f"bootstrap p = {bootstrap_p:.3f} <= {BOOTSTRAP_P}: the power law is "
                          "ruled out")
    for name, r in (lr or {}).items():
        if r["R"] < 0 and r["p"] < LR_P:
            q.add("alternative", f"the {name} distribution fits the tail better (normalized "
                                 f"LR {r['normalized']:.2f}, p = {r['p']:.2g})")
    return q


def hurst_quality(H, n, method=""):
    """Flags of one Hurst estimate ``H`` from a series of ``n`` samples."""
    q = Quality()
    name = f"{method} " if method else ""
    if not (isinstance(H, (int, float)) and math.isfinite(H)):
        return q.add("out_of_range", f"{name}H could not be estimated")
    if not 0 < H < 1:
        q.add("out_of_range", f"{name}H = {H:.3f} is outside (0, 1): the series is not "
                              "stationary long-range dependent (trend, level shift or too short)")
    if n < MIN_HURST_SAMPLES:
        q.add("too_few_points", f"{name}H from only {n} samples (< {MIN_HURST_SAMPLES}, three "
                                "decades of scales)")
    return q


def hurst_report_quality(report):
    """Flags of a :class:`traceflow.stats.hurst.HurstReport`: each method's, and disagreement."""
    q = Quality()
    for method, result in report.results.items():
        q.extend(hurst_quality(result.H, report.n, method))
    if report.warning:
        q.add("disagree", report.warning)
    # one "too few samples" line is enough for all methods
    seen, flags = set(), []
    for f in q.flags:
        key = f.code if f.code == "too_few_points" else (f.code, f.message)
        if key not in seen:
            seen.add(key)
            flags.append(f if f.code != "too_few_points" else
                         Flag(f.code, f"only {report.n} samples (< {MIN_HURST_SAMPLES}, three "
                                      "decades of time scales)"))
    return Quality(flags)


def levels_quality(transitions, h, hint="", empty=0):
    """Flags of an h × h conditional-level table counted from ``transitions`` block pairs;
    ``hint`` is appended to the message (what the user can change); ``empty``: levels of a
    quantile map that no block falls on (its quantile edges coincide on tied values)."""
    q = Quality()
    cells = h * h
    if transitions < MIN_PER_CELL * cells:
        q.add("too_few_points", f"{transitions} transitions fill {h}x{h} = {cells} cells "
                                f"({transitions / cells:.1f} per cell; Cochran's rule needs "
                                f"{MIN_PER_CELL})" + (f": {hint}" if hint else ""))
    if empty:
        q.add("collapsed", f"{empty} of the {h} quantile levels hold no block: tied values (e.g. "
                           "empty blocks) share one level, so the table has fewer levels than "
                           "it shows; use a longer --scale or a linear map")
    return q

"""TCP-MT's SSC module as a scenario plug-in: ``hook = {kind = "ssc", ...}`` on any TCP flavor.

Example (a TCP-MT Reno connection with metacontrol, the paper's defaults)::

    [[traffic]]
    kind = "infinite"
    src = "l32"
    dst = "r0"
    tcp = {cc = "reno", hook = {kind = "ssc", period = 2.0, levels = 8, metacontrol = true, nu = 0.05}}

The arithmetic lives in ``sim/ssc.pxi`` (SSCCore: level map, CondProb, E[L2|L1], schedules,
metacontrol, per-level cwnd memory; SSCHook: the coupling to the sender). ``mode = "off"`` attaches
the module as a pure observer (same run as the plain flavor, plus the per-block trace), which is
how experiments record the baseline's throughput per T_L block.

Hooks built in this process are remembered until :func:`collect` hands them out, so an experiment
reads the traces (and the core's table, :func:`export_prior`) of the run it just did. The per-block
traces alone are also in ``Result.hooks`` (``hooks.parquet`` of a run directory).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .scenario import _err, _meta, register_hook

NS = 1_000_000_000

_BITS_PER_UNIT = {"bits": 1.0, "bytes": 8.0}
_BUILT: list = []  # (flow id, SSCHook) in build order, emptied by collect()


@dataclass
class SSCParams:
    """Parameters of one connection's SSC module (Park & Tuan 2000, sec. 3)."""
    mode: str = _meta("on", choices=("on", "off"), doc="off: observe and trace only (plain TCP)")
    period: float = _meta(2.0, gt=0, doc="T_L, s: block length of the explicit prediction")
    levels: int = _meta(8, min=2, doc="h: contention levels")
    a: float = _meta(1.0, gt=0, doc="default slope of the flavor (xi = a is plain TCP)")
    A: float = _meta(4.0, gt=0, doc="maximum aggressiveness when A is fixed (metacontrol = false)")
    schedule: str = _meta("linear", choices=("linear", "threshold", "nonlinear"),
                          doc="inverse linear, threshold (theta), or h / L2hat")
    theta: float = _meta(8.0, min=1, doc="threshold schedule: aggressive iff L2hat <= theta")
    metacontrol: bool = _meta(True, doc="adapt A by the symmetric control law (A(0) = a)")
    nu: float = _meta(0.05, gt=0, doc="metacontrol adjustment factor per block")
    couple: str = _meta("both", choices=("ca", "ss", "both"),
                        doc="congestion avoidance slope, slow-start threshold, or both")
    norm: str = _meta("quantile", choices=("quantile", "running", "fixed"),
                      doc="level map: empirical quantiles of X so far, running min/max, or fixed edges/lo-hi")
    lo: float = _meta(0.0, min=0, doc="fixed norm: X (bits per block) of the least-throughput level")
    hi: float = _meta(0.0, min=0, doc="fixed norm: X (bits per block) of the highest-throughput level")
    edges: list[float] = _meta(factory=list, doc="fixed norm: the h - 1 level edges, bits per block")
    table: list[list[float]] = _meta(factory=list, doc="a-priori CondProb counts, h x (h+1)")
    table_file: str = _meta("", doc="JSON with 'condprob' and the map's 'edges' (bits per block)")
    learn: bool = _meta(True, doc="update CondProb online (false: use the a-priori table as is)")
    warmup: float = _meta(0.0, min=0, doc="s of estimation before the schedule is enabled")
    trace: bool = _meta(True, doc="record L1, L2hat, xi, A per block")

    def validate(self, path):
        if self.edges and (len(self.edges) != self.levels - 1 or np.any(np.diff(self.edges) < 0)):
            raise _err(f"{path}.edges", f"must be {self.levels - 1} ascending values (bits per block)")
        if self.edges and self.norm != "fixed":
            raise _err(f"{path}.edges", "given edges need norm = \"fixed\"")
        if self.norm == "fixed" and not self.edges and not self.hi > self.lo:
            raise _err(f"{path}.hi", "fixed normalization needs edges or hi > lo (bits per block)")
        if not self.metacontrol and self.A < self.a:
            raise _err(f"{path}.A", f"must be >= a ({self.A} < {self.a})")
        if self.table:
            shape = np.shape(self.table)
            if shape != (self.levels, self.levels + 1):
                raise _err(f"{path}.table", f"must be {self.levels} x {self.levels + 1}, got {shape}")


def prior_from_file(path):
    """(table, edges in bits per block or None) from a JSON file written by :func:`export_prior` or
    ``traceflow levels --reverse -o``.

    The levels must be contention levels of the connection's own throughput (reversed). The edges'
    unit is the file's ``column`` (``bytes`` or ``bits``; bits when absent).
    """
    try:
        doc = json.loads(Path(path).read_text())
        table = np.asarray(doc["condprob"], dtype=np.int64)
        edges = doc.get("edges")
    except (OSError, ValueError, KeyError) as exc:
        raise _err("hook.table_file", f"cannot read an a-priori table from {path}: {exc}") from None
    if doc.get("reversed") is False:
        raise _err("hook.table_file", f"{path}: levels are not reversed; SSC needs contention levels "
                                      "of the connection's own throughput (traceflow levels --reverse)")
    if edges is None:
        return table, None
    unit = doc.get("column", "bits")
    if unit not in _BITS_PER_UNIT:
        raise _err("hook.table_file", f"{path}: level edges are in {unit!r}; SSC needs bits or bytes "
                                      "per block")
    return table, np.asarray(edges, dtype=np.float64) * _BITS_PER_UNIT[unit]


def export_prior(hook):
    """The a-priori information a later connection can start from (Case I): table and level edges."""
    core = hook.core
    return {"condprob": core.table.tolist(), "edges": core.edges.tolist(), "column": "bits",
            "reversed": True}


def build_ssc(p: SSCParams, ctx):
    from traceflow.sim._sim import SSCCore, SSCHook

    table, edges, norm = (p.table or None), (p.edges or None), p.norm
    if p.table_file:
        table, file_edges = prior_from_file(p.table_file)
        if table.shape != (p.levels, p.levels + 1):
            raise _err("hook.table_file", f"{p.table_file}: table must be {p.levels} x {p.levels + 1}, "
                                          f"got {table.shape}")
        if file_edges is not None:
            edges, norm = file_edges, "fixed"
    try:
        core = SSCCore(h=p.levels, a=p.a, A=max(p.A, p.a), schedule=p.schedule, theta=p.theta,
                       meta=p.metacontrol, nu=p.nu, norm=norm, lo=p.lo, hi=p.hi, edges=edges,
                       table=table, learn=p.learn, enabled=p.mode == "on")
    except ValueError as exc:
        raise _err("hook", str(exc)) from None
    # off: the core only learns (xi = a, A = a in the trace) and the hook never writes the sender
    hook = SSCHook(core, int(round(p.period * NS)), ca=p.couple in ("ca", "both"),
                   ss=p.couple in ("ss", "both"), warmup=int(round(p.warmup * NS)) if p.mode == "on" else 0,
                   active=p.mode == "on", record=p.trace)
    _BUILT.append((ctx.flow, hook))
    return hook


def collect():
    """{flow id: SSCHook} of the hooks built since the last call (in this process)."""
    out = dict(_BUILT)
    _BUILT.clear()
    return out


register_hook("ssc", SSCParams, build_ssc)

"""Scenario assembly, background calibration and runs shared by the TCP-MT experiments.

The base scenario is ``replays/tcpmt_base.toml`` (Park & Tuan sec. 5.1; its comments derive every
setting from the paper, the prior study it builds on, or ns-2's defaults of 1999); an experiment
file names it with ``base = "tcpmt_base.toml"`` in ``[experiment]`` and may override tables.

Background (sec. 4.3, 5.1): 32 clients with Pareto(alpha, k) file sizes (bytes) and exponential idle
times (s). :func:`calibrate` sets, once per (alpha, target load) on one sample path of
``calibration_duration`` seconds (the paper's 10,000 s), either the idle time with the realized mean
file size held at ``size.mean`` (``knob = "idle"``: "by ... adjusting ... the mean idle time ... we
were able to produce a target contention level", PT:238) or the location k with the idle time held
(``knob = "mean"``: sample-path normalization across alpha, PT:225). Every run then uses that k with
``normalize = "none"``, so runs of any length share one background sample path (a shorter run sees
the same first files and idle times), and the calibration does not depend on the run length.
"""
from __future__ import annotations

import copy
import importlib.resources
import tomllib
from dataclasses import asdict, dataclass

import numpy as np
import polars as pl

from traceflow.errors import ScenarioError
from traceflow.experiments.common import experiment as _exp
from traceflow.values import merge

NS = 1_000_000_000
SUMMARY_KEYS = ("duration_s", "seed", "events", "throughput_bps", "link_utilization",
                "loss_rate", "goodput_bps", "timeouts", "retransmits", "mean_transfer_size")
OFF = {"kind": "ssc", "mode": "off"}
MEASURED_LINK, BACKGROUND_LINK = "g2->r1", "g2->r0"


# ------------------------------------------------------------------------------------------------
# the scenario


def scenario_base(spec):
    """The experiment's scenario: ``[experiment] base`` (a file of ``traceflow.replays``) with the
    spec's own tables merged over it (every table of the spec but ``[experiment]``)."""
    exp = _exp(spec)
    own = {k: copy.deepcopy(v) for k, v in spec.items() if k != "experiment"}
    name = exp.get("base")
    if not name:
        return own
    try:
        text = importlib.resources.files("traceflow.replays").joinpath(name).read_text()
    except OSError as exc:
        raise ScenarioError(f"[experiment] base {name!r}: {exc}") from None
    return merge(tomllib.loads(text), own, replace=("traffic",))


def groups(base, kind):
    return [i for i, g in enumerate(base.get("traffic", [])) if g.get("kind") == kind]


def background_group(base):
    idx = groups(base, "files")
    if len(idx) != 1:
        raise ScenarioError("the base scenario needs exactly one background [[traffic]] group "
                            "with kind = 'files'")
    return base["traffic"][idx[0]]


def base_rtt(base):
    """Propagation RTT (s) of a measured connection: host -> g1 -> g2 -> host and back."""
    topo = base.get("topology", {})
    access = topo.get("access", {}).get("delay", 0.001)
    bott = topo.get("bottleneck", {}).get("delay", 0.001)
    return 2 * (2 * access + bott)


@dataclass(frozen=True)
class Background:
    """A calibrated background: Pareto ``alpha``, location ``k`` (bytes), mean ``idle`` (s); what
    the calibration run measured: ``mean_bytes`` (realized mean request), ``bps`` (bottleneck load of
    the background alone) and whether both hit their targets."""
    alpha: float
    k: float
    idle: float
    mean_bytes: float = float("nan")
    bps: float = float("nan")
    converged: bool = False

    def as_row(self):
        return asdict(self)


def variant(base, *, duration, seed, background=None, cc=None, hook=None, rtt=None, count=None,
            measured=True):
    """A copy of ``base`` with the experiment's knobs set.

    ``background``: a :class:`Background` (its k and idle, sizes not renormalized) or None (as in
    the base). ``hook``: the SSC hook table of the measured group(s) (None: no hook). ``rtt``: their
    propagation RTT (s), reached by extra delay at both ends (None: the base RTT). ``count``:
    measured connections (sources l32, l33, ...). ``measured=False`` drops them (calibration runs).
    """
    sc = copy.deepcopy(base)
    sim = sc.setdefault("simulation", {})
    sim["duration"] = float(duration)
    sim["seed"] = int(seed)
    bg = background_group(sc)
    if background is not None:
        bg["idle"] = float(background.idle)
        bg["size"] = dict(bg.get("size", {}), alpha=float(background.alpha), k=float(background.k),
                          normalize="none")
    measured_idx = groups(sc, "infinite")
    if not measured:
        sc["traffic"] = [g for i, g in enumerate(sc["traffic"]) if i not in measured_idx]
        return sc
    for i in measured_idx:
        g = sc["traffic"][i]
        tcp = dict(g.get("tcp", {}))
        if cc is not None:
            tcp["cc"] = cc
        if hook is not None:
            tcp["hook"] = dict(hook)
        else:
            tcp.pop("hook", None)
        g["tcp"] = tcp
        if rtt is not None:
            g["extra_delay"] = max(0.0, (float(rtt) - base_rtt(sc)) / 2)
        if count is not None:
            src = g.get("src", "l32")
            if not (isinstance(src, str) and src[:1] == "l" and src[1:].isdigit()):
                raise ScenarioError(f"count needs the measured group's src as one host 'lN', got {src!r}")
            g["src"] = [f"l{int(src[1:]) + j}" for j in range(int(count))]
            g["count"] = int(count)
    return sc


def hook(spec, **over):
    """The experiment's SSC hook table (``[experiment] ssc``) with ``over`` applied."""
    return {"kind": "ssc", **_exp(spec).get("ssc", {}), **over}


# ------------------------------------------------------------------------------------------------
# running


def simulate(scenario):
    """Run one scenario; a small picklable dict for the experiment code.

    ``summary``: headline metrics plus ``background_bps`` (the background's share of the
    bottleneck); ``measured``: per measured connection its flow id, ``throughput_bps`` (reliable
    throughput: unique payload delivered in order), ``timeouts``, ``retransmits``, ``trace`` (SSC
    per-block trace), ``timeout_windows`` (SSC's per-timeout record) and ``prior`` (its final
    CondProb table and level edges); ``series``: {link: bytes per second}.
    """
    from traceflow import sim
    from traceflow.sim import ssc

    ssc.collect()  # forget hooks of runs that failed before collecting
    res = sim.run(scenario)
    hooks = ssc.collect()
    dur = res.summary["duration_s"]
    flows = res.flows.to_pydict()
    measured = []
    for i, kind in enumerate(flows["kind"]):
        if kind != "infinite":
            continue
        fid = flows["flow_id"][i]
        h = hooks.get(fid)
        measured.append({"flow": fid, "throughput_bps": flows["goodput_bytes"][i] * 8 / dur,
                         "timeouts": flows["timeouts"][i], "retransmits": flows["retransmits"][i],
                         "trace": h.trace() if h is not None else None,
                         "timeout_windows": h.timeouts() if h is not None else None,
                         "prior": ssc.export_prior(h) if h is not None else None})
    series = {}
    if res.series.num_rows:
        bin_s = float(scenario.get("simulation", {}).get("series_bin", 0.01))
        factor = max(1, int(round(1.0 / bin_s)))
        tab = pl.from_arrow(res.series).select("link", "bytes")
        for (link,), part in tab.group_by("link", maintain_order=True):
            b = part.get_column("bytes").to_numpy()
            n = b.size // factor
            series[link] = b[:n * factor].reshape(n, factor).sum(axis=1)
    summary = {k: res.summary[k] for k in SUMMARY_KEYS}
    bg = series.get(BACKGROUND_LINK)
    summary["background_bps"] = float(bg.sum() * 8 / dur) if bg is not None else float("nan")
    return {"summary": summary, "measured": measured, "series": series}


def run_all(scenarios, ex, label):
    """:func:`simulate` over ``scenarios`` through :func:`traceflow.scale.parallel.map_tasks`."""
    from traceflow.scale.parallel import map_tasks

    return map_tasks(simulate, scenarios, executor=ex.get("executor", "local"),
                     workers=ex.get("workers"), scheduler=ex.get("scheduler"), label=label)


def executor(executor="local", workers=None, scheduler=None):
    return {"executor": executor, "workers": workers, "scheduler": scheduler}


def seeds(spec, base):
    given = _exp(spec).get("seeds")
    return [int(s) for s in given] if given else [int(base.get("simulation", {}).get("seed", 1))]


def duration(spec, quick):
    """Seconds per run: ``duration`` or, in quick mode, ``quick_duration``."""
    key = "quick_duration" if quick else "duration"
    exp = _exp(spec)
    if key not in exp:
        raise ScenarioError(f"[experiment] lacks {key}")
    return float(exp[key])


def calibration_duration(spec, quick):
    """The background's calibration length (s): ``calibration_duration`` (default 10,000 s, the
    paper's run) or, in quick mode, ``quick_calibration_duration`` (default: quick_duration)."""
    exp = _exp(spec)
    if quick:
        return float(exp.get("quick_calibration_duration", duration(spec, True)))
    return float(exp.get("calibration_duration", 10_000.0))


# ------------------------------------------------------------------------------------------------
# background calibration


def presampled_location(scenario):
    """The Pareto location k (bytes) that ``normalize = "presample"`` gives the background of
    ``scenario``: its presampled sizes (the files its clients can request in the run) average
    ``size.mean``. Builds the simulator without running it."""
    from traceflow.sim import load_scenario
    from traceflow.sim.runner import Built

    built = Built(load_scenario(scenario), None)
    built.finalize_sizes()
    gi = groups(scenario, "files")[0]
    return float(next(rec[1].k for rec in built.file_apps if rec[0] == gi))


def calibrate(base, targets, *, seed, duration, ex, knob="idle", idle=None, tolerance=0.03,
              rounds=10):
    """{(alpha, load_bps): :class:`Background`} carrying ``load_bps`` alone on the bottleneck.

    ``knob = "idle"``: k is set once per alpha, by presample normalization over the ``duration``-s
    sample path at the base's idle time (the files the clients can request then average the base's
    ``size.mean``, PKC:199), and the mean idle time moves the load. ``knob = "mean"``: the idle time
    stays at ``idle`` (s; default the base's) and k moves the load (sample-path normalization
    across alpha, PT:225). The load falls with the idle time and grows with k, but with heavy tails
    not smoothly (a shift can move a huge file in or out of the run): each round runs every
    unfinished target once (background alone, ``duration`` s) and brackets the knob; the next value
    is the clients' cycle model (load = clients x 8 mean / (idle + transfer time)) or, outside the
    bracket, its geometric midpoint. Unconverged targets keep the closest round.
    """
    bg = background_group(base)
    clients = int(bg.get("count", 32))
    mean = float(bg.get("size", {}).get("mean", 4096.0))
    idle0 = float(idle if idle is not None else bg.get("idle", 1.0))
    state, bracket, location = {}, {}, {}
    for alpha, load in targets:
        if knob == "idle":
            if alpha not in location:
                # one file-size sequence per alpha: every load differs only in its idle times
                probe = variant(base, duration=duration, seed=seed, measured=False)
                pg = background_group(probe)
                pg["size"] = dict(pg.get("size", {}), alpha=float(alpha), mean=mean,
                                  normalize="presample")
                location[alpha] = presampled_location(probe)
            guess = max(0.01, clients * 8 * mean / load - 0.05)
            state[(alpha, load)] = Background(float(alpha), location[alpha], guess)
        else:
            k = load * idle0 / (clients * 8) * (alpha - 1) / alpha  # load ~ clients 8 mean / idle
            state[(alpha, load)] = Background(float(alpha), k, idle0)
        bracket[(alpha, load)] = [0.0, float("inf")]  # knob values with load above / below target
    best, todo = {}, list(state)
    for _ in range(rounds):
        if not todo:
            break
        runs = run_all([variant(base, duration=duration, seed=seed, background=state[t],
                                measured=False) for t in todo], ex, "background calibration")
        for t, r in zip(todo, runs):
            cur, load = state[t], t[1]
            got = r["summary"]["background_bps"]
            res = Background(cur.alpha, cur.k, cur.idle, r["summary"]["mean_transfer_size"], got,
                             abs(got / load - 1) <= tolerance)
            if t not in best or abs(got / load - 1) < abs(best[t].bps / load - 1):
                best[t] = res
            if res.converged or not got > 0:
                continue
            lo, hi = bracket[t]
            if knob == "idle":
                x = cur.idle
                # too much load: the idle time is a lower bound, else an upper bound
                lo, hi = (max(lo, x), hi) if got > load else (lo, min(hi, x))
                transfer = clients * 8 * res.mean_bytes / got - x
                nxt = clients * 8 * res.mean_bytes / load - transfer
            else:
                x = cur.k
                lo, hi = (lo, min(hi, x)) if got > load else (max(lo, x), hi)
                nxt = x * load / got
            bracket[t] = [lo, hi]
            if not lo < nxt < hi:
                nxt = np.sqrt(lo * hi) if lo > 0 and np.isfinite(hi) else (x * 2 if lo > 0 else x / 2)
            nxt = float(nxt)
            state[t] = (Background(cur.alpha, cur.k, nxt) if knob == "idle"
                        else Background(cur.alpha, nxt, cur.idle))
        todo = [t for t in todo if not best[t].converged]
    return best


def calibration_table(cal):
    """The calibrated backgrounds as a frame (alpha, target, k, idle, realized mean, load)."""
    return pl.DataFrame([{"target_bps": t[1], **b.as_row()} for t, b in cal.items()])


def reliable(run, i=0):
    """Reliable throughput (bit/s) of measured connection ``i`` of a :func:`simulate` result."""
    return float(run["measured"][i]["throughput_bps"])


def per_run(run):
    """Per-run columns every results table carries: utilization and the background's load."""
    s = run["summary"]
    return {"link_utilization": s["link_utilization"], "background_bps": s["background_bps"],
            "loss_rate": s["loss_rate"], "timeouts": int(run["measured"][0]["timeouts"])
            if run["measured"] else 0}


def mean_xi(run):
    """Time average of the slope TCP-MT applied (xi per T_L block)."""
    tr = run["measured"][0]["trace"]
    return float(np.mean(tr["xi"])) if tr is not None and tr["xi"].size else float("nan")


def one_background(spec, base, quick, ex):
    """The experiment's background (``alpha``, ``background_bps``) calibrated on its first seed:
    ({(alpha, load): Background}, that Background)."""
    exp = _exp(spec)
    target = (float(exp.get("alpha", 1.05)), float(exp.get("background_bps", 5e6)))
    cal = calibrate(base, [target], seed=seeds(spec, base)[0],
                    duration=calibration_duration(spec, quick), ex=ex)
    return cal, cal[target]


def backgrounds(base, alphas, load, *, seed, duration, ex):
    """{alpha: Background} at one load: the first alpha by its idle time (the load's contention
    level), the others at that idle time by their location k (the paper's normalization across
    alpha, PT:225)."""
    first = calibrate(base, [(alphas[0], load)], seed=seed, duration=duration, ex=ex)
    out = {alphas[0]: first[(alphas[0], load)]}
    if len(alphas) > 1:
        rest = calibrate(base, [(a, load) for a in alphas[1:]], seed=seed, duration=duration, ex=ex,
                         knob="mean", idle=out[alphas[0]].idle)
        out.update({a: rest[(a, load)] for a in alphas[1:]})
    return out


# ------------------------------------------------------------------------------------------------
# outputs


def figure(nrows=1, ncols=1, **kw):
    from traceflow.experiments.common import figure as _figure

    return _figure(nrows, ncols, squeeze=False, **kw)


def save(fig, out_dir, name):
    from traceflow.experiments.common import save_fig

    fig.tight_layout()
    return save_fig(fig, out_dir, name)


def result(spec, figures, tables, comparison, text):
    exp = _exp(spec)
    return {"title": exp["title"], "reproduces": exp["reproduces"], "figures": figures,
            "tables": tables, "comparison": comparison, "text": text}


def describe(cal):
    """One line per calibrated background, for the result text."""
    return "; ".join(f"alpha {b.alpha:g}, target {t[1] / 1e6:g} Mb/s: {b.bps / 1e6:.2f} Mb/s alone "
                     f"(k {b.k:.0f} B, idle {b.idle:.3f} s, mean request {b.mean_bytes / 1e3:.1f} kB"
                     f"{'' if b.converged else ', NOT within 3 %'})" for t, b in cal.items())

"""Background calibration (sec. 4.3, 5.1): 32 clients with Pareto(alpha, k) file sizes (bytes) and
exponential idle times (s).

:func:`calibrate` sets, once per (alpha, target load) on one sample path of
``calibration_duration`` seconds (the paper's 10,000 s), either the idle time with the realized mean
file size held at ``size.mean`` (``knob = "idle"``: "by ... adjusting ... the mean idle time ... we
were able to produce a target contention level", PT:238) or the location k with the idle time held
(``knob = "mean"``: sample-path normalization across alpha, PT:225). Every run then uses that k with
``normalize = "none"``, so runs of any length share one background sample path (a shorter run sees
the same first files and idle times), and the calibration does not depend on the run length.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from traceflow.experiments.common import experiment as _exp
from traceflow.experiments.tcpmt.batch import duration, run_all, seeds
from traceflow.experiments.tcpmt.setup import Background, background_group, groups, variant


def calibration_duration(spec, quick):
    """The background's calibration length (s): ``calibration_duration`` (default 10,000 s, the
    paper's run) or, in quick mode, ``quick_calibration_duration`` (default: quick_duration)."""
    exp = _exp(spec)
    if quick:
        return float(exp.get("quick_calibration_duration", duration(spec, True)))
    return float(exp.get("calibration_duration", 10_000.0))


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


def describe(cal):
    """One line per calibrated background, for the result text."""
    return "; ".join(f"alpha {b.alpha:g}, target {t[1] / 1e6:g} Mb/s: {b.bps / 1e6:.2f} Mb/s alone "
                     f"(k {b.k:.0f} B, idle {b.idle:.3f} s, mean request {b.mean_bytes / 1e3:.1f} kB"
                     f"{'' if b.converged else ', NOT within 3 %'})" for t, b in cal.items())

"""Run an ns-2 oracle script (default ``dumbbell.tcl``) and parse its measurements; run Feng's
star in both simulators and list the gateway's departures (:func:`star_departures`)."""
import math
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np

TCL = Path(__file__).with_name("dumbbell.tcl")


def available():
    return shutil.which("ns") is not None


def run_ns2(script=TCL, **params):
    """Run ``ns SCRIPT key=value...`` (a script beside this file, by name or path); return the
    measurements plus ``wall_s``."""
    args = ["ns", str(Path(__file__).with_name(str(script)) if not Path(script).is_absolute()
                      else script), *(f"{k}={v}" for k, v in params.items())]
    t0 = time.perf_counter()
    out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=600).stdout
    wall = time.perf_counter() - t0
    result = {k: float(v) for k, v in (line.split() for line in out.splitlines() if line.strip())}
    result["wall_s"] = wall
    return result


def write_sizes(directory, per_client, rng, extra=200):
    """Write ``directory/client<i>.txt``: the file sizes (bytes, one per line) client ``i`` of our
    run requested, in order, then ``extra`` more drawn by ``rng`` from all of them (ns-2's clients
    may ask for a few more files than ours did). The scripts' ``sizes_dir`` reads them."""
    drawn = np.concatenate([np.asarray(s) for s in per_client if len(s)])
    for i, sizes in enumerate(per_client):
        (Path(directory) / f"client{i}.txt").write_text(
            "\n".join(str(int(v)) for v in [*sizes, *rng.choice(drawn, extra)]))


# ---- Feng & Tinnakornsrisuphap's star packet for packet (tests/sim/test_*_star_ns2.py) ----------

FENG_STAR = Path(__file__).with_name("feng_star.tcl")
FENG_REPLAY = Path(__file__).resolve().parents[3] / "replays" / "burst_bg20.toml"


def _xoshiro_uniforms(state):
    """Our simulator's per-application stream (sim/packet.pxi: xoshiro256**, (x >> 11 + 0.5) / 2^53)."""
    m = (1 << 64) - 1
    s = [int(v) for v in state]
    rotl = lambda x, k: ((x << k) | (x >> (64 - k))) & m  # noqa: E731
    while True:
        r = (rotl((s[1] * 5) & m, 7) * 9) & m
        t = (s[1] << 17) & m
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        yield ((r >> 11) + 0.5) / 9007199254740992.0


def poisson_times(seed, group, count, rate, until, spread=1.0):
    """The packet times (ns) of a group's Poisson clients as sim/runner.py draws them: a start
    uniform in [0, spread) s (stream (_RNG_APP, group)), then exponential gaps truncated to whole
    ns (the application's stream (_RNG_APP, group, i))."""
    from traceflow.sim.runner import _RNG_APP, _stream

    starts = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_RNG_APP, group)))
    starts = starts.random(count)
    gap = int(round(1e9 / rate))
    out = []
    for i in range(count):
        t, times = int(round(starts[i] * spread * 1e9)), []
        for u in _xoshiro_uniforms(_stream(seed, _RNG_APP, group, i)):
            t += int(-math.log(u) * gap)
            if t >= until * 1e9:
                break
            times.append(t)
        out.append(times)
    return out


def star_departures(tmp_path, protocols, *, bneck_bps, limit, duration, seed, step, tick,
                    limited_transmit=False):
    """Feng's star (replays/burst_bg20.toml) with one Poisson client per entry of ``protocols``
    (names of the replay's protocols: leading "Reno"s, then one other, as feng_star.tcl's
    background= and transport=), client i's link i * step s longer, a DropTail gateway of
    ``limit`` waiting packets, run in traceflow and in ns-2 on the same Poisson times and with
    the same tick phases (ns-2's boot_time_, feng_star.tcl tick_phases=).

    Returns (ours, ns-2's): the gateway's data departures (time s, client, segment index)."""
    import copy
    import tomllib

    import dpkt

    from traceflow import sim
    from traceflow.experiments import burstiness
    from traceflow.sim import _sim
    from traceflow.sim.runner import Built

    spec = tomllib.loads(FENG_REPLAY.read_text())
    n = len(protocols)
    background = next((i for i, p in enumerate(protocols) if p != "Reno"), n)
    transport = protocols[background] if background < n else "Reno"
    assert all(p == transport for p in protocols[background:])
    sched = Path(tmp_path) / "sched"
    sched.mkdir()
    for i in range(n):
        times, = poisson_times(seed, i, 1, spec["experiment"]["client_rate"], duration)
        (sched / f"client{i}.txt").write_text("\n".join(f"{t / 1e9:.9f}" for t in times))
    trace, phases = Path(tmp_path) / "ns2q.tr", Path(tmp_path) / "phases.txt"
    # ns-2's DropTail queue-limit counts the packet in transmission too
    subprocess.run(["ns", str(FENG_STAR), f"clients={n}", f"background={background}",
                    f"transport={transport}", f"duration={duration}", "warmup=0", f"seed={seed}",
                    f"bneck_rate={bneck_bps / 1e6}Mb", f"limit={limit + 1}", f"tick={tick}",
                    "minrto=0.2", "rtxcur_init=3.0",
                    f"singledup={int(limited_transmit)}", f"step={step}", f"sched_dir={sched}",
                    f"qtrace={trace}", f"tick_phases={phases}"],
                   capture_output=True, text=True, check=True, timeout=300)
    ref = [(float(p[1]), int(p[7]), int(p[10])) for p in map(str.split, trace.read_text().splitlines())
           if p[0] == "-" and p[4] == "tcp"]

    gateway = dict(copy.deepcopy(spec["experiment"]["gateways"]["fifo"]), limit=limit)
    sc = burstiness.scenario(spec, [(p, 1) for p in protocols], gateway, duration=duration,
                             seed=seed)
    sc["topology"]["bottleneck"].update(rate=bneck_bps, pcap=True)
    # the link itself longer, as ns-2's step (a delay line in front of the host would schedule the
    # gateway arrival later than ns-2 does, which orders exact ties otherwise)
    delay = spec["topology"]["access"]["delay"]
    sc["topology"]["links"] = {f"c{i}-gw": {"delay": delay + i * step} for i in range(n)}
    # the packet-level harness keeps ns-2.35's timers in both (0.2 s RTO floor, first RTO 3 s),
    # not the replay's era: its ticks go down to 0.1 ms
    sc["tcp"].update(tick=tick, min_rto=0.2, init_rto=3.0, limited_transmit=limited_transmit)
    built = Built(sim.load_scenario(sc), tmp_path)
    built.finalize_sizes()
    phase = [float(v) for v in phases.read_text().split()]
    for agent in built.sim.agents:
        if isinstance(agent, _sim.TcpSender):      # flow i is client i
            agent.tick_phase = int(round(phase[agent.flow] * 1e9))
    built.run()
    deps = []
    with open(Path(tmp_path) / "gw-srv.pcap", "rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            if ip.len > 40:                       # data segments
                deps.append((float(ts), ip.src, ip.data.seq))
    # node i is client i (10.0.0.i+1); segment index from the connection's first sequence number
    first = {}
    for _, src, seq in deps:
        first[src] = min(first.get(src, seq), seq)
    ours = [(t, src[3] - 1, (seq - first[src]) // 1460) for t, src, seq in deps]
    return ours, ref


def first_difference(ours, ref, tol=1e-6):
    """Index of the first departure that differs (client, segment, or time by ``tol`` s or
    more), or None when all of the shorter list agree."""
    for k, (a, b) in enumerate(zip(ours, ref)):
        if a[1:] != b[1:] or abs(a[0] - b[0]) >= tol:
            return k
    return None

"""Poisson-fed Reno clients through one gateway, packet for packet against ns-2 (issue 18).

Feng & Tinnakornsrisuphap's star (replays/burst_bg20.toml) shrunk to 17 clients on a 10 Mb/s
bottleneck with a 10-packet buffer, so that losses, fast retransmits and limited transmit come
within 2 s. ns-2 (tests/sim/ns2/feng_star.tcl) hands its agents the packets at the times our
clients' Poisson draws give (``sched_dir``), so both simulators see the same offered traffic, and
the gateway's departures (time, client, segment) are compared one by one.

Client i's link is i us longer in both (ns-2's ``step``, our per-group ``extra_delay``): ns-2
ordered some packets meeting at one instant against its FIFO rule, likely from how its
double-precision clock rounds sums of delays, which an integer clock cannot follow, so the
comparison avoids exact ties (their order is refereed statistically, by the Feng comparisons).

What this pins, each found by this comparison:
- a Poisson client's connection opens with nothing to send: each packet leaves at its Poisson
  time (the first departure was 2-30 ms early: one segment went out at the start, so every
  client ran one packet ahead of its application; before that fix the very first departure
  differs);
- limited transmit sends only while at most cwnd + dupacks segments are outstanding (ns-2's
  send_one(), RFC 3042): after a Reno partial ACK it sent new data where ns-2 waits.
All 1156 departures of the 2 s agree, to the microsecond of ns-2's trace. What usually ends such
agreement later is a retransmission timeout a tick apart, from ns-2's per-connection random
tick phase (boot_time_), which we draw otherwise; the tick is 0.1 ms here to keep that rare.
"""
import copy
import math
import shutil
import subprocess
import tomllib
from pathlib import Path

import dpkt
import numpy as np
import pytest

from traceflow import sim
from traceflow.experiments import burstiness
from traceflow.sim.runner import _RNG_APP, _stream

TCL = Path(__file__).with_name("ns2") / "feng_star.tcl"
REPLAY = Path(__file__).resolve().parents[2] / "replays" / "burst_bg20.toml"
CLIENTS, RATE, DURATION, SEED, STEP = 17, 100.0, 2.0, 3, 1e-6

pytestmark = pytest.mark.skipif(shutil.which("ns") is None,
                                reason="needs ns-2 ('ns' on PATH: apt-get install ns2)")


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


def _ours(tmp_path):
    spec = tomllib.loads(REPLAY.read_text())
    gateway = dict(copy.deepcopy(spec["experiment"]["gateways"]["fifo"]), limit=10)
    sc = burstiness.scenario(spec, [("Reno", 1)] * CLIENTS, gateway, duration=DURATION, seed=SEED)
    sc["topology"]["bottleneck"].update(rate=10e6, pcap=True)
    for i, group in enumerate(sc["traffic"]):
        group["extra_delay"] = i * STEP
    sc["tcp"].update(tick=1e-4, limited_transmit=True)
    sim.run(sc, pcap_dir=tmp_path)
    deps = []
    with open(tmp_path / "gw-srv.pcap", "rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            if ip.len > 40:                       # data segments
                deps.append((float(ts), ip.src, ip.data.seq))
    # node i is client i (10.0.0.i+1); segment index from the connection's first sequence number
    first = {}
    for _, src, seq in deps:
        first[src] = min(first.get(src, seq), seq)
    return [(t, src[3] - 1, (seq - first[src]) // 1460) for t, src, seq in deps]


def _ns2(tmp_path):
    sched = tmp_path / "sched"
    sched.mkdir()
    for i in range(CLIENTS):
        times, = poisson_times(SEED, i, 1, RATE, DURATION)
        (sched / f"client{i}.txt").write_text("\n".join(f"{t / 1e9:.9f}" for t in times))
    trace = tmp_path / "ns2q.tr"
    # ns-2's DropTail queue-limit 11 holds our 10 waiting packets plus the one in transmission
    subprocess.run(["ns", str(TCL), f"clients={CLIENTS}", f"duration={DURATION}", "warmup=0",
                    f"seed={SEED}", "bneck_rate=10Mb", "limit=11", "tick=0.0001", "singledup=1",
                    f"step={STEP}", f"sched_dir={sched}", f"qtrace={trace}"],
                   capture_output=True, text=True, check=True, timeout=300)
    return [(float(p[1]), int(p[7]), int(p[10])) for p in map(str.split, trace.read_text().splitlines())
            if p[0] == "-" and p[4] == "tcp"]


def test_gateway_departures_match_ns2_packet_for_packet(tmp_path):
    ours, ref = _ours(tmp_path), _ns2(tmp_path)
    for k, (a, b) in enumerate(zip(ours, ref)):
        assert a[1:] == b[1:] and abs(a[0] - b[0]) < 1e-6, (k, ours[max(0, k - 3):k + 3],
                                                           ref[max(0, k - 3):k + 3])
    assert len(ours) == len(ref) > 1000

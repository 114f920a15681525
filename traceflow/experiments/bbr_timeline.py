"""BBR timelines, real kernel against the simulator: one long flow through the testbed's bottleneck.

A testbed run (``testbed.py OUT --cc bbr --clients 1 --k SIZE --cap SIZE --rtt RTT ...``: one
download of SIZE bytes) is the oracle. From the capture on the server's side of the bottleneck
(before the queue) :func:`capture_timeline` samples, every ``BIN_S``, what the sender has in
flight (highest sequence sent minus highest ACK seen, in segments), its sending rate (data bytes
leaving, retransmissions included: BBR's pacing) and the delivery rate (bytes newly ACKed).
:func:`simulate_long_flow` replays the same download through the simulator's linux profile with
``tcp.cc = "bbr"`` on the testbed's topology and samples the simulated capture the same way, and
:func:`timeline_facts` reduces a timeline to the facts the comparison asserts (Startup's end,
steady-state inflight against the BDP, ProbeRTT episodes and their spacing, throughput).

    python -m traceflow.experiments.bbr_timeline RUN_DIR [RUN_DIR ...] -o docs/img

writes ``bbr_<run>.png`` (kernel and simulator, inflight and rates) and prints the facts.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import polars as pl

BIN_S = 0.01            # s, timeline resolution
RATE_WINDOW = 5         # bins (50 ms) over which sending and delivery rates are averaged
PROBE_RTT_MAX = 5.0     # segments: a bin whose peak inflight is at most this is at ProbeRTT's 4
PROBE_RTT_MIN_S = 0.15  # s: shorter dips are not ProbeRTT (it holds 4 segments >= 200 ms)
SIM_SERVER_PORT = 5001
REAL_SERVER_PORT = 9000


def capture_timeline(packets: pl.DataFrame, server_port: int, mss: int) -> pl.DataFrame:
    """The longest connection of a sender-side capture, sampled every ``BIN_S``: ``t`` (s from
    its first data segment), ``inflight`` (segments, the bin's peak), ``segs`` and ``retx`` (data
    segments sent, of them retransmissions), ``send_bps`` and
    ``delivery_bps`` (bit/s over ``RATE_WINDOW`` bins)."""
    pk = packets.with_columns(pl.col("ts").cast(pl.Int64).alias("t_ns"))
    port = (pk.filter((pl.col("sport") == server_port) & (pl.col("payload_len") > 0))
            .group_by("dport").agg(pl.col("payload_len").sum()).sort("payload_len")["dport"][-1])
    isn = pk.filter((pl.col("sport") == server_port) & (pl.col("dport") == port)
                    & ((pl.col("tcp_flags") & 0x02) > 0))["seq"][0]
    rel = lambda col: ((pl.col(col).cast(pl.Int64) - isn - 1) % (1 << 32))  # noqa: E731
    data = (pk.filter((pl.col("sport") == server_port) & (pl.col("dport") == port)
                      & (pl.col("payload_len") > 0))
            .select("t_ns", (rel("seq") + pl.col("payload_len")).alias("end"),
                    pl.col("payload_len").cast(pl.Int64).alias("bytes"),
                    pl.lit(None, pl.Int64).alias("ack")))
    acks = (pk.filter((pl.col("dport") == server_port) & (pl.col("sport") == port)
                      & ((pl.col("tcp_flags") & 0x12) == 0x10))
            .select("t_ns", pl.lit(None, pl.Int64).alias("end"), pl.lit(0, pl.Int64).alias("bytes"),
                    rel("ack").alias("ack")))
    t0 = data["t_ns"].min()
    ev = (pl.concat([data, acks]).filter(pl.col("t_ns") >= t0).sort("t_ns", maintain_order=True)
          .with_columns(pl.col("end").cum_max().forward_fill().fill_null(0).alias("snd_hi"),
                        pl.col("ack").cum_max().forward_fill().fill_null(0).alias("ack_hi"),
                        ((pl.col("t_ns") - t0) // int(BIN_S * 1e9)).alias("bin")))
    ev = ev.with_columns(pl.max_horizontal(pl.col("ack_hi").clip(upper_bound=pl.col("snd_hi")), 0)
                         .alias("ack_hi"),
                         # a data segment ending at or below what was sent before: a retransmission
                         (pl.col("end") <= pl.col("snd_hi").shift(1).fill_null(0)).alias("retx"))
    per = (ev.group_by("bin").agg(((pl.col("snd_hi") - pl.col("ack_hi")).max() / mss).alias("inflight"),
                                  pl.col("bytes").sum().alias("sent"), pl.col("ack_hi").max(),
                                  pl.col("retx").sum().alias("retx"),
                                  pl.col("end").is_not_null().sum().alias("segs"))
           .sort("bin"))
    grid = pl.DataFrame({"bin": np.arange(int(per["bin"].max()) + 1)})
    per = (grid.join(per, on="bin", how="left")
           .with_columns(pl.col("inflight").forward_fill(),
                         pl.col("sent", "retx", "segs").fill_null(0),
                         pl.col("ack_hi").forward_fill().fill_null(0)))
    w = RATE_WINDOW * BIN_S
    return per.select(
        (pl.col("bin") * BIN_S).alias("t"), "inflight", "segs", "retx",
        (pl.col("sent").rolling_sum(RATE_WINDOW, min_samples=1) * 8 / w).alias("send_bps"),
        ((pl.col("ack_hi") - pl.col("ack_hi").shift(RATE_WINDOW).fill_null(0)) * 8 / w)
        .alias("delivery_bps"))


def timeline_facts(tl: pl.DataFrame, rate_bps: float, rtt_s: float, wire_bytes: int, mss: int):
    """What the kernel/simulator comparison asserts: ``startup_exit_s`` (Drain's start: the first
    time the sending rate, having been above 1.5 x the bottleneck's, falls below 0.6 x it; Startup
    paces at 2.89 x bw, Drain at 0.35 x), ``bdp`` (segments), ``inflight_bdp``
    (median steady inflight from 3 s to the last second, ProbeRTT excluded, over the BDP),
    ``probe_rtt_s`` (start of each ProbeRTT episode), ``throughput_bps`` (payload), ``retx_share``
    (retransmitted data segments / data segments sent)."""
    bdp = rate_bps * rtt_s / 8 / wire_bytes
    fast = tl.filter(pl.col("send_bps") > 1.5 * rate_bps)["t"].min()
    startup = float(tl.filter((pl.col("t") > fast) & (pl.col("send_bps") < 0.6 * rate_bps))["t"].min())
    low = (tl["inflight"] <= PROBE_RTT_MAX).to_numpy() & (tl["t"] > startup + 1.0).to_numpy()
    starts, run = [], 0
    for i, flag in enumerate(low):
        run = run + 1 if flag else 0
        if run == int(PROBE_RTT_MIN_S / BIN_S):
            starts.append(round(float(tl["t"][i - run + 1]), 3))
    end = float(tl["t"].max())
    steady = tl.filter((pl.col("t") > 3.0) & (pl.col("t") < end - 1.0)
                       & (pl.col("inflight") > PROBE_RTT_MAX))
    return {"startup_exit_s": startup, "bdp": round(bdp, 2),
            "inflight_bdp": round(float(steady["inflight"].median()) / bdp, 3),
            "probe_rtt_s": starts, "throughput_bps": round(float(tl["delivery_bps"].mean())),
            "duration_s": round(end, 3),
            "retx_share": round(float(tl["retx"].sum()) / float(tl["segs"].sum()), 4)}


def run_params(run_dir):
    """The set-up of a single-flow testbed run: ``rate`` (bit/s), ``buffer`` (bytes), ``rtt`` (s),
    ``mss`` (payload bytes), ``size`` (bytes of the download)."""
    from traceflow.values import parse_rate

    p = json.loads((Path(run_dir) / "params.json").read_text())
    return {"rate": parse_rate(p["rate"]), "buffer": int(p["buffer"]),
            "rtt": float(p["rtt"][0]) / 1e3,
            "mss": int(p["mtu"]) - 40 - 12 * int(p.get("timestamps", 1)), "size": int(p["cap"])}


def facts(tl, setup):
    """:func:`timeline_facts` for the set-up of :func:`run_params`."""
    return timeline_facts(tl, setup["rate"], setup["rtt"], setup["mss"] + 52 + 14, setup["mss"])


def kernel_timeline(run_dir):
    from traceflow.experiments.testbed_replay import _capture
    from traceflow.pcap.reader import read_packets

    pk = pl.from_arrow(read_packets(_capture(Path(run_dir), "server_side")))
    return capture_timeline(pk, REAL_SERVER_PORT, run_params(run_dir)["mss"])


def simulate_long_flow(setup, out_dir, seed=1, cc="bbr"):
    """The download of ``setup`` (:func:`run_params`) replayed by the simulator (linux profile,
    ``cc``) on the testbed's topology: HTB at its rate (1600-byte burst, 14 bytes of Ethernet
    counted), a bfifo of its buffer, half the RTT each way; returns the sender-side timeline."""
    import traceflow.sim as sim
    from traceflow.pcap.reader import read_packets

    rate, buf, rtt, mss, size = (setup[k] for k in ("rate", "buffer", "rtt", "mss", "size"))
    out_dir = Path(out_dir)
    table = pl.DataFrame({"start": [0], "size": [size], "request": [len(b"%d\n" % size)]})
    sc = {"simulation": {"duration": size * 8 / rate * 1.5 + 10, "seed": seed, "mss": mss},
          "topology": {"kind": "dumbbell", "left": 1, "right": 1,
                       "bottleneck": {"rate": rate, "delay": rtt / 2, "rate_rev": "line",
                                      "burst": 1600, "overhead": 14,
                                      "queue": {"kind": "droptail", "limit": 0, "limit_bytes": buf}},
                       "access": {"rate": 10e9, "delay": 5e-6},
                       "links": {"l0-g1": {"pcap": True}}},
          "tcp": {"profile": "linux", "cc": cc},
          "traffic": [{"kind": "trace", "src": "l0", "dst": "r0"}]}
    sim.run(sc, flows=table.to_arrow(), pcap_dir=out_dir)
    pk = pl.from_arrow(read_packets(out_dir / "l0-g1.pcap"))
    return capture_timeline(pk, SIM_SERVER_PORT, mss)


def plot(kernel, simulated, title, path, bdp):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    for tl, name, c in ((kernel, "Linux kernel", "tab:blue"), (simulated, "simulator", "tab:orange")):
        ax[0].plot(tl["t"], tl["inflight"], lw=0.7, color=c, label=name)
        ax[1].plot(tl["t"], tl["send_bps"] / 1e6, lw=0.6, color=c, label=f"{name}: sending")
        ax[1].plot(tl["t"], tl["delivery_bps"] / 1e6, lw=0.6, color=c, ls=":", alpha=0.8,
                   label=f"{name}: delivery")
    ax[0].axhline(bdp, color="k", lw=0.6, ls="--", label="BDP")
    ax[0].set_ylabel("in flight (segments)")
    ax[1].set_ylabel("Mbit/s (50 ms)")
    ax[1].set_xlabel("s from the first data segment")
    ax[0].legend(loc="upper right", fontsize=8)
    ax[1].legend(loc="upper right", fontsize=7, ncol=2)
    ax[0].set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("-o", "--out", default="docs/img")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--facts", help="also write the kernel runs' set-ups and facts to this JSON")
    a = ap.parse_args(argv)
    for run in a.runs:
        if not (Path(run) / "params.json").is_file():
            print(f"bbr_timeline: {run}: not a testbed run (no params.json)", file=sys.stderr)
            raise SystemExit(2)
    kernel = {}
    for run in a.runs:
        setup = run_params(run)
        kern = kernel_timeline(run)
        with tempfile.TemporaryDirectory() as tmp:
            simd = simulate_long_flow(setup, tmp, seed=a.seed)
        both = {who: facts(tl, setup) for who, tl in (("kernel", kern), ("sim", simd))}
        name = Path(run).name
        kernel[name] = {"setup": setup, "kernel": both["kernel"]}
        print(name, json.dumps(both))
        plot(kern, simd, f"BBR, one flow: {setup['rate'] / 1e6:g} Mbit/s, {setup['buffer']} B "
             f"buffer, RTT {setup['rtt'] * 1e3:g} ms", Path(a.out) / f"bbr_{name}.png",
             both["kernel"]["bdp"])
    if a.facts:
        Path(a.facts).write_text(json.dumps(kernel, indent=1) + "\n")


if __name__ == "__main__":
    main()

"""The network a capture came through, inferred from that one capture: the bottleneck's service
rate, its buffer, the shaper's burst, the reverse path and the side of the bottleneck the capture
sits on (:class:`~traceflow.models.model.Network`).

- **Service rate** (:class:`Spacing`): on a link that was busy, consecutive packets leave the
  bottleneck back to back, each after its own service time, so downstream of it the gaps between
  large packets, divided by the later packet's IP bytes, pile up at 8 / rate. The mode of that
  ratio (log-spaced bins, 0.4 % wide) is the rate at the IP layer (a shaper that counts link-layer
  overhead shows the IP rate of the most common packet size). It is used when the link was busy
  often enough to show it (:data:`MIN_MODE_SHARE` of the gaps near the mode) and the rate lies
  between the peak 1 s throughput and twice the peak 100 ms one; otherwise (upstream of the
  bottleneck, where the gaps are the sender's, or a link never saturated) the rate is a lower
  bound from the throughput at every scale and from the round trips, flagged as a guess.
- **Buffer** (:func:`queue_delays`): a handshake's leg that crosses the bottleneck queue (the SYN
  leg downstream of it, capture → server → capture, the ACK leg upstream) exceeds its host pair's
  minimum by the queueing delay its SYN/ACK met. Pooled over the pairs with several handshakes,
  the 99th percentile of that excess is the delay of a (nearly) full queue, ``D``; the buffer is
  ``rate × D`` minus half a mean data packet: the excess also holds the rest of the packet in
  service when the SYN/ACK arrived, half a packet on average (the shared testbed runs' whole
  client-side captures: 6,000 B → 6,171-6,176 B, 12,000 → 11,579-11,699, 24,000 → 23,618, 50,000
  → 49,228). A queue fills only where packets are lost: without retransmissions in the capture
  the estimate is a lower bound; without a rate seen in the spacing it is a guess.
- **Burst** (:meth:`Spacing.burst`): a token-bucket shaper lets a burst through at line rate
  after the link was idle, then a packet after part of a service time: the zero gaps that follow
  idle gaps and the partial gap after them give the bucket's depth.
- **Side**: ``downstream`` when the leg that spans the data senders carries the queueing (the
  capture is between the bottleneck and the data receivers), ``upstream`` when the other does.

Times in seconds, rates in bit/s, sizes in bytes.
"""
from __future__ import annotations

import math

import numpy as np
import polars as pl

from traceflow.models.model import Network

#: Spacing histogram: ns per IP byte, log-spaced from 0.05 (160 Gbit/s) to 1e6 (8 kbit/s)
SPACING_EDGES = np.geomspace(0.05, 1e6, 4001)
#: consecutive gaps' pairs: the same scale in coarse bins (9 % wide)
PAIR_EDGES = np.geomspace(0.05, 1e6, 201)
#: the bins' (geometric) centres
SPACING_CENTERS = np.sqrt(SPACING_EDGES[:-1] * SPACING_EDGES[1:])
PAIR_CENTERS = np.sqrt(PAIR_EDGES[:-1] * PAIR_EDGES[1:])
#: packets smaller than this (IP bytes) are not timed: requests and ACKs, whose gaps are the
#: other direction's, and short segments, whose own size says little about the rate
MIN_SPACED_BYTES = 512
#: the rate is the spacing mode when at least this share of the timed gaps lie within
#: :data:`MODE_WIDTH` of it (a link that was busy for part of the capture)
MIN_MODE_SHARE = 0.15
MODE_WIDTH = 0.03
#: ... and it is at most this many times the peak 100 ms throughput
MAX_OVER_PEAK = 2.0
#: the largest packet a bin's peak may hold partly (bytes): the lower bound on the rate takes one
#: away
MAX_PACKET = 1500
#: a token bucket shows when at least this share of the idle gaps is followed by a line-rate one
MIN_BURST_SHARE = 0.2
#: the queueing delay of a full buffer: this quantile of the handshakes' excess delay
FULL_QUANTILE = 0.99
#: host pairs need this many handshakes for their minimum to be the path's (and their excess the
#: queue's); the pooled excess needs this many handshakes in all
MIN_PAIR_HANDSHAKES = 5
MIN_HANDSHAKES = 100
#: a capture whose retransmissions are at least this share of its data packets saw the queue
#: overflow (the buffer estimate is then the full queue's, not a lower bound)
MIN_LOSS_SHARE = 0.001
#: without evidence: a buffer of one bandwidth-delay product of the median path RTT (Villamizar &
#: Song 1994), at least this many full segments
MIN_DEFAULT_SEGMENTS = 10


class Spacing:
    """Histograms of the time per IP byte between consecutive large packets of a capture
    (:data:`MIN_SPACED_BYTES`; fine, :data:`SPACING_EDGES`) and of consecutive pairs of those
    gaps (coarse, :data:`PAIR_EDGES`), and the large packets' count and bytes; fed batch by batch
    in capture order, the first packet of a batch timed against the last of the one before."""

    def __init__(self):
        self.counts = np.zeros(SPACING_EDGES.size - 1, dtype=np.int64)
        self.pairs = np.zeros((PAIR_EDGES.size - 1) ** 2, dtype=np.int64)
        self.packets = 0
        self.bytes = 0
        self.last = None        # the last large packet's time (ns) and coarse gap bin

    def measure(self, ts, ip_len):
        """What a batch adds (``ts`` int64 ns, ``ip_len`` IP bytes; None without large
        packets), chained to the batch measured before (call in capture order)."""
        big = ip_len >= MIN_SPACED_BYTES
        ts, ip_len = ts[big], ip_len[big]
        if ts.size == 0:
            return None
        size = int(ip_len.sum())
        last_ts, last_bin = self.last if self.last is not None else (None, -1)
        if last_ts is not None:
            ts = np.concatenate([[last_ts], ts])
            ip_len = np.concatenate([[0], ip_len])
        gap = np.diff(ts).astype(np.float64)
        per_byte = gap / ip_len[1:]
        coarse = np.searchsorted(PAIR_EDGES, per_byte, side="right") - 1
        coarse[(gap <= 0) | (coarse < 0) | (coarse >= PAIR_EDGES.size - 1)] = -1
        chain = np.concatenate([[last_bin], coarse])
        ok = (chain[:-1] >= 0) & (chain[1:] >= 0)
        nb = PAIR_EDGES.size - 1
        pairs = np.bincount(chain[:-1][ok] * nb + chain[1:][ok], minlength=nb * nb)
        self.last = (int(ts[-1]), int(chain[-1]))
        return (np.histogram(per_byte[gap > 0], SPACING_EDGES)[0], pairs, int(big.sum()), size)

    def add(self, measured):
        if measured is not None:
            counts, pairs, packets, size = measured
            self.counts += counts
            self.pairs += pairs
            self.packets += packets
            self.bytes += size

    def merge(self, other):
        self.counts += other.counts
        self.pairs += other.pairs
        self.packets += other.packets
        self.bytes += other.bytes

    def mode(self):
        """``(ns per byte, share of the timed gaps within MODE_WIDTH of it, gaps)``; ``(nan, 0,
        n)`` without gaps."""
        n = int(self.counts.sum())
        if n == 0:
            return math.nan, 0.0, 0
        # the peak (three bins smoothed), located by the mean of the five bins around it: gaps
        # are never shorter than the service time but often longer (a short packet between),
        # so a wider window would lean toward the longer side
        k = int(np.argmax(np.convolve(self.counts, np.ones(3, dtype=np.int64), mode="same")))
        centers = SPACING_CENTERS
        lo, hi = max(0, k - 2), min(self.counts.size, k + 3)
        peak = float(np.average(centers[lo:hi], weights=self.counts[lo:hi] + 1e-12))
        near = (centers >= peak / (1 + MODE_WIDTH)) & (centers <= peak * (1 + MODE_WIDTH))
        return peak, float(self.counts[near].sum() / n), n

    def burst(self, per_byte):
        """``(bytes, evidence)`` of a token-bucket shaper whose service time is ``per_byte``
        (ns per IP byte), or ``(0, why)``.

        A bucket of ``B`` bytes that lets a packet go while it is not negative and then takes
        the packet's ``L`` bytes from it (HTB, the simulator's shaper) lets ``k = ceil(B / L)``
        packets through at line rate after an idle link, and the next one after ``k - B / L``
        service times: after each idle gap (> 4 service times) come ``k - 1`` "zero" gaps (< 1/20
        of a service time) and one partial gap. ``k - 1`` is the zero gaps per idle gap that
        starts a run of them (pairs histogram), the partial fraction the densest gap between
        1/20 and 0.95 service times; ``B = L (k - f)`` with ``L`` the mean large packet."""
        nb = PAIR_EDGES.size - 1
        pairs = self.pairs.reshape(nb, nb)
        zero, idle = PAIR_CENTERS < per_byte / 20, PAIR_CENTERS > 4 * per_byte
        idle_zero = int(pairs[np.ix_(idle, zero)].sum())
        zero_zero = int(pairs[np.ix_(zero, zero)].sum())
        idle_any = int(pairs[idle].sum())
        if idle_zero < MIN_BURST_SHARE * idle_any:
            # no line-rate packets after an idle link: a plain serializer, or a bucket under one
            # packet, which the mix of packet sizes hides
            return 0, (f"{idle_zero:,} of {idle_any:,} idle gaps followed by a packet at line "
                       "rate: no token bucket deeper than a packet")
        centers = SPACING_CENTERS
        partial = (centers >= per_byte / 20) & (centers < 0.95 * per_byte)
        if self.packets == 0 or int(self.counts[partial].sum()) == 0:
            return 0, "no gaps shorter than a service time: no burst"
        smooth = np.convolve(np.where(partial, self.counts, 0), np.ones(5, np.int64), "same")
        f = float(centers[int(np.argmax(smooth))] / per_byte)
        k = 1 + round((idle_zero + zero_zero) / idle_zero)
        size = self.bytes / self.packets
        return (int(round(size * (k - f))),
                f"after idle gaps, {k - 1} packet(s) at line rate ({idle_zero:,} idle gaps then "
                f"a zero gap), then one after {f:.2f} service times ({size:.0f}-byte packets)")


def queue_delays(flows):
    """The queueing delays the handshakes met (s) and the side of the queue.

    ``flows``: ``client_addr``, ``server_addr``, ``rtt_syn``, ``rtt_ack`` (s) and, when present,
    ``syn_count``, ``synack_count``: a handshake whose SYN or SYN/ACK was sent again is left out
    (its leg holds a retransmission timeout, not a queue). Per host pair with at least
    :data:`MIN_PAIR_HANDSHAKES` handshakes, the loaded leg is the one whose 90th percentile lies
    further above its minimum (the rule :func:`traceflow.models.fit.path_rtt` applies to every
    pair); each handshake's excess is its loaded leg minus the pair's minimum of it.

    Returns ``(excess array, side)``: ``"downstream"`` when in most handshakes the loaded leg is
    the one that spans the connection's data sender (the side that sent more application bytes:
    ``app_bytes_c2s``, ``app_bytes_s2c``), so the queue lies between the data senders and the
    capture; ``"upstream"`` when it is the other; ``"unknown"`` without pairs to judge."""
    syn, ack = (pl.col(c).cast(pl.Float64) for c in ("rtt_syn", "rtt_ack"))
    pair = ["client_addr", "server_addr"]
    once = [pl.col(c) <= 1 for c in ("syn_count", "synack_count") if c in flows.columns]
    sender_is_server = (pl.col("app_bytes_s2c").fill_null(0)
                        >= pl.col("app_bytes_c2s").fill_null(0))
    hs = (flows.filter(*once) if once else flows).select(*pair, _s=syn, _a=ack,
                                                         _down=sender_is_server)
    hs = hs.filter(pl.col("_s").is_finite() & pl.col("_a").is_finite())
    per = (hs.group_by(pair).agg(n=pl.len(), smin=pl.col("_s").min(), amin=pl.col("_a").min(),
                                 s90=pl.col("_s").quantile(0.9), a90=pl.col("_a").quantile(0.9))
           .filter(pl.col("n") >= MIN_PAIR_HANDSHAKES)
           .with_columns(syn_loaded=(pl.col("s90") - pl.col("smin"))
                         >= (pl.col("a90") - pl.col("amin"))))
    if per.height == 0:
        return np.zeros(0), "unknown"
    hs = hs.join(per, on=pair)
    excess = hs.select(pl.when(pl.col("syn_loaded")).then(pl.col("_s") - pl.col("smin"))
                       .otherwise(pl.col("_a") - pl.col("amin")))
    # the loaded leg spans the data sender: the SYN leg spans the server
    down = float((hs["syn_loaded"] == hs["_down"]).mean())
    side = "downstream" if down > 0.5 else "upstream" if down < 0.5 else "unknown"
    return excess.to_series().to_numpy(), side


def service_rate(spacing, peak_bps, peaks):
    """The bottleneck's service rate: the spacing mode where the link was seen busy, else the
    peak-rate estimate.

    Parameters
    ----------
    spacing : Spacing
        The capture's spacing histograms.
    peak_bps : float
        The peak-rate estimate (bit/s; :func:`traceflow.models.fit.estimate_capacity`).
    peaks : dict of str to float
        Its peak rates by bin (bit/s).

    Returns
    -------
    tuple of (float, str, str)
        ``(rate bit/s, evidence, quality)``: the spacing mode of ``spacing`` where the link was
        seen busy, else ``peak_bps``; what it rests on; ``ok`` or why it is doubtful.
    """
    per_byte, share, gaps = spacing.mode() if spacing is not None else (math.nan, 0.0, 0)
    spaced = 8e9 / per_byte if per_byte > 0 else math.nan
    peak_1s = peaks.get("1s", peak_bps)
    # the bottleneck's rate is at least the peak 1 s throughput, and the link ran near it for
    # 100 ms at least once (upstream of the bottleneck the gaps are a faster link's)
    peak_100ms = peaks.get("100ms", peak_bps)
    if (share >= MIN_MODE_SHARE and math.isfinite(spaced) and spaced >= 0.97 * (peak_1s or 0)
            and spaced <= MAX_OVER_PEAK * (peak_100ms or math.inf)):
        return spaced, (f"{share:.0%} of {gaps:,} gaps between large packets are {per_byte:.4g} "
                        "ns per IP byte (back to back at the bottleneck)"), "ok"
    # a bin of w seconds that holds B bytes saw at least B - one packet go through: the link
    # runs at (B - L) / w or faster, at every scale (a sparse capture's 1 s or 10 ms peaks
    # bound it above the estimate of bins that hold 100 packets)
    bound, scale = peak_bps, "the peak-rate estimate"
    for label, width in (("10ms", 0.01), ("100ms", 0.1), ("1s", 1.0)):
        if label in peaks:
            r = peaks[label] - 8 * MAX_PACKET / width
            if r > bound:
                bound, scale = r, f"the peak {label} throughput less one {MAX_PACKET}-byte packet"
    return bound, (f"{scale} (no back-to-back spacing of a busy link: "
                   + (f"{share:.0%} of {gaps:,} gaps near {spaced / 1e6:.4g} Mbit/s"
                      if gaps else "no large packets") + ")"), \
        ("guess: a lower bound from the throughput (upstream of the bottleneck it holds packets "
         "the queue dropped; on a link never saturated the link is faster)")


def infer_network(spacing, flows, rate, *, mean_packet, data_packets, retransmissions,
                  path_rtt_s=None, min_rtt_s=None, segment=None):
    """The :class:`~traceflow.models.model.Network` of a capture.

    Parameters
    ----------
    spacing : Spacing
        The capture's :class:`Spacing`.
    flows : polars.DataFrame
        The flow table (see :func:`queue_delays`).
    rate : tuple of (float, str, str)
        :func:`service_rate`'s ``(rate, evidence, quality)``; rate in bit/s.
    mean_packet : float
        Mean data packet (IP bytes).
    data_packets, retransmissions : int
        Counts of the capture (data-direction packets, and the segments that were
        retransmissions).
    path_rtt_s : float, optional
        Median path RTT (s), for the default buffer.
    min_rtt_s : float, optional
        The smallest path RTT (s): a mean data packet crossed every link of the path and its answer
        came back within it, so where the spacing does not show the rate, the rate is at least
        ``8 mean_packet / min_rtt_s`` (a LAN capture of a few sparse packets: its throughput says
        kbit/s, its 0.2 ms round trips say Mbit/s).
    segment : int, optional
        Full segment payload (bytes).

    Returns
    -------
    Network
        Rate (bit/s), buffer (IP bytes), full-queue delay (s), burst (bytes), reverse rate, side
        and loss share, each with its evidence and quality.
    """
    rate, rate_evidence, rate_quality = rate
    if rate_quality != "ok" and min_rtt_s and min_rtt_s > 0 and mean_packet > 0:
        crossed = 8 * mean_packet / min_rtt_s
        if not crossed <= rate:
            rate = crossed
            rate_evidence = (f"{mean_packet:.0f}-byte packets made round trips of "
                             f"{min_rtt_s * 1e3:.3g} ms: the path runs at least this fast ("
                             + rate_evidence + ")")
    evidence, quality = {"rate": rate_evidence}, {"rate": rate_quality}
    per_byte = 8e9 / rate if rate and rate > 0 else math.nan
    # --- buffer
    excess, side = queue_delays(flows)
    loss_share = retransmissions / data_packets if data_packets else 0.0
    full_delay = None
    seg = segment or 1460
    floor = MIN_DEFAULT_SEGMENTS * (seg + 40)
    if excess.size >= MIN_HANDSHAKES and math.isfinite(rate or math.nan):
        # a leg that holds a lost and resent ACK (or a host's stall) is no queue: beyond Tukey's
        # far fence of the excesses (the sample's ACK leg: 99 % at 228 ms, the queue's 32 ms)
        q1, q3 = np.quantile(excess, [0.25, 0.75])
        excess = excess[excess <= q3 + 3 * (q3 - q1)]
        full_delay = float(np.quantile(excess, FULL_QUANTILE))
        buffer = max(int(round(rate / 8 * full_delay - mean_packet / 2)), int(mean_packet))
        evidence["buffer"] = (f"{FULL_QUANTILE:.0%} of {excess.size:,} handshakes met at most "
                              f"{full_delay * 1e3:.3g} ms of queueing above their path's minimum "
                              f"({side}); {loss_share:.2%} of the data segments retransmitted")
        quality["buffer"] = ("ok" if loss_share >= MIN_LOSS_SHARE else
                             "lower bound: no loss episodes, the queue may never have filled")
        if rate_quality != "ok":
            # bytes from a delay and a guessed rate: no smaller than the default's floor
            buffer = max(buffer, floor)
            quality["buffer"] = (f"guess: the delay of a full queue times a guessed rate, at "
                                 f"least {MIN_DEFAULT_SEGMENTS} segments")
    else:
        rtt = path_rtt_s if path_rtt_s and math.isfinite(path_rtt_s) else 0.1
        buffer = int(max(floor, (rate / 8 * rtt) if math.isfinite(rate or math.nan) else 0))
        evidence["buffer"] = (f"{excess.size} handshakes of host pairs with >= "
                              f"{MIN_PAIR_HANDSHAKES}: too few to see the queue")
        quality["buffer"] = ("default: one bandwidth-delay product of the median path RTT, at "
                             f"least {MIN_DEFAULT_SEGMENTS} segments")
    # --- burst
    if rate_quality == "ok":
        burst, evidence["burst"] = spacing.burst(per_byte)
        quality["burst"] = "ok"
    else:
        burst, evidence["burst"] = 0, "no back-to-back spacing to read it from"
        quality["burst"] = "unknown: none assumed"
    evidence["side"] = "the handshake leg that crosses the queue"
    quality["side"] = "ok" if side != "unknown" else "unknown: too few handshakes per host pair"
    evidence["reverse"] = "requests and ACKs: not measured"
    quality["reverse"] = "default: the reverse path is not a bottleneck (unshaped)"
    return Network(rate_bps=float(rate), buffer_bytes=int(buffer), full_queue_delay_s=full_delay,
                   burst_bytes=int(burst), reverse_rate_bps=None, side=side,
                   loss_share=float(loss_share), evidence=evidence, quality=quality)

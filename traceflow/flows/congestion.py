"""The congestion control family of the data senders, read from one capture (issue 44).

Each long connection (at least :data:`MIN_SEGMENTS` data segments) is reduced to a few measured
quantities (:func:`reduce_connections`, from the packets :class:`traceflow.flows.hosts.HostFacts`
reduces), and those rows are labelled and pooled (:func:`aggregate`) into one answer:
``"reno"``, ``"cubic"``, ``"bbr"`` or None (the capture cannot tell).

**Flight.** The data in flight when the sender sent a segment is the highest sequence number
sent so far minus the highest acknowledgment it had received. At a capture next to the sender
both pass the capture as the sender sees them. Behind the bottleneck a segment arrives a queue
later than it left, and the acknowledgments newer than the ones the sender had are already
seen: there the segment's timestamp echo (TSecr: the newest receiver TSval the sender had)
names the acknowledgments that count. Without timestamps the flight cannot be read behind the
bottleneck (shifting by the handshake's round trip loses the rounds: the growth read 0.0-0.07
on every shared run), and such connections give no signal.

**Rounds.** A round trip ends when the data sent at its start is acknowledged; a round's window
is its largest flight (segments of the connection's largest payload).

**Loss episodes.** A retransmission (a segment ending at or below the highest sequence sent
before it) starts an episode; it ends when the acknowledgments pass the highest sequence sent
before it (the recovery point). An episode whose first retransmission follows a silence of the
sender longer than :data:`TIMEOUT_GAP_S` is a timeout (RTO or tail-loss probe): the window
restarts from one segment, so it says nothing of the reduction and is left out.

**Growth** between episodes: the slope of the window over the rounds from the second after
recovery to the next episode, pooled over intervals (Linux's proportional rate reduction can
end recovery below the new threshold, and slow start climbs to it in the first round). Reno
adds one segment per round (RFC 5681); CUBIC adds 3 (1 - 0.7) / (1 + 0.7) = 0.53 in its
Reno-friendly region and follows its cubic, flat near the last maximum, elsewhere.

**Reduction factor** of an episode: the threshold after it (the window of the first round after
recovery, less one round's growth) over the window at the loss (the round before the first
retransmission, plus one round's growth): 0.5 for Reno, 0.7 for CUBIC (RFC 9438; Linux
717/1024). The connection's first episode ends slow start, where the round before held half
the window that overflowed: left out.

**Held ratio** of an episode: the largest window of the two rounds from the end of recovery
over the largest of the two rounds before the loss. BBR ties no reduction to loss (Linux
``tcp_bbr.c``: packet conservation in recovery, the window before restored on exit), so its
episodes keep the window (ratio near 1) even when the next loss follows at once; a loss-based
sender's do not.

**Pacing.** At a capture next to the sender, a sender that does not pace (Linux Reno and CUBIC
without the fq qdisc) releases each acknowledgment's segments back to back: a share of its
departures follow the previous one within a hundredth of the mean gap. BBR paces every segment
at gain x bandwidth, so none do once Startup is over. Behind the bottleneck every flow leaves at
the bottleneck's pace, so pacing is only read at the sender side.

**Validation** (``tests/flows/test_congestion.py``, real Linux 6.18 kernels): the six shared
testbed runs, each capture, whole and their first 120 s, are all labelled right, with reduction
factors 0.43-0.52 (Reno) and 0.58-0.78 (CUBIC), growth 0.84-0.93 (Reno) and 0.28-0.45 (CUBIC)
segments per round trip, held ratios 1.01-1.07 (BBR) and 0.49-0.70 (the others), and 100 % of
BBR's and 0 % of the others' sender-side connections paced; 10 more kernel runs (single long BBR
flows at 1.5 and 10 Mbit/s, Reno, CUBIC and BBR at 10 Mbit/s and 60 ms, three RTT classes
without timestamps) are right from the server side and right or "cannot tell" (no timestamps,
or no loss) from the client side; the public captures of short web flows give "cannot tell".

Units: times in seconds, windows in segments.
"""
from __future__ import annotations

import math

import numpy as np
import polars as pl

#: data segments (first transmissions and retransmissions) a connection needs to be reduced
MIN_SEGMENTS = 100
#: a sender silent this long before a retransmission timed out (Linux's minimum RTO is 200 ms;
#: a fast retransmission follows the acknowledgments that reveal the loss); also the longest
#: gap between departures that counts for pacing (longer ones are idle periods)
TIMEOUT_GAP_S = 0.15
#: the smallest window at a loss (segments) whose reduction is read: Linux keeps at least two
#: segments and rounds the threshold down, so smaller windows hardly tell 0.5 from 0.7
MIN_BETA_WINDOW = 4
#: a departure less than this share of the connection's mean gap after the previous one left
#: back to back (not paced)
BACK_TO_BACK = 0.01
#: the first share of a connection's departures left out of the pacing test (BBR's Startup
#: paces at 2.89 x an estimate made from the handshake's round trip: bursts at zero delay)
PACING_SKIP = 1 / 3
#: departures a connection needs for its pacing test
MIN_GAPS = 50
#: share of back-to-back departures below which a sender is paced (measured: BBR 0 in every
#: long connection of devbbr's server side, Reno and CUBIC 0.03-0.73)
PACED_SHARE = 0.015
#: episodes (reduction factors, held ratios) a connection needs before they are read
MIN_EPISODES = 3
#: the growth's denominator (sum of squared round offsets) a connection needs: three intervals
#: of three rounds
MIN_GROWTH_DEN = 6.0
#: held ratio (window after an episode over the window before; geometric mean) at or above
#: which a sender does not reduce on loss (BBR); measured over the long connections of the
#: shared runs (whole, and their first 120 s), either side: BBR 1.01-1.07, Reno and CUBIC
#: 0.49-0.70
NO_REDUCTION = 0.86
#: each loss-based family's reduction factor (RFC 5681, RFC 9438 / Linux 717/1024) and growth
#: between losses (segments per round trip: Reno one; CUBIC's Reno-friendly region
#: 3 (1 - 0.7) / (1 + 0.7) = 0.53, measured 0.2-0.42 on the shared CUBIC runs)
FAMILIES = {"reno": (0.5, 1.0), "cubic": (0.7, 0.4)}
#: the spreads that weigh a measured reduction factor and growth against a family's
SPREAD = {"beta": 0.1, "growth": 0.25}
#: the evidence (connections tested, episodes read) at which the confidence is half the signals'
#: support
EVIDENCE_HALF = 3
#: the confidence factor of BBR found by pacing without a loss reaction: Linux paces Reno and
#: CUBIC too under the fq qdisc (not on the testbed's hosts)
PACING_ONLY = 0.5

#: the per-connection row :func:`reduce_connections` returns (name -> Polars dtype): the
#: connection id (as given; only :func:`connection_table` reads it); data segments; the
#: vantage point and whether timestamps gave the flight; loss episodes (fast recovery) and
#: timeouts; the median reduction factor and the episodes it is read from; the growth between
#: episodes as a pooled slope's numerator and denominator (segments per round trip =
#: num / den); the held ratios (:func:`_held`) as the sum of their logarithms and their count
#: (geometric mean = exp(sum / count)); the share of back-to-back departures (sender side);
#: the largest window
ROW = {"conn": pl.Int64, "segments": pl.Int64, "vantage": pl.Utf8, "timestamps": pl.Boolean,
       "episodes": pl.Int64,
       "timeouts": pl.Int64, "beta": pl.Float64, "beta_n": pl.Int64, "growth_num": pl.Float64,
       "growth_den": pl.Float64, "held_log": pl.Float64, "held_n": pl.Int64,
       "burst_share": pl.Float64, "window_max": pl.Float64}


def reduce_connections(conn, ts_s, sender, rel_seq, rel_ack, payload_len, *, tsval=None,
                       tsecr=None, vantage=None):
    """One row (:data:`ROW`) per connection with at least :data:`MIN_SEGMENTS` data segments.

    Arrays in packet order, each connection's packets contiguous and in time order: ``conn``
    (id), ``ts_s`` (s), ``sender`` (bool: sent by the data sender), ``rel_seq`` / ``rel_ack``
    (bytes from the sender's ISN + 1, -1 for none), ``payload_len`` (bytes); optional ``tsval``
    / ``tsecr`` (int64, -1 for none) and ``vantage`` (per packet, "sender" / "receiver" /
    "unknown": where the capture sits for its connection, :func:`connection_vantage`;
    default unknown)."""
    conn = np.asarray(conn)
    data = np.asarray(sender, bool) & (np.asarray(payload_len) > 0)
    if conn.size == 0:
        return pl.DataFrame(schema=ROW)
    starts = np.flatnonzero(np.r_[True, conn[1:] != conn[:-1]])
    ends = np.r_[starts[1:], conn.size]
    counts = np.add.reduceat(data.astype(np.int64), starts)
    rows = []
    for a, b in zip(starts[counts >= MIN_SEGMENTS], ends[counts >= MIN_SEGMENTS]):
        sl = slice(a, b)
        rows.append({"conn": int(conn[a])} | _connection(
            np.asarray(ts_s[sl], float), np.asarray(sender[sl], bool),
            np.asarray(rel_seq[sl], np.int64), np.asarray(rel_ack[sl], np.int64),
            np.asarray(payload_len[sl], np.int64),
            None if tsval is None else np.asarray(tsval[sl], np.int64),
            None if tsecr is None else np.asarray(tsecr[sl], np.int64),
            "unknown" if vantage is None else str(vantage[a])))
    return pl.DataFrame(rows, schema=ROW)


def reduce_kernel(c, ts_s, sender, rel_seq, rel_ack, r):
    """:func:`reduce_connections` of the end-host kernels' packet columns ``c`` (numpy, each
    connection's rows contiguous and in time order: ``conn``, ``payload_len``, and ``tsval``
    / ``tsecr`` with -1 for none when present), the packets' ``ts_s``, ``sender``,
    ``rel_seq`` and ``rel_ack`` (-1 for none), and the per-connection facts ``r`` of
    :func:`traceflow.flows._hostreduce.reduce`, whose handshake times place each connection's
    capture (:func:`connection_vantage`)."""
    where = connection_vantage(r["t_syn"], r["t_synack"], r["t_ack"], r["sender_is_server"])
    order = np.argsort(r["conn"], kind="stable")
    k = order[np.searchsorted(r["conn"], c["conn"], sorter=order)]
    return reduce_connections(c["conn"], ts_s, sender, rel_seq, rel_ack, c["payload_len"],
                              tsval=c.get("tsval"), tsecr=c.get("tsecr"), vantage=where[k])


def connection_vantage(t_syn, t_synack, t_ack, sender_is_server):
    """Per connection (arrays in the kernels' form: times in s, NaN unknown;
    ``sender_is_server`` 1, 0 or -1), where the capture sits: "sender" when the handshake leg
    capture → data sender → capture is under a quarter of the other leg, "receiver" when the
    other is under a quarter of it, else "unknown" (as :func:`traceflow.flows.hosts.vantage`
    decides for a whole capture)."""
    leg_syn, leg_ack = t_synack - t_syn, t_ack - t_synack
    server = sender_is_server == 1
    known = sender_is_server >= 0
    lag = np.where(known, np.where(server, leg_syn, leg_ack), np.nan)
    other = np.where(known, np.where(server, leg_ack, leg_syn), np.nan)
    where = np.full(lag.size, "unknown", dtype=object)
    with np.errstate(invalid="ignore"):
        where[lag < other / 4] = "sender"
        where[other < lag / 4] = "receiver"
    return where


def _flight(t, snd, seq, ack, ln, tsval, tsecr, vantage):
    """Per data segment of one connection (arrays): its time, its sequence number, the highest
    sequence number sent up to it, whether it was a retransmission, the flight and the highest
    acknowledgment the sender had (bytes, see the module docstring); and whether TCP timestamps
    were used. None where the capture does not show the flight: away from the sender without
    timestamps."""
    d = snd & (ln > 0)
    r = ~snd & (ack >= 0)
    td, end = t[d], seq[d] + ln[d]
    smax = np.maximum.accumulate(end)
    rtx = end <= np.r_[-1, smax[:-1]]
    acked = np.maximum.accumulate(ack[r]) if r.any() else np.zeros(1, np.int64)
    if vantage == "sender":
        k = np.searchsorted(t[r], td, "right") - 1
    elif (tsval is not None and tsecr is not None and r.any() and (tsecr[d] > 0).all()
          and (tsval[r] >= 0).all() and (np.diff(tsval[r]) >= 0).all()):
        k = np.searchsorted(tsval[r], tsecr[d], "right") - 1
    else:
        return None
    una = np.maximum.accumulate(np.where(k >= 0, acked[np.maximum(k, 0)], 0))
    return td, seq[d], smax, rtx, smax - una, una, vantage != "sender"


def _rounds(smax, una):
    """Round-trip index of each data segment: a round ends when the data sent at its start is
    acknowledged (the first segment sent with ``una`` at or above its start's ``smax``)."""
    n = smax.size
    rid = np.empty(n, np.int64)
    i, k = 0, 0
    while i < n:
        j = max(int(np.searchsorted(una, smax[i], "left")), i + 1)
        rid[i:j] = k
        i, k = j, k + 1
    return rid


def _connection(t, snd, seq, ack, ln, tsval, tsecr, vantage):
    """The :data:`ROW` of one connection's packets (see :func:`reduce_connections`); only the
    segments, vantage point and timestamps where the capture does not show the flight."""
    seen = _flight(t, snd, seq, ack, ln, tsval, tsecr, vantage)
    row = {"segments": int((snd & (ln > 0)).sum()), "vantage": vantage, "timestamps": False,
           "episodes": 0, "timeouts": 0, "beta": None, "beta_n": 0, "growth_num": 0.0,
           "growth_den": 0.0, "held_log": 0.0, "held_n": 0, "burst_share": None,
           "window_max": None}
    if seen is None:
        return row
    td, start, smax, rtx, flight, una, row["timestamps"] = seen
    seg = float(ln[snd & (ln > 0)].max())
    rid = _rounds(smax, una)
    window = np.zeros(int(rid[-1]) + 1)
    np.maximum.at(window, rid, flight / seg)
    # Behind the bottleneck the segments the queue dropped are missing: a hole before a
    # segment. They left after the segment before it (FIFO), in its round, and topped it: the
    # round overflowed the queue, so without them its window reads low.
    hole = np.flatnonzero(start[1:] > smax[:-1])
    np.maximum.at(window, rid[hole], (start[hole + 1] - una[hole]) / seg)
    episodes = _episodes(td, smax, rtx, una, rid, window.size)
    num, den = _growth(window, episodes)
    ratios = _reductions(window, episodes, num / den if den else None)
    held = _held(window, episodes)
    held = held[held > 0]
    row.update(episodes=int((~episodes["timeout"]).sum()),
               timeouts=int(episodes["timeout"].sum()),
               beta=float(np.median(ratios)) if ratios.size else None, beta_n=int(ratios.size),
               growth_num=num, growth_den=den, held_log=float(np.log(held).sum()),
               held_n=int(held.size), window_max=float(window.max()),
               burst_share=_burst_share(td[~rtx]) if vantage == "sender" else None)
    return row


def _episodes(td, smax, rtx, una, rid, n_rounds):
    """The loss episodes of one connection (a dict of arrays): ``first`` (round of the first
    retransmission), ``end`` (round of the first segment sent after the recovery point was
    acknowledged), ``next`` (round of the next episode's first retransmission, or the number of
    rounds) and ``timeout`` (the first retransmission followed a silence)."""
    first, end, timeout = [], [], []
    n = td.size
    rt = np.flatnonzero(rtx)
    pos = 0
    while pos < rt.size:
        i = int(rt[pos])
        # recovery point: the highest sequence sent before the retransmission
        e = int(np.searchsorted(una, smax[i - 1] if i else 0, "left"))
        first.append(rid[i])
        end.append(rid[e] if e < n else n_rounds)
        timeout.append(i == 0 or td[i] - td[i - 1] > TIMEOUT_GAP_S)
        pos = int(np.searchsorted(rt, max(e, i + 1)))
    first = np.asarray(first, np.int64)
    return {"first": first, "end": np.asarray(end, np.int64),
            "next": np.r_[first[1:], n_rounds].astype(np.int64),
            "timeout": np.asarray(timeout, bool)}


def _intervals(episodes):
    """The rounds of congestion avoidance after each episode that was not a timeout:
    ``(episode index, first round, stop round)`` with the first round one after the recovery
    point's (that round can still climb to the new threshold) and at least two rounds."""
    out = []
    for k, (end, nxt, timeout) in enumerate(zip(episodes["end"], episodes["next"],
                                                episodes["timeout"])):
        if not timeout and nxt - (end + 1) >= 2:
            out.append((k, int(end) + 1, int(nxt)))
    return out


def _growth(window, episodes):
    """Additive increase between episodes: the slope of the window (segments) over the round
    trips of each interval (:func:`_intervals`), pooled with an intercept per interval, as its
    numerator and denominator (0, 0 without intervals)."""
    num = den = 0.0
    for _, a, b in _intervals(episodes):
        k = np.arange(a, b, dtype=float)
        w = window[a:b]
        num += float(((k - k.mean()) * (w - w.mean())).sum())
        den += float(((k - k.mean()) ** 2).sum())
    return num, den


def _reductions(window, episodes, growth):
    """The reduction factor of each episode (an array): the new threshold, i.e. the window of
    the first round after the one where recovery ended less the ``growth`` within that round,
    over the window at the loss, i.e. the largest flight of the round before the first
    retransmission plus one round's ``growth``.
    Left out: timeouts, the connection's first episode (the end of slow start, when the
    window of the round before is half the one that overflowed), windows at the loss below
    :data:`MIN_BETA_WINDOW`; none without a growth."""
    if growth is None:
        return np.zeros(0)
    out = []
    for k, a, _ in _intervals(episodes):
        first = episodes["first"][k]
        if k == 0 or first < 1:
            continue
        at_loss = window[first - 1] + growth
        if at_loss >= MIN_BETA_WINDOW:
            out.append((window[a] - growth) / at_loss)
    return np.asarray(out)


def _held(window, episodes):
    """The held ratio of each episode (an array): the largest window of the two rounds from
    the one where recovery ended over the largest of the two rounds before the first
    retransmission, whether or not the next episode follows at once (BBR's often do). Left
    out as in :func:`_reductions`, and windows before below :data:`MIN_BETA_WINDOW`."""
    out = []
    n = window.size
    for k, (first, end, timeout) in enumerate(zip(episodes["first"], episodes["end"],
                                                  episodes["timeout"])):
        if k == 0 or timeout or first < 2 or end + 2 > n:
            continue
        before = window[first - 2:first].max()
        if before >= MIN_BETA_WINDOW:
            out.append(window[end:end + 2].max() / before)
    return np.asarray(out)


def _burst_share(td):
    """Share of a sender's departures (first transmissions, times ``td`` in s) that left back
    to back (:data:`BACK_TO_BACK`), past its first :data:`PACING_SKIP` and over gaps shorter
    than :data:`TIMEOUT_GAP_S`; None with fewer than :data:`MIN_GAPS` of them."""
    gaps = np.diff(td)[int(td.size * PACING_SKIP):]
    gaps = gaps[gaps < TIMEOUT_GAP_S]
    if gaps.size < MIN_GAPS or gaps.mean() <= 0:
        return None
    return float((gaps < BACK_TO_BACK * gaps.mean()).mean())


def _decide(paced, tested, held, held_n, beta, beta_n, growth):
    """``(label, confidence)`` from the evidence of one connection or of a capture's pooled
    connections: ``paced`` the share of the ``tested`` connections that were paced, ``held``
    the held ratio over ``held_n`` episodes, ``beta`` the reduction factor over ``beta_n``
    episodes, ``growth`` the growth between losses (segments per round trip); a value is None
    where unmeasured or too thin.

    A sender that keeps its window through loss episodes, or paces without a loss-based
    reduction, is BBR; an unpaced sender that keeps its window is a contradiction (cannot
    tell). A loss-based label needs the reduction factor (a window that does not grow, e.g.
    limited by the receiver or the application, says nothing of the family): it and the growth
    pick the family nearer to them (:data:`FAMILIES`, weighed by :data:`SPREAD`). The
    confidence is the mean support of the signals read, each in [0, 1] (pacing: the share of
    connections that agree; held: the distance from :data:`NO_REDUCTION` over 0.1; family: the
    nearer family's weight exp(-d/2) / sum exp(-d/2) over the two, d the weighted squared
    distance), times n / (n + :data:`EVIDENCE_HALF`), n the connections and episodes read,
    and times :data:`PACING_ONLY` for BBR found by pacing alone; None and 0 when nothing
    tells."""
    keeps = None if held is None else held >= NO_REDUCTION
    if paced is not None and keeps is not None and keeps != (paced > 0.5):
        if keeps:
            return None, 0.0        # unpaced yet no reduction: not a family we know
        paced = None                # paced but reducing on loss: a loss-based sender behind fq
    support, n = [], 0
    if paced is not None:
        support.append(paced if paced > 0.5 else 1 - paced)
        n += tested
    if keeps is not None:
        support.append(min(abs(held - NO_REDUCTION) / 0.1, 1.0))
        n += held_n
    if keeps or (keeps is None and paced is not None and paced > 0.5):
        found = "bbr"
    elif beta is None:
        return None, 0.0
    else:
        d = {name: ((beta - b) / SPREAD["beta"]) ** 2
             + (0.0 if growth is None else ((growth - g) / SPREAD["growth"]) ** 2)
             for name, (b, g) in FAMILIES.items()}
        found = min(d, key=d.get)
        weight = {name: np.exp(-v / 2) for name, v in d.items()}
        total = sum(weight.values())
        support.append(weight[found] / total if total > 0 else 0.5)
        n += beta_n
    confidence = float(np.mean(support)) * n / (n + EVIDENCE_HALF)
    # paced, no loss reaction seen: BBR, or a loss-based sender paced by the fq qdisc
    return found, confidence * (PACING_ONLY if found == "bbr" and keeps is None else 1.0)


def label(row):
    """``(label, confidence)`` of one connection's :data:`ROW` (a dict): each signal read
    only with enough of it (:data:`MIN_EPISODES`, :data:`MIN_GROWTH_DEN`, :data:`MIN_GAPS`)."""
    share = row["burst_share"]
    held = np.exp(row["held_log"] / row["held_n"]) if row["held_n"] >= MIN_EPISODES else None
    return _decide(
        None if share is None else float(share < PACED_SHARE), 1, held, row["held_n"],
        row["beta"] if row["beta_n"] >= MIN_EPISODES else None, row["beta_n"],
        row["growth_num"] / row["growth_den"] if row["growth_den"] >= MIN_GROWTH_DEN else None)


def _weighted_median(values, weights):
    order = np.argsort(values)
    values, weights = np.asarray(values)[order], np.asarray(weights, float)[order]
    cum = np.cumsum(weights)
    return float(values[np.searchsorted(cum, cum[-1] / 2)])


def _fsum(column):
    """The exactly rounded sum of a float column: the same whatever order the connections came
    in (``fit --workers`` merges partitions in another order than one pass)."""
    return math.fsum(column.drop_nulls().to_list())


def aggregate(rows):
    """The capture's congestion control from the :func:`reduce_connections` rows of its long
    connections (a DataFrame, or None): ``(label, confidence, evidence)``, label None (cannot
    tell) without a signal. The label comes from the pooled evidence (:func:`_decide`):
    pacing by the connections tested, the held ratio as the geometric mean over every
    episode, the reduction factor as the median of the connections' medians weighted by
    their episodes, the growth as one slope over every interval. ``evidence`` (name ->
    number) holds those pooled values (those measured), the episodes and timeouts, the
    connections reduced (``connections``; ``flight_visible``: those whose flight the capture
    shows) and how many each per-connection :func:`label` gave each family
    (``connections_<family>``, ``connections_unknown``), the share of pacing-tested
    connections that were paced, and the share whose flight came through timestamps."""
    evidence = {"connections": 0.0}
    if rows is None or rows.height == 0:
        return None, None, evidence
    evidence["connections"] = float(rows.height)
    evidence["flight_visible"] = float(rows["window_max"].is_not_null().sum())
    evidence["episodes"] = float(rows["episodes"].sum())
    evidence["timeouts"] = float(rows["timeouts"].sum())
    labels = [label(r)[0] for r in rows.iter_rows(named=True)]
    for name in ("reno", "cubic", "bbr", None):
        evidence[f"connections_{name or 'unknown'}"] = float(sum(x == name for x in labels))
    tested = rows.filter(pl.col("burst_share").is_not_null())
    paced = None
    if tested.height:
        paced = float((tested["burst_share"] < PACED_SHARE).mean())
        evidence["paced_share"] = paced
        evidence["pacing_tested"] = float(tested.height)
    n_held, n_beta = int(rows["held_n"].sum()), int(rows["beta_n"].sum())
    some = rows.filter(pl.col("beta_n") > 0)
    pooled = {"held": float(np.exp(_fsum(rows["held_log"]) / n_held))
              if n_held >= MIN_EPISODES else None,
              "beta": _weighted_median(some["beta"].to_numpy(), some["beta_n"].to_numpy())
              if n_beta >= MIN_EPISODES else None}
    evidence["held_episodes"], evidence["beta_episodes"] = float(n_held), float(n_beta)
    den = _fsum(rows["growth_den"])
    pooled["growth"] = _fsum(rows["growth_num"]) / den if den >= MIN_GROWTH_DEN else None
    for key, name in (("held", "held_ratio"), ("beta", "reduction_factor"),
                      ("growth", "growth_per_round")):
        if pooled[key] is not None:
            evidence[name] = pooled[key]
    evidence["timestamps_share"] = float(rows["timestamps"].mean())
    found, confidence = _decide(paced, tested.height, pooled["held"], n_held, pooled["beta"],
                                n_beta, pooled["growth"])
    return found, (confidence if found else None), evidence


def connection_table(packets):
    """Each long connection of a packets table (read whole) with its data sender (``server``:
    address, ``port``), its :data:`ROW` and its own ``label`` and ``confidence``
    (:func:`label`): the per-connection view of what :func:`aggregate` pools."""
    from traceflow.flows.hosts import _reduced, connections
    from traceflow.pcap.addresses import address_strings

    df = connections(packets)
    rows = _reduced(df)["cc"] if df.height else pl.DataFrame(schema=ROW)
    labels = [label(row) for row in rows.iter_rows(named=True)]
    senders = (df.filter(pl.col("sender")).group_by("conn")
               .agg(server=pl.col("src").first(), port=pl.col("sport").first())
               if df.height else pl.DataFrame(schema={"conn": pl.Int64, "server": pl.Binary,
                                                      "port": pl.UInt16}))
    return (rows.with_columns(label=pl.Series([x[0] for x in labels], dtype=pl.Utf8),
                              confidence=pl.Series([x[1] for x in labels], dtype=pl.Float64))
            .join(senders.with_columns(address_strings(senders["server"])), on="conn",
                  how="left"))


def quality(found, evidence):
    """The quality flag of the inferred congestion control (``found``, :func:`aggregate`'s
    label, and its ``evidence``): ``ok``, or ``default`` with why the capture cannot tell (the
    replay then keeps its profile's, Linux's CUBIC)."""
    if found is not None:
        return "ok"
    return f"default: {_why(evidence)}; the replay keeps its profile's (Linux: cubic)"


def _why(evidence):
    """Why the capture cannot tell, from :func:`aggregate`'s ``evidence``."""
    n = int(evidence.get("connections", 0))
    if n == 0:
        return f"no connection of {MIN_SEGMENTS} data segments or more"
    if evidence.get("flight_visible", 0) == 0:
        return (f"{n} long connection(s), none with a visible flight (behind the bottleneck "
                "without TCP timestamps)")
    return (f"{n} long connection(s) without a decisive signal "
            f"({int(evidence.get('episodes', 0))} loss episodes, pacing tested on "
            f"{int(evidence.get('pacing_tested', 0))})")


def describe(found, confidence, evidence):
    """One line for ``traceflow fit``: the family (or "cannot tell") and what it rests on."""
    n = int(evidence.get("connections", 0))
    if found is None:
        return f"cannot tell ({_why(evidence)})"
    votes = ", ".join(f"{name} {int(evidence.get(f'connections_{name}', 0))}"
                      for name in ("reno", "cubic", "bbr", "unknown"))
    parts = [f"{n} long connections ({votes})", f"{int(evidence.get('episodes', 0))} loss episodes"]
    for key, text in (("reduction_factor", "reduction factor {:.2f}"),
                      ("growth_per_round", "growth {:.2f} segments/round trip"),
                      ("held_ratio", "held ratio {:.2f}")):
        if key in evidence:
            parts.append(text.format(evidence[key]))
    if "paced_share" in evidence:
        parts.append(f"paced {evidence['paced_share']:.0%} of {int(evidence['pacing_tested'])}")
    return f"{found} (confidence {confidence:.2f}): " + ", ".join(parts)

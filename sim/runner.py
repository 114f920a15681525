"""Assemble a Simulator from a validated Scenario, run it, and collect a Result.

Random streams: every component draws from its own xoshiro256** stream seeded by
``SeedSequence(seed, spawn_key=(kind, index...))``, so adding a component never shifts another
component's numbers.
"""
from __future__ import annotations

import fnmatch
import math
import shutil
import tempfile
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from traceflow.errors import ScenarioError

from . import _sim
from .result import Result, summarize
from .scenario import HookContext, QueueContext, load_scenario, tcp_for
from .topology import build_network, path_delay, path_transmission, routes

NS = 1_000_000_000

# spawn_key namespaces of the random streams
_RNG_LINK, _RNG_QUEUE, _RNG_APP, _RNG_UDP, _RNG_HOOK, _RNG_SIZES, _RNG_JIFFY, _RNG_TICK = range(8)


def _stream(seed, *key):
    return np.random.SeedSequence(seed, spawn_key=key).generate_state(4, np.uint64)


def _ns(seconds):
    return int(round(seconds * NS))


@dataclass
class FlowInfo:
    flow: int
    group: int
    kind: str
    transport: str
    src: str
    dst: str
    cls: int
    base_rtt: float


class Built:
    """A simulator ready to run, with the handles needed to read results back."""

    def __init__(self, scenario, pcap_dir, flows_tables=None, size_scale=None):
        self.sc = sc = scenario
        self.sim = sim = _sim.Simulator()
        self.seed = seed = sc.simulation.seed
        mss = sc.simulation.mss
        self.duration_ns = _ns(sc.simulation.duration)
        self.net = net = build_network(sc.topology)
        idx = net.index()
        self.nodes = [_sim.Node(i, n) for i, n in enumerate(net.nodes)]
        for node in self.nodes:
            sim.add_node(node)
        self.links = []
        self.pcaps = []
        for j, (a, b, spec) in enumerate(net.links):
            writer = None
            if spec.pcap:
                writer = _sim.PcapWriter(str(Path(pcap_dir) / f"{a}-{b}.pcap"), mss,
                                         sc.simulation.tcp_header)
                self.pcaps.append(writer)
            for d, (x, y) in enumerate(((a, b), (b, a))):
                lid = 2 * j + d
                qspec = spec.queue if d == 0 or spec.queue_reverse is None else spec.queue_reverse
                ctx = QueueContext(f"{x}->{y}", spec.direction(d == 1)[0] or spec.line_rate,
                                   spec.delay, mss,
                                   mss + sc.simulation.tcp_header,
                                   _stream(seed, _RNG_QUEUE, lid), sc)
                q = qspec.build(ctx)
                loss = spec.loss if d == 0 else spec.loss_reverse
                shaped, line = spec.direction(d == 1)
                if shaped > 0 and (spec.burst > 0 or spec.overhead > 0):
                    shaping = {"line_bps": line, "burst": spec.burst, "overhead": spec.overhead}
                else:
                    shaping = {}
                link = _sim.Link(lid, f"{x}->{y}", self.nodes[idx[x]], self.nodes[idx[y]],
                                 shaped or line, _ns(spec.delay), q, loss,
                                 _stream(seed, _RNG_LINK, lid), **shaping)
                link.attach(sim)
                if writer is not None:
                    link.set_pcap(writer)
                self.links.append(link)
        self.nxt = nxt = routes(net)
        for i, node in enumerate(self.nodes):
            node.set_routes([self.links[l] if l >= 0 else None for l in nxt[i]])
        by_name = {l.name: l for l in self.links}
        mon = list(sc.monitor.links)
        for a, b, spec in net.links:
            if spec.monitor:
                mon += [f"{a}->{b}", f"{b}->{a}"]
        if not mon:
            mon = [net.bottleneck]
        for name in mon:
            if name not in by_name:
                raise ScenarioError(f"monitor.links: no link {name!r} (directed names like "
                                    f"{net.bottleneck!r})")
        self.monitored = [by_name[n] for n in dict.fromkeys(mon)]
        for link in self.monitored:
            link.monitor(_ns(sc.simulation.series_bin), self.duration_ns)
        self.bottleneck = by_name[net.bottleneck] if net.bottleneck in by_name else self.monitored[0]
        if sc.monitor.links:
            self.bottleneck = self.monitored[0]
        self.sampler = None
        if sc.simulation.queue_sample > 0:
            self.sampler = _sim.QueueSampler(self.monitored, _ns(sc.simulation.queue_sample))
            sim.add_component(self.sampler)
            self.sampler.start(0)
        self.flows: list[FlowInfo] = []
        self.hooks = []                # (flow id, hook kind, SenderHook) of attached hooks
        self.file_apps = []            # (group index, app, SizeDist, scale)
        self.size_scale = size_scale or {}
        for gi, group in enumerate(sc.traffic):
            self._add_group(gi, group, idx, flows_tables)

    # ---- traffic ----
    def _match(self, pattern, path):
        names = self.net.nodes
        pats = [pattern] if isinstance(pattern, str) else list(pattern)
        out = []
        for p in pats:
            hit = [n for n in names if fnmatch.fnmatchcase(n, p)]
            if not hit:
                raise ScenarioError(f"{path}: no node matches {p!r}")
            out += hit
        return out

    def _add_group(self, gi, g, idx, flows_tables):
        sc = self.sc
        path = f"traffic[{gi}]"
        srcs = self._match(g.src, f"{path}.src")
        dsts = self._match(g.dst, f"{path}.dst")
        rows = None
        if g.kind == "trace":
            rows = _trace_rows(g, gi, flows_tables)
            count = len(rows.members)
        else:
            count = g.count or max(len(srcs), len(dsts))
        request = rows is not None and rows.request is not None
        tcp = tcp_for(sc, g, f"{path}.tcp") if g.transport == "tcp" else None
        start_rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(_RNG_APP, gi)))
        jitter = start_rng.random(count) * g.start_spread
        for i in range(count):
            s, d = srcs[i % len(srcs)], dsts[i % len(dsts)]
            if s == d:
                raise ScenarioError(f"{path}: flow {i} has the same source and destination {s!r}")
            si, di = idx[s], idx[d]
            one_way = path_delay(self.net, self.nxt, si, di)
            # a host's delay line holds the packets it sends, so each adds once to the RTT
            extra_src = extra_dst = g.extra_delay
            tx = 0.0
            first = rows.members[i][0] if rows is not None else -1
            if rows is not None and np.isfinite(rows.rtt[first]):
                # the flow's RTT beyond the topology's, split between the two ends as the
                # trace saw it on either side of its capture point (sender = server); a
                # measured handshake RTT holds its packets' transmission times, which the
                # simulated links add again (bottleneck capture: the SYN/ACK on every hop, the
                # SYN and the ACK on the reverse hops, all header-only); a session keeps its
                # first transfer's path (one client, one path)
                if g.rtt_measured:
                    hdr = sc.simulation.tcp_header
                    tx = (path_transmission(self.net, self.nxt, si, di, hdr)
                          + path_transmission(self.net, self.nxt, di, si, hdr))
                added = max(0.0, rows.rtt[first] - 2 * one_way - tx)
                share = rows.share[first] if rows.share is not None else 0.5
                extra_src, extra_dst = share * added, (1 - share) * added
            # a trace flow's base RTT is its zero-load handshake RTT, as the trace measured it
            base_rtt = 2 * one_way + extra_src + extra_dst + tx
            flow = self.sim.add_flow(g.cls, base_rtt)
            self.flows.append(FlowInfo(flow, gi, g.kind, g.transport, s, d, g.cls, base_rtt))
            key = (gi, i)
            if g.transport == "tcp":
                app_target = self._tcp_pair(flow, gi, tcp, self.nodes[si], self.nodes[di],
                                            (_ns(extra_src), _ns(extra_dst)), base_rtt, request)
            else:
                app_target = self._udp_pair(flow, g, self.nodes[si], self.nodes[di],
                                            _ns((extra_src + extra_dst) / 2))
            app = self._app(g, key, app_target, rows, i)
            app.set_rng(_stream(self.seed, _RNG_APP, gi, i))
            self.sim.add_component(app)
            app.start(_ns(g.start + jitter[i]))

    def _tcp_pair(self, flow, gi, t, src, dst, extra_ns, base_rtt, request=False):
        """Sender at ``src``, receiver at ``dst`` (with a request-mode client when ``request``);
        ``extra_ns``: the one-way delay lines (ns) in front of the sender and the receiver."""
        sc = self.sc
        mss, hdr = sc.simulation.mss, sc.simulation.tcp_header
        linux = t.profile == "linux"
        snd = _sim.TcpSender(src, flow, dst.id, mss, hdr)
        snd.init_cwnd = t.init_cwnd
        snd.init_ssthresh = t.init_ssthresh
        snd.rwnd = t.rwnd
        snd.min_rto, snd.max_rto, snd.init_rto = _ns(t.min_rto), _ns(t.max_rto), _ns(t.init_rto)
        snd.tick = max(1, _ns(t.tick))
        snd.handshake = t.handshake
        snd.ns2_bare_first = t.ns2_bare_first
        snd.rtt_per_ack = t.rtt_per_ack
        snd.limited_transmit = t.limited_transmit
        snd.ns2_rto = t.ns2_rto
        snd.precision_reduce = t.precision_reduce
        if t.ns2_rto:  # ns-2's boot_time_: each agent's tick phase
            snd.tick_phase = self._phase(_RNG_TICK, flow, snd.tick)
        snd.xi = t.xi
        snd.extra_delay = extra_ns[0]
        snd.linux_tcp = linux
        snd.jiffy_phase = self._phase(_RNG_JIFFY, src.id, snd.tick)
        snd.ts_opt, snd.sack_ok = t.timestamps, t.sack
        snd.response_delay, snd.close_delay = _ns(t.response_delay), _ns(t.close_delay)
        snd.cc = t.build_cc()
        snd.rec = t.build_recovery()
        sink = _sim.TcpSink(dst, flow, snd, mss, hdr)
        sink.delack = t.delayed_ack is True
        sink.linux_ack = t.delayed_ack == "linux"
        sink.delack_timeout = _ns(t.delack_timeout)
        sink.extra_delay = extra_ns[1]
        sink.linux_tcp = linux
        sink.sack, sink.dsack, sink.ts_opt = t.sack, t.dsack, t.timestamps
        sink.tick = snd.tick
        sink.jiffy_phase = self._phase(_RNG_JIFFY, dst.id, snd.tick)
        sink.rto_bound = snd.min_rto
        self.sim.add_agent(snd)
        self.sim.add_agent(sink)
        snd.connect(sink.agent_id)
        sink.connect(snd.agent_id)
        if request:
            client = _sim.TcpClient(sink)
            client.init_rto, client.min_rto, client.max_rto = snd.init_rto, snd.min_rto, snd.max_rto
            client.tick = snd.tick
            client.init_cwnd = t.init_cwnd
            client.request_delay, client.close_delay = _ns(t.request_delay), _ns(t.close_delay)
            self.sim.add_component(client)
        if t.hook is not None:
            hook = t.hook.build(HookContext(flow, gi, _stream(self.seed, _RNG_HOOK, flow), sc,
                                            base_rtt))
            snd.attach_hook(hook)
            self.hooks.append((flow, t.hook.kind, hook))
        return snd, sink

    def _phase(self, kind, key, tick):
        """A clock's phase, ns uniform in [0, tick): where a host's kernel jiffies begin
        (``_RNG_JIFFY``, per node id: hosts boot at random times, so timers fire on each host's
        own grid) or an ns-2 agent's ``boot_time_`` (``_RNG_TICK``, per flow)."""
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(kind, key)))
        return int(rng.integers(0, tick))

    def _udp_pair(self, flow, g, src, dst, extra_ns):
        sc = self.sc
        mss, hdr = sc.simulation.mss, sc.simulation.udp_header
        u = g.udp
        spacing = u.spacing
        size = mss + hdr if u.size == "fixed" else (u.mean_size or mss + hdr)
        first_hop = self.links[self.nxt[src.id, dst.id]]
        rate = u.rate or first_hop.rate_bps
        if g.kind in ("infinite", "onoff", "files") or u.rate > 0:
            spacing = max(spacing, size * 8 / rate)
        src_agent = _sim.UdpSource(src, flow, dst.id, mss, hdr, _ns(spacing),
                                   _stream(self.seed, _RNG_UDP, flow))
        if u.size == "exponential":
            src_agent.size_dist = 1
            src_agent.mean_size = size
        src_agent.extra_delay = extra_ns
        sink = _sim.UdpSink(dst, flow)
        self.sim.add_agent(src_agent)
        self.sim.add_agent(sink)
        src_agent.connect(sink.agent_id)
        return src_agent, None

    def _app(self, g, key, target, rows, i):
        sender, sink = target
        tcp = isinstance(sender, _sim.TcpSender)
        if g.kind == "infinite":
            app = _sim.InfiniteApp()
        elif g.kind == "files":
            app = _sim.FileApp()
            self._files(app, g, key)
        elif g.kind == "poisson":
            app = _sim.PoissonApp()
            app.mean_gap = _ns(1.0 / g.rate)
        elif g.kind == "onoff":
            app = _sim.OnOffApp()
            app.on_lo, app.on_hi = _ns(g.on[0]), _ns(g.on[1])
            app.off_lo, app.off_hi = _ns(g.off[0]), _ns(g.off[1])
            app.persistent = g.persistent
        else:
            m = rows.members[i]
            app = _sim.SessionApp() if rows.sessions else _sim.ScheduledApp()
            app.set_schedule(rows.start[m] + (0 if rows.sessions else _ns(g.start)),
                             rows.size[m], None if rows.request is None or not tcp
                             else rows.request[m])
        if tcp:
            app.tcp = sender
            sender.app = app
            sink.app = app
        else:
            app.udp = sender
            sender.app = app
        return app

    def _files(self, app, g, key):
        sd = g.size
        dur = self.sc.simulation.duration
        app.idle_mean = _ns(g.idle)
        app.first_idle = g.first_idle
        app.pad_last = g.pad_last
        app.idle_after_ack = g.idle_after == "last_ack"
        n_pre = int(math.ceil(dur / g.idle)) + 1
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(_RNG_SIZES,) + key))
        if sd.dist == "pareto":
            app.dist = 0
            app.alpha = sd.alpha
            base = rng.random(n_pre) ** (-1.0 / sd.alpha)     # Pareto(alpha, k=1)
            k = sd.k or sd.mean * (sd.alpha - 1) / sd.alpha
        elif sd.dist == "exponential":
            app.dist = 1
            base = rng.exponential(1.0, n_pre)
            k = sd.mean
        elif sd.dist == "empirical":
            app.dist = 2
            vals = np.asarray(sd.values, float)
            app.set_empirical(vals)
            base = vals[rng.integers(0, len(vals), n_pre)]
            k = 1.0
        else:
            app.dist = 3
            base = np.ones(n_pre)
            k = sd.mean
        app.mean = sd.mean
        self.file_apps.append([key[0], app, sd, base, k])

    def finalize_sizes(self):
        """Apply the sample-path normalization of presampled sizes (before running)."""
        groups = {}
        for rec in self.file_apps:
            groups.setdefault(rec[0], []).append(rec)
        for gi, recs in groups.items():
            sd = recs[0][2]
            if sd.normalize != "none" and sd.dist in ("pareto", "exponential"):
                if gi in self.size_scale:
                    k = self.size_scale[gi]
                else:
                    # presample: scale so the mean over every presampled size is the target
                    k = sd.mean / np.mean(np.concatenate([r[3] for r in recs]))
                for r in recs:
                    r[4] = k
            for r in recs:
                app, base, k = r[1], r[3], r[4]
                app.k = k
                app.mean = sd.mean if sd.dist != "exponential" else k
                app.set_sizes(np.ascontiguousarray(base * k, dtype=np.float64))

    def realized_mean(self, gi):
        """Mean requested size over the transfers group ``gi`` actually started."""
        n = sum(r[1].requests for r in self.file_apps if r[0] == gi)
        b = sum(r[1].requested_bytes for r in self.file_apps if r[0] == gi)
        return b / n if n else float("nan")

    def run(self, progress=None):
        every = self.sc.simulation.progress_every
        cb = None
        if progress is not None:
            def cb(now):
                progress(now / NS, self.sc.simulation.duration)
            every = every or max(self.sc.simulation.duration / 100, 1e-3)
        self.sim.run(self.duration_ns, cb, _ns(every) if cb else 0)
        for w in self.pcaps:
            w.close()


class TraceRows(NamedTuple):
    """A trace-driven group's rows: ``start`` (int64 ns: start times from the first, or with
    sessions each transfer's think time), ``size`` (int64 bytes), ``rtt`` (s, NaN: none),
    ``request`` (int64 bytes, or None: no request mode), ``share`` (the part of ``rtt`` added at
    the sender, 0..1, missing values 0.5, or None: half), ``members`` (per simulated connection pair, the row indices
    it runs in order) and ``sessions`` (closed loop)."""
    start: np.ndarray
    size: np.ndarray
    rtt: np.ndarray
    request: np.ndarray | None
    share: np.ndarray | None
    members: list
    sessions: bool


def _trace_rows(g, gi, tables):
    """The :class:`TraceRows` of a trace-driven group. A ``request`` column (client -> server
    bytes) puts every flow in request mode; ``server_share`` (0..1, default 0.5) is the part of
    ``rtt`` added at the sender. A ``session`` column (with ``think``, s) makes the rows
    closed-loop sessions: the rows of one session, in table order, run one after another on one
    connection pair, each ``think`` seconds after the previous transfer ended (``start`` is then
    not needed)."""
    import pyarrow as pa

    table = None
    if tables is not None:
        table = tables.get(gi) if isinstance(tables, dict) else tables
    if table is None:
        if not g.table:
            raise ScenarioError(f"traffic[{gi}].table: a trace group needs a flows table")
        p = Path(g.table)
        if not p.exists():
            raise ScenarioError(f"traffic[{gi}].table: file not found", path=p)
        if p.suffix == ".csv":
            import pyarrow.csv as pacsv
            table = pacsv.read_csv(p)
        else:
            import pyarrow.parquet as pq
            table = pq.read_table(p)
    if hasattr(table, "to_arrow"):         # Polars DataFrame
        table = table.to_arrow()
    if not isinstance(table, pa.Table):
        table = pa.table(table)
    cols = set(table.column_names)

    def pick(*names):
        for n in names:
            if n in cols:
                return n
        return None

    def floats(name):
        return np.asarray(table[name].cast(pa.float64()).fill_null(float("nan"))
                          .to_numpy(zero_copy_only=False), dtype=np.float64)

    sessions = "session" in cols
    c_start = "think" if sessions else pick("start", "start_ns")
    c_size = pick("size", "bytes_c2s_app", "app_bytes_c2s", "payload_bytes", "bytes")
    c_rtt = pick("rtt", "rtt_min3", "rtt_handshake")
    if c_start not in cols or c_size is None:
        need = "'session', 'think'" if sessions else "'start'"
        raise ScenarioError(f"traffic[{gi}].table: needs columns {need} and 'size' "
                            f"(got {', '.join(sorted(cols))})")
    if len(table) == 0:
        raise ScenarioError(f"traffic[{gi}].table: no flows")
    if sessions:
        think = floats("think")
        if not np.all(np.isfinite(think) & (think >= 0)):
            raise ScenarioError(f"traffic[{gi}].table: 'think' needs seconds >= 0")
        start = np.round(think * NS).astype(np.int64)
        session = np.asarray(table["session"].to_numpy(zero_copy_only=False))
        order = np.argsort(session, kind="stable")
        cuts = np.flatnonzero(np.diff(session[order])) + 1
        members = np.split(order, cuts)
    else:
        start = table[c_start]
        if pa.types.is_timestamp(start.type):
            start = start.cast(pa.timestamp("ns")).cast(pa.int64())
        start = np.asarray(start.to_numpy(zero_copy_only=False), dtype=np.int64)
        start = start - start.min()
        members = [np.array([i]) for i in range(len(start))]
    size = np.asarray(table[c_size].to_numpy(zero_copy_only=False), dtype=np.float64)
    rtt = floats(c_rtt) if c_rtt is not None else np.full(len(start), np.nan)
    size = np.where(np.isfinite(size) & (size > 0), size, 1).astype(np.int64)
    request = None
    if "request" in cols:
        req = floats("request")
        request = np.where(np.isfinite(req) & (req > 0), req, 0).astype(np.int64)
    share = None
    if "server_share" in cols:
        share = floats("server_share")
        share = np.clip(np.where(np.isfinite(share), share, 0.5), 0.0, 1.0)
    return TraceRows(start, size, rtt, request, share, members, sessions)


def run(scenario, *, overrides=(), seed=None, progress=None, flows=None, pcap_dir=None) -> Result:
    """Run a scenario and return a :class:`Result`.

    Parameters
    ----------
    scenario : str, pathlib.Path, dict or Scenario
        A TOML path, TOML text, a dict or a Scenario.
    overrides : sequence of str, default ()
        ``["path.key=value", ...]`` applied to the scenario.
    seed : int, optional
        Replaces ``simulation.seed``.
    progress : callable, optional
        ``progress(now_s, duration_s)`` is called periodically (simulated seconds).
    flows : pyarrow.Table, polars.DataFrame or dict, optional
        A flows table (Arrow/Polars) or {group index: table} for ``kind = "trace"`` groups.
    pcap_dir : str or pathlib.Path, optional
        Where the pcaps of links with ``pcap = true`` go (default: a temporary directory that
        ``Result.write`` copies from).

    Returns
    -------
    Result
        The run's summary (throughput in bit/s, times in s), tables and pcaps;
        ``Result.write(out_dir)`` writes the run directory.

    Raises
    ------
    ScenarioError
        An invalid scenario, override or trace table.

    Examples
    --------
    >>> from traceflow.sim import run
    >>> result = run("replays/dumbbell.toml", overrides=["simulation.duration=10"], seed=1)
    >>> result.summary["throughput_bps"]
    """
    sc = load_scenario(scenario, overrides, seed)
    own_dir = False
    if any(spec.pcap for _, _, spec in build_network(sc.topology).links):
        if pcap_dir is None:
            pcap_dir = tempfile.mkdtemp(prefix="traceflow-sim-")
            own_dir = True
        Path(pcap_dir).mkdir(parents=True, exist_ok=True)
    scale = {}
    iterate = {gi: t.size for gi, t in enumerate(sc.traffic)
               if t.kind == "files" and t.size.normalize == "iterate"}
    rounds = max([sd.iterations for sd in iterate.values()], default=1)
    best = None
    for _ in range(rounds):
        t0 = time.perf_counter()
        built = Built(sc, pcap_dir, flows, scale)
        built.finalize_sizes()
        built.run(progress)
        wall = time.perf_counter() - t0
        if not iterate:
            best = (0.0, built, wall)
            break
        # sample-path normalization: rescale k by target / realized mean and rerun (the
        # presampled uniforms stay the same); keep the run closest to the target
        err = 0.0
        for gi, sd in iterate.items():
            k_now = next(rec[4] for rec in built.file_apps if rec[0] == gi)
            m = built.realized_mean(gi)
            if np.isfinite(m) and m > 0:
                err = max(err, abs(m / sd.mean - 1))
                scale[gi] = k_now * sd.mean / m
        if best is None or err < best[0]:
            best = (err, built, wall)
        if err <= 0.005:
            break
    _, built, wall = best
    result = summarize(built, wall, pcap_dir)
    if own_dir:
        # the temporary captures live as long as the Result (Result.write copies them)
        weakref.finalize(result, shutil.rmtree, pcap_dir, True)
    return result

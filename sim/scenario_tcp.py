"""The ``[tcp]`` section: :class:`TcpConfig`, its ``profile`` presets, and the registries of
congestion control (window growth) and loss recovery (what happens on duplicate ACKs, SACKs,
partial ACKs and timeouts), each registered by name.

``profile = "ns2"`` (the default) is the classic ns-2 one-way TCP; ``profile = "linux"`` presets
what stock Linux does (the keys in ``PROFILES["linux"]``). Keys given explicitly always win over
the preset, so ``profile = "linux", cc = "reno", min_rto = 0.05`` is Linux Reno with a 50 ms
minimum RTO. Plug-ins: ``register_cc(name, builder, profiles)`` and
``register_recovery(name, builder, needs_sack)`` with ``builder(tcp_config) -> Cython object``.
Units: seconds, segments.
"""
from __future__ import annotations

import typing
from dataclasses import dataclass, field

from .schema import HookSpec, _err, _meta

# Linux 6.x defaults (net/ipv4/tcp.c, tcp_input.c, tcp_timer.c; Debian's CONFIG_HZ = 250, so
# timers and RTO run in 4 ms jiffies; TCP_ATO_MIN = TCP_DELACK_MIN = 40 ms; TCP_RTO_MAX = 120 s)
PROFILES = {
    "ns2": {},
    "linux": {"cc": "cubic", "recovery": "sack_rack", "sack": True, "timestamps": True,
              "init_cwnd": 10.0, "min_rto": 0.2, "init_rto": 1.0, "max_rto": 120.0,
              "tick": 0.004, "delayed_ack": "linux", "delack_timeout": 0.04,
              "limited_transmit": False},
}


@dataclass
class TcpPlugin:
    builder: typing.Callable
    profiles: tuple = ("ns2", "linux")
    needs_sack: bool = False


CONGESTION: dict[str, TcpPlugin] = {}
RECOVERY: dict[str, TcpPlugin] = {}


def register_cc(name, builder, profiles=("ns2", "linux")):
    """Make ``tcp.cc = NAME`` available: ``builder(tcp_config) -> _sim.CongestionOps``."""
    CONGESTION[name] = TcpPlugin(builder, tuple(profiles))


def register_recovery(name, builder, needs_sack=False):
    """Make ``tcp.recovery = NAME`` available: ``builder(tcp_config) -> _sim.RecoveryOps``."""
    RECOVERY[name] = TcpPlugin(builder, needs_sack=needs_sack)


@dataclass
class VegasParams:
    alpha: float = _meta(1.0, min=0)
    beta: float = _meta(3.0, min=0)
    gamma: float = _meta(1.0, min=0)

    def validate(self, path):
        if self.beta < self.alpha:
            raise _err(f"{path}.beta", "must be >= alpha")


@dataclass
class RateParams:
    """TCP Rate's control law (Park & Tuan 2000, sec. 3.6.3, Table I), per ACK with an RTT sample:
    dRTT < 0: cwnd += a xi / cwnd; dRTT > 0: cwnd -= (a xi / RTT) b tau; dRTT = 0: ``equal``."""
    a: float = _meta(1.0, gt=0, doc="increase, segments per RTT (Reno's slope; TCP-MT scales it by xi)")
    b: float = _meta(2.0, gt=0, doc="decrease per RTT relative to a, dimensionless (paper: 0 < a < b)")
    tau: float = _meta(0.0, min=0, doc="packet spacing, s (0: the measured spacing of the two ACKs)")
    equal: str = _meta("increase", choices=("increase", "hold", "decrease"),
                       doc="action on equal consecutive RTT samples (Table I: dRTT >= 0 decreases)")

    def validate(self, path):
        if not self.b > self.a:
            raise _err(f"{path}.b", "must be > a (Park & Tuan sec. 3.6.3: 0 < a < b)")


@dataclass
class CubicParams:
    """RFC 9438 / Linux tcp_cubic.c module parameters (Linux stores beta as 717/1024 and
    C as bic_scale 41 * 10 / 1024)."""
    beta: float = _meta(0.7, gt=0, max=1, doc="multiplicative decrease factor")
    c: float = _meta(0.4, gt=0, doc="cubic scaling constant, segments/s^3")
    fast_convergence: bool = _meta(True)
    tcp_friendliness: bool = _meta(True, doc="Reno-friendly region (RFC 9438 4.3)")
    hystart: bool = _meta(True, doc="HyStart: ACK-train and delay-increase slow-start exit")
    hystart_low_window: int = _meta(16, min=0, doc="HyStart acts from this cwnd on, segments")


@dataclass
class BbrParams:
    """BBR v1 (Linux tcp_bbr.c, whose tunables are static constants; the defaults are Linux's).
    Gains are dimensionless (Linux rounds them to 1/256), times in seconds."""
    high_gain: float = _meta(2.885, gt=1, doc="Startup pacing and cwnd gain (2/ln 2); Drain "
                                               "paces at its inverse")
    cwnd_gain: float = _meta(2.0, gt=0, doc="ProbeBW cwnd gain: cwnd = cwnd_gain x BDP + quanta")
    probe_gain: float = _meta(1.25, gt=1, max=2, doc="ProbeBW's probing phase gain; the next "
                                                     "phase drains at 2 - probe_gain")
    bw_rtts: int = _meta(10, min=1, doc="max-bandwidth filter window, packet-timed rounds")
    min_rtt_win: float = _meta(10.0, gt=0, doc="min-RTT filter window, s (ProbeRTT when it expires)")
    probe_rtt_time: float = _meta(0.2, min=0, doc="time at cwnd_min_target in ProbeRTT, s "
                                                  "(0: no ProbeRTT)")
    cwnd_min_target: int = _meta(4, min=1, doc="segments, also ProbeRTT's cwnd")
    full_bw_thresh: float = _meta(1.25, gt=1, doc="Startup continues while the max bandwidth "
                                                  "grows by this factor per round")
    full_bw_cnt: int = _meta(3, min=1, doc="rounds without that growth that end Startup")
    pacing_margin: float = _meta(0.01, min=0, max=0.5, doc="pace this fraction below gain x bw")
    lt_bw: bool = _meta(True, doc="long-term bandwidth sampling (token-bucket policers)")
    lt_loss_thresh: float = _meta(0.2, gt=0, max=1, doc="loss ratio that makes an lt interval lossy")
    lt_bw_max_rtts: int = _meta(48, min=1, doc="rounds the policed rate is used")
    extra_acked: bool = _meta(True, doc="cwnd allowance for ACK aggregation (extra_acked)")
    min_tso_rate: float = _meta(1.2e6, min=0, doc="bit/s below which the TSO goal is 1 segment")


@dataclass
class TcpConfig:
    profile: str = _meta("ns2", choices=tuple(PROFILES), doc="preset of the keys below")
    cc: str = _meta("reno", doc="congestion control (register_cc)")
    recovery: str = _meta("classic", doc="loss recovery (register_recovery): classic | sack_rack")
    sack: bool = _meta(False, doc="receiver sends SACK blocks (RFC 2018)")
    dsack: bool = _meta(True, doc="with sack: D-SACK blocks for duplicate segments (RFC 2883)")
    timestamps: bool = _meta(False, doc="timestamps option: 12 header bytes, RTT from TSecr")
    frto: bool = _meta(True, doc="sack_rack: F-RTO (RFC 5682) after a timeout, as Linux")
    rack: bool = _meta(True, doc="sack_rack: RACK loss detection (false: RFC 6675 dupthresh)")
    init_cwnd: float = _meta(1.0, gt=0, doc="segments")
    init_ssthresh: float = _meta(1e9, gt=0, doc="segments")
    rwnd: int = _meta(1_000_000, min=1, doc="receiver window, segments")
    min_rto: float = _meta(0.2, gt=0)
    max_rto: float = _meta(60.0, gt=0)
    init_rto: float = _meta(3.0, gt=0)
    tick: float = _meta(0.01, min=0, doc="timer granularity, s (RTO rounded up to it)")
    rtt_per_ack: bool = _meta(False, doc="RTO estimator fed by every ACK's timestamp echo "
                                         "(default: one timed segment per RTT, as ns-2)")
    limited_transmit: bool = _meta(True, doc="RFC 3042 / ns-2 singledup_: one new segment on "
                                             "each of the first two duplicate ACKs")
    ns2_rto: bool = _meta(False, doc="ns-2's RTO arithmetic: samples in whole ticks (random tick "
                                     "phase per connection), srtt/rttvar in 1/8 and 1/4 ticks")
    precision_reduce: bool = _meta(True, doc="ns-2 precisionReduce_: classic fast recovery cuts cwnd "
                                             "to W/2 unrounded (ns-2's default since 2006), else to "
                                             "its integer part (ns-2 before)")
    delayed_ack: bool | str = _meta(False, doc="false | true (every 2nd segment) | \"linux\"")
    delack_timeout: float = _meta(0.1, gt=0, doc="delayed-ACK timer; linux: ATO minimum")
    handshake: bool = _meta(True, doc="SYN / SYN-ACK before data")
    ns2_bare_first: bool = _meta(False, doc="ns-2's one-way TcpAgent without syn_: segment 0 goes "
                                            "out without the header bytes (output() adds "
                                            "headersize() to seqno > 0 only); needs handshake = false")
    request_delay: float = _meta(0.0, min=0, doc="request mode: client's think time from the "
                                                 "handshake to its request, s")
    response_delay: float = _meta(0.0, min=0, doc="request mode: server's time from the whole "
                                                  "request to its first response byte, s")
    close_delay: float = _meta(0.0, min=0, doc="request mode: time from the last write (server) "
                                               "or the peer's FIN (client) to close(), s")
    xi: float = _meta(1.0, gt=0, doc="congestion-avoidance slope: cwnd += xi/cwnd")
    vegas: VegasParams = _meta(factory=VegasParams)
    rate: RateParams = _meta(factory=RateParams)
    cubic: CubicParams = _meta(factory=CubicParams)
    bbr: BbrParams = _meta(factory=BbrParams)
    hook: HookSpec | None = _meta(None)
    explicit: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def resolve(cls, data, path):
        """The profile's preset overlaid by the explicitly given keys."""
        prof = data.get("profile", "ns2")
        if prof not in PROFILES:
            raise _err(f"{path}.profile" if path else "profile",
                       f"must be one of {', '.join(PROFILES)} (got {prof!r})")
        return {**PROFILES[prof], **data}

    def validate(self, path):
        where = f"{path}." if path else ""
        cc = CONGESTION.get(self.cc)
        if cc is None:
            raise _err(f"{where}cc", f"unknown congestion control {self.cc!r} "
                       f"(known: {', '.join(sorted(CONGESTION))})")
        if self.profile not in cc.profiles:
            raise _err(f"{where}cc", f"{self.cc!r} is not available with profile "
                       f"{self.profile!r} (only {', '.join(cc.profiles)})")
        rec = RECOVERY.get(self.recovery)
        if rec is None:
            raise _err(f"{where}recovery", f"unknown loss recovery {self.recovery!r} "
                       f"(known: {', '.join(sorted(RECOVERY))})")
        if self.cc == "bbr" and self.recovery != "sack_rack":
            raise _err(f"{where}recovery", "bbr needs recovery = \"sack_rack\" (Linux's "
                       "cong_control runs beside SACK/RACK recovery)")
        if rec.needs_sack and not self.sack:
            raise _err(f"{where}recovery", f"{self.recovery!r} needs sack = true")
        if self.ns2_bare_first and self.handshake:
            raise _err(f"{where}ns2_bare_first", "needs handshake = false (with syn_, ns-2's "
                       "segment 0 is the SYN)")
        if isinstance(self.delayed_ack, str) and self.delayed_ack != "linux":
            raise _err(f"{where}delayed_ack", f"must be true, false or \"linux\" "
                       f"(got {self.delayed_ack!r})")

    def build_cc(self):
        return CONGESTION[self.cc].builder(self)

    def build_recovery(self):
        return RECOVERY[self.recovery].builder(self)


def _sim():
    from traceflow.sim import _sim as mod
    return mod


def _cubic(t):
    c = t.cubic
    return _sim().Cubic(c.beta, c.c, c.fast_convergence, c.tcp_friendliness, c.hystart,
                        c.hystart_low_window)


def _bbr(t):
    b = t.bbr
    return _sim().Bbr(b.high_gain, b.cwnd_gain, b.probe_gain, b.bw_rtts, b.min_rtt_win,
                      b.probe_rtt_time, b.cwnd_min_target, b.full_bw_thresh, b.full_bw_cnt,
                      b.pacing_margin, b.lt_bw, b.lt_loss_thresh, b.lt_bw_max_rtts,
                      b.extra_acked, b.min_tso_rate)


register_cc("tahoe", lambda t: _sim().Tahoe(), ("ns2",))
register_cc("reno", lambda t: _sim().Reno() if t.profile == "ns2" else _sim().RenoLinux())
register_cc("newreno", lambda t: _sim().NewReno(), ("ns2",))
register_cc("vegas", lambda t: _sim().Vegas(t.vegas.alpha, t.vegas.beta, t.vegas.gamma), ("ns2",))
register_cc("rate", lambda t: _sim().Rate(t.rate.a, t.rate.b, t.rate.equal, t.rate.tau), ("ns2",))
register_cc("cubic", _cubic)
register_cc("bbr", _bbr, ("linux",))
register_recovery("classic", lambda t: _sim().ClassicRecovery())
register_recovery("sack_rack", lambda t: _sim().SackRack(t.frto, t.rack), needs_sack=True)

"""Stochastic model of aggregate TCP Reno traffic (Feng & Tinnakornsrisuphap 2000, section 4).

Discrete time with one step per round-trip propagation delay ``τ = 2(τ_c + τ_s)``.  For every
client ``i`` and step ``n`` (equations 1–4 of the paper):

    X_n ~ Poisson(λτ)                      packets the application generates
    Y_n = min(X_n + V_n, W_n)              packets sent (window limited)          (1)
    V_{n+1} = X_n + V_n − Y_n              backlog carried to the next step       (2)
    W_{n+1} = W_n + Y_n / W_n   if Σ_i Y_n ≤ γ   (congestion avoidance)          (3)
    W_{n+1} = W_n / 2           if Σ_i Y_n > γ   (synchronised fast recovery)    (4)

The predicted burstiness is the c.o.v. (std/mean) of the aggregate ``Y_n = Σ_i Y_n^(i)``.

Interpretation choices (the paper leaves them implicit):

* ``γ``, "the available bandwidth in that round", is taken as the packets the bottleneck drains in
  one step plus the gateway buffer, ``μ_s τ / (8·size) + B`` (the printed ``(μ_s/(8·size)+B)τ``
  multiplies a packet count by seconds, which is not a packet count).
* The window is bounded by the advertised window (Table 1: 20 packets) and by 1 from below.
* Windows start in the uncongested steady state of eqs. (1)-(3): the advertised window with an
  empty backlog (without congestion eq. 3 grows every window to that bound).  The paper computes
  "the c.o.v. of the traffic in the steady state" with all connections "always in the congestion
  avoidance phase" (feng-tinnakornsrisuphap-2000-tcp-burstiness.txt:190).  Starting at 1 packet
  instead is a start-up transient the model excludes: each client's backlog of the first ~10
  steps (X ≈ 10 per step against W = 1, 2, ...) is flushed by every client at once, the
  aggregate exceeds γ at step 12 in every replication for M ≥ 24, and from 38 clients on eq. (4)
  keeps the windows in that synchronised cycle for the rest of the run (c.o.v. 0.24, vs 0.051
  from the steady state; from 41 clients both starts give the same cycle).
  ``initial_window`` overrides the start (packets).
* The first ``warmup`` seconds are discarded.
"""
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RenoCovParams:
    """Parameters of the model; defaults are the paper's Table 1 (units in the field names)."""

    client_delay_s: float = 0.025         # τ_c
    bottleneck_delay_s: float = 0.025     # τ_s
    bottleneck_bps: float = 50e6          # μ_s
    buffer_packets: int = 50              # B
    packet_bytes: int = 1500
    rate_pps: float = 100.0               # λ = 1 / (mean intergeneration time 0.01 s)
    max_window: float = 20.0              # TCP max advertised window
    duration_s: float = 200.0             # total test time
    warmup_s: float = 20.0
    initial_window: float | None = None   # packets; None: max_window (uncongested steady state)

    @property
    def tau(self):
        """Step length: the round-trip propagation delay in seconds."""
        return 2.0 * (self.client_delay_s + self.bottleneck_delay_s)

    @property
    def gamma(self):
        """Packets the network can carry in one step (bottleneck drain + buffer)."""
        return self.bottleneck_bps * self.tau / (8.0 * self.packet_bytes) + self.buffer_packets


def poisson_cov(m, params=RenoCovParams()):
    """c.o.v. of the unmodulated aggregate Poisson traffic per RTT, ``1/sqrt(λτ M)``."""
    return 1.0 / np.sqrt(params.rate_pps * params.tau * np.asarray(m, dtype=np.float64))


def simulate(m, params=RenoCovParams(), *, replications=8, seed=0):
    """Run equations (1)–(4) for ``m`` clients; return the aggregate ``Y_n`` (replications × steps).

    All replications and clients advance together as NumPy arrays; only the time loop is Python.
    """
    rng = np.random.default_rng(seed)
    steps = int(round(params.duration_s / params.tau))
    lam_tau = params.rate_pps * params.tau
    w0 = params.max_window if params.initial_window is None else params.initial_window
    w = np.full((replications, m), float(w0))
    v = np.zeros((replications, m))
    out = np.empty((replications, steps))
    for n in range(steps):
        x = rng.poisson(lam_tau, size=(replications, m))
        offered = x + v
        y = np.minimum(offered, np.floor(w))
        v = offered - y
        total = y.sum(axis=1)
        out[:, n] = total
        congested = (total > params.gamma)[:, None]
        w = np.where(congested, w / 2.0, w + y / w)
        np.clip(w, 1.0, params.max_window, out=w)
    return out


def predicted_cov(m, params=RenoCovParams(), *, replications=8, seed=0):
    """Predicted c.o.v. of aggregate Reno traffic per RTT for ``m`` clients (mean over replications)."""
    y = simulate(m, params, replications=replications, seed=seed)
    skip = int(round(params.warmup_s / params.tau))
    y = y[:, skip:]
    return float(np.mean(y.std(axis=1) / y.mean(axis=1)))


def cov_curve(clients, params=RenoCovParams(), *, replications=8, seed=0):
    """Predicted and Poisson c.o.v. for each client count: dict of NumPy arrays."""
    clients = np.asarray(list(clients), dtype=np.int64)
    model = np.array([predicted_cov(int(m), params, replications=replications, seed=seed + int(m))
                      for m in clients])
    return {"clients": clients, "model_cov": model, "poisson_cov": poisson_cov(clients, params)}

"""fit in one streaming pass (issue 17): the streamed model equals the model fitted from whole
tables before streaming, and every streamed accumulator equals its whole-table function, however
the packets are cut into batches."""
import gzip
import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from conftest import shared_path
from traceflow import compare as cmp
from traceflow.flows import flows
from traceflow.flows.handshake_queue import SynAckGaps
from traceflow.flows.hosts import infer_hosts
from traceflow.models.fit import capacity_of_series, estimate_capacity, fit
from traceflow.models.fitstream import PacketPass
from traceflow.models.sessions import exchanges_per_connection

#: models fitted by the whole-table fit (commit 1664147, before streaming) to shared captures
BEFORE = Path(__file__).with_name("data") / "fit_before_stream.json.gz"
CAPTURES = {"rtt3dev_server_side": ("testbed", "rtt3dev", "server_side.pcap.gz"),
            "devcubic_client_side": ("testbed", "devcubic", "client_side.pcap.gz"),
            "captures_ndpi_netflix": ("captures", "ndpi_netflix.pcap"),
            "dev10m_server_side": ("testbed", "dev10m", "server_side.pcap.gz"),
            "alpha1.35_client_side": ("testbed", "alpha1.35", "client_side.pcap.gz")}
SLOW = {"dev10m_server_side", "alpha1.35_client_side"}


#: the inter-arrival Weibull's numbers: the stored models had them from scipy's Nelder-Mead
#: search (weibull_min.fit, tolerance ~1e-4 in the parameters), fit now solves the likelihood
#: equation (at least as likely: test_fit), so they agree to this relative difference only
WEIBULL_REL = 5e-3


def _weibull_paths(model):
    ia = (model.get("arrivals") or {}).get("interarrival") or {}
    paths = {".arrivals.interarrival.candidates.weibull"}
    if ia.get("dist") == "weibull":
        paths |= {".arrivals.interarrival.ks",
                  *(f".arrivals.interarrival.params.{k}" for k in ia.get("params", {}))}
    return paths


#: what fit measures differently since the stored models, on purpose (its own tests hold each):
#: the network and the link's rate from the bottleneck's spacing, the end hosts' initial window
#: from the timestamp echoes, their quality flags and congestion control (issues 43, 44), the
#: path RTTs from timestamp echoes under Karn's rule (issue 46). The rest — span, arrivals,
#: sizes, lifetimes, shares, sessions, requests, Hurst, dispersion, levels — is still the
#: whole-table fit's.
CHANGED_SINCE = (".network", ".schema_version", ".link", ".hosts", ".rtt")


def _differences(before, now, path="", loose=frozenset()):
    """Paths where two model dicts differ (floats beyond rounding: relative 1e-9; at ``loose``
    paths beyond :data:`WEIBULL_REL`)."""
    if isinstance(before, dict) and isinstance(now, dict):
        return [d for k in sorted(set(before) | set(now))
                for d in _differences(before.get(k), now.get(k), f"{path}.{k}", loose)]
    if isinstance(before, list) and isinstance(now, list) and len(before) == len(now):
        return [d for i, (a, b) in enumerate(zip(before, now))
                for d in _differences(a, b, f"{path}[{i}]", loose)]
    if isinstance(before, float) and isinstance(now, float):
        rel = WEIBULL_REL if path in loose else 1e-9
        same = (before == now or (math.isnan(before) and math.isnan(now))
                or abs(before - now) <= rel * max(abs(before), abs(now)))
        return [] if same else [(path, before, now)]
    return [] if before == now else [(path, before, now)]


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
                                  for n in CAPTURES])
def test_streamed_fit_equals_whole_table_fit(name):
    """The stored whole-table models, but for what fit measures differently since
    (:data:`CHANGED_SINCE`)."""
    path = shared_path(*CAPTURES[name])
    with gzip.open(BEFORE, "rt") as f:
        before = json.load(f)[name]
    now = json.loads(json.dumps(fit(path).to_dict()))
    assert [d for d in _differences(before, now, loose=_weibull_paths(before))
            if not d[0].startswith(CHANGED_SINCE)] == []


@pytest.mark.parametrize("parts", [("testbed", "rtt3dev", "server_side.pcap.gz"),
                                   ("captures", "slips_test-cc-capture-1.pcap")])
@pytest.mark.parametrize("spooled", [False, True], ids=["in-memory", "on-disk"])
def test_small_batches_equal_whole_tables(parts, spooled, monkeypatch):
    """Batches of 3000 packets (connections span many; the flow splitter carries packets over)
    and reductions of 50 finished connections at a time give what the whole-table functions
    give: the string-keyed connection split of infer_hosts, data_direction's series and the
    capacity estimate, exchanges_per_connection, synack gaps and the flow table. The same with
    every per-connection result kept on disk (a spool of no memory budget), there with the
    end-host parts counted and spooled 7 connections at a time (the first flights are read
    back in pairs of frames) and the buffer's pieces joined beyond 2."""
    from traceflow.flows import hosts
    from traceflow.models import fitstream
    from traceflow.pcap.reader import read_packets

    if spooled:
        monkeypatch.setattr(hosts, "HOLD_ROWS", 7)
        monkeypatch.setattr(fitstream._Pending, "PIECES", 2)
    packets = pl.from_arrow(read_packets(shared_path(*parts)))
    state = PacketPass(reduce_conns=50, **({"spool_bytes": 0} if spooled else {}))
    table = state.feed_input(packets, batch_size=3000)
    assert (state.spool.path is not None) == spooled
    assert table.equals(flows(packets))
    assert state.hosts.result() == infer_hosts(packets)
    assert state.exchanges_per_connection() == pytest.approx(
        exchanges_per_connection(packets.sort("ts")), rel=1e-12)

    start, end = state.span()
    data = cmp.data_direction(packets)
    dts = data["ts"].cast(pl.Int64).to_numpy()
    dsz = data["ip_len"].cast(pl.Float64).fill_null(0).to_numpy()
    assert np.array_equal(state.data.series(end), cmp._bin(dts, dsz, start, end))
    streamed = capacity_of_series(state.data.busy(), state.data.total / state.data.count)
    assert streamed == estimate_capacity(dts, dsz, origin=start)

    whole = SynAckGaps()
    whole.feed(packets)
    assert state.synacks.table().equals(whole.table())


def test_host_buffer_pieces_mark_then_copy_then_join(monkeypatch):
    """A piece of the end-host buffer marks the packets taken out until fewer than half are
    left, then keeps a copy of the rest; copied pieces next to each other are joined in order
    once there are too many."""
    from traceflow.models.fitstream import _Pending

    def piece(conns, ts):
        return _Pending({"conn": np.array(conns, dtype=np.uint32),
                         "ts": np.array(ts, dtype=np.int64)})

    p = piece([0, 1, 2, 1, 3], [10, 11, 12, 13, 14])
    ended = np.zeros(4, dtype=bool)
    ended[0] = True
    taken = p.take(ended)
    assert taken["ts"].tolist() == [10] and p.left == 4 and p.alive is not None
    ended[:] = [False, True, False, False]
    assert p.take(ended)["ts"].tolist() == [11, 13]     # 2 of 5 left: copied
    assert p.alive is None and p.columns["ts"].tolist() == [12, 14]
    ended[:] = [False, True, False, False]
    assert p.take(ended) is None and p.left == 2

    pieces = [piece([5], [1]), piece([6, 7], [2, 3]), p, piece([8], [4])]
    pieces[1].take(np.array([0] * 7 + [1], dtype=bool))   # marked, not copied
    assert _Pending.compacted(pieces) is pieces
    monkeypatch.setattr(_Pending, "PIECES", 2)
    joined = _Pending.compacted(pieces)
    assert [q.columns["ts"].tolist() for q in joined] == [[1], [2, 3], [12, 14, 4]]
    assert joined[1] is pieces[1]


def test_two_inputs_kept_on_disk_give_what_memory_gives():
    """fit's pass over two inputs with every per-connection result on disk (a spool of no
    memory budget: the first input's flow rows are read back and dropped while the host facts
    and SYN/ACK gaps of both stay in their files) equals the pass that keeps them in memory."""
    inputs = [shared_path("testbed", "rtt3dev", side) for side in ("server_side.pcap.gz",
                                                                    "client_side.pcap.gz")]
    passes = [PacketPass(), PacketPass(spool_bytes=0)]
    tables = [[state.feed_input(path) for path in inputs] for state in passes]
    memory, disk = passes
    assert memory.spool.path is None and disk.spool.path is not None
    assert all(a.equals(b) for a, b in zip(*tables))
    assert memory.hosts.result() == disk.hosts.result()
    assert memory.synacks.table().equals(disk.synacks.table())


def test_host_buffer_keeps_values_in_narrower_dtypes():
    """The end-host buffer keeps a batch's column in the narrowest of its dtypes that holds
    every value, else in its own; pieces of different widths join without changing a value."""
    from traceflow.models.fitstream import _concat, _narrowest

    lengths = (np.uint16, np.uint32)
    small = _narrowest(np.array([0, 1460, 65535]), lengths)
    wide = _narrowest(np.array([0, 70000]), lengths)       # a GRO-merged segment
    assert small.dtype == np.uint16 and wide.dtype == np.uint32
    assert _narrowest(np.array([-1, 1460], dtype=np.int32), (np.int16,)).dtype == np.int16
    null_window = _narrowest(np.array([-1, 65535], dtype=np.int32), (np.uint16,))
    assert null_window.dtype == np.int32 and null_window.tolist() == [-1, 65535]
    assert _concat([{"x": small}, {"x": wide}])["x"].tolist() == [0, 1460, 65535, 0, 70000]
    assert _narrowest(np.array([], dtype=np.int64), lengths).dtype == np.int64

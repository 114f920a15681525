"""Issue 15's criteria on the real-Linux testbed runs: trace-mode replay from the fitted model
(utilization within 10 %, loss within 25 %, median transfer time within 20 % in every size bin
with >= 30 transfers, handshake-RTT KS < 0.1, wavelet H within 0.05) and model mode (utilization,
loss and per-bin medians within 35 %), computed from the files by
:mod:`traceflow.experiments.testbed_replay`. The default suite replays the first 120 s of each
run; the full runs are slow tests, and so are the two `traceflow testbed` reference runs with three
RTT classes (10/60/180 ms; Reno at 1.5 Mbit/s, CUBIC at 10 Mbit/s), made fresh on first use."""
import pytest

from conftest import DELAYED_RUNS, delayed_testbed_run, shared_path
from traceflow.experiments.testbed_replay import criteria_rows, format_rows, validate

RUNS = ["alpha1.35", "devcubic", "dev10m", "rtt3dev"]
SLICE_S = 120.0
#: Model mode draws arrivals as an open renewal process, independent of the sizes; the testbed's
#: clients are closed loops (a client waits for its transfer before it idles and asks again), so
#: its arrivals thin out while big transfers hold the link. Replaying devcubic's own flows with
#: their arrival times swapped for the model's (sizes kept), or their sizes for the model's
#: (times kept), breaks the small-transfer medians as model mode does (15 / 13 ms against 6.7;
#: the real pairing: 6.6 ms): the pairing of arrival times with completions matters, and the
#: simulator has no closed-loop request-mode sessions to replay it.
OPEN_LOOP = pytest.mark.xfail(strict=True, reason="model mode: open-loop arrivals (no closed-loop "
                              "request-mode sessions in the simulator); small-transfer medians "
                              "1.8-2.4x on devcubic")
#: Criteria known to fail, by (run, mode): asserted to fail exactly (a fix must update this).
#: rtt3dev's handshakes carry 0.2-0.9 ms of relay and host jitter when their SYN/ACK met an idle
#: bottleneck (median 0.43 ms over the pair's minimum, measured by the gap behind the previous
#: downstream frame); path_rtt counts only the clean leg's ~0.05 ms as jitter, so the replay's
#: handshakes sit at the pair minimum: medians agree (60.9 / 60.3 ms), KS 0.21.
KNOWN = {("rtt3dev", "trace"): {"rtt_ks"}, ("rtt3dev", "model"): {"fct 8k-16k"}}


def _check(result, mode, run, name):
    rows = criteria_rows(result[mode], mode)
    print(f"\n{name} {mode} mode\n{format_rows(rows)}")
    failed = {r["criterion"].split(" median")[0] for r in rows if r["pass"] is False}
    assert rows and failed == KNOWN.get((run, mode), set()), f"{name} {mode}: failed {failed}"


@pytest.fixture(scope="module", params=RUNS)
def sliced(request, tmp_path_factory):
    run = request.param
    out = tmp_path_factory.mktemp(f"tb-{run}")
    return run, validate(shared_path("testbed", run), out, span_s=SLICE_S)


@pytest.mark.parametrize("mode", ["trace", "model"])
def test_slice_criteria(sliced, mode, request):
    run, result = sliced
    if (run, mode) == ("devcubic", "model"):
        request.applymarker(OPEN_LOOP)
    _check(result, mode, run, f"{run} (first {SLICE_S:g} s)")


@pytest.mark.slow
@pytest.mark.parametrize("run, mode", [(r, m) for r in RUNS for m in ("trace", "model")])
def test_full_run_criteria(run, mode, tmp_path, request):
    if (run, mode) == ("devcubic", "model"):
        request.applymarker(OPEN_LOOP)
    _check(validate(shared_path("testbed", run), tmp_path, modes=(mode,)), mode, run, run)


#: Criteria a fresh reference run may miss by run-to-run variation of the real kernel. CUBIC at
#: 10 Mbit/s: loss 1.36 % measured, 1.01 % replayed (error 0.255 against 0.25) on the run of
#: 2026-11-23; every other criterion of both runs passed with room.
MAY_MISS = {("tb_cubic_rtt3_10m", "trace"): {"loss_rate"}}


@pytest.mark.slow
@pytest.mark.parametrize("run, mode", [(r, m) for r in sorted(DELAYED_RUNS)
                                       for m in ("trace", "model")])
def test_delayed_reference_run_criteria(run, mode, tmp_path):
    result = validate(delayed_testbed_run(run), tmp_path, modes=(mode,))
    rows = criteria_rows(result[mode], mode)
    print(f"\n{run} {mode} mode\n{format_rows(rows)}")
    failed = {r["criterion"].split(" median")[0] for r in rows if r["pass"] is False}
    assert rows and failed <= MAY_MISS.get((run, mode), set()), f"{run} {mode}: failed {failed}"

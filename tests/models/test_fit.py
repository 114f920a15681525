"""``traceflow fit`` on the real-TCP testbed (ground truth: Pareto α = 1.35 file sizes, 1.5 Mbit/s
bottleneck, Linux IW 10) and on synthetic inputs."""
import json
import math

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from conftest import shared_path
from traceflow.models.fit import estimate_capacity, fit, fit_interarrival, rtt_classes
from traceflow.models.model import Model

SPAN_NS = 300 * 10**9  # first 300 s of the 900 s run: thousands of transfers, a short test


def _first(side, span_ns=SPAN_NS):
    from traceflow.pcap.reader import read_packets

    df = pl.from_arrow(read_packets(shared_path("testbed", "alpha1.35", f"{side}_side.pcap.gz")))
    t0 = df["ts"].cast(pl.Int64).min()
    return df.filter(pl.col("ts").cast(pl.Int64) < t0 + span_ns)


@pytest.fixture(scope="module")
def testbed_model():
    return fit(_first("client"), hosts_from=_first("server"))


def test_testbed_tail_alpha(testbed_model):
    """The fit over the measured flows recovers the testbed's file-size α = 1.35 within 0.1."""
    m = testbed_model
    assert abs(m.sizes.tail.alpha - 1.35) <= 0.1
    params = json.loads(shared_path("testbed", "alpha1.35", "params.json").read_text())
    assert abs(m.sizes.minimum - params["k"]) / params["k"] < 0.01  # Pareto location k
    # the semi-parametric size model reproduces the empirical median
    med = float(m.sizes.ppf([0.5])[0])
    assert abs(med - params["k"] * 2 ** (1 / 1.35)) / med < 0.05


def test_testbed_flows_and_arrivals(testbed_model):
    m = testbed_model
    gt = pl.read_csv(shared_path("testbed", "alpha1.35", "transfers.csv.gz"))
    t0 = gt["start"].min()
    n_gt = gt.filter(pl.col("start") < t0 + 300).height
    assert abs(m.arrivals.n_flows - n_gt) <= 0.01 * n_gt
    assert abs(m.arrivals.rate_per_s - n_gt / 300) / (n_gt / 300) < 0.02
    ia = m.arrivals.interarrival
    assert ia is not None and ia.ks < 0.05 and 0.7 < ia.cv < 1.5
    # file sizes: the measured mean agrees with the ground truth mean of the same period
    gt_mean = gt.filter(pl.col("start") < t0 + 300)["size"].mean()
    assert abs(m.sizes.mean - gt_mean) / gt_mean < 0.02


def test_testbed_link_and_hosts(testbed_model):
    m = testbed_model
    # 1.5 Mbit/s HTB counts Ethernet frames; IP bytes are 1040/1054 of that.
    line_ip = 1.5e6 * 1040 / 1054
    assert abs(m.link.capacity_bps - line_ip) / line_ip < 0.06
    assert 0.3 < m.link.utilization < 1.0
    h = m.hosts
    assert h.initial_window == 10 and h.initial_window_observable
    assert h.segment_size == 988 and h.mss == 1000
    assert 0.2 <= h.min_rto_s < 0.26
    assert set(m.hurst) == {"vt", "rs", "wavelet", "whittle"}
    assert all(0.5 < v < 1.1 for v in m.hurst.values())
    assert len(m.dispersion.scales_s) >= 8 and m.dispersion.idc[-1] > m.dispersion.idc[0]
    assert m.levels is not None and len(m.levels.condprob) == 8 and len(m.levels.condprob[0]) == 9
    assert m.rtt.distribution is not None and m.rtt.classes
    assert abs(sum(c.weight for c in m.rtt.classes) - 1) < 1e-9


def test_cli_fit_writes_loadable_model(tmp_path):
    pcap = shared_path("testbed", "alpha1.35", "client_side.pcap.gz")
    out = tmp_path / "model.json"
    from traceflow.cli.main import cli

    r = CliRunner().invoke(cli, ["fit", str(pcap), "-o", str(out)])
    assert r.exit_code == 0, r.output
    m = Model.load(out)
    assert abs(m.sizes.tail.alpha - 1.35) <= 0.1
    assert m.span.inputs == ["client_side.pcap.gz"]
    assert "Pareto tail alpha" in r.output


def test_capacity_estimate_saturated_link():
    # 1000-byte packets back to back at 2 Mbit/s for 10 s, then idle for 10 s
    gap = int(1000 * 8 / 2e6 * 1e9)
    ts = np.arange(0, 10 * 10**9, gap, dtype=np.int64)
    ts = np.concatenate([ts, [20 * 10**9]])
    cap, peaks, method = estimate_capacity(ts, np.full(ts.size, 1000.0))
    assert abs(cap - 2e6) / 2e6 < 0.01 and method.startswith("peak rate in 640ms bins")
    assert set(peaks) == {"10ms", "100ms", "1s"}


def test_interarrival_fit_picks_family():
    rng = np.random.default_rng(4)
    ia = fit_interarrival(rng.exponential(0.5, 5000))
    assert ia.dist in ("exponential", "weibull") and abs(ia.mean_s - 0.5) < 0.03
    assert abs(ia.cv - 1) < 0.05
    ln = fit_interarrival(rng.lognormal(0, 1.5, 5000))
    assert ln.dist == "lognormal" and abs(ln.params["sigma"] - 1.5) < 0.05



@pytest.mark.parametrize("shape", [0.5, 0.8, 1.6, 3.0])
def test_interarrival_weibull_is_scipys_maximum_likelihood(shape):
    # the root-finding Gumbel fit of log x against scipy's generic Weibull MLE (Nelder-Mead)
    from scipy import stats

    x = np.random.default_rng(7).weibull(shape, 4000) * 0.03
    ia = fit_interarrival(x)
    assert ia.dist == "weibull"
    c, _, scale = stats.weibull_min.fit(x, floc=0)
    assert ia.params["shape"] == pytest.approx(c, rel=1e-3)
    assert ia.params["scale"] == pytest.approx(scale, rel=1e-3)

    def nll(c, scale):
        return -stats.weibull_min.logpdf(x, c, 0, scale).sum()

    assert nll(ia.params["shape"], ia.params["scale"]) <= nll(c, scale) + 1e-6


def test_interarrival_ks_distances_are_scipys():
    """The candidates' KS distances are scipy's kstest statistic (its default exact method) on
    the gaps as given, for 20,000 Weibull gaps (where kstest's exact p-value, which fit does
    not read, took most of the time)."""
    from scipy import stats

    x = np.random.default_rng(11).weibull(0.9, 20_000) * 0.01
    ia = fit_interarrival(x)
    scale = stats.expon.fit(x, floc=0)[1]
    s, _, ln_scale = stats.lognorm.fit(x, floc=0)
    expected = {"exponential": stats.kstest(x, "expon", (0, scale)).statistic,
                "weibull": stats.kstest(x, "weibull_min", (ia.params["shape"], 0,
                                                            ia.params["scale"])).statistic,
                "lognormal": stats.kstest(x, "lognorm", (s, 0, ln_scale)).statistic}
    assert ia.candidates == expected


#: the connection gaps of faultkit.write_pcap's capture: 10 us apart, to the float rounding of
#: timestamps in seconds
TEN_US = np.repeat([9.999999999999918e-06, 9.999999999999972e-06, 9.999999999999986e-06,
                    9.999999999999992e-06, 9.999999999999999e-06, 1e-05, 1.0000000000000003e-05,
                    1.0000000000000013e-05, 1.0000000000000026e-05],
                   [3, 12, 1, 1, 18, 2, 1, 1, 24])


@pytest.mark.parametrize("gaps", [np.full(20, 0.01), TEN_US])
def test_interarrival_of_equal_gaps_falls_back_to_the_search(gaps):
    # no root of the likelihood equation in floating point: scipy's search, as before
    from scipy import stats

    ia = fit_interarrival(gaps)
    c, _, scale = stats.weibull_min.fit(gaps, floc=0)
    assert ia.candidates["weibull"] == pytest.approx(
        stats.kstest(gaps, "weibull_min", (c, 0, scale)).statistic, rel=1e-12)

def test_rtt_classes_separate_clusters():
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.lognormal(math.log(0.01), 0.1, 600), rng.lognormal(math.log(0.2), 0.1, 400)])
    cls = rtt_classes(x)
    assert len(cls) == 2
    assert abs(cls[0].center_s - 0.01) < 0.002 and abs(cls[1].center_s - 0.2) < 0.03
    assert abs(cls[0].weight - 0.6) < 0.01

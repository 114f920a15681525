"""Flows against references: Wireshark's TCP streams (every capture) and the testbed ground truth.

Documented differences from tshark 4.0 (each asserted below, nothing else may differ):
- Idle timeout: tshark never ends a TCP stream on silence; we end flows after ``idle_timeout``
  (300 s by default). With an idle timeout longer than the capture the connections are the same;
  with the default, every extra flow starts after a gap of more than 300 s on its endpoint pair.
- ``initial_rtt`` vs ``rtt_handshake``: equal within 1 µs wherever we measure it. We leave it
  null where tshark has a value only for (a) Karn's rule: the SYN or the SYN/ACK was
  retransmitted (tshark measures from the latest SYN), or (b) a SYN answered by a reset: tshark
  takes the RST/ACK as the handshake's final ACK.
"""
import polars as pl
import pytest
from conftest import CAPTURES, shared_path

from traceflow.flows import flows
from traceflow.pcap.reader import read_packets

# Captures beyond captures/: IPv6, a pcapng with a 46-year timestamp glitch, a day-long trace
# with silences longer than the idle timeout.
FORMATS = ["arkime_v6.pcap", "pcapplusplus_four_ipv6_http_streams.pcap",
           "pcapplusplus_linktype_ipv6.pcap", "pcapplusplus_pcapng-example.pcapng",
           "zeek_llc.pcap", "libtrace_sll.pcap.gz"]
NEVER = 10.0**9  # an idle timeout longer than any capture (seconds)


def _captures():
    names = sorted(p.name for p in CAPTURES.glob("*") if p.name != "MANIFEST.tsv")
    cases = [("captures", n) for n in names] + [("formats", n) for n in FORMATS]
    return cases if names else [pytest.param("captures", None, marks=pytest.mark.skip(
        reason="needs ../shared/datasets/captures"))]


def _reference(folder, name):
    sub = ("formats",) if folder == "formats" else ()
    ref = pl.read_csv(shared_path("reference", *sub, f"{name}.streams.csv"),
                      schema_overrides={"first_ts": pl.String, "last_ts": pl.String,
                                        "initial_rtt": pl.Float64})
    sec_frac = pl.col("first_ts").str.split(".")
    return ref.with_columns(
        first_ns=sec_frac.list.get(0).cast(pl.Int64) * 10**9
        + sec_frac.list.get(1).str.pad_end(9, "0").cast(pl.Int64),
        a=pl.format("{}|{}", "client", "client_port"),
        b=pl.format("{}|{}", "server", "server_port"))


def _pair(df):
    return df.with_columns(lo=pl.min_horizontal("a", "b"), hi=pl.max_horizontal("a", "b"))


@pytest.mark.parametrize("folder,name", _captures())
def test_tcp_flows_match_tshark_streams(folder, name):
    packets = read_packets(shared_path(folder, name))
    ref = _pair(_reference(folder, name))
    ours = flows(packets, idle_timeout=NEVER).filter(
        (pl.col("proto") == 6) & pl.col("client_port").is_not_null())
    ours = _pair(ours.with_columns(first_ns=pl.col("start").dt.epoch("ns"),
                                   a=pl.format("{}|{}", "client_addr", "client_port"),
                                   b=pl.format("{}|{}", "server_addr", "server_port")))
    assert ours.height == ref.height
    m = ours.join(ref, on=["lo", "hi", "first_ns"], how="inner", suffix="_ref")
    assert m.height == ref.height, "every stream matched by endpoint pair and first timestamp"
    for col in ("packets", "frame_bytes", "payload_bytes"):
        assert (m[col] == m[f"{col}_ref"]).all(), col
    both = m.filter(pl.col("rtt_handshake").is_not_null() & pl.col("initial_rtt").is_not_null())
    assert ((both["rtt_handshake"] - both["initial_rtt"]).abs() <= 1e-6).all()
    extra = m.filter(pl.col("rtt_handshake").is_not_null() & pl.col("initial_rtt").is_null())
    assert extra.height == 0
    missing = m.filter(pl.col("rtt_handshake").is_null() & pl.col("initial_rtt").is_not_null())
    karn = (pl.col("syn_count") > 1) | (pl.col("synack_count") > 1)
    reset = (pl.col("close") == "RST") & (pl.col("synack_count") == 0)
    assert missing.filter(~(karn | reset)).height == 0
    # Default idle timeout: the same packets, extra flows only after silences > 300 s.
    default = _pair(flows(packets).filter(pl.col("proto") == 6)
                    .with_columns(a=pl.format("{}|{}", "client_addr", "client_port"),
                                  b=pl.format("{}|{}", "server_addr", "server_port")))
    gaps = default.sort("start").with_columns(
        gap=(pl.col("start") - pl.col("end").shift(1).over("lo", "hi")).dt.total_seconds())
    assert default.height - ours.height == gaps.filter(pl.col("gap") > 300).height
    per_pair = [d.group_by("lo", "hi").agg(pl.col("packets").sum()).sort("lo", "hi")
                for d in (default.filter(pl.col("client_port").is_not_null()), ours)]
    assert per_pair[0].equals(per_pair[1])


def test_idle_splits_and_reset_rtts_do_occur():
    """The documented differences are exercised by the data (the asserts above are not vacuous)."""
    llc = read_packets(shared_path("formats", "zeek_llc.pcap"))
    assert flows(llc, idle_timeout=NEVER).height < flows(llc).height
    scan = flows(read_packets(shared_path("captures", "ndpi_synscan.pcap")))
    ref = _reference("captures", "ndpi_synscan.pcap")
    assert ref["initial_rtt"].drop_nulls().len() == 5
    assert scan.filter((pl.col("close") == "RST") & (pl.col("synack_count") == 0)).height >= 5


@pytest.mark.parametrize("side", ["client_side", "server_side"])
def test_testbed_transfers_found_with_exact_size(side):
    run = shared_path("testbed", "alpha1.35")
    f = flows(read_packets(run / f"{side}.pcap.gz"))
    truth = pl.read_csv(run / "transfers.csv.gz").with_columns(
        t0=(pl.col("start") * 1e6).cast(pl.Int64)).sort("t0")
    tcp = f.filter(pl.col("proto") == 6).with_columns(
        t0=pl.col("start").dt.epoch("us"), port=pl.col("client_port").cast(pl.Int64)).sort("t0")
    # ports are reused over the run: match each transfer to the flow on its port nearest in time
    m = truth.join_asof(tcp, on="t0", by="port", strategy="nearest", tolerance=1_000_000,
                        check_sortedness=False)
    done = m.filter(pl.col("ok") == 1)
    assert done.height > 20000
    assert done["flow_id"].null_count() == 0 and not done["flow_id"].is_duplicated().any()
    # the server sends the file: its application bytes are the transfer size, byte for byte
    assert (done["app_bytes_s2c"] == done["size"]).all()
    assert done["app_bytes_c2s"].max() <= 16          # the request line only
    assert (done["handshake"] == "complete").all() and (done["close"] == "FIN").all()
    # losses happened and were repaired (holes filled by retransmissions), yet every byte of the
    # file counts once; retransmitted bytes only inflate payload_bytes
    assert (done["retransmissions"] > 0).sum() > 1000
    assert (done["payload_bytes_s2c"] >= done["app_bytes_s2c"]).all()


def test_partitions_give_the_same_flows():
    packets = read_packets(shared_path("captures", "pcapplusplus_example.pcap"))
    whole = flows(packets)
    assert whole["proto"].n_unique() > 1                 # TCP and UDP pairs
    assert flows(packets, partitions=4).equals(whole)


@pytest.mark.slow
def test_testbed_matches_live_tshark(tmp_path):
    """tshark itself on a 440k-packet capture with losses: same streams, counts and initial RTTs
    (up to the documented Karn/RST differences)."""
    import gzip
    import shutil
    import subprocess

    from conftest import require_tool

    tshark = require_tool("tshark")
    src = shared_path("testbed", "alpha1.35", "client_side.pcap.gz")
    pcap = tmp_path / "client_side.pcap"
    with gzip.open(src, "rb") as fin, open(pcap, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    fields = ["tcp.stream", "frame.time_epoch", "frame.len", "tcp.len", "tcp.analysis.initial_rtt"]
    out = subprocess.run([tshark, "-r", str(pcap), "-Y", "tcp", "-T", "fields", "-E", "separator=,",
                          *[a for f in fields for a in ("-e", f)]],
                         capture_output=True, text=True, check=True).stdout
    rows = [line.split(",") for line in out.splitlines() if line]
    per_pkt = pl.DataFrame(rows, schema=["stream", "t", "len", "tcp_len", "rtt"], orient="row")
    sec_frac = pl.col("t").str.split(".")
    ref = per_pkt.with_columns(
        pl.col("stream", "len", "tcp_len").cast(pl.Int64),
        rtt=pl.when(pl.col("rtt") != "").then(pl.col("rtt")).cast(pl.Float64),
        t=sec_frac.list.get(0).cast(pl.Int64) * 10**9
        + sec_frac.list.get(1).str.pad_end(9, "0").cast(pl.Int64),
    ).group_by("stream").agg(first_ns=pl.col("t").first(), packets=pl.len(),
                             frame_bytes=pl.col("len").sum(), payload_bytes=pl.col("tcp_len").sum(),
                             initial_rtt=pl.col("rtt").drop_nulls().first())
    ours = flows(read_packets(pcap)).with_columns(first_ns=pl.col("start").dt.epoch("ns"))
    assert ours.height == ref.height
    m = ours.join(ref, on="first_ns", how="inner", suffix="_ref")
    assert m.height == ref.height
    for col in ("packets", "frame_bytes", "payload_bytes"):
        assert (m[col] == m[f"{col}_ref"].cast(pl.Int64)).all(), col
    both = m.filter(pl.col("rtt_handshake").is_not_null())
    assert ((both["rtt_handshake"] - both["initial_rtt"]).abs() <= 1e-6).all()
    rest = m.filter(pl.col("rtt_handshake").is_null() & pl.col("initial_rtt").is_not_null())
    assert ((rest["syn_count"] > 1) | (rest["synack_count"] > 1)).all()

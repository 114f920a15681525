"""``--proto icmp`` (issue 46, flow table): ICMP and ICMPv6 flows, as many packets as tshark
finds with IP protocol 1 or IPv6 next header 58 (IPv4 with VLAN tags, IPv6)."""
import polars as pl
import pytest
from conftest import invoke, shared_path, tshark_fields


@pytest.mark.parametrize("name", ["arkime_v6.pcap", "tcpdump_e1000g.pcap", "libtrace_vlan.pcap"])
def test_proto_icmp_keeps_the_icmp_packets_tshark_counts(tmp_path, name):
    path = shared_path("formats", name)
    want = len(tshark_fields(path, "frame.number",
                             display_filter="ip.proto == 1 || ipv6.nxt == 58"))
    out = tmp_path / "flows.csv"
    res = invoke("flows", path, "--proto", "icmp", "-o", out)
    assert res.exit_code == 0, res.output
    flows = pl.read_csv(out)
    assert want > 0 and flows["packets"].sum() == want
    assert set(flows["proto"].to_list()) <= {1, 58}

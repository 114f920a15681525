"""``dispersion A --with B`` where B's clock starts elsewhere (issue 46 item 4: a simulated pcap
starts at 1970): the series are aligned on time since each start, so a capture against its own
copy shifted to 1970 by editcap tracks itself exactly (r = 1 over every bin)."""
import json
import subprocess

from conftest import invoke, require_tool, shared_path

RUN = ("testbed", "devcubic", "client_side.pcap.gz")


def _first_seconds(path):
    out = subprocess.run(["capinfos", "-T", "-r", "-a", "-S", str(path)], capture_output=True,
                         text=True, timeout=300, check=True).stdout
    return int(float(out.split("\t")[-1]))


def test_capture_against_its_copy_shifted_to_1970(tmp_path):
    require_tool("editcap")
    require_tool("capinfos")
    measured = tmp_path / "measured.pcap"
    subprocess.run(["editcap", "-F", "pcap", "-r", str(shared_path(*RUN)), str(measured),
                    "1-20000"], check=True, capture_output=True, timeout=300)
    # whole seconds keep the 10 ms bins' phase, so both series are the same numbers
    shifted = tmp_path / "g1-g2.pcap"
    subprocess.run(["editcap", "-t", str(-_first_seconds(measured)), str(measured), str(shifted)],
                   check=True, capture_output=True, timeout=300)
    res = invoke("dispersion", measured, "--with", shifted, "--json")
    assert res.exit_code == 0, res.output
    t = json.loads(res.stdout)["tracking"]
    assert t["aligned"] == "relative" and t["r"] > 0.999999
    assert t["n"] == json.loads(res.stdout)["n"]
    text = invoke("dispersion", measured, "--with", shifted).stdout
    assert "aligned on time since each start" in text
    # overlapping captures stay on clock time: the capture against itself
    same = json.loads(invoke("dispersion", measured, "--with", measured, "--json").stdout)
    assert same["tracking"]["aligned"] == "absolute" and same["tracking"]["r"] > 0.999999

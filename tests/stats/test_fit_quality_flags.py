"""``fit`` says what ``hurst`` and ``tail`` would say (issue 46 item 5): Hurst estimators that
disagree by more than hurst's margin are flagged, a size or lifetime tail it cannot fit is
named, and a quantile level table collapsed by empty blocks is flagged — on a real capture
(a Firefox session: 12 transfers, a bursty link)."""
import json

from conftest import invoke, shared_path

from traceflow.stats.hurst import DISAGREEMENT_MARGIN


def test_fit_flags_disagreeing_hurst_and_an_unfitted_tail(tmp_path):
    res = invoke("fit", shared_path("captures", "joy_firefox58.pcap"), "-o", tmp_path / "m.json",
                 "--json")
    assert res.exit_code == 0, res.output
    model = json.loads(res.stdout)
    quality = model["quality"]
    hs = [h for h in model["hurst"].values() if h is not None]
    spread = max(hs) - min(hs)
    assert spread > DISAGREEMENT_MARGIN          # 0.26 here: rs 0.59 vs wavelet 0.84
    assert [f["code"] for f in quality["hurst"]["flags"]] == ["disagree"]
    assert f"disagree by {spread:.2f}" in quality["hurst"]["flags"][0]["message"]
    assert model["sizes"]["tail"] is None
    flag = quality["size_tail"]["flags"][0]
    assert flag["code"] == "not_fitted" and f"the {model['sizes']['n']} transfer sizes" in flag["message"]
    assert "collapsed" in [f["code"] for f in quality["levels"]["flags"]]
    assert "disagree by" in res.stderr            # and each flag is a warning

"""The papers' set-ups (replays/setups.toml, issue 45): every value a paper states, and every ns
default of its year, is what our scenario file uses and what the ns-2 referee script defaults to;
every value the paper leaves open is marked as our choice with its reason. An era value our runs
do not use yet carries ``pending`` and is a strict xfail (it fails here once it is met, so the
mark cannot outlive the departure)."""
from pathlib import Path

import pytest

from traceflow.experiments import setups
from traceflow.report.claims import PAPERS

NS2_DIR = Path(__file__).resolve().parents[1] / "sim" / "ns2"
ABBREV = {"PKC", "FT", "KS", "WN", "PT"}


def _params(pred):
    for v in setups.values():
        if pred(v):
            marks = [pytest.mark.xfail(strict=True, reason=v["pending"])] if "pending" in v else []
            yield pytest.param(v, marks=marks, id=f"{v['paper']} {v['kind']} {v['file']}:{v['path']}")


@pytest.mark.parametrize("entry", list(_params(lambda v: True)))
def test_scenario_uses_the_value(entry):
    assert setups.departures([entry]) == []


@pytest.mark.parametrize("entry", list(_params(lambda v: "ns2" in v)))
def test_ns2_script_defaults_to_the_value(entry):
    assert setups.ns2_departures(NS2_DIR, [entry]) == []


def test_every_entry_is_sourced_or_reasoned():
    assert len(PAPERS) == len(ABBREV)
    for v in setups.values():
        assert v["paper"] in ABBREV and v["kind"] in setups.KINDS, v
        if v["kind"] == "choice":
            assert len(v.get("reason", "")) > 40, v
            assert "range" not in v or v["range"][0] <= v["value"] <= v["range"][1], v
        else:
            src = v.get("source", "")
            assert src.startswith(f"{v['paper']}:") or "ns-default.tcl" in src or "tcp.cc" in src, v


def test_every_paper_states_values_and_names_its_era():
    for paper in ABBREV:
        assert setups.values(paper, "stated"), paper
        assert setups.values(paper, "era") or paper == "WN" and setups.values(paper, "choice")


def test_a_departure_is_found(monkeypatch):
    """The check can fail: a stated value changed in the table is reported, with what the file
    uses, and so is a script default."""
    entry = dict(setups.values("KS", "stated")[0])
    used = setups.lookup(setups.load_file(entry["file"]), entry["path"])
    entry["value"] = used * 2
    assert setups.departures([entry]) == [(entry, used)]
    entry = dict(next(v for v in setups.values("KS", "era") if "ns2" in v))
    entry["ns2"] = dict(entry["ns2"], value="12345")
    assert len(setups.ns2_departures(NS2_DIR, [entry])) == 1


def test_ns2_defaults_parse_quoted_and_braced_values():
    p = setups.ns2_defaults(NS2_DIR / "capm.tcl")
    assert p["groups"] == "50 0.15 0.3 0.0 0.3 20 0.45 0.9 0.0 0.5"
    assert p["p_drop"] == "" and p["window"] == "20"

"""The registry of the papers' 26 claims (traceflow.report.claims): every claim quotes a sentence
of its paper, reads rows of installed experiments, and is judged by its rows only (a quick run or
a missing row decides nothing). The claims at full length: test_paper_claims.py (slow)."""
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from test_tcpmt_paper import CLAIMS as TCPMT_ROWS
from traceflow.cli.main import cli
from traceflow.cli.reproduce import experiment_files
from traceflow.report.claims import CLAIMS, PAPERS, PT, closing_table, judge, verdict

PAPERS_DIR = Path(__file__).resolve().parents[3] / "shared" / "papers"


def test_claims_are_numbered_and_read_installed_experiments():
    assert [c.number for c in CLAIMS] == list(range(1, 27))
    installed = set(experiment_files())
    for c in CLAIMS:
        assert c.paper in PAPERS and c.statement and c.test and c.headline and c.ns2
        assert set(c.experiments) <= installed, c.number
    assert {c.paper for c in CLAIMS} == set(PAPERS)


@pytest.mark.skipif(not PAPERS_DIR.is_dir(), reason="needs ../shared/papers (the source papers)")
def test_every_cited_line_is_a_sentence_of_the_paper():
    """The line numbers point at text, and each claim's headline numbers appear on its lines
    (e.g. 77.3 and 588.1 on Kalantari & Shayman's line 225)."""
    for c in CLAIMS:
        lines = (PAPERS_DIR / c.paper).read_text().splitlines()
        assert all(len(lines[n - 1].split()) >= 10 for n in c.lines), c.source
        text = re.sub(r"[\s$\\]", "", " ".join(lines[n - 1] for n in c.lines))  # TeX: $4\%$
        for number in re.findall(r"\d+\.\d+|\d+ %", c.headline):
            assert number.replace(" ", "") in text, (c.source, number)


def test_tcpmt_claims_cover_the_rows_of_test_tcpmt_paper():
    """Every TCP-MT row that test_tcpmt_paper.py judges belongs to a claim of the registry."""
    covered = {e for c in CLAIMS if c.paper == PT for e, _ in c.rows}
    assert {f"tcpmt_{name}" for name, _ in TCPMT_ROWS} <= covered


def _row(quantity, agree):
    return {"quantity": quantity, "paper": 1, "ours": 2, "agree": agree, "note": ""}


def test_a_claim_holds_only_when_every_row_agrees():
    claim = next(c for c in CLAIMS if c.number == 16)     # Wu Fig. 1 under RED
    agree = [_row("RED: throughput ratio", True), _row("RED fairer than DropTail", True)]
    assert verdict(claim, {"class_fig1": agree})["holds"] is True
    one_off = agree[:1] + [_row("RED fairer than DropTail", False)]
    assert verdict(claim, {"class_fig1": one_off})["holds"] is False
    # rows of another policy, not-compared rows and a missing experiment decide nothing
    others = [_row("DropTail: throughput ratio", True), _row("RED: ratio", None)]
    v = verdict(claim, {"class_fig1": others})
    assert v["holds"] is None and v["missing"] == ["class_fig1: RED"]
    assert verdict(claim, {})["holds"] is None


def test_a_claim_spanning_two_experiments_waits_for_both():
    claim = next(c for c in CLAIMS if c.number == 20)     # Wu Figs. 11, 13 + Fig. 7
    rtt = [_row("MIX-DT fairness trend with RTT ratio", True)]
    assert judge("class_rtt_ratio", rtt)[0]["holds"] is None
    both = {"class_rtt_ratio": rtt, "class_short_load": [_row("MIX-RED vs MIX-DT", True)]}
    assert verdict(claim, both)["holds"] is True
    table = closing_table(both)
    assert [r["claim"] for r in table] == list(range(1, 27))
    assert table[19]["holds"] is True and table[0]["ours"] == "not run"


def test_reproduce_claims_lists_all_26_from_full_runs(tmp_path):
    full = {"name": "class_fig1", "quick": False,
            "comparison": [_row("DropTail: throughput ratio fast/slow at RTT ratio 10", True),
                           _row("RED: throughput ratio fast/slow at RTT ratio 10", False)]}
    quick = {"name": "class_long_load", "quick": True,
             "comparison": [_row("MIX-RED: response time", True)]}
    for summary in (full, quick):
        (tmp_path / summary["name"]).mkdir()
        (tmp_path / summary["name"] / "summary.json").write_text(json.dumps(summary))
    res = CliRunner().invoke(cli, ["reproduce", "--claims", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    rows = {r["claim"]: r for r in json.loads(res.output)}
    assert len(rows) == 26
    assert (rows[15]["holds"], rows[16]["holds"], rows[19]["holds"]) == (True, False, None)
    assert "34:1" in rows[15]["paper"] and "19.9" in rows[15]["ns-2"]
    res = CliRunner().invoke(cli, ["reproduce", "--claims", str(tmp_path)])
    lines = res.output.splitlines()
    assert res.exit_code == 0 and len(lines) == 27     # 26 claims, then the count per state
    assert lines[15].startswith("claim 16 [wu-nikolaidis-2002-lifetime-rtt-classification.txt:29]: "
                                "does not hold in these runs; fails on the faithful set-up, ns-2 "
                                "agrees")
    assert lines[-1] == ("8 holds on the paper's set-up; 12 fails on the faithful set-up, ns-2 "
                         "agrees; 6 not decidable")


def test_reproduce_judges_the_claims_of_its_experiment(tmp_path):
    """summary.json and the page carry the experiment's claims; a quick run decides none."""
    from traceflow.cli.reproduce import run_experiment

    summary = run_experiment("class_fig1", tmp_path / "out", quick=True, workers=2)
    assert [(c["claim"], c["holds"]) for c in summary["claims"]] == [(15, None), (16, None)]
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["claims"] == \
        summary["claims"]
    page = (tmp_path / "out" / "index.html").read_text()
    assert "The paper&#x27;s claims" in page and "34:1" in page


def test_every_claim_is_in_one_of_the_four_states_with_a_reason():
    """Issue 45: holds, holds within a stated range, fails with ns-2 agreeing on the same set-up,
    or not decidable (naming what the paper lacks); each state but 'holds' carries its reason."""
    from traceflow.report.claims import HOLDS, STATES, status
    for c in CLAIMS:
        state, reason = status(c)
        assert state in STATES, c.number
        assert state == HOLDS or len(reason) > 40, c.number
        if state == STATES[3]:   # not decidable: says what is missing
            assert any(w in reason for w in ("cannot", "no ", "not the same", "claim")), c.number


def test_no_claim_rests_on_a_departure_from_a_stated_value():
    from traceflow.report.claims import DEPARTURE, status
    assert [c.number for c in CLAIMS if status(c)[0] == DEPARTURE] == []


def test_closing_table_flags_a_run_that_contradicts_the_registered_state():
    """A claim registered as failing whose rows all agree is reported, not silently re-labelled."""
    c = next(c for c in CLAIMS if c.number == 16)
    rows = {e: [{"quantity": p or "x", "paper": 1, "ours": 1, "agree": True, "note": ""}]
            for e, p in c.rows}
    row = next(r for r in closing_table(rows) if r["claim"] == 16)
    assert row["holds"] is True and row["reason"].startswith("this run contradicts")

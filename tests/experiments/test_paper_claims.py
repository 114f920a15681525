"""The papers' conclusions at full length (tox -e slow): every claim of traceflow.report.claims
but Park & Tuan's (TCP-MT's rows are asserted one by one in test_tcpmt_paper.py, owned with the
TCP-MT code), judged on the comparison rows of `traceflow reproduce` (run_experiment, full
length, two workers) exactly as the closing table (`traceflow reproduce --claims`) judges them.

A claim that holds is asserted to hold. One that does not is a strict xfail whose reason gives
our numbers beside the paper's and what ns-2 shows on the same set-up (the referee tests named in
the claim), so a change that makes it hold, or breaks one that holds, fails here.
"""
import functools
import tempfile
from pathlib import Path

import pytest

from traceflow.cli.reproduce import run_experiment
from traceflow.report.claims import CLAIMS, PT, verdict

# claim number -> what we measured (full length) and what ns-2 shows on the same set-up
FAILING = {}


@functools.lru_cache(maxsize=None)
def comparison(name):
    with tempfile.TemporaryDirectory() as tmp:
        return run_experiment(name, Path(tmp) / name, workers=2)["comparison"]


def _params():
    for claim in CLAIMS:
        if claim.paper != PT:
            why = FAILING.get(claim.number)
            marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
            yield pytest.param(claim, marks=marks, id=f"claim {claim.number}: {claim.source}")


pytestmark = pytest.mark.slow


@pytest.mark.parametrize("claim", list(_params()))
def test_claim(claim):
    v = verdict(claim, {e: comparison(e) for e in claim.experiments})
    off = [(r["quantity"], r["paper"], r["ours"]) for r in v["rows"] if r["agree"] is not True]
    assert v["holds"] is True, (claim.headline, off, v["missing"])

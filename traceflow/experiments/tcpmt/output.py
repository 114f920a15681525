"""Outputs of a TCP-MT experiment: figures and the result record."""
from __future__ import annotations

from traceflow.experiments.common import experiment as _exp


def figure(nrows=1, ncols=1, **kw):
    from traceflow.experiments.common import figure as _figure

    return _figure(nrows, ncols, squeeze=False, **kw)


def save(fig, out_dir, name):
    from traceflow.experiments.common import save_fig

    fig.tight_layout()
    return save_fig(fig, out_dir, name)


def result(spec, figures, tables, comparison, text):
    exp = _exp(spec)
    return {"title": exp["title"], "reproduces": exp["reproduces"], "figures": figures,
            "tables": tables, "comparison": comparison, "text": text}

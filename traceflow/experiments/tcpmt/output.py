"""Outputs of a TCP-MT experiment: figures and the result record."""
from __future__ import annotations

from traceflow.experiments.common import experiment as _exp
from traceflow.experiments.tcpmt.calibration import describe


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


def run_note(df, cal):
    """The result text's note on a results frame's runs: their link utilization range and the
    calibrated backgrounds."""
    return (f"utilization {df['link_utilization'].min():.3f}-{df['link_utilization'].max():.3f}; "
            f"background {describe(cal)}")

"""Park & Tuan (2000), "Performance evaluation of multiple time scale TCP": the experiments.

Each runner takes a parsed ``replays/tcpmt_*.toml`` (``spec``): an ``[experiment]`` table (title,
reproduces, runner, the paper's numbers and claims, ``duration`` / ``quick_duration``, the
calibration length and the experiment's own parameters) naming the base scenario
``tcpmt_base.toml`` (sec. 5.1, every setting derived there). Modules: :mod:`.setup` (the base
scenario and its variants), :mod:`.calibration` (the background's load), :mod:`.batch` (runs and
their records), :mod:`.measures` (reliable throughput, per-run columns), :mod:`.claims` (the
paper's sentences as shape / order / ratio tests), :mod:`.output` (figures, result record); one
module per group of figures: :mod:`.levels` (Fig. 1), :mod:`.threshold` (Figs. 6, 7),
:mod:`.gain` (Figs. 8-10), :mod:`.metacontrol` (Figs. 11, 12), :mod:`.tables` (Tables II, III).

Common method: reliable throughput Lambda of a measured connection = unique payload delivered in
order over the run; gain nu = Lambda_TCP-MT / Lambda_TCP - 1 on the same background sample path
(same seed), with several seeds the gain of the summed throughputs. The plain-TCP baseline carries
SSC in ``mode = "off"`` (observes only; bit for bit the plain flavor) so its per-T_L throughput is
traced like TCP-MT's. Every results table carries each run's link utilization and background load.
"""
from traceflow.experiments.tcpmt.gain import fig8, fig9, fig10
from traceflow.experiments.tcpmt.levels import fig1
from traceflow.experiments.tcpmt.metacontrol import fig11, fig12
from traceflow.experiments.tcpmt.tables import table2, table3
from traceflow.experiments.tcpmt.threshold import fig6, fig7

__all__ = ["fig1", "fig6", "fig7", "fig8", "fig9", "fig10", "fig11", "fig12", "table2", "table3"]

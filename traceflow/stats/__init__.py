"""Stage 3 of the pipeline: statistics of a series or a sample.

Link series (:mod:`.series`), heavy tails (:mod:`.tails`), long-range dependence (:mod:`.hurst`,
exact fGn in :mod:`.fgn`), dispersion and c.o.v. (:mod:`.dispersion`), Park & Tuan's conditional
levels (:mod:`.levels`) and fairness indices (:mod:`.fairness`). May import :mod:`traceflow.pcap`
(``series`` bins packets) and the shared helpers; never flows, models, replay or report.
"""

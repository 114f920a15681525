"""Stage 4 of the pipeline: models of the traffic.

The model file (:mod:`.model`: schema, load/save, sampling), fitting it to a capture (:mod:`.fit`),
and the papers' analytic models: the burstiness paper's stochastic Reno c.o.v. (:mod:`.reno_cov`)
and CAPM's matched filter, response coefficients and fair drop probabilities (:mod:`.capm`).
May import :mod:`traceflow.pcap`, :mod:`traceflow.flows`, :mod:`traceflow.stats` and the shared
helpers; never replay, report or experiments.
"""

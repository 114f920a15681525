"""Analytic traffic models (e.g. the burstiness paper's stochastic Reno model)."""

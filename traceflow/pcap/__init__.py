"""Capture readers: fast Cython decoder and dpkt reference; Arrow packet schema."""

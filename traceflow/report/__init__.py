"""Figures (matplotlib) and HTML reports."""

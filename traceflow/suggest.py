"""Suggestions for a mistyped name: ``no such command 'flow' (did you mean 'flows'?)``."""
import difflib


def did_you_mean(word, choices):
    """`` (did you mean 'X'?)`` for the choice closest to ``word`` (difflib's ratio at least
    0.6), or ``""`` when none is close."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _round_125(ns):
    """The largest 1, 2 or 5 x 10^k ns not above ``ns`` (at least 1 µs)."""
    step = 1000
    while step * 10 <= ns:
        step *= 10
    return max(1000, max(m * step for m in (1, 2, 5) if m * step <= max(ns, 1000)))


def shorter_bins(n_bins, bin_ns, points=1000, blocks=10):
    """``--bin B --scales B,...`` for a capture that gave only ``n_bins`` bins of ``bin_ns``:
    B (a 1-2-5 duration) cuts its span into about ``points`` bins (the 1000 samples H's quality
    asks for), and the scales run from B to the longest that still holds ``blocks`` intervals."""
    from traceflow.stats.series import format_duration

    span = n_bins * bin_ns
    short = _round_125(span // points)
    scales, s = [], short
    while s * blocks <= span and len(scales) < 6:
        scales.append(format_duration(s))
        s = _round_125(s * 2.5) if str(s)[0] == "2" else _round_125(s * 2)
    return format_duration(short), scales

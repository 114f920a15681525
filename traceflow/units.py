"""Numbers for people: rates, durations, sizes and timestamps with their units.

Every text and HTML output goes through these, so a rate reads ``87.1 kbit/s`` (not ``87100.0``),
a time ``4.2 ms``, a size ``1.2 MB`` (SI prefixes, powers of 1000), a timestamp
``2024-03-01 12:00:00.250 UTC``, and a value that could not be computed ``n/a`` (never ``None``,
``nan`` or ``{}``). Machine-readable outputs (``--json``, tables) keep plain SI numbers.
"""
import datetime
import math

NA = "n/a"
_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def missing(value):
    """True for None and non-finite floats (what prints as ``n/a``)."""
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def number(value, digits=3):
    """``value`` to ``digits`` significant digits (integers as they are, with thousands
    separators)."""
    if missing(value):
        return NA
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.{digits}g}"


def _si(value, unit, digits):
    if missing(value):
        return NA
    for factor, prefix in _PREFIXES:
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}"


def rate(bps, digits=3):
    """A bit rate: ``87.1 kbit/s``, ``1.51 Mbit/s``."""
    return _si(bps, "bit/s", digits)


def size(nbytes, digits=3):
    """A byte count: ``512 B``, ``1.2 MB``."""
    return _si(nbytes, "B", digits)


def duration(seconds, digits=3):
    """A time interval: ``850 µs``, ``4.2 ms``, ``1.5 s``, ``12.5 min``, ``3.1 h``."""
    if missing(seconds):
        return NA
    s = abs(seconds)
    if s == 0:
        return "0 s"
    for limit, factor, unit in ((1e-6, 1e9, "ns"), (1e-3, 1e6, "µs"), (1.0, 1e3, "ms"),
                                (600.0, 1.0, "s"), (7200.0, 1 / 60, "min")):
        if s < limit:
            return f"{seconds * factor:.{digits}g} {unit}"
    return f"{seconds / 3600:.{digits}g} h"


def timestamp(ns):
    """An absolute time (integer ns since the epoch, or a datetime) in UTC, labelled:
    ``2024-03-01 12:00:00.250000 UTC``."""
    if ns is None:
        return NA
    if isinstance(ns, datetime.datetime):
        when = ns if ns.tzinfo else ns.replace(tzinfo=datetime.timezone.utc)
        when = when.astimezone(datetime.timezone.utc)
    else:
        whole, frac = divmod(int(ns), 1_000_000_000)
        when = (datetime.datetime.fromtimestamp(whole, datetime.timezone.utc)
                + datetime.timedelta(microseconds=frac // 1000))
    return when.strftime("%Y-%m-%d %H:%M:%S.%f") + " UTC"


def share(fraction, digits=3):
    """A fraction as a percentage: ``12.5 %``."""
    if missing(fraction):
        return NA
    return f"{100 * fraction:.{digits}g} %"


#: unit name (as the analytics label their values) -> formatter
FORMATTERS = {"bit/s": rate, "s": duration, "B": size, "bytes": size, "%": share}


def value(x, unit=""):
    """``x`` formatted for its ``unit`` (one of :data:`FORMATTERS`, else a number followed by the
    unit)."""
    if missing(x):
        return NA
    if isinstance(x, str):
        return x
    fmt = FORMATTERS.get(unit)
    if fmt is not None:
        return fmt(x)
    text = number(x)
    return f"{text} {unit}" if unit else text

"""Captures merged from several interfaces are often slightly out of timestamp order: put
packets back in order within a bounded window, batch by batch.

:class:`Reorder` holds the packets of the last ``window`` of capture time only (rules in
:mod:`traceflow.pcap._reorder`): a packet moves before earlier-captured packets that are later
by at most the window; a packet more than the window behind its predecessor is a backward clock
step (counted and reported, never reordered across); one earlier than a packet already handed on
is counted as not re-orderable. The batches it returns are in that order; :meth:`Reorder.report`
says what it did.
"""
import polars as pl

from traceflow.pcap._reorder import Reorderer

DEFAULT_WINDOW = 1.0  # seconds


class Reorder:
    """Re-order Polars frames of packets (any columns; ``ts`` as int64 ns or Datetime) within
    ``window`` seconds. ``push(df)`` returns the packets that can be handed on; ``flush()`` the
    rest at the end."""

    def __init__(self, window=DEFAULT_WINDOW):
        self.kernel = Reorderer(int(round(window * 1e9)))
        self.window = window
        self.held = None

    def push(self, df, final=False):
        frame = df if self.held is None else pl.concat([self.held, df])
        ts = frame["ts"]
        if ts.dtype != pl.Int64:
            ts = ts.dt.epoch("ns")
        n_held = 0 if self.held is None else self.held.height
        released, held = self.kernel.order(ts.to_numpy(), n_held, final)
        self.held = frame[held] if held.size else None
        return frame[released]

    def flush(self):
        if self.held is None:
            return None
        return self.push(self.held.clear(), final=True)

    def report(self):
        """Counts of what was done: ``packets``, ``reordered`` (moved before earlier-captured
        packets), ``late`` (could not be put in order: earlier than packets already handed on),
        ``steps`` (backward clock steps beyond the window) and ``largest_step_s``."""
        k = self.kernel
        return {"window_s": self.window, "packets": k.arrivals, "reordered": k.moved,
                "late": k.late, "steps": k.steps, "largest_step_s": k.largest_step / 1e9}


def describe(report):
    """One warning line for a :meth:`Reorder.report`, or None when the timestamps were in
    order."""
    parts = []
    if report["reordered"]:
        parts.append(f"re-ordered {report['reordered']} of {report['packets']} packets "
                     f"(timestamps out of order by at most {report['window_s']:g} s)")
    if report["late"]:
        parts.append(f"{report['late']} could not be re-ordered (out of order by more than the "
                     f"window; raise --reorder-window)")
    if report["steps"]:
        parts.append(f"the clock stepped back {report['steps']} time(s), by up to "
                     f"{report['largest_step_s']:.6g} s (not re-ordered across)")
    return "; ".join(parts) or None

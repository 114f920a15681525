"""The per-packet core of :mod:`traceflow.pcap.reorder`: timestamp order within a bounded window.

Rules, packet by packet in arrival (capture) order, with window W:

1. A packet more than W *behind* the previous arrival is a backward clock step (or the end of a
   lone timestamp far ahead): every held packet is released first, in timestamp order, so
   nothing is moved across the step, and order starts again behind it. Counted in ``steps``
   (and the largest step, ns).
2. The packet joins the held packets, which are kept in timestamp order (arrival order on equal
   timestamps). It is ``moved`` if it goes before a held packet; ``late`` if it is earlier than
   a packet already released (it cannot be put in order any more).
3. Held packets at least W older than the packet are released, in timestamp order.

At the end every held packet is released. Memory: the packets of the last W of capture time.
"""
import numpy as np

from libc.stdint cimport int64_t


cdef class Reorderer:
    """Stateful across calls: ``order`` takes the held packets' timestamps (in held order) and
    then the new arrivals', and says which to release, in which order, and which stay held."""
    cdef readonly int64_t window, moved, late, steps, largest_step, arrivals
    cdef int64_t last_ts, released_max
    cdef bint started, released_any

    def __init__(self, int64_t window_ns):
        self.window = window_ns
        self.moved = self.late = self.steps = self.largest_step = self.arrivals = 0
        self.started = self.released_any = False

    def order(self, const int64_t[:] ts, Py_ssize_t n_held, bint final):
        """``ts``: timestamps (ns) of the held packets (their order as returned last time), then
        of the new arrivals. Returns ``(released, held)``: int64 index arrays into ``ts``, the
        packets to hand on (in order) and those kept (in order)."""
        cdef Py_ssize_t n = ts.shape[0], i, j, head = 0, tail = n_held, pos
        held_arr = np.empty(n, dtype=np.int64)        # held[head:tail], in timestamp order
        out_arr = np.empty(n, dtype=np.int64)
        cdef int64_t[:] held = held_arr
        cdef int64_t[:] out = out_arr
        cdef Py_ssize_t m = 0, flushed = 0    # out[:flushed] went out before a step
        cdef int64_t t
        for i in range(n_held):
            held[i] = i
        for i in range(n_held, n):
            t = ts[i]
            self.arrivals += 1
            if self.started and t < self.last_ts - self.window:      # 1. backward step
                self.steps += 1
                if self.last_ts - t > self.largest_step:
                    self.largest_step = self.last_ts - t
                while head < tail:
                    out[m] = held[head]
                    m += 1
                    head += 1
                flushed = m
                self.released_any = False      # the order starts again after the step
            self.started = True
            self.last_ts = t
            if self.released_any and t < self.released_max:
                self.late += 1
            pos = tail                                              # 2. insert in order
            while pos > head and ts[held[pos - 1]] > t:
                pos -= 1
            if pos < tail:
                self.moved += 1
                for j in range(tail, pos, -1):
                    held[j] = held[j - 1]
            held[pos] = i
            tail += 1
            while head < tail and ts[held[head]] <= t - self.window:  # 3. release
                out[m] = held[head]
                m += 1
                head += 1
            if m > flushed:
                self._note_released(ts[out[m - 1]])
        if final:
            while head < tail:
                out[m] = held[head]
                m += 1
                head += 1
            if m > 0:
                self._note_released(ts[out[m - 1]])
        return out_arr[:m].copy(), held_arr[head:tail].copy()

    cdef void _note_released(self, int64_t last) noexcept nogil:
        # the latest released packet (``last``, ns) is the largest timestamp released so far
        # within a run
        if not self.released_any or last > self.released_max:
            self.released_max = last
            self.released_any = True

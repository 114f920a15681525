"""Prefetch: items made on a thread come out in order; errors and early exits stop the producer."""
import threading
import time

import pytest

from traceflow.scale.prefetch import Prefetch


def test_items_in_order_made_on_another_thread():
    made_on = []

    def produce():
        for i in range(100):
            made_on.append(threading.current_thread().name)
            yield i

    with Prefetch(produce(), depth=2, name="maker") as items:
        assert list(items) == list(range(100))
    assert set(made_on) == {"maker"}


def test_a_producer_error_comes_after_the_items_made_before_it():
    def produce():
        yield 1
        yield 2
        raise ValueError("bad record 3")

    got = []
    with pytest.raises(ValueError, match="bad record 3"):
        with Prefetch(produce()) as items:
            for item in items:
                got.append(item)
    assert got == [1, 2]


def test_leaving_early_stops_the_producer_and_closes_it():
    state = {"made": 0, "closed": False}

    def produce():
        try:
            while True:
                state["made"] += 1
                yield state["made"]
        finally:
            state["closed"] = True

    with pytest.raises(KeyboardInterrupt):
        with Prefetch(produce(), depth=2) as items:
            for item in items:
                if item == 3:
                    raise KeyboardInterrupt
    made = state["made"]
    assert state["closed"] and made <= 3 + 2 + 1     # at most depth items ahead, plus one
    time.sleep(0.05)
    assert state["made"] == made                     # nothing made after the exit


def test_iterating_outside_the_with_block_is_refused():
    with pytest.raises(RuntimeError, match="inside its with block"):
        list(Prefetch(iter([1, 2])))

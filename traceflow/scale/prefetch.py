"""Making the next items of an iterator on a thread while the caller works on the last one.

The streaming passes (``flows``, ``rtt``, ``fit``) read a capture batch by batch: decode, convert
to a Polars frame and prepare the kernels' columns, then split connections and reduce them. The
decoder and Polars run without the GIL, so on a second core the next batch is made while the
current one is consumed. Items come out in the producer's order, so results do not change.
"""
import queue
import threading

_END = object()


class Prefetch:
    """Iterate ``items`` (an iterable; its iteration, including any work its generator does, runs
    on a thread of its own) at most ``depth`` items ahead of the consumer.

    Use as a context manager: leaving it (normally, on an error or on Ctrl-C) stops the
    producer after the item it is making and waits for it. An exception raised by the producer
    is raised to the consumer, in order, after the items made before it."""

    def __init__(self, items, depth=1, name="prefetch"):
        self._items = items
        self._queue = queue.Queue(depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._started = False

    def _put(self, item):
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self):
        try:
            for item in self._items:
                if not self._put((item, None)):
                    return
        except BaseException as exc:  # handed to the consumer's thread
            self._put((_END, exc))
            return
        self._put((_END, None))

    def __enter__(self):
        self._thread.start()
        self._started = True
        return self

    def __iter__(self):
        if not self._started:
            raise RuntimeError("Prefetch is iterated inside its with block")
        while True:
            item, error = self._queue.get()
            if item is _END:
                if error is not None:
                    raise error
                return
            yield item

    def __exit__(self, *exc):
        self._stop.set()
        while self._thread.is_alive():
            try:                      # unblock a producer waiting on a full queue
                self._queue.get(timeout=0.05)
            except queue.Empty:
                pass
        self._thread.join()
        close = getattr(self._items, "close", None)
        if close is not None:         # a generator stopped early releases its file now
            close()
        return False

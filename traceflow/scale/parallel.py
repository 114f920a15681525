"""Map independent tasks over a local process pool or a Dask cluster.

Independent work (sweep cells, replications, capture files) goes through one of two executors:

* ``"local"`` (default): a :class:`concurrent.futures.ProcessPoolExecutor` with the ``spawn``
  start method on this machine; ``workers=1`` runs the tasks inline in this process.
* ``"dask"``: ``distributed.Client(scheduler)`` for a running cluster (``tcp://host:8786``), or a
  ``distributed.LocalCluster`` of ``workers`` single-threaded processes when no address is given.

Task functions must be importable top-level functions (they are pickled by reference) and their
items and results picklable. A task that raises is retried ``retries`` times. A worker process that
dies takes its tasks with it; they are resubmitted (the local pool is rebuilt, Dask reschedules
them by itself), and a task fails only after three such deaths. Results never depend on which worker ran a task or in which order tasks finished.
"""
import contextlib
import dataclasses
import glob
import logging
import multiprocessing
import os
import re
import signal
import sys
import traceback
import uuid
import warnings
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

import click

from traceflow.errors import TraceflowError, TraceflowWarning, warn
from traceflow.lifeline import die_with_parent

EXECUTORS = ("local", "dask")
#: a task is failed after this many worker-process deaths while it ran (Dask's allowed-failures)
ALLOWED_CRASHES = 3


@dataclass(frozen=True)
class Outcome:
    """The end of one task: ``value`` on success, else ``error`` (``"Type: message"``)."""

    index: int
    value: object = None
    error: str | None = None
    traceback: str | None = None
    attempts: int = 1
    user_error: bool = False  # a TraceflowError: ``error`` is its one-line message as is

    @property
    def ok(self):
        return self.error is None


class TaskError(TraceflowError):
    """A task still failed after its retries; ``outcome`` holds the error and its traceback."""

    exit_code = 1

    def __init__(self, outcome, label=None):
        self.outcome = outcome
        what = f"{label} task" if label else "task"
        super().__init__(f"{what} {outcome.index} failed after {outcome.attempts} attempt(s): "
                         f"{outcome.error}")


def default_workers():
    """Number of CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def check_executor(executor, workers=None, scheduler=None):
    """Validate executor options; raise :class:`TraceflowError` for bad ones."""
    if executor not in EXECUTORS:
        raise TraceflowError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    if workers is not None and workers < 1:
        raise TraceflowError(f"--workers must be at least 1 (got {workers})")
    if scheduler and executor != "dask":
        raise TraceflowError("--scheduler needs --executor dask")
    if executor == "dask":
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise TraceflowError("--executor dask needs Dask: pip install 'traceflow[dask]'") \
                from None


def progress_bar(total, *, label=None, enabled=True, done=0):
    """A click progress bar on stderr (tasks done / total, ETA); a no-op when disabled or when
    stderr is not a terminal (logs and CI output stay clean)."""
    if not (enabled and sys.stderr.isatty()):
        return contextlib.nullcontext(_NoBar())
    bar = click.progressbar(length=total, label=label or "tasks", file=sys.stderr,
                            show_eta=True, show_pos=True)
    if done:
        bar.update(done)
    return bar


class _NoBar:
    def update(self, n):
        pass


def iter_tasks(fn, items, *, executor="local", workers=None, scheduler=None, retries=0,
               label=None, progress=True, done=0, total=None, pool=False):
    """Run ``fn(item)`` for every item; yield an :class:`Outcome` per task as each finishes.

    Failures do not stop the other tasks: a task that still raises after ``retries`` retries is
    yielded with ``error`` set. ``done``/``total`` let the progress bar count work finished in an
    earlier run (a resumed sweep). ``label`` names the tasks in the progress bar and in Dask keys.
    The warnings of tasks run in other processes are issued again here, each text once (tasks
    that read the same input, such as the hash partitions of one capture, warn alike).
    ``pool``: run the tasks in worker processes even when there is one worker or one task.
    """
    items = list(items)
    check_executor(executor, workers, scheduler)
    total = len(items) + done if total is None else total
    remote = True
    if executor == "dask":
        outcomes = _iter_dask(_Warned(fn), items, workers, scheduler, retries, label)
    elif not pool and ((workers or default_workers()) == 1 or len(items) <= 1):
        outcomes, remote = _iter_inline(fn, items, retries), False
    else:
        outcomes = _iter_pool(_Warned(fn), items, workers or default_workers(), retries)
    warned = set()
    with progress_bar(total, label=label, enabled=progress and bool(items), done=done) as bar:
        for outcome in outcomes:
            bar.update(1)
            if remote and outcome.ok:
                value, messages = outcome.value
                for message in messages:
                    if message not in warned:
                        warned.add(message)
                        warn(message)
                outcome = dataclasses.replace(outcome, value=value)
            yield outcome


@dataclass(frozen=True)
class _Warned:
    """``fn`` run in a worker process: returns ``(value, messages)`` with the messages of the
    :class:`~traceflow.errors.TraceflowWarning` s it issued, which the parent issues again (a
    worker's stderr is not the user's one-line channel)."""

    fn: object

    def __call__(self, item):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TraceflowWarning)
            value = self.fn(item)
        return value, [str(w.message) for w in caught if issubclass(w.category, TraceflowWarning)]


def map_tasks(fn, items, *, executor="local", workers=None, scheduler=None, retries=0,
              label=None, progress=True, user_errors=False, first_here=False):
    """``[fn(item) for item in items]`` on the chosen executor; results in the order of ``items``.

    Raises :class:`TaskError` if a task still fails after ``retries`` retries (the other tasks are
    cancelled); with ``user_errors``, a task's own :class:`TraceflowError` (a bad input) is
    raised as its one-line message, as the task run in this process would (for the passes one
    command splits over workers). ``first_here``: with the local executor and several workers,
    the first task runs in this process while the others run in ``workers`` - 1 worker
    processes (one process fewer to start, and the first result needs no copy).
    """
    items = list(items)
    workers = workers or (default_workers() if executor == "local" else None)
    if first_here and executor == "local" and workers > 1 and len(items) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as thread:   # it only waits for the worker processes
            rest = thread.submit(_map_outcomes, fn, items[1:], dict(
                workers=workers - 1, retries=retries, label=label, progress=False, pool=True),
                                 user_errors, label, 1)
            first = fn(items[0])
            return [first, *rest.result()]
    return _map_outcomes(fn, items, dict(executor=executor, workers=workers,
                                         scheduler=scheduler, retries=retries, label=label,
                                         progress=progress), user_errors, label)


def _map_outcomes(fn, items, options, user_errors, label, offset=0):
    """:func:`map_tasks` 's results from :func:`iter_tasks` (``options``); a failed task's
    index is reported ``offset`` further on."""
    results = [None] * len(items)
    outcomes = iter_tasks(fn, items, **options)
    with contextlib.closing(outcomes):
        for outcome in outcomes:
            if not outcome.ok:
                if user_errors and outcome.user_error:
                    raise TraceflowError(outcome.error)
                raise TaskError(dataclasses.replace(outcome, index=outcome.index + offset),
                                label)
            results[outcome.index] = outcome.value
    return results


def run_summary(scenario):
    """Run one simulation (a scenario dict, ``--set``-style overrides already applied); its summary.

    Captures the scenario asks for go to a temporary directory removed afterwards: a sweep keeps
    summaries, not per-run files."""
    import tempfile

    from traceflow import sim

    with tempfile.TemporaryDirectory(prefix="traceflow-run-") as pcap_dir:
        return sim.run(scenario, pcap_dir=pcap_dir).summary


def map_runs(scenarios, **options):
    """Simulate every scenario dict on the chosen executor; the run summaries in input order.

    Keyword options are those of :func:`map_tasks` (``executor``, ``workers``, ``scheduler``,
    ``retries``, ``label``, ``progress``).
    """
    options.setdefault("label", "runs")
    return map_tasks(run_summary, scenarios, **options)


# -- executors ---------------------------------------------------------------------------------

def _failure(index, exc, attempts):
    tb = "".join(traceback.format_exception(exc))
    if isinstance(exc, TraceflowError):
        return Outcome(index, error=str(exc), traceback=tb, attempts=attempts, user_error=True)
    return Outcome(index, error=f"{type(exc).__name__}: {exc}", traceback=tb, attempts=attempts)


def _iter_inline(fn, items, retries):
    for index, item in enumerate(items):
        for attempt in range(1, retries + 2):
            try:
                value = fn(item)
            except Exception as exc:  # noqa: BLE001 - a task's failure is data for the caller
                if attempt > retries:
                    yield _failure(index, exc, attempt)
            else:
                yield Outcome(index, value, attempts=attempt)
                break


def _init_worker(parent):
    # Ctrl-C belongs to the parent, which stops the pool; workers must not die mid-task and
    # break the pool before the parent has stopped cleanly.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A parent killed outright (SIGKILL) cannot stop its workers: the kernel kills them with it,
    # even mid-simulation with the GIL held.
    die_with_parent(parent)


def _new_pool(workers):
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_worker, initargs=(os.getpid(),))


def _iter_pool(fn, items, workers, retries):
    attempts = [0] * len(items)
    crashes = [0] * len(items)
    pool = _new_pool(min(workers, len(items)))
    futures = {}

    def submit(index):
        attempts[index] += 1
        futures[pool.submit(fn, items[index])] = index

    try:
        for index in range(len(items)):
            submit(index)
        while futures:
            finished, _ = wait(futures, return_when=FIRST_COMPLETED)
            orphans = []
            for future in finished:
                index = futures.pop(future)
                try:
                    value = future.result()
                except BrokenProcessPool as exc:
                    # A worker process died (killed, out of memory): every task still in this
                    # pool is lost; resubmit them to a fresh pool below.
                    orphans.append((index, exc))
                except Exception as exc:  # noqa: BLE001
                    if attempts[index] <= retries:
                        submit(index)
                    else:
                        yield _failure(index, exc, attempts[index])
                else:
                    yield Outcome(index, value, attempts=attempts[index])
            if orphans:
                orphans += [(index, None) for index in futures.values()]
                futures.clear()
                pool.shutdown(wait=True, cancel_futures=True)
                pool = _new_pool(min(workers, len(orphans)))
                for index, exc in orphans:
                    # Which task killed the worker is unknown, so a crash is not counted as a
                    # retry; a task in ALLOWED_CRASHES broken pools is the likely culprit.
                    crashes[index] += exc is not None
                    if crashes[index] >= ALLOWED_CRASHES:
                        yield _failure(index, exc, attempts[index])
                    else:
                        submit(index)
    except KeyboardInterrupt:
        # Stop now, not after the running tasks (a simulation may take minutes). The executor has
        # no public way to stop its workers before Python 3.14 (terminate_workers).
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
        raise
    finally:
        # Drop queued tasks; wait for the (finished or terminated) workers: no zombies.
        pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def shared_dask_cluster(executor, workers=None, scheduler=None):
    """Within the block, every ``executor="dask"`` task map uses one cluster: ``scheduler``, or a
    ``LocalCluster`` started once here (instead of one per map). A no-op for the local executor."""
    if executor != "dask":
        yield
        return
    import dask

    with dask_client(scheduler, workers) as client:
        with dask.config.set({"scheduler-address": client.scheduler.address}):
            yield


@contextlib.contextmanager
def dask_client(scheduler=None, workers=None):
    """A ``distributed.Client`` for ``scheduler``, or for a new ``LocalCluster`` of ``workers``
    single-threaded worker processes when no address is given; closed on exit.

    Without ``scheduler``, Dask's own ``scheduler-address`` setting (environment variable
    ``DASK_SCHEDULER_ADDRESS``, or ``dask.config.set``) is used when set, so a caller can point
    every task map in a block of code at one cluster.
    """
    import dask
    from distributed import Client, LocalCluster

    scheduler = scheduler or dask.config.get("scheduler-address", None)
    with contextlib.ExitStack() as stack:
        if scheduler:
            try:
                client = stack.enter_context(Client(scheduler, timeout="20s"))
            except (OSError, TimeoutError) as exc:
                raise TraceflowError(f"cannot reach Dask scheduler {scheduler}: {exc}") from None
        else:
            cluster = stack.enter_context(LocalCluster(
                n_workers=workers or default_workers(), threads_per_worker=1, processes=True,
                dashboard_address=None, silence_logs=logging.CRITICAL))
            client = stack.enter_context(Client(cluster))
        yield client


def _iter_dask(fn, items, workers, scheduler, retries, label):
    from distributed import as_completed

    with dask_client(scheduler, workers) as client:
        # Explicit unique keys: identical items must still run as distinct tasks, and two
        # sweeps sharing a cluster must not collide.
        tag = f"{label or getattr(fn, '__name__', 'task')}-{uuid.uuid4().hex[:8]}"
        futures = [client.submit(fn, item, key=f"{tag}-{index}", retries=retries, pure=False)
                   for index, item in enumerate(items)]
        position = {future.key: index for index, future in enumerate(futures)}
        try:
            for future in as_completed(futures):
                index = position[future.key]
                try:
                    # Not the status: a result held by a worker that died since is recomputed
                    # by the scheduler, and result() waits for it.
                    value = future.result()
                except Exception as exc:  # noqa: BLE001
                    yield _failure(index, exc, retries + 1)
                else:
                    yield Outcome(index, value)
                future.release()
        finally:
            client.cancel(futures)


# -- many files --------------------------------------------------------------------------------

def expand_paths(inputs, patterns=("*",)):
    """Files named by ``inputs`` (paths, globs, directories searched recursively for ``patterns``),
    sorted and without duplicates. Raises :class:`TraceflowError` when one names nothing."""
    files = []
    for spec in [inputs] if isinstance(inputs, (str, os.PathLike)) else inputs:
        spec = os.fspath(spec)
        path = Path(spec)
        if path.is_dir():
            found = sorted({p for pattern in patterns for p in path.rglob(pattern) if p.is_file()})
        elif glob.has_magic(spec):
            found = sorted(Path(p) for p in glob.glob(spec, recursive=True) if Path(p).is_file())
        elif path.is_file():
            found = [path]
        else:
            raise TraceflowError("no such file or directory", path=spec)
        if not found:
            raise TraceflowError("matches no files", path=spec)
        files += found
    return list(dict.fromkeys(files))


_CHUNK_PART = re.compile(r"^(part-\d{5,}-.+)-c(\d{4,})\.parquet$")


def chunk_parts(path):
    """All parts of the capture ``path`` is a chunk part of (``part-NNNNN-<name>-cKKKK.parquet``
    written by :func:`map_files` with ``split``), in order; ``[path]`` for any other file.
    The chunks of one capture are one packet stream: analyses must read them together."""
    path = Path(path)
    m = _CHUNK_PART.match(path.name)
    if not m:
        return [path]
    return sorted(p for p in path.parent.glob(f"{glob.escape(m.group(1))}-c*.parquet")
                  if _CHUNK_PART.match(p.name) and _CHUNK_PART.match(p.name).group(1) == m.group(1))


def whole_inputs(files):
    """``files`` without the second and later chunk parts of a capture: one entry per capture
    (read the rest with :func:`chunk_parts`)."""
    return [f for f in files if (m := _CHUNK_PART.match(Path(f).name)) is None
            or int(m.group(2)) == 0]


@dataclass(frozen=True)
class _FileTask:
    fn: object
    source: Path
    part: Path | None  # where to write the part; None: return its bytes (the client writes it)
    shown: str  # the part as the user knows it (under their output directory), for errors
    source_column: str | None
    fn_writes: bool
    chunk: object = None  # one piece of a split file, passed to fn as ``chunk=``


def _write_file_part(task):
    """Produce one file's (or chunk's) Parquet part; ``(rows, value returned by fn or None,
    the part's bytes when task.part is None, else None)``."""
    import tempfile

    from traceflow.atomic import atomic_path

    if task.part is not None:
        with atomic_path(task.part, shown=task.shown) as tmp:
            return (*_produce(task, tmp), None)
    # On a Dask worker: the part goes to the client, whose file system may not be this one.
    with tempfile.TemporaryDirectory(prefix="traceflow-part-") as local:
        with atomic_path(Path(local) / "part.parquet", shown=task.shown) as tmp:
            rows, value = _produce(task, tmp)
            return rows, value, tmp.read_bytes()


def _produce(task, tmp):
    import pyarrow.parquet as pq

    kwargs = {} if task.chunk is None else {"chunk": task.chunk}
    if task.fn_writes:
        value = task.fn(task.source, tmp, **kwargs)
        return pq.read_metadata(tmp).num_rows, value
    return _write_tables(task, task.fn(task.source, **kwargs), tmp), None


def _write_tables(task, result, tmp):
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [result] if _is_table(result) else result
    rows = 0
    writer = None
    try:
        for table in tables:
            table = _to_arrow(table)
            if task.source_column:
                table = table.append_column(
                    task.source_column, pa.array([str(task.source)] * table.num_rows, pa.string()))
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema)
            writer.write_table(table)
            rows += table.num_rows
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        raise TraceflowError("produced no table", path=task.source)
    return rows


def _is_table(obj):
    return hasattr(obj, "schema") or type(obj).__name__ in ("DataFrame", "RecordBatch")


def _to_arrow(obj):
    import pyarrow as pa

    if hasattr(obj, "to_arrow"):  # polars.DataFrame
        return obj.to_arrow()
    if isinstance(obj, pa.RecordBatch):
        return pa.Table.from_batches([obj])
    return obj


def map_files(fn, inputs, out_dir, *, patterns=("*",), source_column=None, fn_writes=False,
              split=None, executor="local", workers=None, scheduler=None, retries=0, label="files",
              progress=True):
    """Apply ``fn`` to every file of ``inputs`` and write a partitioned Parquet dataset.

    ``inputs``: paths, globs (``**`` recurses) or directories (searched recursively for
    ``patterns``). ``fn`` is a top-level function (or a :func:`functools.partial` of one):

    * by default ``fn(path)`` returns a table (pyarrow Table/RecordBatch or polars DataFrame) or an
      iterable of tables with one schema, e.g. ``traceflow.pcap.reader.iter_batches`` (streamed into
      the part, so memory stays bounded by one batch);
    * with ``fn_writes=True``, ``fn(path, part_path)`` writes the Parquet part itself (e.g.
      ``partial(ingest_file, fmt="parquet")``) and may return a JSON-able summary.

    Each input file becomes one part ``out_dir/part-NNNNN-<file name>.parquet``; read them all
    lazily with ``polars.scan_parquet(out_dir / "*.parquet")``. With ``split``, a function run here
    on each file (e.g. ``partial(traceflow.pcap.reader.plan_chunks, target_bytes=...)``) that
    returns the file's chunks, a file of several chunks becomes one task and one part
    ``part-NNNNN-<file name>-cKKKK.parquet`` per chunk, ``fn`` getting the keyword ``chunk=``;
    the parts' names sort by file, then chunk. With ``source_column`` set, a
    string column of that name records each row's input file. ``out_dir`` is replaced as a whole
    and only on success, so an error never leaves a partial dataset. On Dask, workers send each
    part's bytes back and this process writes every file, so ``out_dir`` needs no file system
    shared with the workers; the inputs must be readable by the workers at their absolute paths
    here (a shared or replicated data directory).

    Returns ``{"files": [...], "parts": [...], "sources": [index in files of each part], "rows":
    int, "results": [fn's value per part]}``.
    """
    from traceflow.atomic import atomic_dir, atomic_path

    if fn_writes and source_column:
        raise TraceflowError("source_column needs fn to return tables (fn_writes=False)")
    files = expand_paths(inputs, patterns)
    out_dir = Path(out_dir)
    names, chunks, sources = [], [], []
    for i, f in enumerate(files):
        pieces = list(split(f.resolve())) if split else []
        if len(pieces) <= 1:
            names.append(f"part-{i:05d}-{f.name}.parquet")
            chunks.append(None)
            sources.append(i)
            continue
        width = max(4, len(str(len(pieces) - 1)))
        names += [f"part-{i:05d}-{f.name}-c{k:0{width}d}.parquet" for k in range(len(pieces))]
        chunks += pieces
        sources += [i] * len(pieces)
    done = [None] * len(names)
    with atomic_dir(out_dir) as tmp:
        # Dask workers send each part to the client, which writes it: no shared file system.
        tasks = [_FileTask(fn, files[i].resolve(), None if executor == "dask" else
                           (tmp / name).resolve(), str(out_dir / name), source_column, fn_writes,
                           chunk) for i, name, chunk in zip(sources, names, chunks)]
        outcomes = iter_tasks(_write_file_part, tasks, executor=executor, workers=workers,
                              scheduler=scheduler, retries=retries, label=label, progress=progress)
        with contextlib.closing(outcomes):
            for outcome in outcomes:
                if not outcome.ok:
                    if outcome.user_error:  # already names its file
                        raise TraceflowError(outcome.error)
                    raise TraceflowError(outcome.error, path=files[sources[outcome.index]])
                rows, value, data = outcome.value
                if data is not None:
                    name = names[outcome.index]
                    with atomic_path(tmp / name, shown=out_dir / name) as part:
                        part.write_bytes(data)
                done[outcome.index] = rows, value
    return {"files": [str(f) for f in files], "parts": [str(out_dir / n) for n in names],
            "sources": sources, "rows": int(sum(rows for rows, _ in done)),
            "results": [value for _, value in done]}


# -- command-line options ----------------------------------------------------------------------

def executor_options(f):
    """Click options ``--executor``, ``--workers``, ``--scheduler`` (keyword names ``executor``,
    ``workers``, ``scheduler``) for commands that map work through this module."""
    f = click.option("--scheduler", metavar="ADDR", default=None,
                     help="Dask scheduler address (tcp://host:8786); implies --executor dask. "
                          "Without it --executor dask starts a local Dask cluster.")(f)
    f = click.option("--workers", type=click.IntRange(min=1), default=None,
                     help="Worker processes. On one capture (flows, series): default 1; N cuts "
                          "it into N ranges of its records, one per worker. Over many files, "
                          "runs or cells: default one per CPU; 1 runs inline.")(f)
    f = click.option("--executor", type=click.Choice(EXECUTORS), default=None,
                     help="Where tasks run: a local process pool (default) or Dask.")(f)
    return f


def resolve_executor(executor, scheduler):
    """The executor implied by the options: ``--scheduler`` alone means Dask."""
    if executor is None:
        return "dask" if scheduler else "local"
    return executor

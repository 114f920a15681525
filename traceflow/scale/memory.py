"""Giving freed heap memory back to the system between the stages of a long computation.

glibc's malloc returns free memory to the system only from the top of the main heap; what the
decoder, numpy and the reduction threads freed elsewhere (other arenas, holes below live blocks)
stays in the process and adds to the next stage's peak. ``malloc_trim(0)`` releases the free
pages of every arena (as Dask's workers do). On a 16x capture, ``traceflow fit`` held 80 MB
less after its pass.

glibc, and the jemalloc inside Polars, also give threads that allocate arenas of their own.
When one thread makes the batches a pass consumes on another (:mod:`traceflow.scale.prefetch`),
each arena keeps pages the other thread freed; the command-line processes therefore keep to one
arena in each (:func:`one_arena`). On a 16x capture, glibc's alone: ``traceflow fit`` peaked at
462 MB instead of 475-500 MB; jemalloc's then: ``flows`` 330-335 MB instead of 348-355 MB,
``fit`` 450 MB instead of 464 MB.

Arrow's own default pool (mimalloc) keeps the pages of what it freed (the decoder's record
batches, the spool's frames read back): after ``fit``'s pass over a 16x capture, with every
result of the pass deleted, 198 MB stayed resident against 127 MB with Arrow on malloc (and
trimmed); ``fit``'s peak fell from 429-431 to 393-396 MB and ``flows``' on a 4x capture from
279-283 to 250-254 MB, at the same speed within the runs' spread.

Polars configures its jemalloc to decay freed pages to "muzzy" (``MADV_FREE``: the kernel takes
them back only under memory pressure, and until then they count in the process's RSS) after
1 s. The command-line processes purge them instead (``muzzy_decay_ms:0``: ``MADV_DONTNEED``
when the 0.5 s dirty decay ends): after ``fit``'s pass over a 16x capture, with every result of
the pass deleted, 181 MB stayed resident against 214 MB, and ``fit``'s peak on it fell from
369-390 to 353-359 MB, at the same speed (purging at once, ``dirty_decay_ms:0`` too, made
``fit`` half as fast again).
"""
import ctypes
import ctypes.util
import os

#: glibc's mallopt parameter number of the arena limit
_M_ARENA_MAX = -8

try:
    _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    _trim, _mallopt = _libc.malloc_trim, _libc.mallopt
    _trim.argtypes, _trim.restype = [ctypes.c_size_t], ctypes.c_int
    _mallopt.argtypes, _mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
except (OSError, AttributeError):   # not glibc
    _trim = _mallopt = None


def trim_heap():
    """Release the C heap's free pages to the system (glibc; elsewhere nothing)."""
    if _trim is not None:
        _trim(0)


#: the jemalloc options of the command-line processes (see the module docstring)
JEMALLOC_CONF = "narenas:1,muzzy_decay_ms:0"
#: what importing Polars writes to ``_RJEM_MALLOC_CONF``, in front of any value found there, for
#: its own process and every process it starts (``polars/__init__.py``)
_POLARS_JEMALLOC = {"dirty_decay_ms:500", "muzzy_decay_ms:1000", "thp:always",
                    "metadata_thp:always"}


def one_arena():
    """Make the threads started from now on allocate from glibc's main arena (glibc; elsewhere
    nothing), and Polars' jemalloc keep one arena and give back the pages it let decay (if
    Polars is not loaded yet: its allocator reads ``_RJEM_MALLOC_CONF`` once); Arrow allocate
    with malloc (if its default memory pool is not made yet), whose free pages
    :func:`trim_heap` releases.

    A ``_RJEM_MALLOC_CONF`` the user set is kept; one holding only Polars' own defaults was
    exported by a parent process that imported Polars (a benchmark, a notebook), and gets these
    options after them: kept as found, ``fit`` peaked 20 MB higher (16x dev10m, 324-333 MB)
    when started from the benchmark runner."""
    if _mallopt is not None:
        _mallopt(_M_ARENA_MAX, 1)
    conf = os.environ.get("_RJEM_MALLOC_CONF", "")
    if set(filter(None, conf.split(","))) <= _POLARS_JEMALLOC:
        os.environ["_RJEM_MALLOC_CONF"] = ",".join(filter(None, [conf, JEMALLOC_CONF]))
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


#: address space (bytes) that loading BLAS takes, measured with one BLAS thread: numpy and
#: scipy.linalg each map an OpenBLAS (+80 and +94 MiB), whose working buffer then takes 32 MiB
_BLAS_LIBRARIES = {"numpy": 90 << 20, "scipy.linalg": 100 << 20}
_BLAS_BUFFER = 48 << 20
#: scikit-learn's Gaussian mixtures (its import +97 MiB; their k-means maps two more 32 MiB BLAS
#: buffers, on the first fit of a few hundred points)
_MIXTURE_LIBRARY = 110 << 20
_MIXTURE_BUFFERS = 72 << 20
_ready = set()


def reserve_blas_buffer(mixtures=False):
    """Under an address-space limit (``ulimit -v``), load BLAS and have it map its working
    buffers now, or fail with MemoryError if there is no room for them. ``mixtures``: also
    those of scikit-learn's Gaussian mixtures (``fit``'s RTT classes), by fitting a small one.

    OpenBLAS retries a buffer it cannot map forever, at full CPU: loading scipy hung so at a
    350 MiB limit, and scikit-learn's k-means (the RTT classes of ``fit``) at 644 and 800 MiB.
    Buffers are mapped once and kept, so mapping them first, while there is room, spares the
    later calls; without room even then, the command fails at once instead of hanging."""
    import sys

    from traceflow.errors import memory_limit

    limit = memory_limit()
    wanted = {"blas", "mixtures"} if mixtures else {"blas"}
    if limit is None or wanted <= _ready:
        return
    need = 0
    if "blas" not in _ready:
        need += _BLAS_BUFFER + sum(size for name, size in _BLAS_LIBRARIES.items()
                                   if name not in sys.modules)
    if mixtures:
        need += _MIXTURE_BUFFERS + (_MIXTURE_LIBRARY if "sklearn.mixture" not in sys.modules
                                    else 0)
    used = _address_space()
    if used is None:
        return
    if limit - used < need:
        raise MemoryError("no room to load BLAS" if not mixtures else
                          "no room for BLAS and the buffers of the RTT classes' mixtures")
    import numpy as np
    from scipy.linalg import blas

    blas.dgemm(1.0, np.ones((2, 2)), np.ones((2, 2)))
    _ready.add("blas")
    if mixtures:
        from sklearn.mixture import GaussianMixture

        z = np.random.default_rng(0).normal(size=(300, 1))
        GaussianMixture(n_components=3, random_state=0).fit(z)
        _ready.add("mixtures")


def _address_space():
    """This process's mapped address space (bytes, VmSize), or None where unknown."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) << 10 for line in f if line.startswith("VmSize:"))
    except (OSError, StopIteration):
        return None

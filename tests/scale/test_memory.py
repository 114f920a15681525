"""The command-line processes' allocator options (traceflow.scale.memory.one_arena)."""
import os
import subprocess
import sys

import pytest

from traceflow.scale.memory import JEMALLOC_CONF, one_arena

POLARS = "dirty_decay_ms:500,muzzy_decay_ms:1000"


@pytest.mark.parametrize("found, wanted", [
    (None, JEMALLOC_CONF),
    # exported by a parent that imported Polars (twice: a Polars child of a Polars parent)
    (POLARS, f"{POLARS},{JEMALLOC_CONF}"),
    (f"{POLARS},{POLARS}", f"{POLARS},{POLARS},{JEMALLOC_CONF}"),
    # a parent that ran one_arena, then imported Polars: already there
    (f"{POLARS},{JEMALLOC_CONF}", f"{POLARS},{JEMALLOC_CONF}"),
    # the user's choice is kept
    ("narenas:4", "narenas:4"),
    (f"{POLARS},narenas:4", f"{POLARS},narenas:4"),
])
def test_jemalloc_options_unless_the_user_chose(found, wanted, monkeypatch):
    from traceflow.scale import memory

    # this process keeps its own arenas and Arrow pool
    monkeypatch.setattr(memory, "_mallopt", None)
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", os.environ.get("ARROW_DEFAULT_MEMORY_POOL",
                                                                   "system"))
    if found is None:
        monkeypatch.delenv("_RJEM_MALLOC_CONF", raising=False)
    else:
        monkeypatch.setenv("_RJEM_MALLOC_CONF", found)
    one_arena()
    assert os.environ["_RJEM_MALLOC_CONF"] == wanted


def test_a_child_of_a_polars_process_gets_the_options():
    """Polars' own import in the child reads them last (later options win in jemalloc)."""
    code = ("from traceflow.scale.memory import one_arena; one_arena(); import polars; "
            "print(polars.jemalloc_conf)")
    env = dict(os.environ, _RJEM_MALLOC_CONF=POLARS)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out.endswith("," + JEMALLOC_CONF)

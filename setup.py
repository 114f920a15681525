"""Build the Cython kernels.

Every ``.pyx`` under ``traceflow/`` and ``sim/`` becomes one extension module; ``sim/`` installs as
``traceflow.sim`` (see ``package_dir`` in setup.cfg).  The simulator is one extension
(``sim/_sim.pyx``) that ``include``s its ``.pxi`` parts: Cython cimports across a renamed package
directory would resolve to the wrong module names, and one compile unit lets the C compiler inline
the event loop.
"""
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

ROOTS = {"traceflow": "traceflow", "sim": "traceflow.sim"}


def extensions():
    exts = []
    for root, package in ROOTS.items():
        for pyx in sorted(Path(root).rglob("*.pyx")):
            rel = pyx.relative_to(root).with_suffix("")
            name = ".".join([package, *rel.parts])
            exts.append(Extension(name, [str(pyx)], include_dirs=[numpy.get_include()],
                                  define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                                  extra_compile_args=["-O3"]))
    return cythonize(exts, language_level=3, compiler_directives={
        "boundscheck": False, "wraparound": False, "cdivision": True, "initializedcheck": False})


setup(ext_modules=extensions())

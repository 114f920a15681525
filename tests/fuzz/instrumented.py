"""Build traceflow's Cython extensions with extra compiler flags (sanitizers, fuzzer coverage)
into a directory of their own, and load them in place of the installed ones.

The installed package is left alone: ``load(out_dir)`` registers the rebuilt modules in
``sys.modules`` under their real names before anything imports them, so the rest of traceflow
(pure Python) runs unchanged around instrumented native code.
"""
import importlib.util
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: module name -> .pyx source
SOURCES = {
    "traceflow.pcap._decode": REPO / "traceflow" / "pcap" / "_decode.pyx",
    "traceflow.flows.flowsplit": REPO / "traceflow" / "flows" / "flowsplit.pyx",
    "traceflow.sim._sim": REPO / "sim" / "_sim.pyx",
}


def build(out_dir, *, cc, cflags, ldflags, modules=tuple(SOURCES)):
    """Compile ``modules`` with compiler ``cc`` and the given flags into ``out_dir``."""
    import numpy
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    exts = [Extension(name, [str(SOURCES[name])], include_dirs=[numpy.get_include()],
                      define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                      extra_compile_args=list(cflags),
                      # "cc -shared" does not link the C++ runtime a C++ module needs
                      extra_link_args=list(ldflags) + (["-lstdc++"] if _is_cpp(name) else []))
            for name in modules]
    exts = cythonize(exts, language_level=3, build_dir=str(out_dir / "c"), quiet=True,
                     compiler_directives={"boundscheck": False, "wraparound": False,
                                          "cdivision": True, "initializedcheck": False})
    os.environ["CC"] = cc
    os.environ["LDSHARED"] = f"{cc} -shared"
    cmd = build_ext(Distribution({"ext_modules": exts}))
    cmd.build_lib = str(out_dir / "lib")
    cmd.build_temp = str(out_dir / "tmp")
    cmd.ensure_finalized()
    cmd.run()
    return {name: Path(cmd.get_ext_fullpath(name)) for name in modules}


def _is_cpp(name):
    """The module's source asks Cython for C++ (``# distutils: language = c++``)."""
    with open(SOURCES[name]) as f:
        return "language = c++" in f.readline()


def load(out_dir, modules=tuple(SOURCES)):
    """Import the rebuilt ``modules`` from ``out_dir`` under their real names."""
    lib = Path(out_dir) / "lib"
    for name in modules:
        parent, _, leaf = name.rpartition(".")
        package = importlib.import_module(parent)  # its __init__ must not import ``leaf``
        folder = lib.joinpath(*parent.split("."))
        path = next(p for p in folder.iterdir() if p.name.startswith(f"{leaf}.")
                    and p.suffix == ".so")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        setattr(package, leaf, module)

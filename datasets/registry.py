"""The dataset registry: ``registry.toml`` next to this module.

Each ``[[dataset]]`` has ``name``, ``description``, ``provenance``, ``licence``, ``bundled`` (true
for the small samples shipped in ``samples/``), ``location`` (the folder holding the files: for
bundled datasets relative to this package, for external ones relative to the repository root, e.g.
``../shared/datasets/testbed/alpha1.35``) and ``files``: a list of ``{path, sha256, size}``
(``size`` in bytes, ``path`` relative to ``location``).

External datasets are never copied into the package: ``traceflow datasets path NAME`` tells where
they are expected, ``verify`` recomputes every SHA-256 and reports missing files. The environment
variable ``TRACEFLOW_SHARED`` relocates locations that start with ``../shared/``.
"""
from __future__ import annotations

import hashlib
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from traceflow.errors import InputFormatError, TraceflowError

HERE = Path(__file__).resolve().parent
REGISTRY = HERE / "registry.toml"
_REQUIRED = {"name", "description", "provenance", "licence", "bundled", "location", "files"}
_KEYS = _REQUIRED | {"url"}


@dataclass
class DataFile:
    path: str
    sha256: str
    size: int


@dataclass
class Dataset:
    name: str
    description: str
    provenance: str
    licence: str
    bundled: bool
    location: str
    files: list[DataFile] = field(default_factory=list)
    url: str | None = None

    @property
    def root(self) -> Path:
        """The folder that holds (or should hold) the dataset's files."""
        if self.bundled:
            return (HERE / self.location).resolve()
        shared = os.environ.get("TRACEFLOW_SHARED")
        if shared and self.location.startswith("../shared/"):
            return Path(shared) / self.location[len("../shared/"):]
        return (HERE.parent / self.location).resolve()

    def file_path(self, name=None) -> Path:
        """Path of file ``name`` (default: the first file)."""
        if not self.files:
            raise TraceflowError(f"dataset {self.name!r} lists no files")
        if name is None:
            return self.root / self.files[0].path
        for f in self.files:
            if f.path == name or Path(f.path).name == name:
                return self.root / f.path
        raise TraceflowError(f"dataset {self.name!r} has no file {name!r}")

    @property
    def present(self) -> bool:
        return all((self.root / f.path).exists() for f in self.files)


def load_registry(path=REGISTRY) -> list[Dataset]:
    """Parse and validate the registry; malformed entries raise :class:`InputFormatError`."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise InputFormatError(f"invalid TOML: {exc}", path=path) from None
    out = []
    for i, entry in enumerate(data.get("dataset", [])):
        unknown = set(entry) - _KEYS
        if unknown:
            raise InputFormatError(f"dataset #{i}: unknown key {sorted(unknown)[0]!r}", path=path)
        missing = _REQUIRED - set(entry)
        if missing:
            raise InputFormatError(f"dataset #{i}: missing key {sorted(missing)[0]!r}", path=path)
        try:
            files = [DataFile(path=str(f["path"]), sha256=str(f["sha256"]).lower(), size=int(f["size"]))
                     for f in entry["files"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise InputFormatError(f"dataset {entry['name']!r}: bad files entry ({exc})", path=path) from None
        out.append(Dataset(name=entry["name"], description=entry["description"],
                           provenance=entry["provenance"], licence=entry["licence"],
                           bundled=bool(entry["bundled"]), location=entry["location"], files=files,
                           url=entry.get("url")))
    names = [d.name for d in out]
    if len(set(names)) != len(names):
        raise InputFormatError("duplicate dataset names", path=path)
    return out


def get(name, registry=None) -> Dataset:
    for d in registry if registry is not None else load_registry():
        if d.name == name:
            return d
    known = ", ".join(d.name for d in (registry if registry is not None else load_registry()))
    raise TraceflowError(f"unknown dataset {name!r} (known: {known})")


def sha256(path, chunk=1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def verify(dataset: Dataset) -> list[dict]:
    """One row per file: ``status`` is ``ok``, ``missing``, ``size`` (size differs) or ``sha256``."""
    rows = []
    for f in dataset.files:
        p = dataset.root / f.path
        row = {"dataset": dataset.name, "file": f.path, "path": str(p)}
        if not p.exists():
            row["status"] = "missing"
        elif p.stat().st_size != f.size:
            row["status"] = "size"
        else:
            row["status"] = "ok" if sha256(p) == f.sha256 else "sha256"
        rows.append(row)
    return rows

"""How Spark executors get pylog's Python dependencies.

Spark's own answer ("Python Package Management" in its docs) is to pack a
virtual environment, ship it with `spark.archives` and point
`spark.pyspark.python` at the interpreter inside it. pylog packs that archive
itself from the installed distributions instead of calling venv-pack, which
packs only a plain venv (not one with system site-packages, nor a pyenv or
system Python), refuses some editable installs and would pack pyspark's
400 MB of jars, which the executors already have from Spark.

The archive is a venv layout: `bin/python` a symlink to this interpreter's
real executable (so the workers need the same Python at the same path, as
with venv-pack), `pyvenv.cfg` without system site-packages, and under
`lib/pythonX.Y/site-packages` the files of pylog's runtime dependencies and
theirs (pyarrow, pandas, numpy, lz4, zstandard, crc32c, cramjam, ...). pyspark
and py4j are left out: executors take them from Spark. The archive is cached
under ~/.cache/pylog/spark-env, named by a digest of the interpreter and every
packed distribution's version, so a second run does not pack again.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import sys
import tarfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from pylog.core.errors import DataError, UsageError

ENV_ALIAS = "pylog-env"  # the folder the archive unpacks to in each executor's work dir
ENV_PYTHON = f"./{ENV_ALIAS}/bin/python"
SHIP_CHOICES = ("auto", "always", "never")
# Spark brings these to every executor itself
PROVIDED_BY_SPARK = {"pyspark", "py4j", "pyspark-client", "pyspark-connect"}
# pylog's distributions whose requirements (with these extras) the executors need
ROOTS = (("pylog", ("spark",)),)
PACK_FORMAT = 1  # bump when the archive layout changes


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def _requirements(dist: metadata.Distribution, extras: tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
    """(name, extras) of what `dist` requires, with `extras` switched on; requirements
    under other markers (platform, Python version) count when they are installed."""
    out = []
    for req in dist.requires or []:
        spec, _, marker = req.partition(";")
        m = _EXTRA_MARKER.search(marker)
        if m and _norm(m.group(1)) not in {_norm(e) for e in extras}:
            continue
        n = _REQ_NAME.match(spec)
        if n:
            sub = tuple(x.strip() for x in (n.group(2) or "").split(",") if x.strip())
            out.append((n.group(1), sub))
    return out


def dependency_closure(roots=ROOTS, skip=PROVIDED_BY_SPARK) -> list[metadata.Distribution]:
    """The installed distributions `roots` need, transitively, without the roots and `skip`."""
    seen: dict[str, metadata.Distribution] = {}
    todo: list[tuple[str, tuple[str, ...]]] = []
    for name, extras in roots:
        try:
            todo.extend(_requirements(metadata.distribution(name), extras))
        except metadata.PackageNotFoundError:
            raise DataError(f"{name} is not installed as a distribution: cannot tell its dependencies") from None
    skip = {_norm(s) for s in skip}
    while todo:
        name, extras = todo.pop()
        key = _norm(name)
        if key in skip or key in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # a marker-only requirement for another platform
        seen[key] = dist
        todo.extend(_requirements(dist, extras))
    return [seen[k] for k in sorted(seen)]


def closure_size(dists: list[metadata.Distribution]) -> int:
    """Bytes the distributions' files take on disk."""
    total = 0
    for d in dists:
        for f in d.files or []:
            p = Path(d.locate_file(f))
            if p.is_file():
                total += p.stat().st_size
    return total


@dataclass
class PackedEnv:
    path: str
    size: int
    cached: bool
    seconds: float
    distributions: int


def _interpreter() -> str:
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pylog" / "spark-env"


def env_digest(dists: list[metadata.Distribution]) -> str:
    h = hashlib.sha256(f"{PACK_FORMAT}|{_interpreter()}|{sys.version}".encode())
    for d in dists:
        h.update(f"|{_norm(d.metadata['Name'])}=={d.version}@{d.locate_file('')}".encode())
    return h.hexdigest()[:16]


def pack_environment(directory: str | os.PathLike | None = None) -> PackedEnv:
    """The archive of this interpreter plus pylog's runtime dependencies (cached)."""
    t0 = time.monotonic()
    dists = dependency_closure()
    d = Path(directory) if directory else cache_dir()
    d.mkdir(parents=True, exist_ok=True)
    ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    path = d / f"pylog-env-{ver}-{env_digest(dists)}.tar.gz"
    if path.exists():
        return PackedEnv(str(path), path.stat().st_size, True, time.monotonic() - t0, len(dists))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    python = _interpreter()
    site = f"lib/{ver}/site-packages"
    try:
        with tarfile.open(tmp, "w:gz", compresslevel=1) as tar:
            def add_bytes(name: str, data: bytes) -> None:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                info.mode = 0o644
                info.mtime = int(time.time())
                tar.addfile(info, io.BytesIO(data))

            for name in ("python", "python3", ver):
                link = tarfile.TarInfo(f"bin/{name}")
                link.type = tarfile.SYMTYPE
                link.linkname = python
                link.mode = 0o755
                tar.addfile(link)
            add_bytes("pyvenv.cfg", (f"home = {os.path.dirname(python)}\ninclude-system-site-packages = false\n"
                                     f"version = {'.'.join(map(str, sys.version_info[:3]))}\n").encode())
            added = set()
            for dist in dists:
                for f in dist.files or []:
                    rel = Path(f).as_posix()
                    if rel.startswith("../") or "__pycache__" in rel or rel in added:
                        continue  # scripts outside site-packages; bytecode is rebuilt on the executors
                    src = Path(dist.locate_file(f))
                    if src.is_file():
                        added.add(rel)
                        tar.add(str(src), f"{site}/{rel}", recursive=False)
        os.replace(tmp, path)
    except OSError as e:
        raise DataError(f"cannot pack the Python environment for the executors into {path}: {e}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return PackedEnv(str(path), path.stat().st_size, False, time.monotonic() - t0, len(dists))


@dataclass
class ExecutorPython:
    """Which Python the executors run, and why (said before any task runs)."""

    how: str  # "shipped", "given", "driver", "workers", "server" (Spark Connect)
    python: str
    archive: PackedEnv | None = None
    source: str = ""

    def describe(self) -> str:
        if self.how == "shipped":
            a = self.archive
            state = "cached" if a.cached else f"packed in {a.seconds:.1f} s"
            return (f"executors' Python: the driver's environment shipped with spark.archives "
                    f"({a.path}, {a.size / 1e6:.0f} MB, {state})")
        if self.how == "given":
            return f"executors' Python: {self.python} ({self.source}); it must have pylog's dependencies"
        if self.how == "driver":
            return f"executors' Python: this one ({self.python})"
        if self.how == "server":
            return "executors' Python: the Spark Connect server's (pylog's code uploaded as an artifact)"
        return (f"executors' Python: the workers' own {self.python} (--ship-env never); it must have "
                f"pylog's dependencies (pyarrow, pandas, lz4, zstandard, crc32c, cramjam)")

    def as_dict(self) -> dict:
        d = {"how": self.how, "python": self.python}
        if self.archive:
            d.update(archive=self.archive.path, archive_bytes=self.archive.size, archive_cached=self.archive.cached)
        return d


def choose_executor_python(master: str, ship_env: str, conf: dict[str, str]) -> ExecutorPython:
    """--ship-env auto|always|never against the master and what the user set."""
    if ship_env not in SHIP_CHOICES:
        raise UsageError(f"--ship-env must be one of {', '.join(SHIP_CHOICES)}, not {ship_env!r}")
    given = conf.get("spark.pyspark.python")
    if given:
        return ExecutorPython("given", given, source="--conf spark.pyspark.python")
    local = master.startswith("local")
    env_python = os.environ.get("PYSPARK_PYTHON")
    if ship_env == "always" or (ship_env == "auto" and not local and not env_python):
        return ExecutorPython("shipped", ENV_PYTHON, pack_environment())
    if env_python:
        return ExecutorPython("given", env_python, source="PYSPARK_PYTHON")
    if local:
        return ExecutorPython("driver", sys.executable)
    return ExecutorPython("workers", "python3")


_MISSING = re.compile(r"No module named '([A-Za-z0-9_.]+)'")


def missing_module_hint(message: str) -> str | None:
    """The one-line explanation for an executor that cannot import a dependency."""
    m = _MISSING.search(message)
    if not m:
        return None
    mod = m.group(1)
    return (f"an executor cannot import {mod!r}: its Python lacks pylog's dependencies; run with "
            f"--ship-env always (ship this environment) or --conf spark.pyspark.python=PYTHON (one that has them)")

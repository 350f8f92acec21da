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
and py4j are left out: executors take them from Spark; so are files no import
reads (test suites, headers, sources, `runtime_file`). The archive is cached
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
# the executors' Python of one session, the setting Spark Connect lets a client change
CONNECT_PYTHON_CONF = "spark.sql.execution.pyspark.python"
# Spark brings these to every executor itself
PROVIDED_BY_SPARK = {"pyspark", "py4j", "pyspark-client", "pyspark-connect"}
# pylog's distributions whose requirements (with these extras) the executors need
ROOTS = (("pylog", ("spark",)),)
PACK_FORMAT = 3  # bump when the archive layout changes
# what no import on the executors reads, left out (a third of the files, over a third of the bytes
# that every executor unpacks): test suites, C/C++ headers and sources, Cython sources; pyarrow's
# Arrow Flight and S3 filesystem (51 MB of libraries only `pyarrow.flight` and pyarrow.fs's optional
# S3FileSystem load; pylog imports neither), its C++ test module and the link-time copies of
# libarrow_python (the loader opens the soname, .so.NNNN); and on CPython zstandard's CFFI backend
# (12 MB: CPython imports its C backend)
UNUSED_DIRS = {"tests", "include"}
UNUSED_SUFFIXES = (".pyx", ".pxd", ".pxi", ".h", ".hpp", ".cc", ".cpp", ".c")
_UNUSED_FILE = re.compile(
    r"^pyarrow/(?:libarrow(?:_python)?_flight\.so[.0-9]*|_flight\.[^/]+\.so|libarrow_s3\.so[.0-9]*|_s3fs\.[^/]+\.so"
    r"|_pyarrow_cpp_tests\.[^/]+\.so|libarrow_python(?:_parquet_encryption)?\.so(?:\.\d+\.\d+\.\d+)?)$"
    + (r"|^zstandard/_cffi\.[^/]+\.so$" if sys.implementation.name == "cpython" else ""))


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


def runtime_file(rel: str) -> bool:
    """Whether a distribution's file (its path in site-packages) goes into the archive."""
    parts = rel.split("/")
    return not (rel.startswith("../") or "__pycache__" in parts or UNUSED_DIRS.intersection(parts[:-1])
                or rel.endswith(UNUSED_SUFFIXES) or _UNUSED_FILE.match(rel))


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
                    if rel in added or not runtime_file(rel):
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
    reason: str = ""  # what the probe found (--ship-env auto)

    def describe(self) -> str:
        if self.how == "shipped":
            a = self.archive
            state = "cached" if a.cached else f"packed in {a.seconds:.1f} s"
            via = "as a Spark Connect artifact" if self.source == "connect" else "with spark.archives"
            why = f"; {self.reason}" if self.reason else ""
            return (f"executors' Python: the driver's environment shipped {via} "
                    f"({a.path}, {a.size / 1e6:.0f} MB, {state}{why})")
        if self.how == "given":
            return f"executors' Python: {self.python} ({self.source}); it must have pylog's dependencies"
        if self.how == "driver":
            return f"executors' Python: this one ({self.python})"
        if self.how == "server":
            why = f"; {self.reason}" if self.reason else ""
            return f"executors' Python: the Spark Connect server's (pylog's code uploaded as an artifact{why})"
        if self.reason:
            return f"executors' Python: the workers' own {self.python} ({self.reason})"
        return (f"executors' Python: the workers' own {self.python} (--ship-env never); it must have "
                f"pylog's dependencies (pyarrow, pandas, lz4, zstandard, crc32c, cramjam)")

    def as_dict(self) -> dict:
        d = {"how": self.how, "python": self.python}
        if self.reason:
            d["probe"] = self.reason
        if self.archive:
            d.update(archive=self.archive.path, archive_bytes=self.archive.size, archive_cached=self.archive.cached)
        return d


def choose_executor_python(master: str, ship_env: str, conf: dict[str, str]) -> ExecutorPython:
    """--ship-env auto|always|never against the master and what the user set. "probe" (auto on
    a cluster): ask the executors once (`probe_missing`) and ship only when they lack something."""
    if ship_env not in SHIP_CHOICES:
        raise UsageError(f"--ship-env must be one of {', '.join(SHIP_CHOICES)}, not {ship_env!r}")
    given = conf.get("spark.pyspark.python")
    if given:
        return ExecutorPython("given", given, source="--conf spark.pyspark.python")
    local = master.startswith("local")
    env_python = os.environ.get("PYSPARK_PYTHON")
    if ship_env == "always":
        return ExecutorPython("shipped", ENV_PYTHON, pack_environment())
    if env_python:
        return ExecutorPython("given", env_python, source="PYSPARK_PYTHON")
    if local:
        return ExecutorPython("driver", sys.executable)
    return ExecutorPython("probe" if ship_env == "auto" else "workers", "python3")


def connect_executor_python(ship_env: str, conf: dict[str, str]) -> ExecutorPython:
    """--ship-env and --conf against a Spark Connect server, whose executors' Python only the
    session's spark.sql.execution.pyspark.python can change."""
    if ship_env not in SHIP_CHOICES:
        raise UsageError(f"--ship-env must be one of {', '.join(SHIP_CHOICES)}, not {ship_env!r}")
    given = conf.get(CONNECT_PYTHON_CONF)
    if given:
        return ExecutorPython("given", given, source=f"--conf {CONNECT_PYTHON_CONF}")
    if ship_env == "always":
        return ExecutorPython("shipped", ENV_PYTHON, pack_environment(), source="connect")
    return ExecutorPython("probe" if ship_env == "auto" else "server", "the Spark Connect server's")


def probe_modules() -> list[str]:
    """The top-level modules of pylog's runtime dependencies (what `pack_environment` ships)."""
    wanted = {_norm(d.metadata["Name"]) for d in dependency_closure()}
    mods = set()
    for mod, dists in metadata.packages_distributions().items():
        if mod.isidentifier() and not mod.startswith("_") and any(_norm(d) in wanted for d in dists):
            mods.add(mod)
    return sorted(mods)


def probe_missing(spark, modules: list[str], tasks: int = 4) -> list[str]:
    """The modules of `modules` some executor's Python cannot find: one small job, whose tasks
    need nothing but Python itself (a pickled UDF, defined here so it travels by value)."""
    from pyspark.sql.functions import udf

    wanted = list(modules)

    def missing(_):
        import importlib.util

        out = []
        for m in wanted:
            try:
                if importlib.util.find_spec(m) is None:
                    out.append(m)
            except (ImportError, ValueError):
                out.append(m)
        return ",".join(out)

    probe = udf(missing, "string", useArrow=False)  # an Arrow UDF would need pyarrow to run at all
    try:
        rows = spark.range(0, tasks, 1, tasks).select(probe("id").alias("m")).distinct().collect()
    except Exception as e:
        m = _MISSING.search(str(e))
        if m:  # Spark's own worker needed a module (e.g. pyarrow) before the probe ran: one missing
            return [m.group(1)]
        raise
    return sorted({m for r in rows for m in (r.m or "").split(",") if m})


def set_executor_python(run, chosen: ExecutorPython) -> None:
    """The executors' Python of a running classic application's later jobs: an RDD's comes from
    sc.pythonExec, a DataFrame's from spark.sql.execution.pyspark.python. A shipped one's archive
    is added as `spark.archives` adds it (SparkContext.addArchive: unpacked as ENV_ALIAS in each
    executor's work dir before its next task; Spark adds a path once)."""
    sc = run.spark.sparkContext
    if chosen.how == "shipped":
        try:
            sc.addArchive(f"{chosen.archive.path}#{ENV_ALIAS}")
        except Exception as e:
            msg = " ".join(str(e).split())[:300]
            raise DataError(f"Spark on {run.master} did not take the environment archive: {msg}; "
                            f"see {run.log_file}") from None
    sc.pythonExec = chosen.python
    run.spark.conf.set(CONNECT_PYTHON_CONF, chosen.python)
    run.executor_python = chosen


def repoint_executors(run, settings, say) -> bool:
    """A live classic application serving settings whose executors' Python differs (--ship-env,
    spark.pyspark.python): later jobs run the Python they choose, said as at a start, probed and
    shipped to the same application for auto. False when shipping needs a driver JVM started
    outside the environment folder (session.driver_env_dir), or when the session's Python daemon
    is pylog's for this interpreter (local_daemon, "driver"): then Spark starts anew."""
    chosen = choose_executor_python(settings.master, settings.ship_env, settings.conf)
    if chosen.how in ("shipped", "probe") and not run.env_dir:
        return False
    if getattr(run.executor_python, "how", None) == "driver" and chosen.how != "driver":
        return False
    if chosen.how == "probe":
        set_executor_python(run, ExecutorPython("workers", "python3"))
        chosen = probe_executors(run, settings, say)
        if chosen is None:
            return True
    say(chosen.describe())
    set_executor_python(run, chosen)
    return True


def probe_executors(run, settings, say):
    """--ship-env auto: one probe job on the executors. The ExecutorPython to ship when they lack
    a dependency (after saying so), else None (run's executor_python then says what was found)."""
    say("probing the executors' Python for pylog's dependencies...")
    try:
        missing = probe_missing(run.spark, probe_modules())
    except Exception as e:
        msg = " ".join(str(e).split())[:300]
        raise DataError(f"the executors' Python did not run pylog's probe task on {settings.master}: {msg}; "
                        f"see {run.log_file}") from None
    if missing:
        shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
        return ExecutorPython("shipped", ENV_PYTHON, pack_environment(), source="connect" if run.connect else "",
                              reason=f"the executors lack {shown}")
    run.executor_python = ExecutorPython("server" if run.connect else "workers", run.executor_python.python,
                                         reason="probed: they have pylog's dependencies")
    say(run.executor_python.describe())
    return None


def ship_through_connect(spark, archive: PackedEnv) -> None:
    """Spark Connect's way to `spark.archives`: the archive as a session artifact, unpacked as
    ENV_ALIAS in each executor's session folder, and the session's Python executable set to it."""
    spark.addArtifacts(f"{archive.path}#{ENV_ALIAS}", archive=True)
    spark.conf.set(CONNECT_PYTHON_CONF, ENV_PYTHON)


_MISSING = re.compile(r"No module named '([A-Za-z0-9_.]+)'")


def missing_module_hint(message: str, executor_python: ExecutorPython | None = None, connect: bool = False) -> str | None:
    """The one-line explanation for an executor that cannot import a dependency, suggesting
    only what can help with the Python the executors ran (`executor_python`)."""
    m = _MISSING.search(message)
    if not m:
        return None
    mod = m.group(1)
    name_it = f"--conf {CONNECT_PYTHON_CONF if connect else 'spark.pyspark.python'}=PYTHON (one that has them)"
    how = executor_python.how if executor_python else "workers"
    if how == "shipped":
        return (f"an executor cannot import {mod!r} even from the shipped environment: its bin/python links to "
                f"{_interpreter()}, which every worker must have at that path; or run with {name_it}")
    if how == "given":
        return (f"an executor cannot import {mod!r}: the Python given ({executor_python.python}, "
                f"{executor_python.source}) lacks pylog's dependencies; name one that has them, or leave it "
                f"out and run with --ship-env auto (ship this environment when the executors lack them)")
    return (f"an executor cannot import {mod!r}: its Python lacks pylog's dependencies; run with "
            f"--ship-env auto or always (ship this environment) or {name_it}")

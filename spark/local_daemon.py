"""Spark's Python daemon for a local master whose workers run this interpreter.

Spark starts its Python daemon (`python -m pyspark.daemon`), which forks one
worker per task slot, with its own pyspark.zip, py4j's zip and the spark-core
jar at the front of PYTHONPATH. So the daemon imports pyspark from a zip, and
each worker pylog from the zip the session ships (`addPyFile`): zip imports
compile every module from source, with no bytecode cache. And the first task
of each worker calls `importlib.invalidate_caches()` after adding that zip to
its path, which on Python 3.11 re-reads the whole directory of every archive
on the path once per package imported from it (the jar alone holds thousands
of entries). Together about a second of CPU per worker before its first task
on an idle machine.

When that pyspark.zip holds the installed pyspark's version (`pylog` points
SPARK_HOME at a pip-installed pyspark; session.ensure_spark_home), this daemon takes those archives
off its path (the installed packages hold the same code), so pyspark, py4j and pylog import from the installed
packages with their bytecode, and imports what every worker needs once,
before it forks: pyspark's worker and pylog's task modules (pure Python; no
thread is running when the daemon forks). pyarrow and numpy start threads as
they are imported, so the forked workers import those themselves.
`session._start_classic` names this module in `spark.python.daemon.module` (`session_conf`).
"""
from __future__ import annotations

import os
import re
import sys
import zipfile
from importlib.machinery import PathFinder

# what a pylog task imports; a module that is missing or fails is left to the worker
PRELOAD = ("pyspark.worker", "pylog.core.records.fastpath", "pylog.spark.arrow_values", "pylog.spark.log_rows",
           "pylog.spark.broker_rows", "pylog.spark.export_tables",
           "pylog.spark.datasource")


def _package_dir(name: str, path: list[str]) -> str | None:
    """The folder of package `name` importable from `path`'s folders (no archives), or None."""
    spec = PathFinder.find_spec(name, [p for p in path if os.path.isdir(p or ".")])
    return os.path.dirname(spec.origin) if spec and spec.origin else None


def _zipped_version(archive: str) -> bytes | None:
    try:
        with zipfile.ZipFile(archive) as zf:
            return zf.read("pyspark/version.py")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None


def spark_archives(path: list[str]) -> list[str]:
    """The archives Spark puts on its Python workers' path: pyspark.zip, py4j's source zip and
    the spark-core jar (which holds no Python module in a pip-installed Spark)."""
    return [p for p in path if re.fullmatch(r"pyspark\.zip|py4j-[\w.]+-src\.zip|spark-core_[\w.-]+\.jar",
                                            os.path.basename(p))]


def trim_path(path: list[str]) -> list[str]:
    """`path` without Spark's archives when the folders on it hold the same pyspark (every
    pyspark.zip's version.py equal to the installed one's) and py4j; else `path` unchanged."""
    archives = spark_archives(path)
    home = _package_dir("pyspark", path)
    if not archives or home is None or _package_dir("py4j", path) is None:
        return path
    try:
        with open(os.path.join(home, "version.py"), "rb") as f:
            installed = f.read()
    except OSError:
        return path
    if any(_zipped_version(z) != installed for z in archives if os.path.basename(z) == "pyspark.zip"):
        return path
    return [p for p in path if p not in archives]


def session_conf(master: str, conf: dict, executor_how: str) -> dict[str, str]:
    """What a session's conf gets so its Python workers fork from this daemon: on a local master
    whose executors run this Python (shipenv's "driver"), with pylog installed (the daemon is a
    fresh interpreter) and no daemon of the user's in `conf`."""
    from importlib.metadata import PackageNotFoundError, distribution

    key = "spark.python.daemon.module"
    if not master.startswith("local") or executor_how != "driver" or key in conf:
        return {}
    try:
        distribution("pylog")
    except PackageNotFoundError:
        return {}
    return {key: "pylog.spark.local_daemon"}


def preload() -> None:
    for name in PRELOAD:
        try:
            __import__(name)
        except Exception:  # the worker imports it again and reports a real failure in its task
            pass


def main() -> None:
    sys.path[:] = trim_path(sys.path)
    preload()
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()

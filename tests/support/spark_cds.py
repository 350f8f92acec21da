"""A class-data sharing archive for the Spark JVMs the tests start (drivers, standalone daemons).

A Spark JVM spends most of its start-up loading and verifying some ten thousand classes from
Spark's jars; on 2 shared cores that is 10-30 s per driver. Java's AppCDS (JDK 13+: a dynamic
archive written with -XX:ArchiveClassesAtExit) keeps those classes parsed and verified in a
file the JVM maps at start: a local[2] session then starts two to three times faster.

`cds_option()` makes the archive once per machine (a local[2] session that runs a SQL, an RDD
and an Arrow job, then exits; half a minute) under the temp dir, named by the java binary and
the pyspark version, and returns the option that maps it. A JVM whose class path does not match
the archive's (a different SPARK_CONF_DIR first on it) runs as without it (-Xshare:auto, a
warning in its log): every Spark JVM of the tests uses CONF_DIR as its conf dir. Another xdist
worker making the archive at the same time is not waited for: that worker's JVMs start without
it until it exists. PYLOG_SPARK_CDS=0 turns it off.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# an empty conf dir, the first entry of every test Spark JVM's class path (the archive's too)
CONF_DIR = Path(tempfile.gettempdir()) / f"pylog-spark-conf-{os.getuid()}"

_DUMP = """\
import sys
from pylog.spark import session

run = session.open_session(session.SessionSettings(master="local[2]", app_name="pylog tests cds"))
spark = run.spark
spark.range(100).selectExpr("id % 3 AS k", "id").groupBy("k").count().collect()
spark.sparkContext.parallelize(range(4), 2).map(lambda x: x + 1).collect()
spark.range(4).mapInArrow(lambda it: it, "id long").collect()
proc = getattr(session.live_run().spark.sparkContext._gateway, "proc", None)
session.stop_session()
if proc is not None:
    proc.wait(timeout=600)  # the archive is written as the JVM exits
"""

_option: str | None = None
_tried = False


def _archive_path() -> Path:
    import pyspark

    java = os.path.realpath(shutil.which("java") or "java")
    try:
        stamp = f"{java}|{os.stat(java).st_mtime_ns}|{pyspark.__version__}|{CONF_DIR}"
    except OSError:
        stamp = f"{java}|{pyspark.__version__}|{CONF_DIR}"
    digest = hashlib.sha256(stamp.encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"pylog-spark-cds-{os.getuid()}-{digest}.jsa"


def _dump(path: Path, c1_only: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_REMOTE", "SPARK_CONNECT"))}
    env.update(SPARK_CONF_DIR=str(CONF_DIR), SPARK_SUBMIT_OPTS=f"{c1_only} -XX:ArchiveClassesAtExit={tmp}")
    try:
        subprocess.run([sys.executable, "-c", _DUMP], env=env, cwd=tempfile.gettempdir(), timeout=900,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if tmp.exists() and tmp.stat().st_size > 0:
            os.replace(tmp, path)
    except (OSError, subprocess.SubprocessError):
        pass
    finally:
        tmp.unlink(missing_ok=True)


def cds_option(c1_only: str) -> str | None:
    """-XX:SharedArchiveFile=... for the tests' Spark JVMs, making the archive if none exists
    yet (None: turned off, being made by another worker, or it could not be made)."""
    global _option, _tried
    if _option or os.environ.get("PYLOG_SPARK_CDS") == "0":
        return _option
    CONF_DIR.mkdir(parents=True, exist_ok=True)
    path = _archive_path()
    if not path.exists() and not _tried:
        _tried = True  # one attempt per process: a failed dump is not paid for again
        with open(f"{path}.lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None
            if not path.exists():
                _dump(path, c1_only)
    if path.exists():
        _option = f"-XX:SharedArchiveFile={path}"
    return _option

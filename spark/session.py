"""Starting Spark for pylog's jobs: Java check, SPARK_HOME, log redirection, code shipping.

- Java: Spark 4 needs Java 17 or newer; a missing or old `java` is one line.
- SPARK_HOME: a pip-installed pyspark carries bin/ and jars/ but Spark would
  write executor work dirs into site-packages; when SPARK_HOME is not set we
  point it at a private folder of symlinks (bin, jars, python, sbin) with its
  own work/ dir, which `local-cluster[...]` masters need.
- Logs: the JVM is started with its stdout/stderr going to a log file and a
  log4j2 configuration (driver and executors) appending to the same file, so
  the terminal shows only pylog's progress and summary.
- Code: the `pylog` package is zipped and shipped with `SparkContext.addPyFile`
  (Spark Connect: the artifact API, `addArtifacts(pyfile=True)`), so executors
  whose Python has no pylog installed still run the job.
- Dependencies: executors on a cluster run a Python that may lack pyarrow, lz4,
  ...; `shipenv` packs this environment and ships it with `spark.archives`
  unless the user names the executors' Python (`--ship-env`).
- Spark Connect (`--remote sc://HOST:PORT` or SPARK_REMOTE): no JVM here; the
  server's cluster runs the jobs.

One SparkSession per process (Spark's rule); `open_session` reuses a live one
started for the same master, which lets tests share a session.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from pylog.core.errors import DataError, UsageError

MIN_JAVA = 17
# sub-packages that make up pylog (the pyproject maps them from the repo's top-level folders)
PYLOG_PARTS = ("core", "storage", "spark", "commands", "cli")  # what executor tasks import


@dataclass
class SessionSettings:
    master: str = "local[*]"
    app_name: str = "pylog"
    conf: dict[str, str] = field(default_factory=dict)
    log_file: str | None = None
    ship_env: str = "auto"
    remote: str | None = None  # sc://HOST:PORT: Spark Connect instead of a JVM here

    def key(self) -> tuple:
        """What a live session must match to be reused."""
        return (self.master, self.remote, self.ship_env, self.conf.get("spark.pyspark.python"),
                self.conf.get("spark.jars"), self.conf.get("spark.jars.packages"))


@dataclass
class SparkRun:
    """A live session and what the summary reports about it."""

    spark: object  # pyspark.sql.SparkSession
    master: str
    log_file: str
    startup_seconds: float
    reused: bool
    pyfiles_zip: str
    key: tuple = ()
    executor_python: object = None  # shipenv.ExecutorPython
    connect: bool = False
    env_dir: bool = False  # the driver JVM runs in driver_env_dir: the environment can be shipped later

    @property
    def where(self) -> str:
        return self.master


_live: SparkRun | None = None
# tests set this so one SparkSession per master serves many command invocations
KEEP_SESSION = False


# ---------------------------------------------------------------- Java
def java_version(java: str) -> int | None:
    """Major version of `java` (17 for "17.0.15", 8 for "1.8.0_392"), None if unreadable."""
    try:
        res = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', res.stderr + res.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def find_java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        java = os.path.join(home, "bin", "java")
    else:
        java = shutil.which("java")
    if not java:
        raise DataError(f"Spark needs Java {MIN_JAVA} or newer, but no `java` was found "
                        f"(install a JDK {MIN_JAVA}+ or set JAVA_HOME)")
    v = java_version(java)
    if v is None:
        raise DataError(f"Spark needs Java {MIN_JAVA} or newer, but `{java} -version` did not run")
    if v < MIN_JAVA:
        raise DataError(f"Spark needs Java {MIN_JAVA} or newer, but {java} is Java {v} "
                        f"(install a JDK {MIN_JAVA}+ or set JAVA_HOME)")
    return java


# ---------------------------------------------------------------- SPARK_HOME
def pyspark_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def ensure_spark_home() -> str:
    """SPARK_HOME for spark-submit and local-cluster workers; set in os.environ."""
    home = os.environ.get("SPARK_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "spark-submit")):
        return home
    src = pyspark_dir()
    if not (src / "jars").is_dir() and importlib.util.find_spec("pyspark.sql.connect") is not None \
            and not (src / "bin").is_dir():
        raise DataError("this install has only Spark Connect's client (pyspark-client): give --remote "
                        f"sc://HOST:PORT, or {SPARK_EXTRA_HINT} to run Spark here")
    if not (src / "bin" / "spark-submit").exists() or not (src / "jars").is_dir():
        raise DataError(f"cannot find Spark: {src} has no bin/spark-submit or jars/ (set SPARK_HOME)")
    import pyspark

    home_path = Path(tempfile.gettempdir()) / f"pylog-spark-home-{os.getuid()}-{pyspark.__version__}"
    home_path.mkdir(parents=True, exist_ok=True)
    from pylog.spark.bytecode import python_dir_with_bytecode

    for name in ("bin", "jars", "python", "sbin", "licenses"):
        link = home_path / name
        if name == "python" and python_dir_with_bytecode(home_path, src / name):
            continue
        if (src / name).exists() and not link.exists():
            try:
                link.symlink_to(src / name)
            except FileExistsError:  # a concurrent run made it
                pass
    (home_path / "work").mkdir(exist_ok=True)
    os.environ["SPARK_HOME"] = str(home_path)
    return str(home_path)


# ---------------------------------------------------------------- code shipping
def build_pylog_zip(dest_dir: str | os.PathLike) -> str:
    """Zip the installed pylog package (pylog/core, pylog/storage, ...) for addPyFile, each
    module with the bytecode this interpreter has for it (bytecode.zipped_pyc)."""
    from pylog.spark.bytecode import zipped_pyc

    path = Path(dest_dir) / "pylog.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        # a regular package in the zip: zipimport then needs no namespace-package support
        zf.writestr("pylog/__init__.py", "")
        for part in PYLOG_PARTS:
            mod = importlib.import_module(f"pylog.{part}")
            root = Path(list(mod.__path__)[0])
            for f in sorted(root.rglob("*")):
                if f.is_dir() or "__pycache__" in f.parts or f.suffix in (".pyc", ".pyo"):
                    continue
                name = f"pylog/{part}/{f.relative_to(root).as_posix()}"
                zf.write(f, name)
                pyc = zipped_pyc(f, f.read_bytes()) if f.suffix == ".py" else None
                if pyc:
                    zf.writestr(name[:-3] + ".pyc", pyc)
    return str(path)


# ---------------------------------------------------------------- logging
_LOG4J = """\
# written by pylog: Spark's logging goes to one file, never to the terminal
rootLogger.level = {level}
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {path}
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p [%t] %c{{1}}: %m%n
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = warn
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
"""


def default_log_file(app_name: str) -> str:
    d = Path(tempfile.gettempdir()) / "pylog-spark"
    d.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", app_name) or "pylog"
    return str(d / f"{safe}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log")


def _append_java_option(conf: dict[str, str], key: str, option: str) -> None:
    old = conf.get(key, "").strip()
    conf[key] = f"{old} {option}".strip() if old else option


# ---------------------------------------------------------------- session
def parse_conf(items: tuple[str, ...] | list[str]) -> dict[str, str]:
    conf: dict[str, str] = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise UsageError(f"--conf expects KEY=VALUE, got {item!r}")
        conf[k.strip()] = v
    return conf


def _is_local(master: str) -> bool:
    return master.startswith("local")


SPARK_EXTRA_HINT = "pip install 'pylog[spark]'"


def require_spark(remote: bool = False) -> None:
    """One line saying how to get the Spark extra when its packages are missing."""
    missing = [m for m in ("pyspark", "pyarrow", "pandas") if importlib.util.find_spec(m) is None]
    if remote and not missing:
        missing = [m for m in ("grpc", "google.protobuf") if _spec_missing(m)]
        if missing:
            raise DataError(f"--remote needs Spark Connect's client ({', '.join(missing)} missing): "
                            f"pip install 'pylog[spark-connect]'")
    if missing:
        raise DataError(f"the Spark commands need {', '.join(missing)}, which this install lacks: "
                        f"{SPARK_EXTRA_HINT}" + (" (or 'pylog[spark-connect]' for --remote)" if remote else ""))


def _spec_missing(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True


def remote_url(settings: SessionSettings) -> str | None:
    """--remote, else SPARK_REMOTE (Spark's own variable), else None (a JVM here)."""
    url = settings.remote or os.environ.get("SPARK_REMOTE")
    if url and not url.startswith("sc://"):
        raise UsageError(f"--remote expects sc://HOST:PORT, got {url!r}")
    return url or None


def preflight(settings: SessionSettings) -> None:
    """What must hold to start Spark here (Java, a Spark install), checked before a
    command touches its target; nothing to check for Spark Connect."""
    if remote_url(settings) is None:
        find_java()
        ensure_spark_home()


def open_session(settings: SessionSettings, say=None) -> SparkRun:
    """Start (or reuse) the process's SparkSession for settings (master or remote).
    `say` (a callable taking one line) hears what happens before any task runs."""
    global _live
    say = say or (lambda line: None)
    url = remote_url(settings)
    if url:
        settings = SessionSettings(**{**settings.__dict__, "remote": url, "master": url})
    if _live is not None:
        if _alive(_live) and (_live.key == settings.key() or _repointed(_live, settings, url, say)):
            return SparkRun(_live.spark, _live.master, _live.log_file, 0.0, True, _live.pyfiles_zip, _live.key,
                            _live.executor_python, _live.connect, _live.env_dir)
        stop_session()
    if url:
        return _open_remote(settings, url, say)
    # pyspark marks a process that opened a Spark Connect session (SPARK_CONNECT_MODE_ENABLED, which
    # its children inherit); a session on a master here would be refused as a "remote client"
    os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
    from pylog.spark.shipenv import choose_executor_python, probe_executors, set_executor_python

    t0 = time.monotonic()
    find_java()
    ensure_spark_home()
    executor_python = choose_executor_python(settings.master, settings.ship_env, settings.conf)
    if executor_python.how != "probe":
        say(executor_python.describe())
        return _start_classic(settings, executor_python, say, t0)
    # --ship-env auto on a cluster: ask the executors; when they need the archive, the same
    # application takes it (no second driver and executors to start)
    run = _start_classic(settings, executor_python, say, t0)
    ship = probe_executors(run, settings, say)
    if ship is not None:
        say(ship.describe())
        set_executor_python(run, ship)
        run.startup_seconds = time.monotonic() - t0
    return run


def driver_env_dir(work: Path) -> str:
    """The driver JVM's working folder when the environment is (or may be) shipped: Spark runs the driver's
    own Python workers (a Python data source's planning) with the executors' relative
    ./pylog-env/bin/python too, so here that path leads to this interpreter."""
    from pylog.spark.shipenv import ENV_PYTHON

    exe = work / ENV_PYTHON
    exe.parent.mkdir(parents=True, exist_ok=True)
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    exe.chmod(0o755)
    return str(work)


def _start_classic(settings: SessionSettings, executor_python, say, t0: float) -> SparkRun:
    """A SparkSession in this process's JVM (a new one) whose executors run `executor_python`."""
    global _live
    from pylog.spark.shipenv import ENV_ALIAS

    # a one-machine job has no business on the network: bind to loopback
    if _is_local(settings.master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    say(f"starting Spark ({settings.master})...")

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    log_file = settings.log_file or default_log_file(settings.app_name)
    Path(log_file).parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="pylog-spark-"))
    props = work / "log4j2.properties"
    props.write_text(_LOG4J.format(path=log_file, level="warn"))

    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
    }
    from pylog.spark.local_daemon import session_conf

    conf.update(session_conf(settings.master, settings.conf, executor_python.how))
    conf.update(settings.conf)
    if executor_python.how == "shipped":
        archive = f"{executor_python.archive.path}#{ENV_ALIAS}"
        conf["spark.archives"] = f"{conf['spark.archives']},{archive}" if conf.get("spark.archives") else archive
        conf["spark.pyspark.python"] = executor_python.python
    opt = f"-Dlog4j2.configurationFile=file:{props}"
    _append_java_option(conf, "spark.driver.extraJavaOptions", opt)
    _append_java_option(conf, "spark.executor.extraJavaOptions", opt)
    sconf = SparkConf(loadDefaults=False).setMaster(settings.master).setAppName(settings.app_name)
    for k, v in conf.items():
        sconf.set(k, v)
    with open(log_file, "ab") as lf:
        try:
            # the JVM's own stdout/stderr (launcher warnings, executor output in
            # local mode) go to the log file, never to the user's terminal
            popen = {"stdout": lf, "stderr": lf}
            if executor_python.how in ("shipped", "probe"):  # probe: the archive may come later
                popen["cwd"] = driver_env_dir(work)
            gateway = launch_gateway(sconf, popen_kwargs=popen)
        except Exception as e:
            raise DataError(f"Spark did not start ({e.__class__.__name__}: {e}); see {log_file}") from None
    # PySpark takes the executors' interpreter from PYSPARK_PYTHON when the context starts
    saved = os.environ.get("PYSPARK_PYTHON")
    if executor_python.how in ("shipped", "driver", "given"):
        os.environ["PYSPARK_PYTHON"] = executor_python.python
    try:
        sc = SparkContext(conf=sconf, gateway=gateway)
    except Exception as e:
        msg = " ".join(str(e).split())[:300]
        raise DataError(f"Spark did not start on master {settings.master}: {msg}; see {log_file}") from None
    finally:
        if saved is None:
            os.environ.pop("PYSPARK_PYTHON", None)
        else:
            os.environ["PYSPARK_PYTHON"] = saved
    zip_path = build_pylog_zip(work)
    sc.addPyFile(zip_path)
    spark = SparkSession(sc)
    if "spark.sql.shuffle.partitions" not in settings.conf:
        # Spark's 200 shuffle partitions cost seconds per aggregation on small
        # inputs; two per core keeps every core busy
        spark.conf.set("spark.sql.shuffle.partitions", str(max(2, 2 * sc.defaultParallelism)))
    if (settings.master == "local" or settings.master.startswith("local[")) and executor_python.how == "driver":
        # every pylog job runs Python tasks: a local session is ready when its Python workers are
        # (as a cluster's is once --ship-env auto has probed its executors)
        from pylog.spark.datasource import warm_workers

        warm_workers(sc)
    _live = SparkRun(spark, settings.master, log_file, time.monotonic() - t0, False, zip_path, settings.key(),
                     executor_python, env_dir="cwd" in popen)
    return _live


def _repointed(live: SparkRun, settings: SessionSettings, url: str | None, say) -> bool:
    """Whether the live classic application on the same master (and jars) now serves settings that
    want other executors' Python: the jobs that follow run that Python (shipenv.repoint_executors)."""
    from pylog.spark.shipenv import repoint_executors

    same_app = (settings.master, None, settings.conf.get("spark.jars"), settings.conf.get("spark.jars.packages"))
    if url or live.connect or live.key[:2] + live.key[4:] != same_app or not repoint_executors(live, settings, say):
        return False
    live.key = settings.key()
    return True


def _open_remote(settings: SessionSettings, url: str, say) -> SparkRun:
    """A Spark Connect session; pylog's code goes up with the artifact API."""
    global _live
    from pylog.spark.shipenv import connect_executor_python, probe_executors, ship_through_connect

    t0 = time.monotonic()
    say(f"starting Spark Connect session ({url})...")
    from pyspark.sql import SparkSession

    executor_python = connect_executor_python(settings.ship_env, settings.conf)
    try:
        spark = SparkSession.builder.remote(url).appName(settings.app_name).getOrCreate()
        for k, v in settings.conf.items():
            spark.conf.set(k, v)
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        work = Path(tempfile.mkdtemp(prefix="pylog-spark-"))
        zip_path = build_pylog_zip(work)
        spark.addArtifacts(zip_path, pyfile=True)
    except Exception as e:
        msg = " ".join(str(e).split())[:300]
        raise DataError(f"Spark Connect session at {url} did not start: {msg}") from None
    _live = SparkRun(spark, url, "(on the Spark Connect server)", time.monotonic() - t0, False, zip_path,
                     settings.key(), executor_python, connect=True)
    if executor_python.how == "probe":
        executor_python = probe_executors(_live, settings, say) or executor_python
    if executor_python.how == "shipped":
        try:
            ship_through_connect(spark, executor_python.archive)
        except Exception as e:
            msg = " ".join(str(e).split())[:300]
            raise DataError(f"Spark Connect at {url} did not take the environment archive: {msg}") from None
        _live.executor_python = executor_python
    if executor_python.how != "probe":
        say(executor_python.describe())
    return _live


def _alive(run: SparkRun) -> bool:
    if run.connect:
        return not getattr(run.spark, "is_stopped", False)
    return run.spark.sparkContext._jsc is not None


def stop_session() -> None:
    global _live
    if _live is None:
        return
    if _live.connect:
        try:
            _live.spark.stop()
        finally:
            _live = None
        return
    try:
        _live.spark.stop()
    finally:
        _live = None
        from pyspark import SparkContext

        # let a later open_session launch a fresh JVM (the old one exits with stop())
        gw = SparkContext._gateway
        SparkContext._gateway = None
        SparkContext._jvm = None
        if gw is not None:
            try:
                gw.shutdown()
            except Exception:
                pass
            proc = getattr(gw, "proc", None)
            if proc is not None:
                try:
                    proc.stdin.close()
                    proc.wait(timeout=30)
                except Exception:
                    pass


def pylog_origin(_=None) -> str:
    """Where this Python process imports pylog from (run on executors to check the shipping)."""
    import pylog.core

    return pylog.core.__file__


def live_run() -> SparkRun | None:
    return _live

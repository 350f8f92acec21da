"""Spark fixtures: one SparkSession per master for the whole test run.

`spark_master` is session-scoped and parametrized, so pytest runs a Spark test
on `local[2]` and then on `local-cluster[2,1,1024]` (separate executor JVMs and
Python workers), starting Spark only twice; tests marked `local_only` run on
`local[2]` alone, in the same round. On local-cluster the
executors' Python is a wrapper that hides the editable pylog install, so the
jobs can only run with the code pylog ships through addPyFile.
"""
from __future__ import annotations

import os
import stat
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from support.spark_cds import CONF_DIR, cds_option

MASTERS = ["local[2]", "local-cluster[2,1,1024]"]
LOCAL = MASTERS[0]
# A test that runs on local[2] only, on the same session as the rest of the local[2] round (its
# param sorts with theirs). local-cluster[...] starts executor JVMs and Python workers without pylog
# for each job: one test per job kind runs there (spark-ingest segments and produce, spark-compaction,
# diff --spark, the registry encoding), which shows the shipped code runs on executors.
local_only = pytest.mark.parametrize("spark_master", [LOCAL], indirect=True)
# a module's marks for its tests to run on that local[2] session: pyspark runs classic in this process
# even after a Spark Connect test in the same worker, and `spark_master`'s session serves the jobs in
# its round (no second local[2] JVM)
ON_THE_LOCAL_SESSION = [pytest.mark.usefixtures("classic_spark", "spark_master"), local_only]

# Every Spark JVM the tests start (drivers through spark-submit, standalone Masters and Workers, and
# their executors) compiles with C1 only: a Spark start-up and the tests' small jobs take about a
# third less time on 2 shared cores. A value already in the environment wins. Executors are not
# started by spark-submit: local-cluster's get C1_EXECUTORS (spark_master's session conf), a
# standalone cluster's inherit JAVA_TOOL_OPTIONS from their Worker (StandaloneCluster._env).
# `python -m bench` (FULL_JIT_ENV) measures Spark as it runs, with both compilers.
C1_ONLY = "-XX:TieredStopAtLevel=1"
FULL_JIT = os.environ.get("PYLOG_JVM_FULL_JIT") == "1"
C1_EXECUTORS = {} if FULL_JIT else {"spark.executor.defaultJavaOptions": C1_ONLY}
# the options are ours to extend with the class-data archive (use_cds) unless the environment set them
_OWN_OPTS = not FULL_JIT and "SPARK_SUBMIT_OPTS" not in os.environ and "SPARK_DAEMON_JAVA_OPTS" not in os.environ
if not FULL_JIT:
    os.environ.setdefault("SPARK_SUBMIT_OPTS", C1_ONLY)
    os.environ.setdefault("SPARK_DAEMON_JAVA_OPTS", C1_ONLY)
    os.environ.setdefault("SPARK_CONF_DIR", str(CONF_DIR))


def use_cds() -> str:
    """The JVM options of the Spark drivers and daemons started from here on: C1 only and, once
    it exists (made here if need be), the class-data archive (support/spark_cds.py)."""
    if not _OWN_OPTS:
        return os.environ.get("SPARK_SUBMIT_OPTS", "")
    opt = cds_option(C1_ONLY)
    opts = f"{C1_ONLY} {opt}" if opt else C1_ONLY
    os.environ["SPARK_SUBMIT_OPTS"] = os.environ["SPARK_DAEMON_JAVA_OPTS"] = opts
    return opts

_HIDE_PYLOG = textwrap.dedent("""\
    # An executor Python without pylog: site-packages as usual, minus the editable pylog finder.
    import runpy
    import site
    import sys

    site.main()
    def _editable(obj):
        return "__editable__" in (getattr(obj, "__module__", "") or "") + type(obj).__module__
    sys.meta_path[:] = [f for f in sys.meta_path if not _editable(f)]
    sys.path_hooks[:] = [h for h in sys.path_hooks if not _editable(h)]
    sys.path_importer_cache.clear()
    for name in [m for m in sys.modules if m == "pylog" or m.startswith("pylog.")]:
        del sys.modules[name]
    args = sys.argv[1:]
    if args[:1] == ["-m"]:
        sys.argv = [args[1]] + args[2:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        runpy.run_path(args[0], run_name="__main__")
""")


def _python_without_pylog(d: Path) -> str:
    script = d / "hide_pylog.py"
    script.write_text(_HIDE_PYLOG)
    exe = d / "python-without-pylog"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "{script}" "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(exe)


@pytest.fixture(scope="session", params=MASTERS)
def spark_master(request, tmp_path_factory):
    """The master every Spark test of this round runs on; the session stays up between tests."""
    from pylog.spark import session

    master = request.param
    saved = os.environ.get("PYSPARK_PYTHON")
    # a Spark Connect test earlier in this worker leaves pyspark's remote-mode flags behind
    os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
    os.environ.pop("SPARK_REMOTE", None)
    session.stop_session()
    if master.startswith("local-cluster"):
        os.environ["PYSPARK_PYTHON"] = _python_without_pylog(tmp_path_factory.mktemp("nopylog"))
    else:
        os.environ.pop("PYSPARK_PYTHON", None)
    session.KEEP_SESSION = True
    opts = use_cds()  # local-cluster's executor JVMs too
    conf = {"spark.executor.defaultJavaOptions": opts} if C1_EXECUTORS and opts else dict(C1_EXECUTORS)
    run = session.open_session(session.SessionSettings(master=master, app_name="pylog tests", conf=conf))
    if master.startswith("local-cluster"):
        where = run.spark.sparkContext.parallelize([0, 1], 2).map(session.pylog_origin).collect()
        assert all("pylog.zip" in w for w in where), where
    yield master
    session.stop_session()
    session.KEEP_SESSION = False
    if saved is None:
        os.environ.pop("PYSPARK_PYTHON", None)
    else:
        os.environ["PYSPARK_PYTHON"] = saved


class Result:
    def __init__(self, code: int, stdout: str, stderr: str):
        self.exit_code = code
        self.stdout = stdout
        self.stderr = stderr
        self.output = stdout + stderr


def run_pylog(*args, expect: int = 0) -> Result:
    """Run `pylog ARGS` in-process through pylog's main() (its exit codes and one-line
    errors), so the live SparkSession is reused."""
    from pylog.cli.main import main

    with CliRunner().isolation() as (out, err, _):
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        sys.stdout.flush()
        sys.stderr.flush()
        stdout = out.getvalue().decode("utf-8", "replace")
        stderr = err.getvalue().decode("utf-8", "replace")
    res = Result(code, stdout, stderr)
    assert code == expect, f"exit {code}: {res.output[-3000:]}"
    return res


# ---------------------------------------------------------------- a standalone cluster
def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bare_python(d: Path) -> str:
    """A Python with nothing installed (a venv without pip): the python3 of workers that
    lack pylog's dependencies."""
    import subprocess

    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(d)], check=True, capture_output=True)
    return str(d / "bin" / "python3")


class StandaloneCluster:
    """A Spark standalone Master and `workers` Workers, each its own process started with
    pyspark's `spark-class` on 127.0.0.1 with free ports. The workers' PATH starts with
    `python_bin` (their `python3`), as on a cluster whose machines have their own Python."""

    def __init__(self, work: Path, workers: int = 2, cores: int = 1, memory: str = "1g",
                 python_bin: str | None = None):
        self.work = Path(work)
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.python_bin = python_bin
        self.procs: list = []
        self.port = _free_port()
        self.ui_port = _free_port()
        self.url = f"spark://127.0.0.1:{self.port}"

    def _env(self) -> dict:
        from pylog.spark.session import ensure_spark_home

        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
        CONF_DIR.mkdir(parents=True, exist_ok=True)  # empty: the drivers' conf dir, as the class-data archive's
        env.update(SPARK_HOME=ensure_spark_home(), SPARK_LOCAL_IP="127.0.0.1", SPARK_CONF_DIR=str(CONF_DIR),
                   SPARK_DAEMON_MEMORY="256m", SPARK_NO_DAEMONIZE="1")
        if os.environ.get("PYLOG_JVM_FULL_JIT") != "1":  # the daemons and every executor they start
            env["JAVA_TOOL_OPTIONS"] = f"{os.environ.get('JAVA_TOOL_OPTIONS', '')} {C1_ONLY}".strip()
            # the daemons' and a Connect server's own JVM map the class-data archive (never the
            # launcher's: spark-class reads its stdout, so not in JAVA_TOOL_OPTIONS)
            env["SPARK_DAEMON_JAVA_OPTS"] = env["SPARK_SUBMIT_OPTS"] = use_cds()
        if self.python_bin:
            env["PATH"] = f"{os.path.dirname(self.python_bin)}{os.pathsep}{env.get('PATH', '')}"
            env["PYSPARK_PYTHON"] = self.python_bin
        return env

    def executor_conf(self) -> dict:
        """An application's conf for its executors on this cluster: their JVMs map the class-data
        archive too (their class path, the conf dir then Spark's jars, is the archive's; the
        Worker's JAVA_TOOL_OPTIONS already makes them C1-only)."""
        opts = use_cds() if _OWN_OPTS else ""
        return {"spark.executor.defaultJavaOptions": opts} if "SharedArchiveFile" in opts else {}

    def _spawn(self, name: str, *args: str) -> None:
        import subprocess

        env = self._env()
        log = open(self.work / f"{name}.log", "ab")
        cmd = [os.path.join(env["SPARK_HOME"], "bin", "spark-class"), *args]
        self.procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                           stdin=subprocess.DEVNULL, start_new_session=True))
        log.close()

    def status(self) -> dict:
        import json as _json
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as r:
            return _json.loads(r.read())

    def alive_workers(self) -> int:
        try:
            return sum(1 for w in self.status().get("workers", []) if w.get("state") == "ALIVE")
        except (OSError, ValueError):  # not up yet, or not our master's UI answering yet
            return 0

    def start(self, timeout: float = 180.0) -> "StandaloneCluster":
        import time

        self.work.mkdir(parents=True, exist_ok=True)
        self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", str(self.ui_port))
        for i in range(self.workers):
            wd = self.work / f"worker-{i}"
            wd.mkdir(exist_ok=True)
            self._spawn(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                        "--port", "0", "--webui-port", str(_free_port()), "--cores", str(self.cores),
                        "--memory", self.memory, "--work-dir", str(wd), self.url)
        deadline = time.monotonic() + timeout
        while self.alive_workers() < self.workers:
            for p in self.procs:
                if p.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"a Spark daemon exited ({p.args[1]}); see {self.work}/*.log")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self.workers} workers did not register in {timeout:.0f} s; see {self.work}")
            time.sleep(0.5)
        return self

    def stop(self) -> None:
        import signal
        import subprocess

        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs = []


@pytest.fixture()
def classic_spark(monkeypatch):
    """A Spark Connect test earlier in this worker leaves pyspark in remote mode (its environment
    flags); a test that runs classic Spark in this process clears them."""
    monkeypatch.delenv("SPARK_CONNECT_MODE_ENABLED", raising=False)
    monkeypatch.delenv("SPARK_REMOTE", raising=False)


@pytest.fixture()
def kafka_connector(spark_master):
    """The local[2] session of `spark_master` with Spark's Kafka connector added to it (SQL's ADD JAR:
    the driver's session class loader and the executors), for format("kafka"); a session that needs
    no connector does not load it, and a command's session settings stay those of the others."""
    from pylog.spark import session
    from support.spark_kafka import connector_jars

    assert spark_master == LOCAL, "Spark's Kafka connector is added to the local[2] session only"
    spark = session.live_run().spark
    added = {r[0].rsplit("/", 1)[-1] for r in spark.sql("LIST JARS").collect()}
    for jar in connector_jars():
        if jar.rsplit("/", 1)[-1] not in added:
            spark.sql(f"ADD JAR '{jar}'")
    return spark


@pytest.fixture()
def keep_session(monkeypatch):
    """One SparkSession serves every job of the test (session.KEEP_SESSION), no PYSPARK_PYTHON left over."""
    from pylog.spark import session

    # the local-cluster round of `spark_master` may have set it for its executors
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    saved = session.KEEP_SESSION
    session.KEEP_SESSION = True
    yield
    session.KEEP_SESSION = saved


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """One standalone cluster for the test run: a Master and two Workers (1 core, 1 GB
    each) whose python3 is a bare interpreter without pylog's dependencies."""
    work = tmp_path_factory.mktemp("spark-standalone")
    cluster = StandaloneCluster(work, python_bin=bare_python(work / "bare-python")).start()
    yield cluster
    from pylog.spark import session

    session.stop_session()
    cluster.stop()


@pytest.fixture(scope="session")
def standalone_export_dir(tmp_path_factory):
    """The log dir the standalone group's exports read (tx, plain, users; see export_support),
    written once for the group: the classic and the Spark Connect exports read the same dir.
    `users` in one segment: `spark-compaction` runs a task per segment in each of its two jobs,
    and the group's compaction runs show the shipped environment, not many segments (the
    spark_local tests do, on `users` in 2 kB segments)."""
    from support.export_support import write_export_dir

    return write_export_dir(tmp_path_factory.mktemp("export-src"), users_segment_bytes=1 << 20)


class ConnectServer:
    """A Spark Connect server from pyspark's sbin/start-connect-server.sh (in the
    foreground, --wait) on top of `cluster`, listening on a free loopback port. Its
    executors run `python` (PYSPARK_PYTHON)."""

    def __init__(self, work: Path, cluster: StandaloneCluster, python: str, conf: dict | None = None):
        self.work = Path(work)
        self.cluster = cluster
        self.python = python
        self.conf = dict(conf or {})
        self.port = _free_port()
        self.url = f"sc://127.0.0.1:{self.port}"
        self.proc = None

    def start(self, timeout: float = 180.0) -> "ConnectServer":
        import socket
        import subprocess
        import time

        self.work.mkdir(parents=True, exist_ok=True)
        env = self.cluster._env()
        env.update(PYSPARK_PYTHON=self.python, SPARK_LOG_DIR=str(self.work), SPARK_PID_DIR=str(self.work),
                   SPARK_DAEMON_MEMORY="1g")  # the server is a driver: Spark wants 450 MB of heap at least
        script = os.path.join(env["SPARK_HOME"], "sbin", "start-connect-server.sh")
        conf = {**self.cluster.executor_conf(), **self.conf}  # its executors map the class-data archive too
        log = open(self.work / "connect-server.log", "ab")
        self.proc = subprocess.Popen(
            ["bash", script, "--wait", "--master", self.cluster.url, "--driver-memory", "1g",
             "--conf", f"spark.connect.grpc.binding.port={self.port}",
             "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
             "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
             "--conf", "spark.executor.memory=512m", "--conf", "spark.ui.enabled=false",
             "--conf", "spark.sql.shuffle.partitions=4",
             *(a for k, v in conf.items() for a in ("--conf", f"{k}={v}"))],
            env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the Spark Connect server exited; see {self.work}/connect-server.log")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=2).close()
                return self
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"the Spark Connect server did not listen in {timeout:.0f} s")
                time.sleep(0.5)

    def stop(self) -> None:
        import signal
        import subprocess

        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None


def _python_switch(d: Path) -> tuple[str, Path]:
    """A Python that runs the interpreter named in a file: the one Connect server's executors run
    the Python the module under test chooses (`_executors_run`), as two clusters' workers would."""
    flag = d / "executors-python"
    exe = d / "python-switch"
    exe.write_text(f'#!/bin/sh\nexec "$(cat "{flag}")" "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(exe), flag


# one Connect server for the run: its start and its executor's are paid once (a driver and an
# executor JVM). Session-scoped, it holds one of the cluster's two cores (spark.cores.max=1): a
# classic application that runs while it is up still gets an executor on the other worker.
@pytest.fixture(scope="session")
def connect_server(spark_cluster, tmp_path_factory):
    from pylog.spark import session

    work = tmp_path_factory.mktemp("spark-connect")
    python, flag = _python_switch(work)
    flag.write_text(spark_cluster.python_bin)
    session.stop_session()  # a live session's application holds the workers' cores
    server = ConnectServer(work, spark_cluster, python, {"spark.cores.max": "1"}).start()
    server.flag = flag
    yield server
    session.stop_session()
    server.stop()


def _executors_run(server: ConnectServer, python: str) -> ConnectServer:
    """The Connect server whose executors' Python is `python` from the next session on: a
    session's Python workers start from it (Spark keeps a Python daemon per session), and
    this process's live session (one of the other Python's) ends here."""
    from pylog.spark import session

    session.stop_session()
    server.flag.write_text(python)
    return server


@pytest.fixture(scope="module")
def spark_connect(connect_server, tmp_path_factory):
    """The Spark Connect server on the standalone cluster, its executors running a Python that
    has pylog's dependencies but not pylog: the code must come up as an artifact."""
    work = tmp_path_factory.mktemp("connect-python")
    yield _executors_run(connect_server, _python_without_pylog(work))
    _executors_run(connect_server, connect_server.cluster.python_bin)


@pytest.fixture(scope="module")
def spark_connect_bare(connect_server, spark_cluster):
    """The Spark Connect server on the standalone cluster, its executors running the workers'
    bare python3: pylog's dependencies reach them only as a shipped environment."""
    yield _executors_run(connect_server, spark_cluster.python_bin)
    _executors_run(connect_server, spark_cluster.python_bin)

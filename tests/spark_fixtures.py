"""Spark fixtures: one SparkSession per master for the whole test run.

`spark_master` is session-scoped and parametrized, so pytest runs every Spark
test on `local[2]` and then on `local-cluster[2,1,1024]` (separate executor
JVMs and Python workers), starting Spark only twice. On local-cluster the
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

MASTERS = ["local[2]", "local-cluster[2,1,1024]"]

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
    from pylog.commands.spark import session

    master = request.param
    saved = os.environ.get("PYSPARK_PYTHON")
    session.stop_session()
    if master.startswith("local-cluster"):
        os.environ["PYSPARK_PYTHON"] = _python_without_pylog(tmp_path_factory.mktemp("nopylog"))
    else:
        os.environ.pop("PYSPARK_PYTHON", None)
    session.KEEP_SESSION = True
    run = session.open_session(session.SessionSettings(master=master, app_name="pylog tests"))
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

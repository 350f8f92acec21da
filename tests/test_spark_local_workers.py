"""A local session's Python workers come from pylog's daemon (local_daemon.py): they import the
installed pyspark and pylog (bytecode cached), with none of Spark's archives on their path."""
from __future__ import annotations

from pathlib import Path

import pytest

from support.spark_fixtures import local_only

pytestmark = [pytest.mark.usefixtures("classic_spark"), local_only]


def test_local_workers_import_the_installed_packages(spark_master):
    import pyspark

    def _where(_):  # defined here: cloudpickle ships it by value, the workers cannot import this module
        import sys

        import pyspark

        from pylog.spark import log_rows

        yield (pyspark.__file__, log_rows.__file__, [p for p in sys.path if p.endswith((".zip", ".jar"))])

    from pylog.spark import log_rows, session
    from pylog.spark.local_daemon import spark_archives

    run = session.live_run()
    assert run.spark.conf.get("spark.python.daemon.module") == "pylog.spark.local_daemon"
    got = run.spark.sparkContext.parallelize(range(2), 2).mapPartitions(_where).collect()
    assert len(got) == 2
    for spark_file, rows_file, archives in got:
        assert Path(spark_file).parent == Path(pyspark.__file__).parent
        assert rows_file == log_rows.__file__
        assert not spark_archives(archives), archives
        # pylog.zip (addPyFile) is still added by each task, unused: pylog is already imported
        assert "pylog.zip" in [Path(a).name for a in archives]


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the processes whose parent is `pid`."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                out.append((int(d.name), (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")))
        except (OSError, IndexError, ValueError):
            continue  # the process ended while we looked
    return out


def test_a_local_session_is_ready_with_its_python_workers(spark_master):
    """open_session returns a local session whose daemon has forked one idle Python worker per
    task slot, so a job's first task does not wait for an interpreter and its imports."""
    import os

    from pylog.spark import datasource, session

    run = session.live_run()
    sc = run.spark.sparkContext
    assert sc in datasource._WARM_CONTEXTS
    assert datasource.start_workers(run.spark) is None  # nothing left for an export to start
    daemons = [pid for jvm, _ in _children(os.getpid()) for pid, cmd in _children(jvm)
               if "pylog.spark.local_daemon" in cmd]
    # Spark keeps a daemon per worker kind and environment (a data source's planning has its own)
    assert daemons, _children(os.getpid())
    assert max(len(_children(d)) for d in daemons) >= sc.defaultParallelism

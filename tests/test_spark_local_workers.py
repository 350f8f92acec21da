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

        from pylog.commands.spark import log_rows

        yield (pyspark.__file__, log_rows.__file__, [p for p in sys.path if p.endswith((".zip", ".jar"))])

    from pylog.commands.spark import log_rows, session
    from pylog.commands.spark.local_daemon import spark_archives

    run = session.live_run()
    assert run.spark.conf.get("spark.python.daemon.module") == "pylog.commands.spark.local_daemon"
    got = run.spark.sparkContext.parallelize(range(2), 2).mapPartitions(_where).collect()
    assert len(got) == 2
    for spark_file, rows_file, archives in got:
        assert Path(spark_file).parent == Path(pyspark.__file__).parent
        assert rows_file == log_rows.__file__
        assert not spark_archives(archives), archives
        # pylog.zip (addPyFile) is still added by each task, unused: pylog is already imported
        assert "pylog.zip" in [Path(a).name for a in archives]

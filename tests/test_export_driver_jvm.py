"""spark-export's fused local exports start the driver JVM with the client compiler alone, unless
the user chose the JIT; exports whose rows pass through the JVM keep both compilers. A fused
export's planning never asks for `spark.read` (a fresh JVM's first one builds the session's SQL
state, about a second before the first task); the others get their reader."""
from __future__ import annotations

import pytest

from pylog.spark.export import ExportOptions, _plan_and_read, light_driver_jvm
from pylog.spark.log_plan import ReadOptions
from pylog.spark.session import SessionSettings

KEY = "spark.driver.extraJavaOptions"


def _opts(**kw):
    return ExportOptions(topics=("t",), from_dir="/d", fmt="parquet", output="/o", **kw)


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv("SPARK_SUBMIT_OPTS", raising=False)
    monkeypatch.delenv("SPARK_REMOTE", raising=False)


def test_fused_local_export_gets_the_client_compiler():
    s = SessionSettings(master="local[2]", conf={KEY: "-Dx=1"})
    light_driver_jvm(s, _opts())
    assert s.conf[KEY] == "-Dx=1 -XX:TieredStopAtLevel=1"


@pytest.mark.parametrize("settings,opts", [
    (SessionSettings(master="local[2]"), _opts(compacted=True)),
    (SessionSettings(master="local[2]"), _opts(value_format="json")),
    (SessionSettings(master="spark://h:7077"), _opts()),
    (SessionSettings(master="local[2]", remote="sc://h:15002"), _opts()),
    (SessionSettings(master="local[2]", conf={KEY: "-XX:-TieredCompilation"}), _opts()),
])
def test_left_alone(settings, opts):
    before = dict(settings.conf)
    light_driver_jvm(settings, opts)
    assert settings.conf == before


def test_user_jit_in_spark_submit_opts_wins(monkeypatch):
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=4")
    s = SessionSettings(master="local[1]")
    light_driver_jvm(s, _opts())
    assert KEY not in s.conf


class _Spark:
    """What `_plan_and_read` may touch of a session: `read` only when the rows go through Spark SQL."""

    class sparkContext:  # noqa: N801 - a session's attribute
        defaultParallelism = 2

    def __init__(self):
        self.reads = 0
        self.conf = type("Conf", (), {"set": lambda self, k, v: None})()
        self.dataSource = type("Sources", (), {"register": lambda self, cls: None})()

    @property
    def read(self):
        self.reads += 1
        from unittest.mock import MagicMock

        return MagicMock()


@pytest.mark.parametrize("opts,reads", [(_opts(), 0), (_opts(value_format="json"), 1), (_opts(compacted=True), 1)])
def test_fused_export_plans_without_a_reader(tmp_path, opts, reads):
    (tmp_path / "t-0").mkdir()
    opts.from_dir = str(tmp_path)
    spark = _Spark()
    plans, reader, load_args = _plan_and_read(spark, opts, ReadOptions(topics=("t",)))
    assert [(p.topic, p.partition) for p in plans] == [("t", 0)] and load_args == (str(tmp_path),)
    assert spark.reads == reads and (reader is None) == (reads == 0)

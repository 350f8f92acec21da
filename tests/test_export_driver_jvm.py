"""spark-export's fused local exports start the driver JVM with the client compiler alone, unless
the user chose the JIT; exports whose rows pass through the JVM keep both compilers."""
from __future__ import annotations

import pytest

from pylog.commands.spark.export import ExportOptions, light_driver_jvm
from pylog.commands.spark.session import SessionSettings

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

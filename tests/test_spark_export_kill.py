"""An export killed with SIGKILL mid-run leaves the table as it was; the rerun finishes it exactly once.

A `pylog broker start` holds a topic of 8 partitions. For each format a first
export commits the offsets below 1000; then `pylog spark-export -b` runs as a
process of its own and is killed with a real SIGKILL as soon as its first
data file is on disk (its other tasks still running, nothing committed), with
the Spark JVM and Python workers it started. The independent readers (pyarrow,
deltalake, pyiceberg) then see exactly the table of before, same version, same
rows; the rerun exports the rest with every offset exactly once.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from support.broker_fixtures import BrokerProcess
from support.export_support import rows_of
from support.spark_fixtures import LOCAL, ON_THE_LOCAL_SESSION, run_pylog

MASTER = LOCAL
PARTITIONS = 8
PER_PARTITION = 4000
FIRST = 1000


pytestmark = ON_THE_LOCAL_SESSION


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    b = BrokerProcess(tmp_path_factory.mktemp("kill") / "data").start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("big", PARTITIONS, 1)])["big"].result(timeout=30)
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 20, "compression.type": "lz4"})
        for i in range(PER_PARTITION):
            for part in range(PARTITIONS):
                p.produce("big", key=f"k{i % 1000}", value=f"v{part}-{i}-" + "x" * 60, partition=part)
            if i % 1000 == 0:
                p.flush(60)
        assert p.flush(120) == 0
        del p, admin
    except BaseException:
        b.stop_clean()
        raise
    yield b
    b.stop_clean()


def _table(fmt, out):
    """(version, rows) as the format's own independent reader sees the table."""
    if fmt == "parquet":
        import pyarrow.dataset as pads

        commits = sorted(p.name for p in (out / "_pylog_commits").glob("*.json"))
        return commits[-1], pads.dataset(out, partitioning="hive").to_table()
    if fmt == "delta":
        import deltalake

        t = deltalake.DeltaTable(str(out))
        return t.version(), t.to_pyarrow_table()
    from pyiceberg.catalog.sql import SqlCatalog

    t = SqlCatalog("pylog", uri=f"sqlite:///{out}/catalog.db", warehouse=f"file://{out}").load_table("pylog.export")
    return t.current_snapshot().snapshot_id, t.scan().to_arrow()


def _parquet_files(out) -> set:
    return {str(p) for p in out.rglob("*.parquet")}


def _run_and_kill(args, out, log) -> None:
    """Start `pylog spark-export ARGS` in a process of its own; SIGKILL it once a new data file exists."""
    before = _parquet_files(out)
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "pylog.cli", "spark-export", *map(str, args)],
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        deadline = time.monotonic() + 900
        while not (_parquet_files(out) - before):
            assert proc.poll() is None, f"the export ended ({proc.returncode}) before writing a file: " \
                                        f"{log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, "no data file in 900 s"
            time.sleep(0.02)
        assert proc.poll() is None, "the export finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(30) == -signal.SIGKILL
    finally:
        try:  # the Spark JVM and Python workers the killed process started
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


@pytest.mark.timeout(2400)
@pytest.mark.parametrize("fmt", ["parquet", "delta", "iceberg"])
def test_sigkill_mid_export_leaves_the_table_then_rerun_finishes(broker, keep_session, tmp_path, fmt):
    out = tmp_path / fmt
    common = ("big", "-b", broker.bootstrap, "--format", fmt, "-o", out, "--master", MASTER)
    doc = json.loads(run_pylog("spark-export", *common, "--until", FIRST, "--json").stdout)
    assert doc["committed"] and doc["records"] == PARTITIONS * FIRST
    version, rows = _table(fmt, out)
    _run_and_kill(common, out, tmp_path / "killed.log")
    after_version, after_rows = _table(fmt, out)
    assert after_version == version  # its files are on disk, but not part of the table
    assert sorted(rows_of(after_rows)) == sorted(rows_of(rows))
    doc = json.loads(run_pylog("spark-export", *common, "--json").stdout)
    assert doc["resumed"] and doc["committed"] and doc["records"] == PARTITIONS * (PER_PARTITION - FIRST)
    _, table = _table(fmt, out)
    keys = list(zip(table["partition"].to_pylist(), table["offset"].to_pylist()))
    assert len(keys) == len(set(keys)) == PARTITIONS * PER_PARTITION
    assert set(keys) == {(p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION)}
    values = dict(zip(keys, table["value"].to_pylist()))
    assert values[(3, 3000)] == b"v3-3000-" + b"x" * 60

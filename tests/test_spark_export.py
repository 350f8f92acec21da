"""`spark.read.format("pylog")` and `pylog spark-export` on local[2], against what a consumer reads.

The log dir is written by `pylog broker start` and read through it by
confluent-kafka (read_committed and read_uncommitted) before the broker stops:
the data source and every table format must hold exactly those records, read
back by independent readers (pyarrow for Parquet, delta-rs for Delta,
pyiceberg with a SQL catalog for Iceberg).
"""
from __future__ import annotations

import json
import shutil

import pytest

from support.export_support import BASE_TS, rows_of, table_readers, write_export_dir
from support.spark_fixtures import LOCAL, ON_THE_LOCAL_SESSION, run_pylog

MASTER = LOCAL


pytestmark = ON_THE_LOCAL_SESSION


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    return write_export_dir(tmp_path_factory.mktemp("export-src"))


@pytest.fixture()
def spark(keep_session):
    from pylog.spark import session
    from pylog.spark.datasource import register

    run = session.open_session(session.SessionSettings(master=MASTER, app_name="pylog tests"))
    register(run.spark)
    return run.spark


def _ds_rows(df) -> list:
    out = []
    for r in df.collect():
        out.append((r.partition, r.offset, r.key, r.value, tuple((h.key, h.value) for h in r.headers or ())))
    return sorted(out)


def _export(*args) -> dict:
    return json.loads(run_pylog("spark-export", *args, "--master", MASTER, "--json").stdout)


@pytest.mark.timeout(900)
def test_data_source_reads_as_a_consumer(export_dir, spark):
    d = str(export_dir.path)
    # read_committed (the default): aborted records, markers and what lies past the open
    # transaction are absent, exactly as for confluent-kafka
    for topic in ("tx", "plain", "users"):
        got = _ds_rows(spark.read.format("pylog").option("topics", topic).load(d))
        assert got == export_dir.committed[topic], topic
    tx_all = _ds_rows(spark.read.format("pylog").option("topics", "tx").option("isolation", "read_uncommitted").load(d))
    assert tx_all == export_dir.uncommitted["tx"]
    assert len(tx_all) > len(export_dir.committed["tx"])
    # every topic by default, internal topics only when named
    topics = {r.topic for r in spark.read.format("pylog").load(d).select("topic").distinct().collect()}
    assert topics == {"tx", "plain", "users"}
    # filters on partition and offset go down to segment selection and are exact
    df = spark.read.format("pylog").load(d).where("topic = 'tx' and partition = 0 and offset >= 5 and offset < 30")
    want = [r for r in export_dir.committed["tx"] if r[0] == 0 and 5 <= r[1] < 30]
    assert _ds_rows(df) == want
    # a timestamp filter and the startingTimestamp option: the second half of `plain`
    late = [r for r in export_dir.committed["plain"] if r[1] >= 20]
    df = spark.read.format("pylog").option("topics", "plain").load(d).where(
        f"timestamp >= timestamp_millis({BASE_TS + 3_600_000})")
    assert _ds_rows(df) == late
    df = spark.read.format("pylog").option("topics", "plain").option("startingTimestamp", BASE_TS + 3_600_000).load(d)
    assert _ds_rows(df) == late
    df = spark.read.format("pylog").option("topics", "plain").option("endingTimestamp", BASE_TS + 3_600_000).load(d)
    assert _ds_rows(df) == [r for r in export_dir.committed["plain"] if r[1] < 20]
    # Spark's Kafka offsets JSON
    df = spark.read.format("pylog").option("topics", "tx").option("startingOffsets", '{"tx": {"1": 20}}').load(d)
    assert _ds_rows(df) == [r for r in export_dir.committed["tx"] if r[0] == 0 or r[1] >= 20]


@pytest.mark.timeout(1200)
def test_export_every_format_read_back_independently(export_dir, spark, tmp_path):
    d = export_dir.path
    want = export_dir.committed["tx"] + [r for r in export_dir.committed["plain"]]
    readers = table_readers()
    for fmt, read in readers.items():
        out = tmp_path / fmt
        # incremental: first up to offset 20 of each partition, then the rest
        doc = _export("tx", "plain", "--from-dir", d, "--format", fmt, "-o", out, "--until", "20",
                      "--partition-by", "topic")
        assert doc["committed"] and doc["resumed"] is False
        first = sorted(r for r in want if r[1] < 20)
        table = read(out)
        assert sorted(rows_of(table)) == first, fmt
        doc = _export("tx", "plain", "--from-dir", d, "--format", fmt, "-o", out, "--partition-by", "topic")
        assert doc["resumed"] and doc["committed"]
        assert {(p["topic"], p["partition"]): p["start"] for p in doc["partitions"]} == \
            {("tx", 0): 20, ("tx", 1): 20, ("plain", 0): 20}
        table = read(out)
        got = rows_of(table)
        assert sorted(got) == sorted(want), fmt  # each offset exactly once, aborted records absent
        assert len({(t, p, o) for t, p, o in zip(table["topic"].to_pylist(), table["partition"].to_pylist(),
                                                   table["offset"].to_pylist())}) == table.num_rows
        # a third run finds nothing new and leaves the table as it is
        doc = _export("tx", "plain", "--from-dir", d, "--format", fmt, "-o", out, "--partition-by", "topic")
        assert not doc["committed"] and doc["records"] == 0
        assert read(out).num_rows == len(want)
    # Spark itself reads the Parquet folder (pylog's commit log is a `_` folder it skips)
    assert spark.read.parquet(str(tmp_path / "parquet")).count() == len(want)


@pytest.mark.timeout(900)
def test_failed_export_leaves_the_table_unchanged(export_dir, spark, tmp_path, monkeypatch):
    import deltalake
    import pyarrow.dataset as pads

    from pylog.spark import export_tables

    d = export_dir.path
    for fmt, count in (("parquet", lambda p: pads.dataset(p).count_rows()),
                       ("delta", lambda p: deltalake.DeltaTable(str(p)).to_pyarrow_table().num_rows)):
        out = tmp_path / fmt
        _export("tx", "--from-dir", d, "--format", fmt, "-o", out, "--until", "10")
        before = count(out)
        cls = export_tables.ParquetTable if fmt == "parquet" else export_tables.DeltaTable

        def boom(self, *a, **k):
            raise OSError("killed before the commit")

        with monkeypatch.context() as m:
            m.setattr(cls, "commit", boom)
            res = run_pylog("spark-export", "tx", "--from-dir", d, "--format", fmt, "-o", out, "--master", MASTER,
                            expect=1)
        assert "killed before the commit" in res.output and "Traceback" not in res.output
        assert count(out) == before  # the files of the failed run are written but not part of the table
        doc = _export("tx", "--from-dir", d, "--format", fmt, "-o", out)
        assert count(out) == len(export_dir.committed["tx"]) and doc["resumed"]
    # parquet: a run killed after its commit entry but before moving its files is rolled forward
    out = tmp_path / "rolled"
    with monkeypatch.context() as m:
        m.setattr(export_tables.ParquetTable, "recover", lambda self: 0)
        _export("tx", "--from-dir", d, "-o", out)
    assert pads.dataset(out).count_rows() == 0
    doc = _export("tx", "--from-dir", d, "-o", out)
    assert doc["rolled_forward_files"] > 0 and doc["records"] == 0
    assert pads.dataset(out).count_rows() == len(export_dir.committed["tx"])


@pytest.mark.timeout(900)
def test_compacted_equals_what_compaction_keeps(export_dir, spark, tmp_path):
    import pyarrow.dataset as pads

    from support.cleaner_support import kv_map

    copy = tmp_path / "copy"
    shutil.copytree(export_dir.path, copy)
    _export("users", "--from-dir", copy, "-o", tmp_path / "snap", "--compacted", "--key-format", "utf8",
            "--value-format", "utf8")
    got = {r["key"]: r["value"] for r in pads.dataset(tmp_path / "snap").to_table().to_pylist()}
    # what `pylog compact` keeps, with tombstones gone, read back as a consumer would
    run_pylog("compact", copy, "--set", "delete.retention.ms=0", "--set", "min.cleanable.dirty.ratio=0.0")
    from pylog.spark import datasource  # noqa: F401  (the reader under test is not used below)
    from pylog.spark.log_plan import ReadOptions, plan_log_dir
    from pylog.spark.log_rows import read_task

    recs = []
    for plan in plan_log_dir(str(copy), ReadOptions(topics=("users",))):
        for task in plan.tasks:
            for b in read_task(task):
                recs += [(o, k, v) for o, k, v in zip(b["offset"].to_pylist(), b["key"].to_pylist(),
                                                      b["value"].to_pylist())]
    kept = {k.decode(): v.decode() for k, v in kv_map(sorted(recs)).items()}
    assert got == kept and len(got) > 5
    # and the snapshot is what the consumer saw before compaction, reduced the same way
    before = kv_map([(o, k, v) for _, o, k, v, _ in export_dir.committed["users"]])
    assert got == {k.decode(): v.decode() for k, v in before.items()}


def test_bad_input_is_one_line(tmp_path, export_dir):
    res = run_pylog("spark-export", "nope", "--from-dir", export_dir.path, "-o", tmp_path / "x", expect=1)
    assert "nope" in res.output and "Traceback" not in res.output
    res = run_pylog("spark-export", "tx", "-o", tmp_path / "x", expect=2)
    assert "--from-dir" in res.output
    res = run_pylog("spark-export", "tx", "--from-dir", export_dir.path, "-o", tmp_path / "x", "--from", "yesterday",
                    expect=2)
    assert "--from" in res.output

"""`pylog spark-export -b` and `spark.read.format("pylog")` through a running `pylog broker start`, on local[2].

The broker holds the topics of support/export_support.py (committed, aborted
and still open transactions, headers and timestamps, a compacted topic),
written and read back by confluent-kafka: what the export through the broker
writes, read by the independent readers, must be what that consumer read, and
what the export from the broker's own log dir writes.
"""
from __future__ import annotations

import json

import pytest

from support.export_support import BASE_TS, rows_of, table_readers, write_export_dir
from support.spark_fixtures import LOCAL, ON_THE_LOCAL_SESSION, run_pylog

pytestmark = ON_THE_LOCAL_SESSION
MASTER = LOCAL


@pytest.fixture(scope="module")
def live(tmp_path_factory, request):
    d = write_export_dir(tmp_path_factory.mktemp("export-live"), keep=True)
    request.addfinalizer(d.broker.stop_clean)  # the broker stays up for the module's tests
    return d


@pytest.fixture()
def spark(keep_session):
    from pylog.spark import session
    from pylog.spark.datasource import register

    run = session.open_session(session.SessionSettings(master=MASTER, app_name="pylog tests"))
    register(run.spark)
    return run.spark


def _export(*args) -> dict:
    return json.loads(run_pylog("spark-export", *args, "--master", MASTER, "--json").stdout)


def _ds_rows(df) -> list:
    return sorted((r.partition, r.offset, r.key, r.value, tuple((h.key, h.value) for h in r.headers or ()))
                  for r in df.collect())


@pytest.mark.timeout(900)
def test_data_source_through_the_broker(live, spark):
    b = live.broker.bootstrap

    def read(**opts):
        r = spark.read.format("pylog").option("kafka.bootstrap.servers", b)
        for k, v in opts.items():
            r = r.option(k, v)
        return r.load()

    # (`users` is left out: the broker's cleaner compacts it while it runs)
    for topic in ("tx", "plain"):
        assert _ds_rows(read(subscribe=topic)) == live.committed[topic], topic
    assert _ds_rows(read(topics="tx", isolation="read_uncommitted")) == live.uncommitted["tx"]
    # offset ranges split over several tasks read the same rows
    assert _ds_rows(read(topics="tx", minPartitions=7)) == live.committed["tx"]
    df = read(topics="tx").where("partition = 1 and offset >= 5 and offset < 30")
    assert _ds_rows(df) == [r for r in live.committed["tx"] if r[0] == 1 and 5 <= r[1] < 30]
    late = [r for r in live.committed["plain"] if r[1] >= 20]
    assert _ds_rows(read(topics="plain", startingTimestamp=BASE_TS + 3_600_000)) == late
    assert {r.topic for r in read().select("topic").distinct().collect()} >= {"tx", "plain", "users"}


@pytest.mark.timeout(1500)
def test_export_through_the_broker_every_format(live, spark, tmp_path):
    b = live.broker.bootstrap
    want = live.committed["tx"] + live.committed["plain"]
    readers = table_readers()
    for fmt, read in readers.items():
        out = tmp_path / fmt
        doc = _export("tx", "plain", "-b", b, "--format", fmt, "-o", out, "--until", "20", "--partition-by", "topic")
        assert doc["committed"] and doc["bootstrap_servers"] == b and doc["from_dir"] is None
        assert sorted(rows_of(read(out))) == sorted(r for r in want if r[1] < 20), fmt
        doc = _export("tx", "plain", "-b", b, "--format", fmt, "-o", out, "--partition-by", "topic")
        assert doc["resumed"] and {(p["topic"], p["partition"]): p["start"] for p in doc["partitions"]} == \
            {("tx", 0): 20, ("tx", 1): 20, ("plain", 0): 20}
        # the open transaction on tx-0 holds its end at the last stable offset, as for the consumer
        lso = {p["partition"]: p["last_stable_offset"] for p in doc["partitions"] if p["topic"] == "tx"}
        assert lso[0] < max(p["log_end_offset"] for p in doc["partitions"] if p["topic"] == "tx")
        table = read(out)
        assert sorted(rows_of(table)) == sorted(want), fmt
        keys = set(zip(table["topic"].to_pylist(), table["partition"].to_pylist(), table["offset"].to_pylist()))
        assert len(keys) == table.num_rows
        doc = _export("tx", "plain", "-b", b, "--format", fmt, "-o", out, "--partition-by", "topic")
        assert not doc["committed"] and doc["records"] == 0 and read(out).num_rows == len(want)


@pytest.mark.timeout(1500)
def test_broker_export_equals_dir_export(live, spark, tmp_path):
    """The same table, column for column, whether the executors fetch or read the segments."""
    import pyarrow.dataset as pads

    b = live.broker.bootstrap
    d = live.path
    order = [("topic", "ascending"), ("partition", "ascending"), ("offset", "ascending")]
    for name, extra in (("uncommitted", ("tx", "--isolation", "read_uncommitted")),
                        ("time", ("plain", "--from", f"@{BASE_TS + 3_600_000}")),
                        ("compacted", ("users", "--compacted"))):
        _export(*extra, "-b", b, "-o", tmp_path / f"{name}-b")
        _export(*extra, "--from-dir", d, "-o", tmp_path / f"{name}-dir")
        via_broker = pads.dataset(tmp_path / f"{name}-b").to_table().sort_by(order)
        from_dir = pads.dataset(tmp_path / f"{name}-dir").to_table().sort_by(order)
        assert via_broker.num_rows > 0, name
        assert via_broker.equals(from_dir), name
    assert pads.dataset(tmp_path / "uncommitted-b").count_rows() == len(live.uncommitted["tx"])


def test_broker_bad_input_is_one_line(live, tmp_path):
    res = run_pylog("spark-export", "nope", "-b", live.broker.bootstrap, "-o", tmp_path / "x", "--master", MASTER,
                    expect=1)
    assert "nope" in res.output and "does not exist" in res.output and "Traceback" not in res.output
    res = run_pylog("spark-export", "tx", "-b", live.broker.bootstrap, "--from-dir", live.path, "-o", tmp_path / "x",
                    expect=2)
    assert "exactly one source" in res.output

"""Structured Streaming's Kafka source and sink (Spark's own `spark-sql-kafka-0-10`) against
`pylog broker start`: the sink writes what a consumer then reads, the source reads what
producers wrote (read_committed drops aborted transactions), a checkpointed query stopped
mid-stream and restarted loses and repeats nothing, and startingOffsetsByTimestamp starts
each partition where the broker's time index says.

The connector comes from Maven Central (tests/spark-kafka/pom.xml, resolved by .ci/run) and
runs on the local[2] session the export tests share, added to it by ADD JAR
(support/spark_fixtures.py `kafka_connector`).
"""
from __future__ import annotations

import json
import threading
import time

import pytest

from support.broker_fixtures import read_to_end
from support.spark_fixtures import ON_THE_LOCAL_SESSION
from support.waiting import wait_until

BASE_TS = (int(time.time()) - 3600) * 1000  # recent: the broker's retention check (7 days) keeps them


pytestmark = ON_THE_LOCAL_SESSION


@pytest.fixture()
def spark(kafka_connector):
    return kafka_connector


def _create(b, *topics: tuple[str, int]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": b.bootstrap})  # alive until the results are in
    fs = admin.create_topics([NewTopic(t, n, 1) for t, n in topics])
    for f in fs.values():
        f.result(timeout=30)


def _kafka(spark, b, stream: bool = True, **options):
    reader = (spark.readStream if stream else spark.read).format("kafka").option("kafka.bootstrap.servers",
                                                                                  b.bootstrap)
    for k, v in options.items():
        reader = reader.option(k.replace("_", "."), v)
    return reader.load()


def _to_parquet(df, out, checkpoint, **trigger):
    return (df.selectExpr("partition", "offset", "CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value",
                          "CAST(timestamp AS LONG) AS ts")
            .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(checkpoint))
            .trigger(**trigger).start())


def _parquet_rows(spark, out) -> list:
    # Spark's reader honours the file sink's _spark_metadata log: only committed batches count
    return sorted((r.partition, r.offset, r.key, r.value) for r in spark.read.parquet(str(out)).collect())


def _consumed(b, topic, partitions, isolation="read_committed") -> list:
    return sorted((m.partition(), m.offset(), m.key().decode(), m.value().decode())
                  for m in read_to_end(b, topic, partitions, isolation, timeout=60))


@pytest.mark.timeout(900)
def test_sink_then_source_round_trip(spark, broker, tmp_path):
    _create(broker, ("sunk", 3))
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.json").write_text("".join(json.dumps({"k": f"key-{i % 11}", "v": f"value-{i}"}) + "\n"
                                        for i in range(500)))
    # the sink: a file stream into a topic, checkpointed
    q = (spark.readStream.schema("k string, v string").json(str(src))
         .selectExpr("k AS key", "v AS value").writeStream.format("kafka")
         .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", "sunk")
         .option("checkpointLocation", str(tmp_path / "ck-sink")).trigger(availableNow=True).start())
    q.awaitTermination(600)
    assert q.exception() is None
    consumed = _consumed(broker, "sunk", range(3))
    assert sorted(v for _, _, _, v in consumed) == sorted(f"value-{i}" for i in range(500))
    # the sink partitions by key as Kafka's producer does: one key, one partition
    by_key = {}
    for p, _, k, _ in consumed:
        by_key.setdefault(k, set()).add(p)
    assert all(len(ps) == 1 for ps in by_key.values())
    # the source reads back exactly what the consumer read, offsets included
    q = _to_parquet(_kafka(spark, broker, subscribe="sunk", startingOffsets="earliest"), tmp_path / "out",
                    tmp_path / "ck-src", availableNow=True)
    q.awaitTermination(600)
    assert q.exception() is None
    assert _parquet_rows(spark, tmp_path / "out") == consumed


@pytest.mark.timeout(900)
def test_read_committed_drops_aborted_transactions(spark, broker, tmp_path):
    from confluent_kafka import Producer

    _create(broker, ("txs", 2))
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "streaming-tx", "linger.ms": 5})
    p.init_transactions(30)
    for outcome in ("commit", "abort", "commit", "abort", "commit"):
        p.begin_transaction()
        for i in range(30):
            p.produce("txs", key=f"k{i}", value=f"{outcome}-{i}", partition=i % 2)
        p.flush(30)
        (p.commit_transaction if outcome == "commit" else p.abort_transaction)(30)
    del p
    committed = _consumed(broker, "txs", range(2))
    assert len(committed) == 90 and all(v.startswith("commit-") for *_, v in committed)
    q = _to_parquet(_kafka(spark, broker, subscribe="txs", startingOffsets="earliest",
                           kafka_isolation_level="read_committed"),
                    tmp_path / "committed", tmp_path / "ck-committed", availableNow=True)
    q.awaitTermination(600)
    assert q.exception() is None
    assert _parquet_rows(spark, tmp_path / "committed") == committed
    # read_uncommitted (Kafka's default) sees the aborted records too, as confluent-kafka does
    q = _to_parquet(_kafka(spark, broker, subscribe="txs", startingOffsets="earliest"),
                    tmp_path / "all", tmp_path / "ck-all", availableNow=True)
    q.awaitTermination(600)
    assert q.exception() is None
    everything = _parquet_rows(spark, tmp_path / "all")
    assert everything == _consumed(broker, "txs", range(2), "read_uncommitted")
    assert len(everything) == 150


@pytest.mark.timeout(1200)
def test_checkpointed_query_restarts_without_loss_or_duplicates(spark, broker, tmp_path):
    from confluent_kafka import Producer

    _create(broker, ("events", 2))
    produced, stopped, total = threading.Event(), threading.Event(), [0]

    def produce():
        p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        i, after = 0, 0
        # a stream that keeps arriving until the query has stopped, and for a while after
        while (i < 2000 or not stopped.is_set() or after < 10) and i < 500_000:
            for _ in range(100 if i < 2000 else 10):  # then a trickle, however long the first batch takes
                p.produce("events", key=f"k{i % 13}", value=f"e-{i}")
                i += 1
            p.flush(30)
            after += stopped.is_set()
            time.sleep(0.2)
        total[0] = i
        produced.set()

    out, ck = tmp_path / "out", tmp_path / "ck"
    writer = threading.Thread(target=produce, daemon=True)
    writer.start()
    source = dict(subscribe="events", startingOffsets="earliest", maxOffsetsPerTrigger="1000")
    q = _to_parquet(_kafka(spark, broker, **source), out, ck, processingTime="1 second")
    wait_until(lambda: sum(p["numInputRows"] for p in q.recentProgress) > 0, timeout=300,
               what="the first batch of the query", step=0.5)
    q.stop()  # mid-stream: the producer is still writing
    stopped.set()
    assert len(_parquet_rows(spark, out)) > 0
    q = _to_parquet(_kafka(spark, broker, **source), out, ck, processingTime="1 second")
    writer.join(600)
    assert produced.is_set()
    n = total[0]
    wait_until(lambda: len(_parquet_rows(spark, out)) >= n, timeout=600, what=f"{n} rows in the table", step=2)
    q.stop()
    rows = _parquet_rows(spark, out)
    assert sorted(v for *_, v in rows) == sorted(f"e-{i}" for i in range(n))  # none lost, none twice
    assert rows == _consumed(broker, "events", range(2))
    # the checkpoint holds: one more run finds nothing new
    q = _to_parquet(_kafka(spark, broker, **source), out, ck, availableNow=True)
    q.awaitTermination(600)
    assert _parquet_rows(spark, out) == rows


@pytest.mark.timeout(900)
def test_starting_offsets_by_timestamp(spark, broker, tmp_path):
    from confluent_kafka import Producer

    _create(broker, ("timed", 2))
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(60):
        p.produce("timed", key=f"k{i}", value=f"t-{i}", partition=i % 2, timestamp=BASE_TS + i * 1000)
    p.flush(30)
    del p
    everything = {(m.partition(), m.value().decode()): m.timestamp()[1]
                  for m in read_to_end(broker, "timed", range(2), "read_committed")}
    starts = {0: BASE_TS + 20_000, 1: BASE_TS + 41_000}  # partition 1 from a time between two records
    q = _to_parquet(_kafka(spark, broker, subscribe="timed",
                           startingOffsetsByTimestamp=json.dumps({"timed": {str(k): v for k, v in starts.items()}})),
                    tmp_path / "out", tmp_path / "ck", availableNow=True)
    q.awaitTermination(600)
    assert q.exception() is None
    got = {(r.partition, r.value): r.ts for r in spark.read.parquet(str(tmp_path / "out")).collect()}
    want = {k for k, ts in everything.items() if ts >= starts[k[0]]}
    assert set(got) == want and len(want) == 20 + 10
    # the batch reader takes a global startingTimestamp the same way
    df = _kafka(spark, broker, stream=False, subscribe="timed", startingTimestamp=str(BASE_TS + 50_000))
    assert sorted(r.value.decode() for r in df.collect()) == [f"t-{i}" for i in range(50, 60)]

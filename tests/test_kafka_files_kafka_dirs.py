"""pylog on log dirs written by Apache Kafka 4.3.1 itself (tests/support/kafka_log_dirs.py makes them).

Every codec from idempotent producers, a transaction that aborted (.txnindex),
a compacted topic before and after Kafka's own cleaner ran, a consumer group
(__consumer_offsets), __transaction_state, __cluster_metadata and producer
snapshots. On those: `pylog dump-segment` prints what DumpLogSegments prints,
`pylog verify` finds nothing wrong, `pylog compact` and `pylog
spark-compaction` leave (predict) exactly what Kafka's cleaner left, and
`pylog broker start` on a copy serves every record without taking
__cluster_metadata or -delete/-stray/-future folders for topics.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from support.broker_fixtures import BrokerProcess
from support.kafka_log_dirs import write_kafka_log_dirs
from support.dump_compare import assert_same_dump, kafka_dump
from support.cli import pylog

KINDS = (".log", ".index", ".timeindex", ".snapshot", ".txnindex")
GROUP = "pylog-files-group"


@pytest.fixture(scope="module")
def kdirs(tmp_path_factory):
    return write_kafka_log_dirs(tmp_path_factory.mktemp("kafka-written"))


def files_of(*dirs: Path) -> list[Path]:
    return [f for d in dirs for f in sorted(d.iterdir()) if f.suffix in KINDS and f.stat().st_size]


def partitions(root: Path, prefix: str = "") -> list[Path]:
    return sorted(d for d in root.iterdir() if d.is_dir() and d.name.startswith(prefix))


def data_records(dump_text: str) -> dict[int, tuple[str, str | None]]:
    """offset -> (key, value) of the data records in a DumpLogSegments --print-data-log text (one partition)."""
    out = {}
    for line in dump_text.splitlines():
        m = re.match(r"^\| offset: (\d+) .*?headerKeys: \[[^\]]*\]( key: (\S+))?( payload: (\S+))?$", line)
        if m and "endTxnMarker" not in line:
            out[int(m.group(1))] = (m.group(3), m.group(5))
    return out


# ---------------------------------------------------------------- dump-segment vs DumpLogSegments
def test_user_topics_and_transaction_state_dump_like_kafka(kdirs):
    dirs = [d for d in partitions(kdirs.data) if not d.name.startswith("__consumer_offsets")]
    dirs += partitions(kdirs.before, "compacted")
    files = files_of(*dirs)
    assert any(f.suffix == ".txnindex" for f in files) and any(f.suffix == ".snapshot" for f in files)
    out = assert_same_dump(files, "--deep-iteration", "--print-data-log")
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        assert f"compresscodec: {codec}" in out
    assert "endTxnMarker: ABORT" in out and "headerKeys: [codec,i]" in out


def test_consumer_offsets_and_cluster_metadata_dump_like_kafka(kdirs):
    out = assert_same_dump(files_of(*partitions(kdirs.data, "__consumer_offsets")), "--offsets-decoder")
    assert f'"group":"{GROUP}"' in out and '"assignedPartitions"' in out
    out = assert_same_dump(files_of(kdirs.metadata / "__cluster_metadata-0"), "--cluster-metadata-decoder")
    for record in ("TOPIC_RECORD", "PARTITION_RECORD", "REGISTER_BROKER_RECORD", "FEATURE_LEVEL_RECORD"):
        assert f'"type":"{record}"' in out
    assert "LeaderChange:" in out


@pytest.mark.parametrize("option", ["--verify-index-only", "--index-sanity-check"])
def test_index_checks_agree_with_kafka(kdirs, option):
    dirs = [d for d in partitions(kdirs.data) if any(f.stat().st_size for f in d.glob("*.log"))]
    assert_same_dump([f for f in files_of(*dirs) if f.suffix in (".log", ".index", ".timeindex")], option)


# ---------------------------------------------------------------- verify
def test_pylog_verify_is_clean_on_kafka_dirs(kdirs, tmp_path):
    copy = tmp_path / "data"
    shutil.copytree(kdirs.data, copy)
    shutil.copytree(kdirs.metadata / "__cluster_metadata-0", copy / "__cluster_metadata-0")
    for target in (copy, kdirs.before):
        r = pylog("verify", "--json", target)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        doc = json.loads(r.stdout)
        assert doc["verdict"] == "clean" and doc["problem_count"] == 0, r.stdout[-3000:]


def test_verify_only_logs_copied_from_kafka_are_repairable(kdirs, tmp_path):
    """Partitions holding only the .log files a Kafka broker wrote: every record readable, the indexes,
    snapshots and epoch checkpoint missing -> REPAIRABLE (exit 0, 1 with --strict); --repair rebuilds them."""
    logs = tmp_path / "logs"
    for name in ("codecs-0", "txn-0", "compacted-0"):
        (logs / name).mkdir(parents=True)
        for f in (kdirs.data / name).glob("*.log"):
            shutil.copy(f, logs / name / f.name)
    r = pylog("verify", "--json", logs)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "repairable"
    assert {p["kind"] for i in doc["items"] for p in i["problems"]} >= {"index", "time-index", "leader-epoch"}
    assert all(p["derived"] for i in doc["items"] for p in i["problems"])
    assert any(f.endswith("txn-0/00000000000000000000.txnindex") for f in doc["derived_files"])
    text = pylog("verify", logs)
    assert text.returncode == 0 and "REPAIRABLE" in text.stdout and "00000000000000000000.index" in text.stdout
    assert pylog("verify", "--strict", logs).returncode == 1
    assert pylog("verify", "--repair", "--yes", logs).returncode == 0
    doc = json.loads(pylog("verify", "--json", logs).stdout)
    assert doc["verdict"] == "clean", doc


def test_salvage_kafka_written_compressed_and_transactional_batches(kdirs, tmp_path):
    """One unreadable batch in a Kafka-written compressed partition and one in the transactional one: salvage
    removes only those, DumpLogSegments reads the rest at the same offsets."""
    from pylog.storage.scan import scan_log

    data = tmp_path / "data"
    for name in ("codecs-1", "txn-0"):
        shutil.copytree(kdirs.data / name, data / name)
    want = {}
    for name, pick in (("codecs-1", lambda h: h.codec != 0), ("txn-0", lambda h: h.is_transactional
                                                                and not h.is_control)):
        seg = data / name / "00000000000000000000.log"
        entries = [(e.position, e.header) for e in scan_log(seg)]
        pos, h = [x for x in entries if pick(x[1])][1]  # the second compressed / transactional data batch
        raw = bytearray(seg.read_bytes())
        raw[pos + h.size - 2] ^= 0xFF
        seg.write_bytes(bytes(raw))
        recs = data_records(subprocess_dump(kdirs.data / name))
        want[name] = ((h.base_offset, h.last_offset),
                      {o: kv for o, kv in recs.items() if not h.base_offset <= o <= h.last_offset})
    r = pylog("verify", "--repair", "--salvage", "--yes", "--json", data)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    doc = json.loads(r.stdout)
    lost = {Path(p["partition"]).name: [(x["first"], x["last"]) for x in p["lost"]] for p in doc["salvaged"]}
    assert lost == {name: [rng] for name, (rng, _) in want.items()}
    assert doc["verdict"] == "clean", doc
    for name, (_, recs) in want.items():
        assert data_records(subprocess_dump(data / name)) == recs


# ---------------------------------------------------------------- compaction
def _kept_logs(d: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(d.glob("*.log"))}


def test_pylog_compact_keeps_what_kafkas_cleaner_kept(kdirs, tmp_path):
    shutil.copytree(kdirs.before / "compacted-0", tmp_path / "compacted-0")
    r = pylog("compact", tmp_path / "compacted-0", "--set", "cleanup.policy=compact", "--json")
    assert r.returncode == 0, r.stderr
    kafka = kdirs.data / "compacted-0"
    # the same segments, byte for byte: same batches kept, same offsets, same keys and values
    assert _kept_logs(tmp_path / "compacted-0") == _kept_logs(kafka)
    dumped = pylog("dump-segment", "--print-data-log", *sorted((tmp_path / "compacted-0").glob("*.log"))).stdout
    kept = data_records(dumped)
    assert sorted(k for k, _ in kept.values()) == sorted([f"user{i}" for i in range(10)] + ["user0"])


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_spark_compaction_predicts_kafkas_cleaner(kdirs, tmp_path):
    shutil.copytree(kdirs.before / "compacted-0", tmp_path / "compacted-0")
    # started from a process pyspark marked as a Spark Connect client: --master still means a JVM here
    r = pylog("spark-compaction", tmp_path / "compacted-0", "--set", "cleanup.policy=compact", "--master", "local[1]",
              "--json", timeout=850, env={**os.environ, "SPARK_CONNECT_MODE_ENABLED": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    (p,) = json.loads(r.stdout)["partitions"]
    kafka = kdirs.data / "compacted-0"
    records = data_records(pylog("dump-segment", "--print-data-log", *sorted(kafka.glob("*.log"))).stdout)
    assert p["records_after"] == len(records)
    assert p["bytes_after"] == sum(f.stat().st_size for f in kafka.glob("*.log"))


# ---------------------------------------------------------------- pylog's broker on a Kafka log dir
def test_pylog_broker_serves_a_kafka_log_dir(kdirs, tmp_path):
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient

    copy = tmp_path / "data"
    shutil.copytree(kdirs.data, copy)
    # what a combined Kafka log dir also holds: the metadata log, and folders Kafka renames on the way out
    shutil.copytree(kdirs.metadata / "__cluster_metadata-0", copy / "__cluster_metadata-0")
    for suffix, src in (("delete", "codecs-0"), ("stray", "codecs-1"), ("future", "codecs-2")):
        shutil.copytree(copy / src, copy / f"{src}.0a1b2c3d4e5f60718293a4b5c6d7e8f9-{suffix}")
    expected = {}
    for d in partitions(kdirs.data):
        if d.name.startswith(("codecs", "compacted", "txn")):
            text = subprocess_dump(d)
            topic, _, part = d.name.rpartition("-")
            expected[(topic, int(part))] = data_records(text)
    b = BrokerProcess(copy).start()
    try:
        topics = set(AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=30).topics)
        assert {"codecs", "compacted", "txn"} <= topics
        assert not {t for t in topics if t == "__cluster_metadata" or re.search(r"-(delete|stray|future)$", t)}
        for isolation in ("read_uncommitted", "read_committed"):
            c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": f"reader-{isolation}",
                          "isolation.level": isolation, "enable.auto.commit": False,
                          "enable.partition.eof": True})
            c.assign([TopicPartition(t, p, 0) for t, p in expected])
            got, eof = {}, set()
            for _ in range(400):
                m = c.poll(0.5)
                if m is None:
                    continue
                if m.error():
                    eof.add((m.topic(), m.partition()))
                    if len(eof) == len(expected):
                        break
                    continue
                got[(m.topic(), m.partition(), m.offset())] = (
                    m.key().decode(), None if m.value() is None else m.value().decode())
            want = {(t, p, o): kv for (t, p), recs in expected.items() for o, kv in recs.items()
                    if isolation == "read_uncommitted" or not kv[0].startswith("abort")}
            assert got == want, isolation
            c.close()
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": GROUP})
        committed = c.committed([TopicPartition("codecs", p) for p in range(3)], timeout=30)
        # the Java consumer read everything, so it committed each partition's end offset
        assert [tp.offset for tp in committed] == [1 + max(expected[("codecs", p)]) for p in range(3)]
        c.close()
    finally:
        assert b.stop() == 0, b.stderr()


def subprocess_dump(d: Path) -> str:
    logs = [f for f in sorted(d.glob("*.log"))]
    return kafka_dump("--print-data-log", "--files", ",".join(map(str, logs)), check=True).stdout

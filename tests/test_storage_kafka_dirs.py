"""What Kafka leaves in a log dir: folders that are not topics, and the clean-shutdown file."""
from __future__ import annotations

import json
import os

from pylog.core.config import BROKER_CONFIGS
from pylog.core.records import build_batch
from pylog.storage.layout import parse_partition_dir, user_partition_dir
from pylog.storage.log_manager import LogManager


def broker_config():
    return BROKER_CONFIGS.resolve({"node.id": "1"})


def snapshot(folder):
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def test_partition_folder_names():
    assert parse_partition_dir("orders-3") == ("orders", 3)
    assert parse_partition_dir("my-topic-12") == ("my-topic", 12)
    assert parse_partition_dir("__cluster_metadata-0") == ("__cluster_metadata", 0)
    assert user_partition_dir("__cluster_metadata-0") is None
    for name in ("orders-3.6f1e2d3c4b5a69788796a5b4c3d2e1f0-delete", "orders-3.0123456789abcdef0123456789abcdef-stray",
                 "orders-3.0123456789abcdef0123456789abcdef-future", "orders", "orders-x"):
        assert parse_partition_dir(name) is None and user_partition_dir(name) is None


def test_kafka_folders_are_never_loaded_or_written(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    batch = build_batch([(1_700_000_000_000, None, b"metadata record")])
    kafka_made = {}
    for name in ("__cluster_metadata-0", "orders-0.0123456789abcdef0123456789abcdef-stray",
                 "orders-1.0123456789abcdef0123456789abcdef-future"):
        f = d / name
        f.mkdir()
        (f / "00000000000000000000.log").write_bytes(batch)
        (f / "00000000000000000000.index").write_bytes(b"\0" * 80)  # preallocated, as a live Kafka leaves it
        (f / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")
        kafka_made[name] = snapshot(f)
    lm = LogManager([str(d)], broker_config())
    report = lm.startup()
    try:
        assert report.partitions_loaded == 0 and not lm.topics
        lm.create_topic("orders", 2)
        lm.get_log("orders", 0).append_as_leader(bytearray(build_batch([(None, b"k", b"v")])), 0)
    finally:
        lm.shutdown()
    for name, before in kafka_made.items():
        assert snapshot(d / name) == before, name
    assert "__cluster_metadata" not in json.loads((d / "pylog-topics.json").read_text())["topics"]


def test_clean_shutdown_file_is_kafkas_json(tmp_path):
    d = tmp_path / "data"
    lm = LogManager([str(d)], broker_config())
    lm.startup()
    lm.shutdown()
    assert json.loads((d / ".kafka_cleanshutdown").read_text()) == {"version": 0, "brokerEpoch": -1}
    # a Kafka-written marker (any epoch) counts as a clean shutdown: nothing is recovered
    (d / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":19}')
    lm = LogManager([str(d)], broker_config())
    assert lm.startup().partitions_recovered == 0
    assert not os.path.exists(d / ".kafka_cleanshutdown")
    lm.shutdown()

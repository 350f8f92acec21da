"""`pylog verify` and `dump-segment` judge files as Kafka's own tools do: an empty
cleaner-offset-checkpoint (as Apache Kafka leaves it) is clean, a live dir's active segment
gets the stopped dir's verdict (a running Kafka node's as pylog's broker's), and an index with no
segment beside it is refused, as Kafka's DumpLogSegments refuses it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from support.cli import pylog
from support.dump_compare import kafka_dump
from support.kafka_peer import KafkaNode

KCAT = shutil.which("kcat") or "/usr/bin/kcat"


def verify(path) -> tuple[int, dict]:
    r = pylog("verify", "--json", path, timeout=300)
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, json.loads(r.stdout)


def kcat_produce(node: KafkaNode, topic: str, lines: str) -> None:
    r = subprocess.run([KCAT, "-b", node.bootstrap, "-P", "-t", topic], input=lines, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def kafka_run(tmp_path_factory):
    """One Kafka node for the module: `one` written to v14 and `one`, `two` (one batch) to v13, the dir
    verified while the node runs (the active segments' preallocated indexes have no entry yet, and
    their blank first slot reads as offset 0 at position 0), then the node stopped.
    (node, live verify's (rc, report))."""
    node = KafkaNode(tmp_path_factory.mktemp("kafka")).format().start()
    try:
        kcat_produce(node, "v14", "one\n")
        assert (node.log_dir / "v14-0" / "00000000000000000000.log").stat().st_size > 0
        kcat_produce(node, "v13", "one\ntwo\n")
        live = verify(node.log_dir)
    finally:
        rc = node.stop()
    assert rc == 143, node.log_tail()
    return node, live


def test_kafka_dir_with_empty_cleaner_checkpoint_is_clean(kafka_run):
    node, _ = kafka_run
    cleaner = node.log_dir / "cleaner-offset-checkpoint"
    assert cleaner.exists() and cleaner.stat().st_size == 0  # what Kafka 4 leaves without a compacted topic
    rc, report = verify(node.log_dir)
    assert (rc, report["verdict"], report["problem_count"]) == (0, "clean", 0), report


def test_checkpoint_problems_are_never_records_lost(tmp_path):
    d = tmp_path / "data"
    (d / "t-0").mkdir(parents=True)
    (d / "recovery-point-offset-checkpoint").write_text("0\n1\nnot-a-partition 0 5\n")
    rc, report = verify(d)
    assert report["verdict"] == "repairable", report


def test_live_dir_right_after_one_record_is_clean(broker_factory):
    b = broker_factory(None)
    for topic, lines in (("v14", "one\n"), ("v13", "one\ntwo\n")):  # a batch of one record, and of two
        r = subprocess.run([KCAT, "-b", b.bootstrap, "-P", "-t", topic], input=lines, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
    live_rc, live = verify(b.log_dir)
    assert live["in_use"] == [str(b.log_dir)]
    assert b.stop() == 0
    stopped_rc, stopped = verify(b.log_dir)
    assert (live_rc, live["verdict"]) == (stopped_rc, stopped["verdict"]) == (0, "clean"), live


def test_live_kafka_dir_right_after_one_record_gets_the_stopped_verdict(kafka_run):
    node, (live_rc, live) = kafka_run
    assert live["in_use"] == [str(node.log_dir)]  # Kafka's lock (a POSIX record lock) is seen
    stopped_rc, stopped = verify(node.log_dir)
    assert (live_rc, live["verdict"], live["problem_count"]) == \
        (stopped_rc, stopped["verdict"], stopped["problem_count"]) == (0, "clean", 0), live


def test_random_index_without_a_segment_is_refused(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(os.urandom(4096))
    kafka = kafka_dump("--files", path)
    r = pylog("dump-segment", path)
    assert kafka.returncode == r.returncode == 1, (kafka.stdout[-2000:], kafka.stderr[-2000:])
    assert r.stdout == ""
    assert r.stderr.strip().splitlines() == [f"pylog: error: {path}: no log segment 00000000000000000000.log "
                                             "beside it"]
    rc, report = verify(path)
    assert (rc, report["verdict"]) == (1, "damaged"), report

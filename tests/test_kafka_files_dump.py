"""Kafka's DumpLogSegments reads pylog-written files, and `pylog dump-segment` prints what it prints.

Every file pylog writes (segments with every codec, offset and time indexes,
producer snapshots, transaction indexes, `__consumer_offsets` written by the
broker's group coordinator, a `bootstrap.checkpoint` written by
export-to-kafka) goes through Apache Kafka 4.3.1's DumpLogSegments and
through `pylog dump-segment` with the same options; the two outputs must be
the same text, line for line (so every field of every batch and record
agrees). The dump goldens in tests/golden/ must still be Kafka's output.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from support.broker_fixtures import BrokerProcess
from support.kafka_peer import KafkaNode
from support.segments import batch, engine_log
from support.dump_compare import DUMP, assert_same_dump, pylog_dump  # noqa: F401

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture(scope="module")
def pylog_files(tmp_path_factory):
    """Partition folders written by pylog's storage engine: several segments, snapshots, a .txnindex."""
    from pylog.core.config import TOPIC_CONFIGS
    from pylog.core.records import build_end_txn_batch
    from pylog.core.records.control import ABORT, COMMIT
    from pylog.storage.log import Log

    root = tmp_path_factory.mktemp("pylog-files")
    log = engine_log(root / "orders-0", batches=40, leader_epochs=(0, 2, 5))
    log.take_snapshot()
    log.close()
    txn = root / "txn-0"
    txn.mkdir()
    parts = [batch(0, [(b"a", b"plain", [])]),
             batch(1, [(b"t", b"aborted-1", []), (b"t", b"aborted-2", [])], pid=99, epoch=0, seq=0, txn=True),
             batch(3, [(b"u", b"committed", [])], pid=98, epoch=1, seq=0, txn=True),
             build_end_txn_batch(ABORT, 99, 0, 3, base_offset=4, timestamp=1_700_000_000_009, partition_leader_epoch=0),
             build_end_txn_batch(COMMIT, 98, 1, 3, base_offset=5, timestamp=1_700_000_000_009, partition_leader_epoch=0),
             batch(6, [(b"b", b"after", [])])]
    (txn / "00000000000000000000.log").write_bytes(b"".join(parts))
    # recovery (no clean shutdown) is what builds the .txnindex and the snapshot from the segment
    lg = Log(txn, TOPIC_CONFIGS.resolve({}), fsync=False, had_clean_shutdown=False)
    lg.take_snapshot()
    lg.close()
    return root


def _files(d: Path, *suffixes: str) -> list[Path]:
    return sorted(p for p in d.iterdir() if p.suffix in suffixes)


def test_pylog_files_are_read_by_kafka(pylog_files):
    orders, txn = pylog_files / "orders-0", pylog_files / "txn-0"
    kinds = (".log", ".index", ".timeindex", ".snapshot", ".txnindex")
    files = _files(orders, *kinds) + _files(txn, *kinds)
    assert {f.suffix for f in files} == set(kinds) and len(_files(orders, ".log")) >= 3
    deep = assert_same_dump(files, "--deep-iteration", "--print-data-log")
    assert deep.count("isvalid: true") > 40 and "endTxnMarker: ABORT" in deep and "producerId: 7" in deep
    assert "aborted-1" in deep and "compresscodec: zstd" in deep and "partitionLeaderEpoch: 5" in deep
    assert_same_dump(files)


@pytest.mark.parametrize("option", ["--verify-index-only", "--index-sanity-check"])
def test_pylog_indexes_pass_kafkas_checks(pylog_files, option):
    files = _files(pylog_files / "orders-0", ".index", ".timeindex", ".log")
    out = assert_same_dump(files, option)
    assert "Mismatches" not in out and "corrupt" not in out.lower()


def test_pylog_consumer_offsets_with_kafkas_offsets_decoder(tmp_path):
    """A real group (join, sync, commit) on pylog's broker; Kafka decodes its __consumer_offsets."""
    from confluent_kafka import Consumer, Producer

    # the group's first join is not held back group.initial.rebalance.delay.ms (3 s)
    b = BrokerProcess(tmp_path / "data", "--set", "group.initial.rebalance.delay.ms=0").start()
    try:
        p = Producer({"bootstrap.servers": b.bootstrap})
        for i in range(20):
            p.produce("dump-offsets", f"v{i}".encode(), key=f"k{i}".encode())
        assert p.flush(30) == 0
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "dump-group", "auto.offset.reset": "earliest",
                      "enable.auto.commit": False, "client.id": "dumper"})
        c.subscribe(["dump-offsets"])
        got = 0
        for _ in range(200):
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got += 1
                if got == 20:
                    c.commit(message=m, asynchronous=False)
                    break
        assert got == 20
        c.close()
    finally:
        assert b.stop() == 0, b.stderr()
    segments = [f for d in sorted((tmp_path / "data").glob("__consumer_offsets-*"))
                for f in _files(d, ".log") if f.stat().st_size]
    assert segments, "no __consumer_offsets data written"
    out = assert_same_dump(segments, "--offsets-decoder")
    assert '"group":"dump-group","topic":"dump-offsets","partition":0' in out
    assert '"protocolType":"consumer"' in out and '"clientId":"dumper"' in out
    assert_same_dump([f.with_suffix(".index") for f in segments], "--verify-index-only")


def test_export_bootstrap_checkpoint_read_by_kafka(tmp_path):
    """The bootstrap.checkpoint pylog writes (Kafka's features + topic records) is a snapshot Kafka reads."""
    import uuid

    from pylog.storage.kraft_bootstrap import read_bootstrap_checkpoint

    node = KafkaNode(tmp_path / "node").format()
    boot = read_bootstrap_checkpoint(node.metadata_dir)  # Kafka 4.4 keeps it as snapshot 0-0
    tid = uuid.UUID("6a4b7cc0-0f3e-4c3e-9f00-1d2c3b4a5968")
    boot.add("TOPIC_RECORD", 0, {"name": "t", "topic_id": tid})
    boot.add("CONFIG_RECORD", 0, {"resource_type": 2, "resource_name": "t", "name": "retention.ms", "value": "1"})
    out_file = tmp_path / "bootstrap.checkpoint"
    boot.write(out_file)
    out = assert_same_dump([out_file], "--cluster-metadata-decoder")
    assert "KRaft bootstrap snapshot" in out and '"type":"TOPIC_RECORD"' in out and "SnapshotFooter" in out
    assert read_bootstrap_checkpoint(out_file).records == boot.records


def test_goldens_are_kafkas_output(tmp_path):
    """tests/golden/dump_*.txt (which test_dump_verify holds pylog to) equal DumpLogSegments' output today."""
    sys.path.insert(0, str(GOLDEN))
    try:
        import regenerate
    finally:
        sys.path.remove(str(GOLDEN))
    goldens = regenerate.kafka_goldens(tmp_path)
    assert set(goldens) == {p.name for p in GOLDEN.glob("dump_*.txt")}
    for name, text in goldens.items():
        assert (GOLDEN / name).read_text() == text, f"{name}: run python tests/golden/regenerate.py"
    shutil.rmtree(tmp_path, ignore_errors=True)

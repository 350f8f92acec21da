"""Segments and log dirs written by pylog's engine for the dump and verify tests (and golden/regenerate.py)."""
from __future__ import annotations
import os
from pathlib import Path
import pytest
from pylog.core.config import TOPIC_CONFIGS
from pylog.core.records import BatchBuilder, LegacyBuilder, build_end_txn_batch
from pylog.core.records.control import COMMIT
from pylog.storage.log import Log


TS = 1_700_000_000_000


CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def batch(base_offset, records, *, codec=0, pid=-1, epoch=-1, seq=-1, txn=False, epoch_leader=0, log_append=False):
    b = BatchBuilder(codec=codec, base_offset=base_offset, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                     is_transactional=txn, partition_leader_epoch=epoch_leader, timestamp_type=1 if log_append else 0)
    for i, (k, v, h) in enumerate(records):
        b.append(TS + i, k, v, h)
    return b.build()


def golden_segment(path: Path) -> Path:
    """One segment with every codec, headers, null keys/values, a transaction and its COMMIT marker."""
    parts = []
    off = 0
    for name, codec in CODECS.items():
        recs = [(f"k{off + i}".encode(), f"value-{name}-{i}".encode(), [("h1", b"x"), ("h2", None)]) for i in range(3)]
        parts.append(batch(off, recs, codec=codec))
        off += 3
    parts.append(batch(off, [(None, b"nokey", []), (b"tomb", None, [])]))
    off += 2
    parts.append(batch(off, [(b"t1", b"in txn", []), (b"t2", b"\xff\xfebin", [])], pid=42, epoch=3, seq=0, txn=True))
    off += 2
    parts.append(build_end_txn_batch(COMMIT, 42, 3, 7, base_offset=off, timestamp=TS + 5, partition_leader_epoch=0))
    off += 1
    parts.append(batch(off, [(b"j", b'{"a": [1, 2]}', [])], log_append=True))
    path.mkdir(parents=True, exist_ok=True)
    seg = path / "00000000000000000000.log"
    seg.write_bytes(b"".join(parts))
    return seg


def legacy_segment(path: Path) -> Path:
    """v0 and a gzip-wrapped v1 message set (magic 0/1, as old Kafka wrote them)."""
    v0 = LegacyBuilder(0, 0, base_offset=0)
    v0.append(None, b"a", b"v0-plain")
    v1z = LegacyBuilder(1, 1, base_offset=1)  # gzip wrapper of two messages
    v1z.append(TS, b"b", b"v1-in-gzip-1")
    v1z.append(TS + 1, b"c", b"v1-in-gzip-2")
    path.mkdir(parents=True, exist_ok=True)
    seg = path / "00000000000000000000.log"
    seg.write_bytes(v0.build() + v1z.build())
    return seg


# ---------------------------------------------------------------- storage-engine logs
def engine_log(dir: Path, batches: int = 30, leader_epochs=(0,), pid=7) -> Log:
    cfg = TOPIC_CONFIGS.resolve({"segment.bytes": "4096", "index.interval.bytes": "200"})
    log = Log(dir, cfg, fsync=False)
    seq = 0
    for i in range(batches):
        le = leader_epochs[min(i * len(leader_epochs) // batches, len(leader_epochs) - 1)]
        codec = list(CODECS.values())[i % 5]
        recs = [(f"k{i}-{j}".encode(), os.urandom(20).hex().encode(), [("h", b"1")]) for j in range(4)]
        buf = bytearray(batch(0, recs, codec=codec, pid=pid, epoch=0, seq=seq))
        seq += 4
        log.append_as_leader(buf, le)
    return log


# ---------------------------------------------------------------- transaction index
@pytest.fixture
def txn_dir(tmp_path):
    """Producer 42 writes offsets 0-1 and aborts at 3; producer 43 writes offset 2 (its transaction still
    open at 3, so the abort's last stable offset is 2) and commits at 4; offset 5 is plain."""
    from pylog.core.records.control import ABORT

    d = tmp_path / "logs" / "payments-0"
    d.mkdir(parents=True)
    parts = [
        batch(0, [(b"a", b"1", []), (b"b", b"2", [])], pid=42, epoch=1, seq=0, txn=True),
        batch(2, [(b"c", b"3", [])], pid=43, epoch=1, seq=0, txn=True),
        build_end_txn_batch(ABORT, 42, 1, 5, base_offset=3, timestamp=TS + 3, partition_leader_epoch=0),
        build_end_txn_batch(COMMIT, 43, 1, 5, base_offset=4, timestamp=TS + 4, partition_leader_epoch=0),
        batch(5, [(b"d", b"4", [])]),
    ]
    (d / "00000000000000000000.log").write_bytes(b"".join(parts))
    # the storage engine's recovery writes the offset/time indexes and the epoch cache
    Log(d, TOPIC_CONFIGS.resolve({}), had_clean_shutdown=False, fsync=False).close()
    return d


def logged_records(log_dir: Path, topic: str) -> list[tuple[bytes, bytes | None]]:
    """(key, value) of every record of TOPIC in a stopped broker's log dir, partition by partition
    in offset order (opened with the storage engine, the cleaner off)."""
    from pylog.broker.groups.store import iter_log_batches
    from pylog.core.config import BROKER_CONFIGS
    from pylog.storage import LogManager

    out = []
    mgr = LogManager([str(log_dir)], BROKER_CONFIGS.resolve({"log.dirs": str(log_dir), "log.cleaner.enable": "false"}))
    mgr.startup(start_cleaner=False)
    try:
        for p in range(mgr.topics[topic].num_partitions):
            for _h, batch, _start in iter_log_batches(mgr.get_log(topic, p)):
                out += [(bytes(r.key), None if r.value is None else bytes(r.value)) for r in batch.records()]
    finally:
        mgr.shutdown()
    return out

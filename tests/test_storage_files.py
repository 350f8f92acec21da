"""Storage file types: checkpoints, leader epochs, producer state, meta/partition metadata, lock."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
import uuid

import pytest
from crc32c import crc32c

from pylog.core.errors import (
    DataError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceNumberError,
)
from pylog.core.records.header import BatchHeader
from pylog.storage.checkpoint import (
    atomic_write,
    format_offset_checkpoint,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from pylog.storage.leader_epoch import EpochEntry, LeaderEpochFileCache, read_leader_epoch_checkpoint
from pylog.storage.lock import DirLock
from pylog.storage.meta_properties import (
    MetaProperties,
    ensure_meta_properties,
    generate_cluster_id,
    read_meta_properties,
    uuid_from_base64,
    uuid_to_base64,
)
from pylog.storage.partition_metadata import read_partition_metadata, write_partition_metadata
from pylog.storage.producer_state import (
    CorruptSnapshotError,
    ProducerStateManager,
    SnapshotEntry,
    decode_snapshot,
    encode_snapshot,
    read_snapshot,
)

INT32_MAX = 2**31 - 1


# ---------------- offset checkpoints ----------------

def test_offset_checkpoint_bytes_and_roundtrip(tmp_path):
    p = tmp_path / "recovery-point-offset-checkpoint"
    write_offset_checkpoint(p, {("b", 1): 7, ("a", 0): 1234})
    assert p.read_bytes() == b"0\n2\na 0 1234\nb 1 7\n"
    assert read_offset_checkpoint(p) == {("a", 0): 1234, ("b", 1): 7}
    write_offset_checkpoint(p, {})
    assert p.read_bytes() == b"0\n0\n"
    assert read_offset_checkpoint(p) == {}
    p.write_bytes(b"")  # as Kafka leaves cleaner-offset-checkpoint until its cleaner runs; Kafka reads it as empty
    assert read_offset_checkpoint(p) == {}


@pytest.mark.parametrize(
    "content, fragment",
    [
        (b"1\n0\n", "line 1: unsupported checkpoint version 1"),
        (b"x\n0\n", "line 1: version 'x'"),
        (b"0\n", "missing the entry count"),
        (b"0\n2\na 0 1\n", "expected 2 entries but found 1"),
        (b"0\n1\na 0\n", "line 3: expected 3 space-separated fields"),
        (b"0\n1\na zero 1\n", "line 3: partition and offset must be integers"),
        (b"0\n1\na -1 1\n", "line 3: negative partition"),
        (b"\xff\xfe\n", "invalid UTF-8"),
    ],
)
def test_offset_checkpoint_malformed(tmp_path, content, fragment):
    p = tmp_path / "log-start-offset-checkpoint"
    p.write_bytes(content)
    with pytest.raises(DataError) as e:
        read_offset_checkpoint(p)
    assert fragment in str(e.value)
    assert str(p) in str(e.value)


def test_atomic_write_half_written_temp_never_replaces(tmp_path):
    p = tmp_path / "replication-offset-checkpoint"
    write_offset_checkpoint(p, {("t", 0): 5})
    # a crash while writing leaves a half-written temp file next to the real one
    (tmp_path / (p.name + ".tmp")).write_bytes(b"0\n3\nt 0 9")
    assert read_offset_checkpoint(p) == {("t", 0): 5}
    # the next write simply overwrites the stale temp file
    write_offset_checkpoint(p, {("t", 0): 6})
    assert read_offset_checkpoint(p) == {("t", 0): 6}
    assert not (tmp_path / (p.name + ".tmp")).exists()


def test_atomic_write_crash_before_rename_keeps_old_file(tmp_path):
    """Kill a child process between the temp write and the rename: the old content survives."""
    p = tmp_path / "cleaner-offset-checkpoint"
    write_offset_checkpoint(p, {("t", 0): 1})
    code = (
        "import os, sys\n"
        "from pylog.storage import checkpoint\n"
        "def die(src, dst): os._exit(9)\n"
        "checkpoint.os.replace = die\n"
        f"checkpoint.write_offset_checkpoint({str(p)!r}, {{('t', 0): 2, ('u', 1): 3}})\n"
    )
    rc = subprocess.run([sys.executable, "-c", code]).returncode
    assert rc == 9
    assert read_offset_checkpoint(p) == {("t", 0): 1}
    assert (tmp_path / (p.name + ".tmp")).read_bytes() == format_offset_checkpoint({("t", 0): 2, ("u", 1): 3}).encode()


def test_atomic_write_bytes(tmp_path):
    atomic_write(tmp_path / "f", b"\x00\x01")
    assert (tmp_path / "f").read_bytes() == b"\x00\x01"


# ---------------- leader epoch cache ----------------

def test_leader_epoch_file_format_and_load(tmp_path):
    c = LeaderEpochFileCache.load(tmp_path)
    assert c.latest_epoch is None
    assert c.assign(0, 0)
    assert c.assign(2, 10)
    assert not c.assign(2, 15)  # same epoch, later offset: no change
    assert (tmp_path / "leader-epoch-checkpoint").read_bytes() == b"0\n2\n0 0\n2 10\n"
    c2 = LeaderEpochFileCache.load(tmp_path)
    assert c2.entries == [EpochEntry(0, 0), EpochEntry(2, 10)]
    assert c2.latest_epoch == 2


def test_leader_epoch_assign_kafka_semantics(tmp_path):
    c = LeaderEpochFileCache(tmp_path / "leader-epoch-checkpoint")
    c.assign(1, 5)
    c.assign(3, 20)
    # same epoch with an earlier start offset replaces it
    assert c.assign(3, 15)
    assert c.entries == [EpochEntry(1, 5), EpochEntry(3, 15)]
    # a lower epoch removes every entry with epoch >= it or offset >= its offset
    assert c.assign(2, 10)
    assert c.entries == [EpochEntry(1, 5), EpochEntry(2, 10)]
    with pytest.raises(ValueError):
        c.assign(-1, 0)


@pytest.mark.parametrize(
    "epoch, expected",
    [
        (-1, (-1, -1)),  # undefined epoch
        (0, (0, 10)),  # requested epoch below the first: answer it with the first start offset
        (1, (1, 20)),
        (2, (1, 20)),  # absent epoch between: the floor epoch, the next start
        (3, (3, 30)),  # end of epoch 3 = start of epoch 5
        (5, (5, 100)),  # latest epoch: log end
        (6, (-1, -1)),  # above the latest
    ],
)
def test_leader_epoch_end_offset_for(tmp_path, epoch, expected):
    c = LeaderEpochFileCache(tmp_path / "x", [EpochEntry(1, 10), EpochEntry(3, 20), EpochEntry(5, 30)])
    assert c.end_offset_for(epoch, 100) == expected


def test_leader_epoch_truncation(tmp_path):
    c = LeaderEpochFileCache(tmp_path / "x", [EpochEntry(1, 10), EpochEntry(3, 20), EpochEntry(5, 30)])
    c.truncate_from_end(31)
    assert len(c) == 3
    c.truncate_from_end(20)
    assert c.entries == [EpochEntry(1, 10)]
    c = LeaderEpochFileCache(tmp_path / "x", [EpochEntry(1, 10), EpochEntry(3, 20), EpochEntry(5, 30)])
    c.truncate_from_start(5)
    assert c.entries == [EpochEntry(1, 10), EpochEntry(3, 20), EpochEntry(5, 30)]
    c.truncate_from_start(25)
    assert c.entries == [EpochEntry(3, 25), EpochEntry(5, 30)]
    assert read_leader_epoch_checkpoint(tmp_path / "x") == c.entries
    assert c.epoch_for_offset(26) == 3 and c.epoch_for_offset(30) == 5 and c.epoch_for_offset(1) is None


@pytest.mark.parametrize(
    "content, fragment",
    [(b"0\n1\n1\n", "line 3: expected 2"), (b"0\n2\n1 2\n", "expected 2 entries"), (b"0\n1\n-1 2\n", "line 3: negative")],
)
def test_leader_epoch_malformed(tmp_path, content, fragment):
    (tmp_path / "leader-epoch-checkpoint").write_bytes(content)
    with pytest.raises(DataError, match=fragment):
        LeaderEpochFileCache.load(tmp_path)


# ---------------- producer state ----------------

def hdr(pid=1000, epoch=0, seq=0, count=1, base_offset=0, ts=1000, txn=False, control=False) -> BatchHeader:
    attrs = (0x10 if txn else 0) | (0x20 if control else 0)
    return BatchHeader(base_offset, 100, 0, 2, 0, attrs, count - 1, ts, ts, pid, epoch, seq, count)


# (description, [(epoch, first seq, count)] already appended, incoming (epoch, seq, count), expected)
SEQUENCE_CASES = [
    ("first batch of a new producer at 0", [], (0, 0, 5), None),
    ("unknown producer may start anywhere", [], (0, 42, 5), None),
    ("next in sequence", [(0, 0, 5)], (0, 5, 3), None),
    ("gap", [(0, 0, 5)], (0, 6, 1), OutOfOrderSequenceNumberError),
    ("behind but not a duplicate", [(0, 0, 5)], (0, 2, 1), OutOfOrderSequenceNumberError),
    ("older epoch", [(3, 0, 1)], (2, 1, 1), InvalidProducerEpochError),
    ("new epoch at 0", [(0, 0, 5)], (1, 0, 1), None),
    ("new epoch not at 0", [(0, 0, 5)], (1, 5, 1), OutOfOrderSequenceNumberError),
    ("wrap at Int32.MAX", [(0, INT32_MAX - 1, 2)], (0, 0, 1), None),
    ("wrap must go to 0", [(0, INT32_MAX - 1, 2)], (0, 1, 1), OutOfOrderSequenceNumberError),
    ("duplicate of the last batch", [(0, 0, 5)], (0, 0, 5), "dup"),
    ("duplicate of an older retained batch", [(0, 0, 2), (0, 2, 2), (0, 4, 2)], (0, 2, 2), "dup"),
    ("same first seq, different last: not a dup", [(0, 0, 5)], (0, 0, 4), OutOfOrderSequenceNumberError),
    ("duplicate seqs with another epoch", [(0, 0, 5), (1, 0, 5)], (0, 0, 5), InvalidProducerEpochError),
]


@pytest.mark.parametrize("desc, history, incoming, expected", SEQUENCE_CASES, ids=[c[0] for c in SEQUENCE_CASES])
def test_producer_sequence_rules(tmp_path, desc, history, incoming, expected):
    psm = ProducerStateManager(tmp_path)
    offset = 0
    originals = {}
    for epoch, seq, count in history:
        h = hdr(epoch=epoch, seq=seq, count=count, base_offset=offset, ts=offset)
        assert psm.check_batch(h) is None
        psm.update(h)
        originals[(epoch, seq, count)] = (offset, offset + count - 1)
        offset += count
    epoch, seq, count = incoming
    h = hdr(epoch=epoch, seq=seq, count=count, base_offset=offset)
    if expected is None:
        assert psm.check_batch(h) is None
    elif expected == "dup":
        dup = psm.check_batch(h)
        assert (dup.first_offset, dup.last_offset) == originals[incoming]
        assert (dup.first_seq, dup.last_seq) == (seq, (seq + count - 1) % (INT32_MAX + 1))
    else:
        with pytest.raises(expected):
            psm.check_batch(h)


def test_only_last_five_batches_are_duplicates(tmp_path):
    psm = ProducerStateManager(tmp_path)
    for i in range(6):
        psm.update(hdr(seq=i, base_offset=i))
    assert psm.check_batch(hdr(seq=1, base_offset=99)).first_offset == 1
    with pytest.raises(OutOfOrderSequenceNumberError):
        psm.check_batch(hdr(seq=0, base_offset=99))  # evicted: now just out of order


def test_check_batches_sees_earlier_batches_of_same_append(tmp_path):
    psm = ProducerStateManager(tmp_path)
    assert psm.check_batches([hdr(seq=0, count=2), hdr(seq=2, count=2, base_offset=2)]) == [None, None]
    psm.update(hdr(seq=0, count=2))
    with pytest.raises(OutOfOrderSequenceNumberError):
        psm.check_batches([hdr(seq=2, count=2), hdr(seq=5, count=1)])
    assert len(psm.last_entry(1000).batches) == 1  # checking changed nothing


def test_transactions_and_markers(tmp_path):
    psm = ProducerStateManager(tmp_path)
    psm.update(hdr(seq=0, count=2, base_offset=10, txn=True))
    psm.update(hdr(seq=2, count=2, base_offset=12, txn=True))
    assert psm.first_unstable_offset() == 10
    with pytest.raises(InvalidTxnStateError):
        psm.check_batch(hdr(seq=4, base_offset=14))
    # COMMIT marker: key (version 0, type 1), value (version 0, coordinator epoch 7)
    buf = control_batch(base_offset=14, pid=1000, epoch=0, ctype=1, coordinator_epoch=7)
    from pylog.core.records.header import parse_header

    done = psm.update(parse_header(buf, 0), buf, 0)
    assert done == (1000, 10, 14, False)
    assert psm.first_unstable_offset() is None
    assert psm.last_entry(1000).coordinator_epoch == 7


def control_batch(base_offset, pid, epoch, ctype, coordinator_epoch) -> bytearray:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(2, 0, True, pid, epoch, -1, 1 << 20)
    b.append(0, 1000, struct.pack(">hh", 0, ctype), struct.pack(">hi", 0, coordinator_epoch), [])
    buf = bytearray(b.build())
    attrs = struct.unpack_from(">h", buf, 21)[0] | 0x20
    struct.pack_into(">h", buf, 21, attrs)
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return buf


def test_snapshot_bytes_exact(tmp_path):
    psm = ProducerStateManager(tmp_path)
    psm.update(hdr(pid=7, epoch=2, seq=10, count=3, base_offset=100, ts=5555))
    path = psm.take_snapshot()
    assert path.name == "00000000000000000103.snapshot"
    data = path.read_bytes()
    body = struct.pack(">i", 1) + struct.pack(">qhiqiqiq", 7, 2, 12, 102, 2, 5555, -1, -1)
    assert data == struct.pack(">hI", 1, crc32c(body)) + body
    assert read_snapshot(path) == [SnapshotEntry(7, 2, 12, 102, 2, 5555, -1, -1)]


def test_snapshot_corruption_detected(tmp_path):
    data = bytearray(encode_snapshot([SnapshotEntry(1, 0, 4, 9, 4, 1, -1, -1)]))
    assert decode_snapshot(bytes(data))
    for bad, fragment in [
        (data[:5], "truncated"),
        (data[:-1], "corrupt"),
        (bytes([0, 2]) + data[2:], "version 2"),
        (data[:20] + bytes([data[20] ^ 1]) + data[21:], "corrupt"),
    ]:
        with pytest.raises(CorruptSnapshotError, match=fragment):
            decode_snapshot(bytes(bad), "x.snapshot")


def test_load_from_newest_valid_snapshot_and_replay(tmp_path):
    psm = ProducerStateManager(tmp_path)
    psm.update(hdr(pid=1, seq=0, count=5, base_offset=0, ts=10**12))
    psm.take_snapshot()  # 5
    psm.update(hdr(pid=1, seq=5, count=5, base_offset=5, ts=10**12))
    psm.update(hdr(pid=2, seq=0, count=5, base_offset=10, ts=10**12))
    psm.take_snapshot()  # 15
    psm.update(hdr(pid=2, seq=5, count=5, base_offset=15, ts=10**12))
    psm.take_snapshot()  # 20
    # log was truncated to 17: snapshot 20 is ahead; corrupt snapshot 15 so loading falls back to 5
    (tmp_path / "00000000000000000015.snapshot").write_bytes(b"\x00\x01garbage")
    psm2 = ProducerStateManager(tmp_path)
    warnings = psm2.load(0, 17, now_ms=10**12)
    assert any("15.snapshot" in w for w in warnings)
    assert psm2.snapshot_offsets() == [5]
    assert psm2.map_end_offset == 5
    assert psm2.last_entry(1).last_seq == 4 and psm2.last_entry(2) is None
    psm2.replay_batch(hdr(pid=1, seq=5, count=5, base_offset=5, ts=10**12))
    psm2.replay_batch(hdr(pid=2, seq=0, count=5, base_offset=10, ts=10**12))
    assert psm2.map_end_offset == 15
    assert psm2.check_batch(hdr(pid=2, seq=5, count=2, base_offset=15)) is None
    psm2.delete_snapshots_below(6)
    assert psm2.snapshot_offsets() == []


def test_expiration(tmp_path):
    psm = ProducerStateManager(tmp_path, producer_id_expiration_ms=1000)
    psm.update(hdr(pid=1, ts=1000))
    psm.update(hdr(pid=2, ts=1500, txn=True, base_offset=1))
    assert psm.remove_expired(2000) == [1]  # pid 2 has an open transaction
    psm.take_snapshot()
    psm2 = ProducerStateManager(tmp_path, producer_id_expiration_ms=1000)
    psm2.load(0, 2, now_ms=10**9)
    assert [e.producer_id for e in psm2] == [2]


# ---------------- meta.properties, partition.metadata, lock ----------------

def test_uuid_base64():
    u = uuid.UUID("71a59a51-8968-4f8b-937e-4830c71ec79a")
    s = uuid_to_base64(u)
    assert len(s) == 22 and uuid_from_base64(s) == u
    cid = generate_cluster_id()
    assert len(cid) == 22 and "=" not in cid and not cid.startswith("-")
    with pytest.raises(DataError):
        uuid_from_base64("abc")


def test_meta_properties(tmp_path):
    meta = ensure_meta_properties(tmp_path, 1)
    text = (tmp_path / "meta.properties").read_text()
    assert text.startswith("#\n#")
    assert f"cluster.id={meta.cluster_id}\n" in text and "node.id=1\n" in text and "version=1\n" in text
    assert f"directory.id={meta.directory_id}\n" in text
    assert read_meta_properties(tmp_path) == meta
    assert ensure_meta_properties(tmp_path, 1) == meta
    with pytest.raises(DataError, match="node.id 1 does not match"):
        ensure_meta_properties(tmp_path, 2)
    (tmp_path / "meta.properties").write_text("version=0\nbroker.id=1\n")
    with pytest.raises(DataError, match="unsupported meta.properties version"):
        read_meta_properties(tmp_path)
    assert MetaProperties("c", 1, "d").to_text().endswith("cluster.id=c\ndirectory.id=d\nnode.id=1\nversion=1\n")


def test_partition_metadata(tmp_path):
    u = uuid.uuid4()
    write_partition_metadata(tmp_path, u)
    assert (tmp_path / "partition.metadata").read_text() == f"version: 0\ntopic_id: {uuid_to_base64(u)}\n"
    assert read_partition_metadata(tmp_path) == u
    (tmp_path / "partition.metadata").write_text("version: 1\ntopic_id: x\n")
    with pytest.raises(DataError, match="line 1"):
        read_partition_metadata(tmp_path)
    (tmp_path / "partition.metadata").write_text("version: 0\n")
    with pytest.raises(DataError, match="truncated"):
        read_partition_metadata(tmp_path)


def test_lock_held_by_other_process(tmp_path):
    code = (
        "import sys, time\n"
        "from pylog.storage.lock import DirLock\n"
        f"DirLock({str(tmp_path)!r}).acquire(); print('locked', flush=True); time.sleep(30)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "locked"
        with pytest.raises(DataError, match="is locked by another pylog process"):
            DirLock(tmp_path).acquire()
    finally:
        child.kill()
        child.wait()
    with DirLock(tmp_path) as lock:
        assert lock.locked
    assert (tmp_path / ".lock").exists()
    assert not os.path.exists(tmp_path / ".lock.tmp")


def test_random_uuids_are_ones_kafka_would_make(monkeypatch):
    """Kafka's Uuid.randomUuid skips the reserved zero and one ids and any whose text starts with
    '-': kafka-storage format -t <id> (as `check-cluster --local kafka` runs it) would take that
    for an option. Cluster ids, topic ids and member ids all come from it."""
    import uuid

    from pylog.core.records import kafka_types

    dash = uuid.UUID(bytes=b"\xf8" + b"\x01" * 15)  # base64url of 0xf8.. starts with '-'
    ok = uuid.UUID(bytes=b"\x10" * 16)
    assert kafka_types.uuid_text(dash).startswith("-")
    drawn = iter([dash, uuid.UUID(int=0), uuid.UUID(int=1), ok])
    monkeypatch.setattr(kafka_types.uuid, "uuid4", lambda: next(drawn))
    assert kafka_types.random_uuid() == ok

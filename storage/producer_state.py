"""Idempotent/transactional producer state per partition and its `.snapshot` files.

Validation follows Kafka's ProducerAppendInfo (3.x/4.x, origin = client):
- a batch's epoch below the producer's current epoch -> InvalidProducerEpochError;
- a new (higher) epoch must start at sequence 0 unless the producer is unknown;
- within an epoch the first sequence must follow the last one (wrapping from
  Int32.MAX to 0), else OutOfOrderSequenceNumberError; an unknown producer
  (no entry, or state lost to retention) may start at any sequence;
- a batch whose epoch, first and last sequence match one of the producer's last
  5 batches is a duplicate: `check_batch` returns the original metadata.

Only the newest batch of each producer survives a snapshot, as in Kafka; the snapshot files'
format is storage/producer_snapshot.py's.
"""
from __future__ import annotations

import os
import threading
from collections import deque
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple

from pylog.core.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceNumberError,
    TransactionCoordinatorFencedError,
)
from pylog.core.records.control import parse_control_record
from pylog.core.records.header import BatchHeader
from pylog.storage.checkpoint import atomic_write
from pylog.storage.producer_snapshot import (  # noqa: F401 - the snapshot API, also imported from here
    SNAPSHOT_SUFFIX,
    CorruptSnapshotError,
    SnapshotEntry,
    decode_snapshot,
    encode_snapshot,
    offset_from_snapshot_name,
    read_snapshot,
    snapshot_file_name,
)

NUM_BATCHES_TO_RETAIN = 5
INT32_MAX = (1 << 31) - 1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_COORDINATOR_EPOCH = -1

CONTROL_ABORT, CONTROL_COMMIT = 0, 1


def decrement_sequence(seq: int, dec: int) -> int:
    """`seq - dec` in Kafka's int32 sequence space, which wraps to 0 after INT32_MAX."""
    if seq < dec:
        return INT32_MAX - (dec - seq) + 1
    return seq - dec


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """Whether `next_seq` directly follows `last_seq` (with the wrap at INT32_MAX)."""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class BatchMetadata(NamedTuple):
    """What the producer state keeps of one appended batch (Kafka's BatchMetadata)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        """Sequence number of the batch's first record."""
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        """Offset of the batch's first record."""
        return self.last_offset - self.offset_delta


class CompletedTxn(NamedTuple):
    """A transaction ended by a marker: the range that goes into .txnindex when aborted."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class ProducerStateEntry:
    """One producer's state: epoch, its last batches (for duplicate detection), open transaction."""

    __slots__ = ("producer_id", "producer_epoch", "batches", "coordinator_epoch", "last_timestamp", "current_txn_first_offset")

    def __init__(self, producer_id: int, producer_epoch: int = NO_PRODUCER_EPOCH, coordinator_epoch: int = NO_COORDINATOR_EPOCH,
                 last_timestamp: int = -1, current_txn_first_offset: int | None = None, batches: Iterable[BatchMetadata] = ()):
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.batches: deque[BatchMetadata] = deque(batches, maxlen=NUM_BATCHES_TO_RETAIN)
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset = current_txn_first_offset

    def copy(self) -> "ProducerStateEntry":
        """An independent copy (appends work on a copy until the write succeeded)."""
        return ProducerStateEntry(self.producer_id, self.producer_epoch, self.coordinator_epoch, self.last_timestamp,
                                  self.current_txn_first_offset, self.batches)

    @property
    def last_seq(self) -> int:
        """Sequence of the last record appended, or NO_SEQUENCE."""
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def first_seq(self) -> int:
        """Sequence of the first record of the oldest retained batch, or NO_SEQUENCE."""
        return self.batches[0].first_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        """Offset of the last record appended, or -1."""
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        """Offset delta of the last batch appended."""
        return self.batches[-1].offset_delta if self.batches else 0

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """The retained batch with exactly these sequences in this epoch (a retry), or None."""
        if epoch != self.producer_epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def maybe_update_epoch(self, epoch: int) -> None:
        """A new epoch starts over: the retained batches are forgotten."""
        if self.producer_epoch != epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def add_batch(self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int) -> None:
        """Remember an appended batch (at most NUM_BATCHES_TO_RETAIN are kept)."""
        self.maybe_update_epoch(epoch)
        self.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def to_snapshot_entry(self) -> SnapshotEntry:
        """This entry as one row of a .snapshot file."""
        return SnapshotEntry(self.producer_id, self.producer_epoch, self.last_seq, self.last_data_offset,
                             self.last_offset_delta, self.last_timestamp, self.coordinator_epoch,
                             -1 if self.current_txn_first_offset is None else self.current_txn_first_offset)

    @classmethod
    def from_snapshot_entry(cls, e: SnapshotEntry) -> "ProducerStateEntry":
        """An entry rebuilt from one row of a .snapshot file."""
        batches = [BatchMetadata(e.last_sequence, e.last_offset, e.offset_delta, e.timestamp)] if e.last_offset >= 0 else []
        return cls(e.producer_id, e.producer_epoch, e.coordinator_epoch, e.timestamp,
                   e.current_txn_first_offset if e.current_txn_first_offset >= 0 else None, batches)

    def __eq__(self, other) -> bool:
        return isinstance(other, ProducerStateEntry) and all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    def __repr__(self) -> str:
        return (f"ProducerStateEntry(pid={self.producer_id}, epoch={self.producer_epoch}, batches={list(self.batches)}, "
                f"coordinator_epoch={self.coordinator_epoch}, txn_first={self.current_txn_first_offset})")


class ProducerStateManager:
    """Producer entries for one partition plus its snapshot files."""

    def __init__(self, partition_dir: str | os.PathLike, producer_id_expiration_ms: int = 86400000, *, fsync: bool = True,
                 empty: bool = False):
        self.dir = Path(partition_dir)
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._fsync = fsync
        self._lock = threading.RLock()
        self.producers: dict[int, ProducerStateEntry] = {}
        # False only when no producer has an open transaction: the LSO query (every fetch) then
        # costs nothing; set by whatever can open one, cleared when a scan finds none
        self._maybe_open_txn = True
        self.map_end_offset = 0
        self.last_snap_offset = 0
        self._snapshots: dict[int, Path] = {}
        if not empty:  # a partition dir made just now holds no snapshot
            self._scan_snapshots()

    # ---- snapshot files ----
    def _scan_snapshots(self) -> None:
        self._snapshots.clear()
        if not self.dir.is_dir():
            return
        for p in self.dir.iterdir():
            off = offset_from_snapshot_name(p.name)
            if off is not None and p.is_file():
                self._snapshots[off] = p

    def snapshot_offsets(self) -> list[int]:
        """Offsets of the snapshot files on disk, oldest first."""
        with self._lock:
            return sorted(self._snapshots)

    def latest_snapshot_offset(self) -> int | None:
        """Offset of the newest snapshot file, or None."""
        with self._lock:
            return max(self._snapshots) if self._snapshots else None

    def oldest_snapshot_offset(self) -> int | None:
        """Offset of the oldest snapshot file, or None."""
        with self._lock:
            return min(self._snapshots) if self._snapshots else None

    def _delete_snapshot(self, offset: int) -> None:
        p = self._snapshots.pop(offset, None)
        if p is not None:
            try:
                p.unlink()
            except FileNotFoundError:
                pass

    def delete_snapshots_below(self, offset: int) -> None:
        """Delete snapshot files older than `offset` (after retention)."""
        with self._lock:
            for off in [o for o in self._snapshots if o < offset]:
                self._delete_snapshot(off)

    def delete_snapshots_above(self, offset: int) -> None:
        """Delete snapshot files past `offset` (after a truncation)."""
        with self._lock:
            for off in [o for o in self._snapshots if o > offset]:
                self._delete_snapshot(off)

    def take_snapshot(self, offset: int | None = None) -> Path:
        """Write the current state as `<offset>.snapshot` (default: the map end offset)."""
        with self._lock:
            if offset is None:
                offset = self.map_end_offset
            entries = [e.to_snapshot_entry() for _, e in sorted(self.producers.items())]
            path = self.dir / snapshot_file_name(offset)
            atomic_write(path, encode_snapshot(entries), fsync=self._fsync)
            self._snapshots[offset] = path
            self.last_snap_offset = max(self.last_snap_offset, offset)
            return path

    # ---- loading and truncation ----
    def _is_expired(self, entry: ProducerStateEntry, now_ms: int) -> bool:
        return entry.current_txn_first_offset is None and now_ms - entry.last_timestamp >= self.producer_id_expiration_ms

    def _load_from_snapshot(self, log_start_offset: int, now_ms: int) -> list[str]:
        warnings = []
        while self._snapshots:
            off = max(self._snapshots)
            path = self._snapshots[off]
            try:
                entries = read_snapshot(path)
            except (CorruptSnapshotError, OSError) as e:
                warnings.append(f"deleting unreadable producer snapshot {path}: {e}")
                self._delete_snapshot(off)
                continue
            for se in entries:
                entry = ProducerStateEntry.from_snapshot_entry(se)
                if not self._is_expired(entry, now_ms):
                    self.producers[entry.producer_id] = entry
                    self._maybe_open_txn = True
            self.map_end_offset = self.last_snap_offset = off
            return warnings
        self.map_end_offset = self.last_snap_offset = log_start_offset
        return warnings

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, now_ms: int | None = None) -> list[str]:
        """Kafka's truncateAndReload: drop out-of-range snapshots, reload from the newest valid one.

        Returns warnings (corrupt snapshots deleted). Afterwards `map_end_offset`
        says where the Log must start replaying batches (via `replay_batch`) up to
        its end.
        """
        import time

        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        with self._lock:
            self._scan_snapshots()
            for off in list(self._snapshots):
                if off > log_end_offset or off <= log_start_offset:
                    self._delete_snapshot(off)
            warnings: list[str] = []
            if log_end_offset != self.map_end_offset or not self.producers:
                self.producers.clear()
                warnings = self._load_from_snapshot(log_start_offset, now_ms)
            else:
                self.on_log_start_offset_incremented(log_start_offset)
            return warnings

    def load(self, log_start_offset: int, log_end_offset: int, now_ms: int | None = None) -> list[str]:
        """Startup load: newest snapshot at or below the log end (newer or corrupt ones deleted)."""
        with self._lock:
            self.producers.clear()
            self.map_end_offset = -1  # force a reload
            return self.truncate_and_reload(log_start_offset, log_end_offset, now_ms)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Forget every producer and snapshot; the log restarts at `offset`."""
        with self._lock:
            self.producers.clear()
            for off in list(self._snapshots):
                self._delete_snapshot(off)
            self.map_end_offset = self.last_snap_offset = offset

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        """The log start moved forward (DeleteRecords, retention)."""
        with self._lock:
            if self.map_end_offset < log_start_offset:
                self.map_end_offset = log_start_offset
            latest = self.latest_snapshot_offset()
            self.last_snap_offset = latest if latest is not None else log_start_offset

    def remove_expired(self, now_ms: int) -> list[int]:
        """Forget producers idle for producer.id.expiration.ms with no open transaction."""
        with self._lock:
            gone = [pid for pid, e in self.producers.items() if self._is_expired(e, now_ms)]
            for pid in gone:
                del self.producers[pid]
            return gone

    # ---- validation ----
    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        """The state of `producer_id`, or None if unknown or expired."""
        return self.producers.get(producer_id)

    @staticmethod
    def _check_epoch(entry: ProducerStateEntry, epoch: int) -> None:
        if epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"epoch of producer {entry.producer_id} is {epoch}, which is smaller than the last seen epoch {entry.producer_epoch}")

    @staticmethod
    def _check_sequence(entry: ProducerStateEntry, known_epoch: int, epoch: int, first_seq: int) -> None:
        if epoch != entry.producer_epoch:
            if first_seq != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceNumberError(
                    f"invalid sequence number for new epoch of producer {entry.producer_id}: "
                    f"{epoch} (request epoch), {first_seq} (seq. number), {entry.producer_epoch} (current producer epoch)")
            return
        # unknown producer state (e.g. removed by retention): any sequence is accepted
        if known_epoch == NO_PRODUCER_EPOCH:
            return
        if not in_sequence(entry.last_seq, first_seq):
            raise OutOfOrderSequenceNumberError(
                f"out of order sequence number for producer {entry.producer_id}: "
                f"{first_seq} (incoming seq. number), {entry.last_seq} (current end sequence number)")

    def _validate(self, pending: dict[int, ProducerStateEntry], h: BatchHeader, control: tuple[int, int] | None) -> None:
        pid = h.producer_id
        entry = pending.get(pid)
        if entry is None:
            current = self.producers.get(pid)
            entry = current.copy() if current is not None else ProducerStateEntry(pid)
            pending[pid] = entry
        known_epoch = self.producers[pid].producer_epoch if pid in self.producers else NO_PRODUCER_EPOCH
        self._check_epoch(entry, h.producer_epoch)
        if h.is_control:
            if control is not None and entry.coordinator_epoch > control[1]:
                raise TransactionCoordinatorFencedError(
                    f"invalid coordinator epoch for producer {pid}: {control[1]} (zombie), {entry.coordinator_epoch} (current)")
            entry.maybe_update_epoch(h.producer_epoch)
            entry.current_txn_first_offset = None
            return
        self._check_sequence(entry, known_epoch, h.producer_epoch, h.base_sequence)
        if not h.is_transactional and entry.current_txn_first_offset is not None:
            raise InvalidTxnStateError(f"expected a transactional write from producer {pid}")
        entry.add_batch(h.producer_epoch, h.last_sequence, h.last_offset, h.last_offset_delta, h.max_timestamp)
        if h.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = h.base_offset

    def check_batch(self, header: BatchHeader, buf=None, pos: int = 0) -> BatchMetadata | None:
        """Validate one client batch against the current state without changing it.

        Returns the original BatchMetadata when the batch is a duplicate, None
        when it may be appended; raises InvalidProducerEpochError,
        OutOfOrderSequenceNumberError (or the transaction errors) otherwise.
        Batches without a producer id always pass.
        """
        return self.check_batches([(header, buf, pos)])[0]

    def check_batches(self, batches: Iterable[BatchHeader | tuple]) -> list[BatchMetadata | None]:
        """Validate the batches of one append in order, each seeing the effect of the earlier ones.

        Items are headers or (header, buf, pos) tuples (buf needed only to read
        control records). Returns per batch a duplicate's metadata or None.
        """
        with self._lock:
            pending: dict[int, ProducerStateEntry] = {}
            out: list[BatchMetadata | None] = []
            for item in batches:
                h, buf, pos = (item, None, 0) if isinstance(item, BatchHeader) else item
                if h.producer_id < 0:
                    out.append(None)
                    continue
                last = self.producers.get(h.producer_id)
                dup = last.find_duplicate(h.producer_epoch, h.base_sequence, h.last_sequence) if last and not h.is_control else None
                if dup is not None:
                    out.append(dup)
                    continue
                control = parse_control_record(buf, pos, h) if (h.is_control and buf is not None) else None
                self._validate(pending, h, control)
                out.append(None)
            return out

    # ---- updates ----
    def _apply(self, h: BatchHeader, buf, pos: int) -> CompletedTxn | None:
        pid = h.producer_id
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerStateEntry(pid)
        if h.is_control:
            ctype, coord_epoch = parse_control_record(buf, pos, h) if buf is not None else (CONTROL_ABORT, NO_COORDINATOR_EPOCH)
            first = entry.current_txn_first_offset if entry.current_txn_first_offset is not None else h.base_offset
            entry.maybe_update_epoch(h.producer_epoch)
            entry.current_txn_first_offset = None
            entry.coordinator_epoch = coord_epoch
            entry.last_timestamp = h.max_timestamp
            return CompletedTxn(pid, first, h.last_offset, ctype == CONTROL_ABORT)
        entry.add_batch(h.producer_epoch, h.last_sequence, h.last_offset, h.last_offset_delta, h.max_timestamp)
        if h.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = h.base_offset
            self._maybe_open_txn = True
        return None

    def update(self, header: BatchHeader, buf=None, pos: int = 0) -> CompletedTxn | None:
        """Apply an appended batch (offsets already assigned). buf/pos are needed for control batches.

        Returns the completed transaction when the batch is an end-transaction marker.
        Advances `map_end_offset` past the batch in every case.
        """
        with self._lock:
            done = self._apply(header, buf, pos) if header.producer_id >= 0 else None
            if header.next_offset > self.map_end_offset:
                self.map_end_offset = header.next_offset
            return done

    # Recovery replays batches after the snapshot with no validation (Kafka's
    # loadProducersFromRecords): the log is the truth.
    replay_batch = update

    def replay(self, batches: Iterable[tuple[BatchHeader, object, int]]) -> list[CompletedTxn]:
        """Apply batches read back from the log (recovery); returns the transactions they ended."""
        done = []
        for h, buf, pos in batches:
            c = self.update(h, buf, pos)
            if c is not None:
                done.append(c)
        return done

    def update_map_end_offset(self, offset: int) -> None:
        """The state now covers the log up to `offset`."""
        with self._lock:
            self.map_end_offset = offset

    # ---- queries ----
    def ongoing_txn_first_offsets(self) -> dict[int, int]:
        """{producer id: first offset of its open transaction}."""
        with self._lock:
            return {pid: e.current_txn_first_offset for pid, e in self.producers.items() if e.current_txn_first_offset is not None}

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open transaction (the LSO bound), or None."""
        if not self._maybe_open_txn:
            return None
        with self._lock:
            offs = self.ongoing_txn_first_offsets().values()
            if not offs:
                self._maybe_open_txn = False
            return min(offs) if offs else None

    def snapshot_entries(self) -> list[SnapshotEntry]:
        """Every producer as snapshot rows, by producer id."""
        with self._lock:
            return [e.to_snapshot_entry() for _, e in sorted(self.producers.items())]

    def __iter__(self) -> Iterator[ProducerStateEntry]:
        return iter(list(self.producers.values()))

    def __len__(self) -> int:
        return len(self.producers)

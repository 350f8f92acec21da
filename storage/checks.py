"""The checks `pylog verify` runs on a partition folder and on a log dir's checkpoints.

Each problem found has a `kind` (listed in `pylog verify --help`); `pylog verify` renders and repairs.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from pylog.storage.scan import DEFAULT_MAX_MESSAGE_SIZE, Damage, scan_log
from pylog.storage.layout import SEGMENT_FILE, parse_partition_dir
from pylog.core.errors import DataError

# what Kafka's (and pylog's) log loading does with each kind of leftover file
# `.deleted` is not among them: Kafka renames segments so and removes them after
# file.delete.delay.ms, so a live log dir (or one just compacted) holds them normally.
_STRAY_SUFFIXES = {
    ".cleaned": "left by an interrupted cleaning; recovery removes it",
    ".swap": "left by an interrupted cleaner swap; recovery completes or discards the swap",
}
MAX_REPORTED_PER_KIND = 20
ONE_DAY_MS = 86400000

# Verdicts, worst last. REPAIRABLE: only files the broker derives from the log are missing
# or stale (it rebuilds them on recovery); DAMAGED: records are unreadable or lost.
CLEAN, REPAIRABLE, DAMAGED = "clean", "repairable", "damaged"
_VERDICT_RANK = {CLEAN: 0, REPAIRABLE: 1, DAMAGED: 2}
# problem kinds about derived files: offset/time/transaction indexes, producer snapshots,
# the leader-epoch checkpoint (a problem found in a .log itself is never derived)
DERIVED_KINDS = frozenset({"index", "time-index", "txn-index", "snapshot", "leader-epoch",
                           # metadata and offset checkpoints hold no records: never "records lost"
                           "metadata", "checkpoint"})


def worst_verdict(verdicts) -> str:
    """The worst of these verdicts (CLEAN for none)."""
    return max(verdicts, key=_VERDICT_RANK.__getitem__, default=CLEAN)


@dataclass
class Problem:
    kind: str
    file: str
    message: str
    position: int | None = None
    offset: int | None = None
    derived: bool = False  # about a file the broker rebuilds from the log


@dataclass
class PartitionReport:
    path: str
    segments: int = 0
    batches: int = 0
    records: int = 0
    bytes: int = 0
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    problems: list[Problem] = field(default_factory=list)
    first_damage: tuple[str, int] | None = None  # (log file, position) where recovery would cut
    derived_files: set = field(default_factory=set)  # derived files missing or stale
    _counts: dict = field(default_factory=dict, repr=False)

    def add(self, kind: str, file, message: str, position: int | None = None, offset: int | None = None) -> None:
        derived = kind in DERIVED_KINDS and not str(file).endswith(".log")
        key = (kind, derived)
        n = self._counts.get(key, 0) + 1
        self._counts[key] = n
        if n <= MAX_REPORTED_PER_KIND:
            self.problems.append(Problem(kind, str(file), message, position, offset, derived))
        elif n == MAX_REPORTED_PER_KIND + 1:
            self.problems.append(Problem(kind, str(file), f"more {kind} problems not listed", derived=derived))
        if derived:
            self.derived_files.add(str(file))

    @property
    def problem_count(self) -> int:
        return sum(self._counts.values())

    @property
    def verdict(self) -> str:
        """CLEAN, REPAIRABLE (every problem is about a derived file) or DAMAGED."""
        if not self._counts:
            return CLEAN
        return REPAIRABLE if all(derived for _, derived in self._counts) else DAMAGED

    def to_json(self) -> dict:
        d = asdict(self)
        d.pop("_counts", None)
        d["first_damage"] = list(self.first_damage) if self.first_damage else None
        d["problem_count"] = self.problem_count
        d["verdict"] = self.verdict
        d["derived_files"] = sorted(self.derived_files)
        return d


# ---------------------------------------------------------------- one partition
def read_index(path: Path, base: int, entry_size: int):
    """[(offset, position)] of an offset index or [(timestamp, offset)] of a time index,
    through the index classes: the zero-filled preallocated tail of an active segment's
    index (a running broker's, or one a crash left) holds no entries."""
    from pylog.storage.offset_index import OffsetIndex
    from pylog.storage.time_index import TimeIndex

    idx = (OffsetIndex if entry_size == 8 else TimeIndex).open_read_only(path, base)
    try:
        return [idx.entry(i) for i in range(idx.entries)]
    finally:
        idx.close()


def verify_partition(pdir: Path, *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE, progress=None,
                     only_log: Path | None = None, live: bool = False) -> PartitionReport:
    """Check one partition folder. `live`: a running broker owns it, so the active
    segment may grow while it is read; only the bytes present at the start are judged,
    and a batch being written at the active segment's end is not damage."""
    from pylog.storage.partition_metadata import PARTITION_METADATA, read_partition_metadata
    from pylog.storage.producer_state import ProducerStateManager, offset_from_snapshot_name

    rep = PartitionReport(str(pdir))
    logs = sorted((int(m.group(1)), pdir / m.group(0)) for p in pdir.iterdir() if (m := SEGMENT_FILE.match(p.name)))
    if only_log is not None:
        logs = [(b, p) for b, p in logs if p.name == only_log.name] or [(0, only_log)]
    rep.segments = len(logs)

    # producer snapshots to compare while replaying
    snapshots: dict[int, Path] = {} if only_log is not None else {
        off: p for p in pdir.iterdir() if (off := offset_from_snapshot_name(p.name)) is not None}
    pending_snaps = sorted(snapshots)
    psm = ProducerStateManager(pdir / ".pylog-verify-nonexistent", fsync=False)

    epochs: list[tuple[int, int]] = []  # (epoch, first offset) from the log
    prev_last = None
    prev_seg_last = None
    log_start = logs[0][0] if logs else None
    rep.log_start_offset = log_start
    # replaying from offset 0 sees every transaction; after retention (or for one
    # segment alone) a transaction may have begun before the first batch read
    exact_replay = log_start == 0

    def compare_snapshot(off: int) -> None:
        _compare_snapshot(rep, snapshots[off], psm, log_start)

    for i, (base, log_path) in enumerate(logs):
        active = i == len(logs) - 1
        positions: dict[int, object] = {}  # position -> header, for index checks
        first = True
        seg_last = None
        size = log_path.stat().st_size
        rep.bytes += size
        last_pos = 0
        aborted: list = []  # (CompletedTxn, first offset known, last stable offset) of ABORT markers
        for item in scan_log(log_path, max_message_size=max_message_size):
            if isinstance(item, Damage):
                _note_damage(rep, item, log_path, size, active, live)
                continue
            h = item.header
            if progress is not None:
                progress.advance(item.position + h.size - last_pos)
                last_pos = item.position + h.size
            rep.batches += 1
            positions[item.position] = h
            rep.records += 1 if item.magic != 2 else h.record_count
            first_off, last_off = (h.offset, h.offset) if item.magic != 2 else (h.base_offset, h.last_offset)
            if not item.crc_ok:
                rep.add("crc", log_path, f"CRC mismatch in the batch at offset {first_off}", item.position, first_off)
                if rep.first_damage is None:
                    rep.first_damage = (str(log_path), item.position)
                continue
            if first:
                _check_segment_start(rep, log_path, item.position, first_off, base, prev_seg_last)
                first = False
            _check_batch_order(rep, log_path, item, first_off, prev_last)
            prev_last = last_off if prev_last is None else max(prev_last, last_off)
            seg_last = last_off
            if item.magic == 2:
                while pending_snaps and pending_snaps[0] <= first_off:
                    compare_snapshot(pending_snaps.pop(0))
                if h.producer_id >= 0:
                    _replay_producer(psm, item, aborted, exact_replay)
                _track_epoch(rep, log_path, item.position, h.partition_leader_epoch, first_off, epochs)
        if seg_last is not None:
            prev_seg_last = seg_last
        _check_indexes(rep, log_path, base, positions, size, require=only_log is None, live=live and active)
        _check_txn_index(rep, log_path, aborted, exact_lso=exact_replay)
    rep.log_end_offset = (prev_last + 1) if prev_last is not None else log_start

    if only_log is not None:
        return rep
    end = rep.log_end_offset if rep.log_end_offset is not None else 0
    for off in pending_snaps:
        if off > end:
            rep.add("snapshot", snapshots[off], f"snapshot offset {off} is beyond the log end offset {end}")
        else:
            compare_snapshot(off)

    _check_leader_epochs(rep, pdir, epochs, log_start, end)
    for p in sorted(pdir.iterdir()):
        for suffix, why in _STRAY_SUFFIXES.items():
            if p.name.endswith(suffix):
                rep.add("stray-file", p, why)

    _check_readable(rep, pdir / PARTITION_METADATA, lambda p: read_partition_metadata(p.parent))
    return rep


def _check_segment_start(rep: PartitionReport, log_path: Path, position: int, first_off: int, base: int,
                         prev_seg_last: int | None) -> None:
    """A segment's first batch starts at or above its base offset and after the previous segment."""
    if first_off < base:
        rep.add("segment-base", log_path, f"first batch starts at offset {first_off}, below the "
                f"segment's base offset {base}", position, first_off)
    if prev_seg_last is not None and first_off <= prev_seg_last:
        rep.add("segment-overlap", log_path, f"first offset {first_off} overlaps the previous segment "
                f"(last offset {prev_seg_last})", position, first_off)


def _check_batch_order(rep: PartitionReport, log_path: Path, item, first_off: int, prev_last: int | None) -> None:
    """A batch's offsets are well-formed and follow the batch before it."""
    h = item.header
    if item.magic == 2 and (h.last_offset_delta < 0 or h.record_count < 0):
        rep.add("offset-order", log_path, f"batch at offset {first_off} has lastOffsetDelta "
                f"{h.last_offset_delta} and count {h.record_count}", item.position, first_off)
    if prev_last is not None and first_off <= prev_last:
        rep.add("offset-order", log_path, f"batch at offset {first_off} does not follow offset {prev_last}",
                item.position, first_off)
        if rep.first_damage is None:
            rep.first_damage = (str(log_path), item.position)


def _track_epoch(rep: PartitionReport, log_path: Path, position: int, ple: int, first_off: int,
                 epochs: list[tuple[int, int]]) -> None:
    """Note where a new leader epoch starts; an epoch going back is a problem."""
    if ple >= 0 and (not epochs or ple > epochs[-1][0]):
        epochs.append((ple, first_off))
    elif ple >= 0 and ple < epochs[-1][0]:
        rep.add("leader-epoch", log_path, f"batch at offset {first_off} has leader epoch {ple}, below "
                f"the earlier epoch {epochs[-1][0]}", position, first_off)


def _note_damage(rep: PartitionReport, item: Damage, log_path: Path, size: int, active: bool, live: bool) -> None:
    """A Damage the scan reported, as the report's problem (nothing for a batch a running broker is writing)."""
    if live and active and item.kind == "truncated":
        return  # a batch still being written by the running broker
    if item.kind == "truncated":
        kind = "torn-tail" if active else "truncated-segment"
        rep.add(kind, log_path, f"{item.message} ({size - item.position} bytes)", item.position)
    else:
        rep.add("corrupt", log_path, f"{item.message}; {item.skipped} bytes skipped", item.position)
    if rep.first_damage is None:
        rep.first_damage = (str(log_path), item.position)


def _replay_producer(psm, item, aborted: list, exact_replay: bool) -> None:
    """Apply a producer's batch to the replayed state; an ABORT marker adds its transaction to
    `aborted` with Kafka's last stable offset for it."""
    h = item.header
    if not h.is_control:
        psm.update(h, item.buf, item.buf_pos)
        return
    known_first = psm.ongoing_txn_first_offsets().get(h.producer_id)
    done = psm.update(h, item.buf, item.buf_pos)
    if done is not None and done.is_aborted:
        # Kafka's lastStableOffset(completedTxn): the first offset of the earliest
        # other open transaction, else just past the marker
        lso = psm.first_unstable_offset()
        aborted.append((done, known_first is not None or exact_replay, done.last_offset + 1 if lso is None else lso))


def _compare_snapshot(rep: PartitionReport, path: Path, psm, log_start: int | None) -> None:
    """The producer snapshot at `path` against the producer state replayed from the log so far."""
    from pylog.storage.producer_state import CorruptSnapshotError, read_snapshot

    try:
        stored = {e.producer_id: e for e in read_snapshot(path)}
    except (CorruptSnapshotError, OSError) as e:
        rep.add("snapshot", path, f"unreadable producer snapshot: {e}")
        return
    mtime_ms = int(path.stat().st_mtime * 1000)
    replayed = {e.producer_id: e for e in psm.snapshot_entries()}
    for pid, r in replayed.items():
        s = stored.get(pid)
        if s is None:
            if mtime_ms - r.timestamp < ONE_DAY_MS:  # expired producers may be dropped
                rep.add("snapshot", path, f"producer {pid} missing from the snapshot (log has it at offset {r.last_offset})")
        elif (s.producer_epoch, s.last_sequence, s.last_offset) != (r.producer_epoch, r.last_sequence, r.last_offset):
            rep.add("snapshot", path, f"producer {pid}: snapshot has epoch {s.producer_epoch} last sequence "
                    f"{s.last_sequence} last offset {s.last_offset}, the log says epoch {r.producer_epoch} "
                    f"last sequence {r.last_sequence} last offset {r.last_offset}")
    for pid, s in stored.items():
        if pid not in replayed and log_start is not None and s.last_offset >= log_start:
            rep.add("snapshot", path, f"producer {pid} in the snapshot (last offset {s.last_offset}) is not in the log")


def _check_leader_epochs(rep: PartitionReport, pdir: Path, epochs: list[tuple[int, int]], log_start: int | None,
                         end: int) -> None:
    """leader-epoch-checkpoint against the (epoch, first offset) pairs the log's batches carry."""
    from pylog.storage.leader_epoch import LEADER_EPOCH_CHECKPOINT, LeaderEpochFileCache

    lec = pdir / LEADER_EPOCH_CHECKPOINT
    if lec.exists():
        try:
            cache = LeaderEpochFileCache.load(pdir, fsync=False)
        except DataError as e:
            rep.add("leader-epoch", lec, str(e))
        else:
            for epoch, start in epochs:
                got = cache.epoch_for_offset(start)
                if got != epoch:
                    rep.add("leader-epoch", lec, f"the log starts epoch {epoch} at offset {start}, the checkpoint "
                            f"says epoch {got} there", offset=start)
                elif start > (log_start or 0) and epoch not in [e.epoch for e in cache.entries]:
                    rep.add("leader-epoch", lec, f"epoch {epoch} missing from the checkpoint", offset=start)
            for e in cache.entries:
                if e.start_offset > end:
                    rep.add("leader-epoch", lec, f"epoch {e.epoch} starts at offset {e.start_offset}, beyond the log "
                            f"end offset {end}", offset=e.start_offset)
                elif epochs and e.epoch not in [x for x, _ in epochs] and e.start_offset < end and \
                        e.start_offset >= (log_start or 0) and not any(s == e.start_offset for _, s in epochs):
                    rep.add("leader-epoch", lec, f"epoch {e.epoch} at offset {e.start_offset} has no batches in the log",
                            offset=e.start_offset)
    elif epochs:
        rep.add("leader-epoch", pdir, f"{LEADER_EPOCH_CHECKPOINT} is missing but batches carry leader epochs")


def _check_readable(rep: PartitionReport, path: Path, reader) -> None:
    """A metadata file that exists must parse."""
    if path.exists():
        try:
            reader(path)
        except DataError as e:
            rep.add("metadata", path, str(e))


def _check_indexes(rep: PartitionReport, log_path: Path, base: int, positions: dict, log_size: int,
                   require: bool = True, live: bool = False) -> None:
    stem = log_path.name[:-4]
    ipath = log_path.with_name(stem + ".index")
    tpath = log_path.with_name(stem + ".timeindex")
    if not ipath.exists():
        if log_size > 0 and require:
            rep.add("index", ipath, "offset index missing")
    else:
        prev = None
        for off, pos in read_index(ipath, base, 8):
            if prev is not None and (off <= prev[0] or pos < prev[1]):
                rep.add("index", ipath, f"entry (offset {off}, position {pos}) out of order after "
                        f"(offset {prev[0]}, position {prev[1]})", pos, off)
            prev = (off, pos)
            if live and pos >= log_size:
                continue  # indexes a batch appended after the log was read
            h = positions.get(pos)
            if live and (off, pos) == (base, 0) and h is not None and h.last_offset != off:
                continue  # the blank first slot of the active segment's preallocated index, not yet written
            if h is None:
                rep.add("index", ipath, f"entry for offset {off} points at position {pos}, which is not a batch "
                        f"boundary of {log_path.name}", pos, off)
            elif h.last_offset != off:
                rep.add("index", ipath, f"entry for offset {off} points at position {pos}, where the batch ends at "
                        f"offset {h.last_offset}", pos, off)
    if not tpath.exists():
        if log_size > 0 and require:
            rep.add("time-index", tpath, "time index missing")
        return
    by_last = {h.last_offset: h for h in positions.values()}
    newest = max(by_last) if by_last else -1
    prev = None
    for ts, off in read_index(tpath, base, 12):
        if live and ts == 0 and off == base:
            continue  # a slot of the active segment's preallocated index, not yet written
        if prev is not None and (ts <= prev[0] or off < prev[1]):
            rep.add("time-index", tpath, f"entry (timestamp {ts}, offset {off}) out of order after "
                    f"(timestamp {prev[0]}, offset {prev[1]})", offset=off)
        prev = (ts, off)
        h = by_last.get(off)
        if h is None and live and off > newest:
            continue  # a batch appended after the log was read
        if h is None:
            rep.add("time-index", tpath, f"entry for offset {off} does not match the last offset of any batch", offset=off)
        else:
            log_ts = h.max_timestamp if hasattr(h, "max_timestamp") else h.timestamp
            if log_ts != ts:
                rep.add("time-index", tpath, f"entry for offset {off} has timestamp {ts}, the batch's max timestamp is "
                        f"{log_ts}", offset=off)


def _check_txn_index(rep: PartitionReport, log_path: Path, aborted: list, exact_lso: bool) -> None:
    """The segment's .txnindex against the ABORT markers replayed from its batches."""
    from pylog.storage.txn_index import TransactionIndex

    tpath = log_path.with_name(log_path.name[:-4] + ".txnindex")
    if not tpath.exists():
        if aborted:
            done = aborted[0][0]
            rep.add("txn-index", tpath, f"missing, but {log_path.name} holds {len(aborted)} ABORT marker(s) (the "
                    f"first: producer {done.producer_id} at offset {done.last_offset})", offset=done.last_offset)
        return
    try:
        stored = TransactionIndex(tpath, 0).read_all()
    except DataError as e:
        rep.add("txn-index", tpath, str(e))
        return
    expected = {(d.producer_id, d.last_offset): (d, known, lso) for d, known, lso in aborted}
    prev_last = None
    for t in stored:
        if prev_last is not None and t.last_offset < prev_last:
            rep.add("txn-index", tpath, f"entry for producer {t.producer_id} (last offset {t.last_offset}) out of "
                    f"order after last offset {prev_last}", offset=t.last_offset)
        prev_last = t.last_offset
        exp = expected.pop((t.producer_id, t.last_offset), None)
        if exp is None:
            rep.add("txn-index", tpath, f"aborted transaction of producer {t.producer_id} (offsets {t.first_offset}.."
                    f"{t.last_offset}) has no ABORT marker at offset {t.last_offset} in {log_path.name}",
                    offset=t.last_offset)
            continue
        done, known, lso = exp
        if known and t.first_offset != done.first_offset:
            rep.add("txn-index", tpath, f"aborted transaction of producer {t.producer_id} ending at offset "
                    f"{t.last_offset}: the index says it starts at {t.first_offset}, the log at {done.first_offset}",
                    offset=t.last_offset)
        if exact_lso and t.last_stable_offset != lso:
            rep.add("txn-index", tpath, f"aborted transaction of producer {t.producer_id} ending at offset "
                    f"{t.last_offset}: last stable offset {t.last_stable_offset}, the log gives {lso}",
                    offset=t.last_offset)
    for (pid, last), _ in sorted(expected.items()):
        rep.add("txn-index", tpath, f"the ABORT marker of producer {pid} at offset {last} is missing from the index",
                offset=last)


# ---------------------------------------------------------------- log dirs and checkpoints
def verify_checkpoints(log_dir: Path, reports: dict[str, PartitionReport]) -> PartitionReport:
    from pylog.storage.checkpoint import (
        CLEANER_OFFSET_CHECKPOINT,
        LOG_START_OFFSET_CHECKPOINT,
        OFFSET_CHECKPOINT_FILES,
        RECOVERY_POINT_CHECKPOINT,
        REPLICATION_OFFSET_CHECKPOINT,
        read_offset_checkpoint,
    )
    from pylog.storage.meta_properties import META_PROPERTIES, read_meta_properties

    rep = PartitionReport(str(log_dir))
    by_tp = {}
    for path, r in reports.items():
        tp = parse_partition_dir(Path(path).name)
        if tp is not None:
            by_tp[tp] = r
    for name in OFFSET_CHECKPOINT_FILES:
        p = log_dir / name
        if not p.exists():
            continue
        try:
            entries = read_offset_checkpoint(p)
        except DataError as e:
            rep.add("metadata", p, str(e))
            continue
        for (topic, part), off in sorted(entries.items()):
            r = by_tp.get((topic, part))
            if r is None:
                rep.add("checkpoint", p, f"{topic}-{part} is not a partition in {log_dir}")
                continue
            lo = r.log_start_offset if r.log_start_offset is not None else 0
            hi = r.log_end_offset if r.log_end_offset is not None else lo
            if name == CLEANER_OFFSET_CHECKPOINT:
                bad = off > hi
            elif name == LOG_START_OFFSET_CHECKPOINT:
                bad = off < lo or off > hi
            elif name in (RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT):
                bad = off > hi
            else:
                bad = False
            if bad:
                rep.add("checkpoint", p, f"{topic}-{part} offset {off} is outside the log [{lo}, {hi}]", offset=off)
    _check_readable(rep, log_dir / META_PROPERTIES, read_meta_properties)
    return rep



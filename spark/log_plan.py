"""What a reader of a Kafka log dir reads, decided on the driver from the files' own indexes.

For each partition folder: the log start and end offsets, the last stable
offset (LSO: the first offset of the earliest transaction still open, which a
READ_COMMITTED consumer never reads past), the aborted transactions from the
`.txnindex` files, and offsets for times as Kafka's ListOffsets answers them
(the time index finds the segment and the position, batches are walked from
there). From these a range [start, end) per partition becomes one read task
per segment overlapping it, each starting at the position the offset index
gives: segments outside the range, by offset or by time, are never opened.

The LSO comes from the newest producer snapshot (`<offset>.snapshot`, whose
entries carry each producer's open transaction) plus a header walk of the
batches after it, as the broker rebuilds producer state on load; without a
snapshot the walk starts at the log start.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pylog.core.errors import DataError, UsageError
from pylog.core.records.header import CONTROL_MASK, TRANSACTIONAL_MASK
from pylog.storage.layout import segment_base, user_partition_dir

READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"
ISOLATIONS = (READ_COMMITTED, READ_UNCOMMITTED)


@dataclass(frozen=True)
class SegmentTask:
    """One read task: the batches of one segment file holding offsets in [start, end)."""

    topic: str
    partition: int
    path: str  # the .log file
    position: int  # file position to start the walk at (from the offset index)
    start: int
    end: int
    isolation: str
    aborted: tuple = ()  # (producer id, first offset, last offset) of aborted transactions overlapping


@dataclass
class PartitionPlan:
    topic: str
    partition: int
    folder: str
    log_start: int
    log_end: int
    stable_end: int  # LSO (READ_COMMITTED's end) ; == log_end when no transaction is open
    start: int = 0
    end: int = 0
    tasks: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "log_start_offset": self.log_start,
                "log_end_offset": self.log_end, "last_stable_offset": self.stable_end, "start": self.start,
                "end": self.end, "segments": len(self.tasks)}


# ---------------------------------------------------------------- discovery
def find_partition_dirs(path: str, topics=None, partitions=None) -> list[tuple[str, int, Path]]:
    """[(topic, partition, folder)] of a log dir (or of one partition folder), sorted."""
    p = Path(path)
    if not p.is_dir():
        raise UsageError(f"{path} is not a directory (give a Kafka log dir or a <topic>-<partition> folder)")
    own = user_partition_dir(p.name)
    if own and any(f.name.endswith(".log") for f in p.iterdir()):
        found = [(own.topic, own.partition, p)]
    else:
        found = []
        for d in p.iterdir():
            m = user_partition_dir(d.name)
            if m and d.is_dir() and not d.name.startswith("."):
                found.append((m.topic, m.partition, d))
    if topics:
        found = [f for f in found if f[0] in set(topics)]
    else:  # Kafka's internal topics (__consumer_offsets, __transaction_state, ...) only when named
        found = [f for f in found if not f[0].startswith("__")]
    if partitions is not None:
        found = [f for f in found if f[1] in set(partitions)]
    found.sort(key=lambda f: (f[0], f[1]))
    if not found:
        raise DataError(f"no partition folders (<topic>-<partition>) in {path}"
                        + (f" for topic {', '.join(topics)}" if topics else ""))
    return found


def segment_bases(folder: Path) -> list[int]:
    return sorted(b for b in map(segment_base, (f.name for f in folder.iterdir() if f.name.endswith(".log")))
                  if b is not None)


def _seg(folder: Path, base: int, ext: str) -> Path:
    return folder / f"{base:020d}{ext}"


def _walk(path: Path, position: int = 0):
    """Headers (no CRC check, big batches' bodies skipped) of the batches from `position` of a
    segment; a torn tail ends the walk, as the broker's recovery would cut it."""
    from pylog.storage.scan import file_batches

    with open(path, "rb", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size
        for _, _, _, h in file_batches(f.fileno(), position, size, str(path), verify_crc=False,
                                       headers_only=True, quiet=True):
            yield h


def _offset_position(folder: Path, base: int, offset: int) -> int:
    """File position in segment `base` to start a walk for `offset` (offset index; 0 without one)."""
    from pylog.storage.offset_index import OffsetIndex

    idx_path = _seg(folder, base, ".index")
    if offset <= base or not idx_path.exists() or idx_path.stat().st_size == 0:
        return 0
    idx = OffsetIndex.open_read_only(idx_path, base)
    try:
        return idx.lookup(offset)[1]
    finally:
        idx.close()


def _log_end(folder: Path, bases: list[int]) -> int:
    """The next offset after the last batch of the newest segment (its base offset when it is empty,
    as for a freshly rolled active segment)."""
    base = bases[-1]
    end = base
    for h in _walk(_seg(folder, base, ".log"), _offset_position(folder, base, 1 << 62)):
        end = h.base_offset + h.last_offset_delta + 1
    return end


def _log_start(folder: Path, log_dir: Path, topic: str, partition: int, bases: list[int]) -> int:
    from pylog.storage.checkpoint import LOG_START_OFFSET_CHECKPOINT, read_offset_checkpoint_or_empty

    first = bases[0] if bases else 0
    try:
        cp = read_offset_checkpoint_or_empty(log_dir / LOG_START_OFFSET_CHECKPOINT)
    except DataError:
        cp = {}
    return max(first, cp.get((topic, partition), first))


def _stable_end(folder: Path, bases: list[int], log_start: int, log_end: int) -> int:
    """The last stable offset: the newest snapshot's open transactions, then a header walk after it."""
    from pylog.storage.producer_state import offset_from_snapshot_name, read_snapshot

    snaps = sorted(o for o in (offset_from_snapshot_name(f.name) for f in folder.iterdir()) if o is not None)
    snaps = [o for o in snaps if log_start <= o <= log_end]
    open_txn: dict[int, int] = {}
    walk_from = log_start
    if snaps:
        try:
            entries = read_snapshot(folder / f"{snaps[-1]:020d}.snapshot")
            walk_from = snaps[-1]
            open_txn = {e.producer_id: e.current_txn_first_offset for e in entries if e.current_txn_first_offset >= 0}
        except DataError:
            open_txn, walk_from = {}, log_start
    for i, base in enumerate(bases):
        nxt = bases[i + 1] if i + 1 < len(bases) else None
        if nxt is not None and nxt <= walk_from:
            continue
        for h in _walk(_seg(folder, base, ".log"), _offset_position(folder, base, walk_from)):
            if h.base_offset + h.last_offset_delta < walk_from:
                continue
            attrs = h.attributes
            if not attrs & TRANSACTIONAL_MASK:
                continue
            if attrs & CONTROL_MASK:
                open_txn.pop(h.producer_id, None)
            else:
                open_txn.setdefault(h.producer_id, h.base_offset)
    return min(open_txn.values(), default=log_end)


def _aborted(folder: Path, bases: list[int], start: int, end: int) -> tuple:
    from pylog.storage.txn_index import TransactionIndex

    out = []
    for base in bases:
        p = _seg(folder, base, ".txnindex")
        if p.exists() and p.stat().st_size:
            out.extend((t.producer_id, t.first_offset, t.last_offset)
                       for t in TransactionIndex(p, base).collect_aborted(start, end))
    return tuple(sorted(set(out), key=lambda t: t[1]))


def offset_for_time(folder: Path, bases: list[int], ts: int, log_end: int) -> int:
    """The first offset whose record timestamp is >= ts (Kafka's ListOffsets by time), or the log
    end offset when there is none: the time index picks the segment and where to start."""
    from pylog.core.records.batch import RecordBatch
    from pylog.storage.scan import file_batches
    from pylog.storage.time_index import TimeIndex

    for i, base in enumerate(bases):
        tpath = _seg(folder, base, ".timeindex")
        start_pos = 0
        if tpath.exists() and tpath.stat().st_size and i + 1 < len(bases):
            tix = TimeIndex.open_read_only(tpath, base)
            try:
                if tix.entries and tix.last_entry[0] < ts:
                    continue  # every record of this closed segment is older
                below = tix.lookup_below(ts)[1] if tix.entries else base
            finally:
                tix.close()
            start_pos = _offset_position(folder, base, below)
        path = _seg(folder, base, ".log")
        with open(path, "rb", buffering=0) as f:
            size = os.fstat(f.fileno()).st_size
            for buf, off, _, h in file_batches(f.fileno(), start_pos, size, str(path), verify_crc=False, quiet=True):
                if h.max_timestamp < ts or h.attributes & CONTROL_MASK:
                    continue
                for r in RecordBatch(buf, off).records():
                    if r.timestamp >= ts:
                        return r.offset
    return log_end


# ---------------------------------------------------------------- planning
@dataclass
class ReadOptions:
    """What to read: topics, partitions, offset or time bounds, isolation."""

    topics: tuple = ()
    partitions: tuple | None = None
    from_offsets: dict = field(default_factory=dict)  # (topic, partition) -> first offset to read
    from_offset: int | None = None
    until_offset: int | None = None
    until_offsets: dict = field(default_factory=dict)  # (topic, partition) -> end offset (exclusive)
    from_time: int | None = None  # epoch ms
    until_time: int | None = None
    isolation: str = READ_COMMITTED

    def check(self) -> None:
        if self.isolation not in ISOLATIONS:
            raise UsageError(f"isolation must be read_committed or read_uncommitted, not {self.isolation!r}")


def read_range(opts: ReadOptions, topic: str, partition: int, log_start: int, end: int, offset_for_ts) -> tuple:
    """[start, end) of one partition under `opts`: `end` is the isolation's end (LSO or log end),
    offset_for_ts(ms) the first offset at or after a time (the log end when none is)."""
    start = max(log_start, opts.from_offsets.get((topic, partition), opts.from_offset or 0) or 0)
    if opts.until_offset is not None:
        end = min(end, opts.until_offset)
    if (topic, partition) in opts.until_offsets:
        end = min(end, opts.until_offsets[(topic, partition)])
    if opts.from_time is not None:
        start = max(start, offset_for_ts(opts.from_time))
    if opts.until_time is not None:
        end = min(end, offset_for_ts(opts.until_time))
    return start, max(start, end)


def plan_partition(log_dir: Path, topic: str, partition: int, folder: Path, opts: ReadOptions) -> PartitionPlan:
    """The read tasks of one partition under `opts`."""
    bases = segment_bases(folder)
    log_start = _log_start(folder, log_dir, topic, partition, bases)
    log_end = _log_end(folder, bases) if bases else log_start
    stable = _stable_end(folder, bases, log_start, log_end) if opts.isolation == READ_COMMITTED else log_end
    plan = PartitionPlan(topic, partition, str(folder), log_start, log_end, stable)
    plan.start, plan.end = read_range(opts, topic, partition, log_start, stable,
                                      lambda ts: offset_for_time(folder, bases, ts, log_end))
    start = plan.start
    if plan.end <= plan.start:
        return plan
    aborted = _aborted(folder, bases, start, plan.end) if opts.isolation == READ_COMMITTED else ()
    for i, base in enumerate(bases):
        nxt = bases[i + 1] if i + 1 < len(bases) else None
        if (nxt is not None and nxt <= start) or base >= plan.end:
            continue
        seg_start, seg_end = max(start, base), plan.end if nxt is None else min(plan.end, nxt)
        mine = tuple(a for a in aborted if a[2] >= seg_start and a[1] < seg_end)
        plan.tasks.append(SegmentTask(topic, partition, str(_seg(folder, base, ".log")),
                                      _offset_position(folder, base, seg_start), seg_start, seg_end,
                                      opts.isolation, mine))
    return plan


def plan_log_dir(path: str, opts: ReadOptions, min_tasks: int = 1) -> list[PartitionPlan]:
    """Every selected partition's plan (a log dir, or one partition folder), its segment tasks cut
    into offset ranges when that makes at least `min_tasks` tasks of about equal bytes."""
    opts.check()
    found = find_partition_dirs(path, opts.topics, opts.partitions)
    p = Path(path)
    log_dir = p.parent if user_partition_dir(p.name) and len(found) == 1 and found[0][2] == p else p
    plans = [plan_partition(log_dir, t, n, folder, opts) for t, n, folder in found]
    split_tasks(plans, min_tasks)
    return plans


def _task_bytes(task: SegmentTask) -> int:
    """The bytes of its segment a task walks (to the segment's end, or to where its end offset is)."""
    path = Path(task.path)
    base = segment_base(path.name)
    end_pos = _offset_position(path.parent, base, task.end) if base is not None else 0
    size = path.stat().st_size
    return max(0, (end_pos if task.position < end_pos < size else size) - task.position)


def _split_points(task: SegmentTask, pieces: int) -> list[tuple[int, int]]:
    """Up to pieces-1 (offset, position) offset-index entries inside the task, about evenly apart in
    bytes; a walk from such a position reaches the offset (the entry's batch holds it)."""
    from pylog.storage.offset_index import OffsetIndex

    path = Path(task.path)
    base = segment_base(path.name)
    idx_path = _seg(path.parent, base, ".index") if base is not None else None
    if idx_path is None or not idx_path.exists() or idx_path.stat().st_size == 0:
        return []
    idx = OffsetIndex.open_read_only(idx_path, base)
    try:
        size = path.stat().st_size
        entries = [(o, pos) for o, pos in idx.all_entries() if task.start < o < task.end and task.position < pos < size]
    finally:
        idx.close()
    span = _task_bytes(task)
    out: list[tuple[int, int]] = []
    for k in range(1, pieces):
        want = task.position + span * k // pieces
        cands = [e for e in entries if (not out or (e[0] > out[-1][0] and e[1] > out[-1][1]))]
        if cands:
            out.append(min(cands, key=lambda e: abs(e[1] - want)))
    return out


def split_tasks(plans: list[PartitionPlan], min_tasks: int) -> None:
    """Cut each plan's segment tasks at offset-index entries into pieces of about total/min_tasks
    bytes (at least min_tasks tasks when the indexes allow it), so every core stays busy to the end
    however unequal the partitions are. Each piece reads exactly its offsets [start, end)."""
    if min_tasks <= 1:
        return
    sizes = {id(t): _task_bytes(t) for p in plans for t in p.tasks}
    target = max(1, sum(sizes.values()) // min_tasks)
    for plan in plans:
        pieces = []
        for t in plan.tasks:
            n = round(sizes[id(t)] / target)
            bounds = [(t.start, t.position)] + _split_points(t, n) + [(t.end, None)] if n > 1 else []
            if len(bounds) <= 2:
                pieces.append(t)
                continue
            for (s, pos), (e, _) in zip(bounds, bounds[1:]):
                pos = _offset_position(Path(t.path).parent, segment_base(Path(t.path).name), s) if s > t.start else pos
                pieces.append(SegmentTask(t.topic, t.partition, t.path, pos, s, e, t.isolation,
                                          tuple(a for a in t.aborted if a[2] >= s and a[1] < e)))
        plan.tasks = pieces

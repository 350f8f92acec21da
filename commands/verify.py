"""`pylog verify`: check log dirs, partition folders or single files, with a verdict.

Checks (each problem has a `kind` so scripts and tests can match it):
  crc                 a batch whose CRC does not match
  corrupt             a bad length/magic hiding the next batch boundary
  torn-tail           the active segment ends inside a batch
  truncated-segment   a non-active segment ends inside a batch
  offset-order        a batch whose offsets do not increase past the previous one
  segment-base        a segment whose first batch starts below its file name's offset
  segment-overlap     a segment starting at or below the previous segment's last offset
  index               an offset-index entry not pointing at a batch with that last offset,
                      entries out of order, or a missing index for a non-empty segment
  time-index          a time-index entry out of order, not at a batch, or with the wrong timestamp
  txn-index           a .txnindex that does not parse, lists an aborted transaction with no ABORT
                      marker in its segment, misses one, or disagrees on its first offset or
                      last stable offset; a segment with ABORT markers but no .txnindex
  stray-file          a .cleaned or .swap file left by an interrupted cleaning or swap
                      (the storage engine's recovery resolves them); .deleted segments
                      awaiting file.delete.delay.ms are normal and not reported
  snapshot            a producer snapshot that does not parse, lies beyond the log end,
                      or disagrees with replaying the log
  leader-epoch        batch epochs that disagree with leader-epoch-checkpoint
  checkpoint          an offset checkpoint naming an unknown partition or an offset outside the log
  metadata            unreadable partition.metadata / meta.properties / checkpoint files
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import click

from pylog.commands.options import json_option
from pylog.storage.scan import DEFAULT_MAX_MESSAGE_SIZE, Damage, scan_log
from pylog.storage.layout import SEGMENT_FILE, parse_partition_dir, user_partition_dir
from pylog.core.errors import DataError, UsageError

# what Kafka's (and pylog's) log loading does with each kind of leftover file
# `.deleted` is not among them: Kafka renames segments so and removes them after
# file.delete.delay.ms, so a live log dir (or one just compacted) holds them normally.
_STRAY_SUFFIXES = {
    ".cleaned": "left by an interrupted cleaning; recovery removes it",
    ".swap": "left by an interrupted cleaner swap; recovery completes or discards the swap",
}
MAX_REPORTED_PER_KIND = 20
ONE_DAY_MS = 86400000


@dataclass
class Problem:
    kind: str
    file: str
    message: str
    position: int | None = None
    offset: int | None = None


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
    _counts: dict = field(default_factory=dict, repr=False)

    def add(self, kind: str, file, message: str, position: int | None = None, offset: int | None = None) -> None:
        n = self._counts.get(kind, 0) + 1
        self._counts[kind] = n
        if n <= MAX_REPORTED_PER_KIND:
            self.problems.append(Problem(kind, str(file), message, position, offset))
        elif n == MAX_REPORTED_PER_KIND + 1:
            self.problems.append(Problem(kind, str(file), f"more {kind} problems not listed"))

    @property
    def problem_count(self) -> int:
        return sum(self._counts.values())

    def to_json(self) -> dict:
        d = asdict(self)
        d.pop("_counts", None)
        d["first_damage"] = list(self.first_damage) if self.first_damage else None
        d["problem_count"] = self.problem_count
        return d


# ---------------------------------------------------------------- one partition
class _Progress:
    def __init__(self, bar, task):
        self.bar, self.task = bar, task

    def advance(self, n: int) -> None:
        if self.bar is not None:
            self.bar.advance(self.task, n)


def _read_index(path: Path, base: int, entry_size: int):
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


def verify_partition(pdir: Path, *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE, progress: _Progress | None = None,
                     only_log: Path | None = None, live: bool = False) -> PartitionReport:
    """Check one partition folder. `live`: a running broker owns it, so the active
    segment may grow while it is read; only the bytes present at the start are judged,
    and a batch being written at the active segment's end is not damage."""
    from pylog.storage.leader_epoch import LEADER_EPOCH_CHECKPOINT, LeaderEpochFileCache
    from pylog.storage.partition_metadata import PARTITION_METADATA, read_partition_metadata
    from pylog.storage.producer_state import (
        CorruptSnapshotError,
        ProducerStateManager,
        offset_from_snapshot_name,
        read_snapshot,
    )

    rep = PartitionReport(str(pdir))
    logs = sorted((int(m.group(1)), pdir / m.group(0)) for p in pdir.iterdir() if (m := SEGMENT_FILE.match(p.name)))
    if only_log is not None:
        logs = [(b, p) for b, p in logs if p.name == only_log.name] or [(0, only_log)]
    rep.segments = len(logs)

    # producer snapshots to compare while replaying
    snapshots: dict[int, Path] = {}
    if only_log is None:
        for p in pdir.iterdir():
            off = offset_from_snapshot_name(p.name)
            if off is not None:
                snapshots[off] = p
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
        path = snapshots[off]
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
                if live and active and item.kind == "truncated":
                    continue  # a batch still being written by the running broker
                if item.kind == "truncated":
                    kind = "torn-tail" if active else "truncated-segment"
                    rep.add(kind, log_path, f"{item.message} ({size - item.position} bytes)", item.position)
                else:
                    rep.add("corrupt", log_path, f"{item.message}; {item.skipped} bytes skipped", item.position)
                if rep.first_damage is None:
                    rep.first_damage = (str(log_path), item.position)
                continue
            h = item.header
            if progress is not None:
                progress.advance(item.position + h.size - last_pos)
                last_pos = item.position + h.size
            rep.batches += 1
            positions[item.position] = h
            if item.magic != 2:
                rep.records += 1
                first_off = h.offset
                last_off = h.offset
            else:
                rep.records += h.record_count
                first_off, last_off = h.base_offset, h.last_offset
            if not item.crc_ok:
                rep.add("crc", log_path, f"CRC mismatch in the batch at offset {first_off}", item.position, first_off)
                if rep.first_damage is None:
                    rep.first_damage = (str(log_path), item.position)
                continue
            if first:
                if first_off < base:
                    rep.add("segment-base", log_path, f"first batch starts at offset {first_off}, below the "
                            f"segment's base offset {base}", item.position, first_off)
                if prev_seg_last is not None and first_off <= prev_seg_last:
                    rep.add("segment-overlap", log_path, f"first offset {first_off} overlaps the previous segment "
                            f"(last offset {prev_seg_last})", item.position, first_off)
                first = False
            if item.magic == 2 and (h.last_offset_delta < 0 or h.record_count < 0):
                rep.add("offset-order", log_path, f"batch at offset {first_off} has lastOffsetDelta "
                        f"{h.last_offset_delta} and count {h.record_count}", item.position, first_off)
            if prev_last is not None and first_off <= prev_last:
                rep.add("offset-order", log_path, f"batch at offset {first_off} does not follow offset {prev_last}",
                        item.position, first_off)
                if rep.first_damage is None:
                    rep.first_damage = (str(log_path), item.position)
            prev_last = last_off if prev_last is None else max(prev_last, last_off)
            seg_last = last_off
            if item.magic == 2:
                while pending_snaps and pending_snaps[0] <= first_off:
                    compare_snapshot(pending_snaps.pop(0))
                if h.producer_id >= 0:
                    if h.is_control:
                        known_first = psm.ongoing_txn_first_offsets().get(h.producer_id)
                        done = psm.update(h, item.buf, item.buf_pos)
                        if done is not None and done.is_aborted:
                            # Kafka's lastStableOffset(completedTxn): the first offset of the earliest
                            # other open transaction, else just past the marker
                            lso = psm.first_unstable_offset()
                            aborted.append((done, known_first is not None or exact_replay,
                                            done.last_offset + 1 if lso is None else lso))
                    else:
                        psm.update(h, item.buf, item.buf_pos)
                ple = h.partition_leader_epoch
                if ple >= 0 and (not epochs or ple > epochs[-1][0]):
                    epochs.append((ple, first_off))
                elif ple >= 0 and ple < epochs[-1][0]:
                    rep.add("leader-epoch", log_path, f"batch at offset {first_off} has leader epoch {ple}, below "
                            f"the earlier epoch {epochs[-1][0]}", item.position, first_off)
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

    # leader epochs
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

    for p in sorted(pdir.iterdir()):
        for suffix, why in _STRAY_SUFFIXES.items():
            if p.name.endswith(suffix):
                rep.add("stray-file", p, why)

    _check_readable(rep, pdir / PARTITION_METADATA, lambda p: read_partition_metadata(p.parent))
    return rep


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
        for off, pos in _read_index(ipath, base, 8):
            if prev is not None and (off <= prev[0] or pos < prev[1]):
                rep.add("index", ipath, f"entry (offset {off}, position {pos}) out of order after "
                        f"(offset {prev[0]}, position {prev[1]})", pos, off)
            prev = (off, pos)
            if live and pos >= log_size:
                continue  # indexes a batch appended after the log was read
            h = positions.get(pos)
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
    for ts, off in _read_index(tpath, base, 12):
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


def _classify(path: Path) -> str:
    if path.is_file():
        return "file"
    if any(SEGMENT_FILE.match(p.name) for p in path.iterdir()) or parse_partition_dir(path.name) and \
            not any(p.is_dir() for p in path.iterdir()):
        return "partition"
    return "logdir"


def collect(paths) -> list[tuple[str, Path, Path | None]]:
    """[(kind, path, log_dir)] with kind partition|file|checkpoints."""
    out = []
    for raw in paths:
        p = Path(raw)
        kind = _classify(p)
        if kind == "file":
            out.append(("file", p, None))
        elif kind == "partition":
            out.append(("partition", p, None))
        else:
            parts = sorted(d for d in p.iterdir() if d.is_dir() and parse_partition_dir(d.name))
            out.extend(("partition", d, p) for d in parts)
            out.append(("checkpoints", p, p))
    return out


def _verify_file(p: Path, max_message_size: int) -> PartitionReport:
    from pylog.storage.checkpoint import OFFSET_CHECKPOINT_FILES, read_offset_checkpoint
    from pylog.storage.leader_epoch import LEADER_EPOCH_CHECKPOINT, read_leader_epoch_checkpoint
    from pylog.storage.producer_state import CorruptSnapshotError, read_snapshot

    name = p.name
    if name.endswith(".log") or re.match(r"^\d{20}-\d{10}\.checkpoint$", name):
        return verify_partition(p.parent, max_message_size=max_message_size, only_log=p)
    rep = PartitionReport(str(p))
    try:
        if name.endswith(".snapshot"):
            read_snapshot(p)
        elif name == LEADER_EPOCH_CHECKPOINT:
            read_leader_epoch_checkpoint(p)
        elif name in OFFSET_CHECKPOINT_FILES:
            read_offset_checkpoint(p)
        elif name.endswith(".index") or name.endswith(".timeindex") or name.endswith(".txnindex"):
            base = int(name.split(".")[0])
            log = p.with_name(name.split(".")[0] + ".log")
            if log.exists():
                return verify_partition(p.parent, max_message_size=max_message_size, only_log=log)
            if name.endswith(".txnindex"):
                from pylog.storage.txn_index import TransactionIndex

                TransactionIndex(p, base).read_all()
            else:
                _read_index(p, base, 8 if name.endswith(".index") else 12)
        else:
            raise UsageError(f"{p}: not a Kafka log file pylog can verify")
    except (CorruptSnapshotError, DataError) as e:
        if isinstance(e, UsageError):
            raise
        rep.add("metadata", p, str(e))
    return rep


# ---------------------------------------------------------------- rendering
def _render(reports: list[PartitionReport], seconds: float) -> None:
    from rich.table import Table

    from pylog.commands.console import out

    table = Table(title="pylog verify", show_lines=False)
    for col, just in (("partition", "left"), ("segments", "right"), ("batches", "right"), ("records", "right"),
                      ("bytes", "right"), ("problems", "right")):
        table.add_column(col, justify=just, overflow="fold")
    for r in reports:
        n = r.problem_count
        name = Path(r.path).name if Path(r.path).is_dir() else r.path
        table.add_row(name, str(r.segments), str(r.batches), str(r.records), str(r.bytes),
                      f"[red]{n}[/red]" if n else "[green]0[/green]")
    out.print(table)
    for r in reports:
        for p in r.problems:
            where = f" at position {p.position}" if p.position is not None else ""
            out.print(f"[red]{p.kind}[/red] {p.file}{where}: {p.message}", markup=True, highlight=False)
    total = sum(r.problem_count for r in reports)
    damaged = sum(1 for r in reports if r.problem_count)
    mb = sum(r.bytes for r in reports) / 1e6
    if total:
        out.print(f"[bold red]DAMAGED[/bold red]: {total} problem(s) in {damaged} of {len(reports)} item(s) "
                  f"({mb:.1f} MB checked in {seconds:.2f} s)")
    else:
        out.print(f"[bold green]CLEAN[/bold green]: {len(reports)} item(s), {mb:.1f} MB checked in {seconds:.2f} s")


def _repair(reports: list[PartitionReport], yes: bool) -> list[str]:
    """Run the storage engine's recovery on damaged partitions; returns the repaired dirs."""
    from pylog.commands.console import err
    from pylog.core.config import TOPIC_CONFIGS
    from pylog.storage.log import Log

    todo = [r for r in reports if r.problem_count and Path(r.path).is_dir() and user_partition_dir(Path(r.path).name)]
    if not todo:
        err.print("nothing to repair")
        return []
    for r in todo:
        err.print(f"will recover {r.path}: rebuild indexes, leader-epoch cache and producer snapshots from the log")
        if r.first_damage:
            file, pos = r.first_damage
            lost = os.path.getsize(file) - pos
            later = sorted(p for p in Path(r.path).glob("*.log") if p.name > Path(file).name)
            lost += sum(p.stat().st_size for p in later)
            err.print(f"  [bold]the log is cut at {Path(file).name} position {pos}: {lost} bytes after the first "
                      f"damage are dropped[/bold]" + (f" (including {len(later)} later segment(s))" if later else ""))
    if not yes and not click.confirm("Proceed with the repair?", default=False, err=True):
        raise click.exceptions.Abort()
    done = []
    config = TOPIC_CONFIGS.resolve({})
    for r in todo:
        pdir = Path(r.path)
        # indexes that fail our checks are removed so recovery rebuilds them from the log
        for p in pdir.iterdir():
            if p.suffix in (".index", ".timeindex", ".snapshot") or p.name == "leader-epoch-checkpoint":
                p.unlink()
        log = Log(pdir, config, had_clean_shutdown=False, recovery_point=0,
                  log_start_offset=r.log_start_offset or 0)
        for w in log.warnings:
            err.print(f"  {w}")
        log.take_snapshot()
        log.close()
        done.append(r.path)
    return done


@click.command("verify", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--max-message-size", type=click.IntRange(min=64), default=DEFAULT_MAX_MESSAGE_SIZE, show_default=True,
              help="Largest batch size believed; a larger length field is reported as corruption.")
@click.option("--repair", is_flag=True,
              help="Run the storage engine's recovery on damaged partitions (truncate at the first damage, "
                   "rebuild indexes, epoch cache and snapshots), then verify again.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask before repairing.")
@click.option("--no-progress", is_flag=True, help="Never show the progress bar.")
@json_option
def verify(paths, max_message_size, repair, yes, no_progress, as_json):
    """Check Kafka log dirs, partition folders or single files and give a verdict.

    PATH may be a log dir (every <topic>-<partition> folder in it plus the
    offset checkpoint files and meta.properties), a partition folder, or one
    file (.log, .index, .timeindex, .txnindex, .snapshot,
    leader-epoch-checkpoint, an offset checkpoint).

    \b
    Checks:
      - every batch's CRC and structure; torn tails of active segments
      - offsets increase across batches and segments, with no overlap
      - segment base offsets agree with the file names and first batches
      - every offset/time index entry points at a batch whose offsets and
        timestamp match; time index monotonic
      - each .txnindex lists exactly the aborted transactions whose ABORT
        markers its segment holds, with Kafka's first/last-stable offsets
      - no .cleaned or .swap leftovers of an interrupted cleaning or swap
        (.deleted segments awaiting file.delete.delay.ms are normal)
      - producer snapshots parse and agree with replaying the log
      - batch leader epochs agree with leader-epoch-checkpoint
      - checkpoint files name known partitions with offsets inside the log

    A log dir a running broker holds (its .lock is taken) is read as it
    stands: each log up to the bytes present when it is read, so a batch
    being appended and the zero-filled preallocated tails of the active
    segments' indexes are not damage; the report says the dir is in use.

    Prints a table per partition and the problems found, or with --json one
    JSON document. Exit status: 0 when clean, 1 when any problem is found,
    2 on usage errors.

    --repair recovers the damaged partitions with the storage engine (the
    same recovery a broker runs after a crash), first printing what it will
    do, including how many bytes after the first damage point are dropped;
    it asks for confirmation unless --yes is given.
    """
    from pylog.commands.console import err

    t0 = time.perf_counter()
    items = collect(paths)
    total_bytes = 0
    for kind, p, _ in items:
        if kind == "partition":
            total_bytes += sum(f.stat().st_size for f in p.glob("*.log"))
    show_bar = not no_progress and not as_json and total_bytes > (64 << 20) and sys.stderr.isatty()

    from pylog.storage.lock import in_use

    live_dirs: dict[Path, bool] = {}

    def is_live(log_dir: Path) -> bool:
        if log_dir not in live_dirs:
            live_dirs[log_dir] = in_use(log_dir)
        return live_dirs[log_dir]

    def run() -> list[PartitionReport]:
        reports: list[PartitionReport] = []
        by_path: dict[str, PartitionReport] = {}
        if show_bar:
            from rich.progress import BarColumn, Progress, TextColumn, TransferSpeedColumn

            bar = Progress(TextColumn("verify"), BarColumn(), TransferSpeedColumn(), console=err, transient=True)
            bar.start()
            progress = _Progress(bar, bar.add_task("verify", total=total_bytes))
        else:
            bar, progress = None, None
        try:
            for kind, p, log_dir in items:
                if kind == "partition":
                    r = verify_partition(p, max_message_size=max_message_size, progress=progress,
                                         live=is_live(log_dir or p.parent))
                    by_path[str(p)] = r
                elif kind == "file":
                    r = _verify_file(p, max_message_size)
                else:
                    r = verify_checkpoints(p, {k: v for k, v in by_path.items() if Path(k).parent == p})
                    if not r.problem_count:
                        continue
                reports.append(r)
        finally:
            if bar is not None:
                bar.stop()
        return reports

    reports = run()
    if repair and any(r.problem_count for r in reports):
        busy = [str(d) for d, v in live_dirs.items() if v]
        if busy:
            raise UsageError(f"cannot repair {', '.join(busy)}: a running broker holds it (stop the broker first)")
        if not as_json:
            _render(reports, time.perf_counter() - t0)
        repaired = _repair(reports, yes)
        t0 = time.perf_counter()
        reports = run()
        if not as_json:
            err.print(f"repaired {len(repaired)} partition(s); verifying again")
    seconds = time.perf_counter() - t0
    live = sorted(str(d) for d, v in live_dirs.items() if v)
    if as_json:
        total = sum(r.problem_count for r in reports)
        sys.stdout.write(json.dumps({
            "verdict": "damaged" if total else "clean", "problem_count": total, "seconds": round(seconds, 3),
            "in_use": live, "items": [r.to_json() for r in reports],
        }, separators=(",", ":")) + "\n")
    else:
        for d in live:
            err.print(f"note: {d} is in use by a running broker: its logs were judged up to the bytes present "
                      f"when they were read (batches being appended are not damage)")
        _render(reports, seconds)
    if any(r.problem_count for r in reports):
        sys.exit(1)  # SystemExit: click's non-standalone mode would swallow ctx.exit(1)

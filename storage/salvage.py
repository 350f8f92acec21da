"""Salvage a damaged partition: remove only the unreadable batches, keep the rest at their offsets.

Kafka's recovery truncates a log at its first bad batch (and never touches
segments below the recovery point), so one corrupt batch costs every later
record, or stalls consumers forever. Salvage instead rewrites each damaged
segment with exactly the batches that read back whole (structure and CRC
good, offsets increasing), byte for byte; every kept batch keeps its offsets,
so the log simply has an offset gap where the damage was (gaps are legal in
Kafka logs: compaction makes them). The caller then rebuilds the derived files
(indexes, producer state, epoch cache) with the storage engine's recovery.

What was lost is reported exactly as far as the log can tell: the offsets
between the last readable batch before a damaged stretch and the first
readable batch after it. Damage with no readable batch after it (a torn
tail) loses everything from the last readable offset on; the log end moves
back there, as with Kafka's truncation.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pylog.storage.layout import SEGMENT_FILE
from pylog.storage.scan import DEFAULT_MAX_MESSAGE_SIZE, Damage, scan_log
from pylog.storage.segment import INDEX_SUFFIXES, remove_segment_files

_COPY_CHUNK = 8 << 20


@dataclass
class Removed:
    """One removed stretch of a segment file: where it was, how long, and why."""
    file: str
    position: int
    bytes: int
    reason: str


@dataclass
class LostRange:
    """Offsets [first, last] lost with one or more adjacent removed stretches; last None: to the log end."""
    first: int
    last: int | None
    removed: list[Removed] = field(default_factory=list)

    def describe(self) -> str:
        """`offsets 40..43` or `offsets 90.. (to the log end)`."""
        if self.last is None:
            return f"offsets {self.first}.. (to the log end)"
        if self.last < self.first:
            return "no offsets (unreadable bytes between batches)"
        return f"offset {self.first}" if self.first == self.last else f"offsets {self.first}..{self.last}"

    def to_json(self) -> dict:
        return {"first": self.first, "last": self.last, "removed": [r.__dict__ for r in self.removed]}


@dataclass
class SalvagePlan:
    """What salvage keeps and removes in one partition folder."""
    partition: str
    kept: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # log file -> [(position, size)]
    sizes: dict[str, int] = field(default_factory=dict)  # log file -> size now
    lost: list[LostRange] = field(default_factory=list)
    removed_bytes: int = 0

    @property
    def damaged_files(self) -> list[str]:
        """The segment files salvage rewrites."""
        return [f for f, spans in self.kept.items() if sum(s for _, s in spans) != self.sizes[f]]

    def to_json(self) -> dict:
        return {"partition": self.partition, "removed_bytes": self.removed_bytes,
                "rewritten": [Path(f).name for f in self.damaged_files], "lost": [r.to_json() for r in self.lost]}


def plan_salvage(pdir: Path, *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> SalvagePlan:
    """Walk every segment of `pdir` and decide, batch by batch, what salvage keeps."""
    plan = SalvagePlan(str(pdir))
    logs = sorted((int(m.group(1)), pdir / m.group(0)) for p in pdir.iterdir() if (m := SEGMENT_FILE.match(p.name)))
    prev_last: int | None = None  # last offset of the last kept batch
    pending: LostRange | None = None
    for base, log_path in logs:
        name = str(log_path)
        spans: list[tuple[int, int]] = []
        plan.kept[name] = spans
        plan.sizes[name] = size = log_path.stat().st_size

        def remove(position: int, length: int, reason: str) -> None:
            nonlocal pending
            if length <= 0:
                return
            if pending is None:
                first = prev_last + 1 if prev_last is not None else base
                pending = LostRange(first, None)
                plan.lost.append(pending)
            pending.removed.append(Removed(name, position, length, reason))
            plan.removed_bytes += length

        for item in scan_log(log_path, max_message_size=max_message_size):
            if isinstance(item, Damage):
                length = item.skipped if item.skipped else size - item.position
                remove(item.position, length, item.message)
                continue
            h = item.header
            if item.magic == 2:
                first_off, last_off, bsize = h.base_offset, h.last_offset, h.size
            else:
                first_off = last_off = h.offset
                bsize = h.size
            if not item.crc_ok:
                remove(item.position, bsize, "CRC mismatch")
                continue
            if (item.magic == 2 and (h.last_offset_delta < 0 or h.record_count < 0)) or \
                    (prev_last is not None and first_off <= prev_last) or first_off < base:
                remove(item.position, bsize, f"offsets {first_off}..{last_off} out of order")
                continue
            if pending is not None:
                pending.last = first_off - 1  # below first: the damage held no offsets of its own
                pending = None
            if spans and spans[-1][0] + spans[-1][1] == item.position:
                spans[-1] = (spans[-1][0], spans[-1][1] + bsize)
            else:
                spans.append((item.position, bsize))
            prev_last = last_off
    return plan


def apply_salvage(plan: SalvagePlan, *, fsync: bool = True) -> None:
    """Rewrite each damaged segment with only its kept batches (via a temporary file renamed over it),
    drop the segment's indexes (recovery rebuilds them), and remove non-active segments left empty."""
    files = plan.damaged_files
    all_logs = list(plan.kept)
    for name in files:
        src = Path(name)
        tmp = src.with_name(src.name + ".salvage")
        with open(src, "rb", buffering=0) as fin, open(tmp, "wb", buffering=0) as fout:
            for pos, length in plan.kept[name]:
                done = 0
                while done < length:
                    chunk = os.pread(fin.fileno(), min(_COPY_CHUNK, length - done), pos + done)
                    if not chunk:
                        raise OSError(f"{src}: ended at position {pos + done} while salvaging")
                    fout.write(chunk)
                    done += len(chunk)
            if fsync:
                os.fsync(fout.fileno())
        os.replace(tmp, src)
        base = int(src.name[:20])
        for suffix in INDEX_SUFFIXES:
            src.with_name(src.name[:20] + suffix).unlink(missing_ok=True)
        if not plan.kept[name] and name != all_logs[-1]:
            remove_segment_files(src.parent, base)  # an old segment with nothing readable left
    if fsync and files:
        fd = os.open(Path(files[0]).parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

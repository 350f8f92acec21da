"""Moving a log's start forward: DeleteRecords, retention and file deletion.

Kafka's deleteOldSegments: segments wholly below the log start offset always
go; for `cleanup.policy=delete`, segments past retention.ms and the oldest
ones over retention.bytes go too. The active segment is never deleted (a
roll comes first when every segment would go). Deleted segments are renamed
`.deleted` and removed after file.delete.delay.ms. `Log` inherits these methods.
"""
from __future__ import annotations

from pylog.core.errors import OffsetOutOfRangeError
from pylog.storage.segment import DELETED_SUFFIX, LogSegment


class LogRetention:
    """Retention and log-start movement of a Log (mixed into storage.log.Log)."""

    def delete_records(self, before_offset: int) -> int:
        """DeleteRecords: move the log start offset to before_offset (-1: the high watermark) and delete the
        segments wholly below it; returns the new log start offset."""
        with self.lock:
            if before_offset == -1:
                before_offset = self.high_watermark
            if before_offset > self.high_watermark or before_offset < 0:
                raise OffsetOutOfRangeError(
                    f"cannot move the log start offset of {self.topic}-{self.partition} to {before_offset}: "
                    f"the high watermark is {self.high_watermark}")
            if before_offset > self.log_start_offset:
                self._increment_log_start(before_offset)
                self._delete_segments(self._deletable(lambda s, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset),
                                      self._now_ms())
            return self.log_start_offset

    def _increment_log_start(self, offset: int) -> None:
        self.log_start_offset = offset
        self.epoch_cache.truncate_from_start(offset)
        self.producer_state.on_log_start_offset_incremented(offset)

    def _deletable(self, predicate) -> list[LogSegment]:
        out = []
        segs = self.segments
        leo = self.log_end_offset
        for i, seg in enumerate(segs):
            nxt = segs[i + 1] if i + 1 < len(segs) else None
            upper = nxt.base_offset if nxt is not None else leo
            if nxt is None and seg.size == 0:
                break
            if self.high_watermark >= upper and predicate(seg, nxt):
                out.append(seg)
            else:
                break
        return out

    def _delete_segments(self, doomed: list[LogSegment], now_ms: int) -> int:
        if not doomed:
            return 0
        if len(doomed) == len(self.segments):
            self._roll(now_ms)  # always keep an active segment
        delay = self.config["file.delete.delay.ms"]
        for seg in doomed:
            idx = self.segments.index(seg)
            del self.segments[idx]
            del self._bases[idx]
            seg.change_suffix("", DELETED_SUFFIX)
            self.pending_deletes.append((now_ms + delay, seg))
        first = self.segments[0].base_offset
        if first > self.log_start_offset:
            self._increment_log_start(first)
        self.producer_state.delete_snapshots_below(first)
        if delay == 0:
            self.delete_expired_files(now_ms)
        return len(doomed)

    def run_retention(self, now_ms: int | None = None) -> int:
        """Kafka's deleteOldSegments: log-start breach always; time and size for `delete` policy."""
        with self.lock:
            now = self._now_ms() if now_ms is None else now_ms
            n = self._delete_segments(
                self._deletable(lambda s, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset), now)
            if "delete" not in self.config["cleanup.policy"]:
                return n
            retention_ms = self.config["retention.ms"]
            if retention_ms >= 0:
                n += self._delete_segments(
                    self._deletable(lambda s, nxt: now - s.largest_timestamp > retention_ms), now)
            retention_bytes = self.config["retention.bytes"]
            if retention_bytes >= 0:
                diff = [self.size_bytes - retention_bytes]

                def over(s, nxt):
                    if diff[0] - s.size >= 0:
                        diff[0] -= s.size
                        return True
                    return False
                n += self._delete_segments(self._deletable(over), now)
            return n

    def delete_expired_files(self, now_ms: int | None = None) -> int:
        with self.lock:
            now = self._now_ms() if now_ms is None else now_ms
            due = [(t, s) for t, s in self.pending_deletes if t <= now]
            self.pending_deletes = [(t, s) for t, s in self.pending_deletes if t > now]
        for _, s in due:
            s.delete_files()
        return len(due)

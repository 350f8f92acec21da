"""Opening a partition's log: Kafka's LogLoader.

Removes temporary files and completes the cleaner's swaps, loads the
segments, recovers the ones past the recovery point after an unclean
shutdown (cutting a torn or damaged tail and every later segment), and
rebuilds what depends on the log: the leader-epoch cache, producer state
and the transaction indexes of recovered segments. `Log` inherits these
methods; they run once, from its constructor.
"""
from __future__ import annotations

import bisect
import logging

from pylog.core.errors import DataError
from pylog.core.records.header import CONTROL_MASK, LOG_OVERHEAD, BatchHeader
from pylog.storage.index_file import CorruptIndexError
from pylog.storage.leader_epoch import LEADER_EPOCH_CHECKPOINT, LeaderEpochFileCache, read_leader_epoch_checkpoint
from pylog.storage.producer_state import ProducerStateManager
from pylog.storage.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIXES,
    LOG_SUFFIX,
    SWAP_END_SUFFIX,
    SWAP_SUFFIX,
    remove_segment_files,
    segment_path,
)

log = logging.getLogger("pylog.storage.log")


class LogLoader:
    """Loading and recovery of a Log (mixed into storage.log.Log)."""

    def _load(self, had_clean_shutdown: bool) -> None:
        swaps = self._remove_temp_files()
        for base in sorted(swaps):
            self._complete_swap(base)
        for p in self.dir.glob("*" + SWAP_END_SUFFIX):
            p.unlink()  # the cleaner's swap hints are spent (or orphaned) once swaps are done
        bases = []
        for p in self.dir.iterdir():
            name = p.name
            if name.endswith(LOG_SUFFIX) and name[:-4].isdigit():
                bases.append(int(name[:-4]))
            elif name.endswith(INDEX_SUFFIXES):
                stem = name.split(".")[0]
                if stem.isdigit() and not (self.dir / (stem + LOG_SUFFIX)).exists():
                    p.unlink()  # an index without its log: Kafka deletes it too
        bases.sort()
        epoch_ok = self._load_epoch_cache()
        self._txn_index_rebuild: set[int] = set()
        recover_from = None
        if not had_clean_shutdown and bases:
            i = max(0, bisect.bisect_right(bases, self.recovery_point) - 1)
            recover_from = bases[i]
        for base in bases:
            seg = self._new_segment(base)
            self.segments.append(seg)
            self._bases.append(base)
        i = 0
        while i < len(self.segments):
            seg = self.segments[i]
            needs = recover_from is not None and seg.base_offset >= recover_from
            if not needs:
                # Kafka's loadSegmentFiles: an index is trusted below the recovery point (its sanity checks
                # are skipped, recovery covers what lies past it) and an older segment's indexes are only
                # opened when first needed; the active segment's tail is read now (the log end offset)
                try:
                    if i + 1 < len(self.segments):
                        if not seg.has_index_files():
                            raise CorruptIndexError(f"missing index for segment {seg.log_path.name}")
                        seg.defer_tail()
                    else:
                        seg.drop_blank_tail()
                        seg.sanity_check()
                        seg.load_tail()
                except CorruptIndexError as e:
                    self._warn(f"{e}; rebuilding the indexes of {seg.log_path}")
                    needs = True
            if needs:
                if self._recover_segment(i):
                    break  # later segments were deleted
            i += 1
        if not self.segments:
            seg = self._new_segment(self.log_start_offset)
            self.segments.append(seg)
            self._bases.append(seg.base_offset)
        leo = self.log_end_offset
        self.active_segment.resize_indexes(self.config["segment.index.bytes"])
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        if self.log_start_offset > leo:
            self.log_start_offset = leo
        if not epoch_ok:
            self._rebuild_epoch_cache()
        self.epoch_cache.truncate_from_end(leo)
        self.epoch_cache.truncate_from_start(self.log_start_offset)
        self._load_producer_state()
        if self._txn_index_rebuild:
            self._rebuild_txn_indexes(self._txn_index_rebuild)
        self.recovery_point = leo
        self.high_watermark = leo

    def _load_new(self) -> None:
        """A partition created just now in an empty dir: one empty active segment with its preallocated
        indexes (as Kafka's loader leaves a new log), an empty leader-epoch cache and producer state."""
        self.epoch_cache = LeaderEpochFileCache(self.dir / LEADER_EPOCH_CHECKPOINT, [], fsync=self._fsync)
        self._txn_index_rebuild = set()
        seg = self._new_segment(self.log_start_offset)
        self.segments.append(seg)
        self._bases.append(seg.base_offset)
        seg.resize_indexes(self.config["segment.index.bytes"])
        leo = self.log_end_offset
        self.producer_state.map_end_offset = self.producer_state.last_snap_offset = self.log_start_offset
        self.producer_state.update_map_end_offset(leo)
        self.recovery_point = self.high_watermark = leo

    def _recovery_note(self, msg: str) -> None:
        """What recovery cut: kept with the warnings, logged at INFO (the log manager logs one summary)."""
        self.warnings.append(msg)
        self.recovery_notes.append(msg)
        log.info(msg)

    def _rebuild_txn_indexes(self, bases: set[int]) -> None:
        """Rebuild the .txnindex of recovered segments that hold end-transaction markers.

        Each ABORT marker's entry needs the transaction's first offset and the
        last stable offset at the marker (the first offset of the earliest other
        open transaction, else the marker's offset + 1), so producer state is
        replayed from the log start, batch headers only, reading the bytes of
        control batches alone. Runs only after a recovery that met markers: a log
        without transactions never pays for it."""
        from pylog.storage.txn_index import AbortedTxn

        psm = ProducerStateManager(self.dir / ".txn-index-rebuild", fsync=False)  # in memory: never snapshots
        for seg in self.segments:
            rebuild = seg.base_offset in bases
            for p, h in seg.batches():
                if h.producer_id < 0:
                    continue
                if not h.is_control:
                    psm.update(h)
                    continue
                done = psm.update(h, seg.read_batch_bytes(p, h.batch_length + LOG_OVERHEAD), 0)
                if rebuild and done is not None and done.is_aborted:
                    lso = psm.first_unstable_offset()
                    seg.txn_index.append(AbortedTxn(done.producer_id, done.first_offset, done.last_offset,
                                                    done.last_offset + 1 if lso is None else lso))

    def _remove_temp_files(self) -> list[int]:
        """Kafka's removeTempFilesAndCollectSwapFiles: .deleted and .cleaned files go;
        index .swap files go (rebuilt); log .swap files are kept to complete the swap."""
        cleaned_min = None
        swaps = []
        for p in list(self.dir.iterdir()):
            name = p.name
            if name.endswith(DELETED_SUFFIX):
                p.unlink()
            elif name.endswith(CLEANED_SUFFIX):
                stem = name.split(".")[0]
                if stem.isdigit():
                    cleaned_min = int(stem) if cleaned_min is None else min(cleaned_min, int(stem))
                p.unlink()
            elif name.endswith(SWAP_SUFFIX):
                inner = name[: -len(SWAP_SUFFIX)]
                if inner.endswith(LOG_SUFFIX) and inner[:-4].isdigit():
                    swaps.append(int(inner[:-4]))
                else:
                    p.unlink()
            elif name.endswith(".tmp"):
                p.unlink()  # half-written checkpoint or snapshot
        out = []
        for base in swaps:
            if cleaned_min is not None and base >= cleaned_min:
                # the cleaning that produced this swap did not finish
                segment_path(self.dir, base, LOG_SUFFIX + SWAP_SUFFIX).unlink()
                self._warn(f"deleting incomplete swap file {base:020d}.log.swap")
            else:
                out.append(base)
        return out

    def _complete_swap(self, base: int) -> None:
        """A finished swap: replace the segments it covers with it."""
        seg = self._new_segment(base, SWAP_SUFFIX)
        res = seg.recover(contiguous=False)
        end = res.next_offset
        # The cleaner writes the end offset of the segments it replaces beside the
        # swap: its last batches may all have been removed, and old segments past
        # the swap's own data must go too.
        hint = segment_path(self.dir, base, SWAP_END_SUFFIX)
        try:
            end = max(end, int(hint.read_text().strip()))
        except (FileNotFoundError, ValueError):
            pass
        for p in list(self.dir.iterdir()):
            name = p.name
            if name.endswith(LOG_SUFFIX) and name[:-4].isdigit():
                b = int(name[:-4])
                if base <= b < end:
                    remove_segment_files(self.dir, b)
        seg.change_suffix(SWAP_SUFFIX, "")
        seg.close()
        self._warn(f"completed swap of segment {base:020d}.log (offsets {base}..{end - 1})")

    def _load_epoch_cache(self) -> bool:
        path = self.dir / LEADER_EPOCH_CHECKPOINT
        try:
            entries = read_leader_epoch_checkpoint(path)
        except FileNotFoundError:
            entries = []
        except (DataError, ValueError) as e:
            self._warn(f"unreadable {path} ({e}); rebuilding it from the log")
            self.epoch_cache = LeaderEpochFileCache(path, [], fsync=self._fsync)
            return False
        self.epoch_cache = LeaderEpochFileCache(path, entries, fsync=self._fsync)
        return True

    def _rebuild_epoch_cache(self) -> None:
        self.epoch_cache.clear(flush=False)
        last = None
        for seg in self.segments:
            for _, h in seg.batches():
                e = h.partition_leader_epoch
                if e != last and e >= 0:
                    self.epoch_cache.assign(e, h.base_offset, flush=False)
                    last = e
        self.epoch_cache.flush()

    def _recover_segment(self, i: int) -> bool:
        """Recover segment i; on damage cut it and delete every later segment.
        Returns True when later segments were dropped."""
        seg = self.segments[i]
        cache = self.epoch_cache
        state = {"epoch": cache.latest_epoch}

        def on_batch(h: BatchHeader) -> None:
            e = h.partition_leader_epoch
            if e >= 0 and e != state["epoch"]:
                cache.assign(e, h.base_offset, flush=False)
                state["epoch"] = e
            if h.attributes & CONTROL_MASK and h.producer_id >= 0:
                state["markers"] = True

        cache.truncate_from_end(seg.base_offset, flush=False)
        state["epoch"] = cache.latest_epoch
        # offsets must increase but may skip, in every topic: Kafka's recovery accepts gaps (compaction and
        # `pylog verify --repair --salvage` leave them), so pylog must not cut a log at one
        nxt = self.segments[i + 1].base_offset if i + 1 < len(self.segments) else None
        res = seg.recover(on_batch, contiguous=False, next_base=nxt)
        self.recovered = True
        if state.get("markers"):
            self._txn_index_rebuild.add(seg.base_offset)  # recover() emptied its .txnindex
        if res.truncated_bytes:
            self._recovery_note(
                f"recovery: {seg.log_path} truncated at byte {res.valid_bytes} (offset {res.next_offset}): "
                f"{res.reason}; {res.truncated_bytes} bytes dropped")
            self.recovery_dropped += res.truncated_bytes
        cache.flush()
        if (res.truncated_bytes or i + 1 < len(self.segments)) and self._fsync:
            seg.flush()
        later = self.segments[i + 1:]
        if res.truncated_bytes and later:
            for s in later:
                self.recovery_dropped += s.size
                self._recovery_note(f"recovery: deleting segment {s.log_path.name} after the damaged one")
                s.delete_files()
            del self.segments[i + 1:]
            del self._bases[i + 1:]
            return True
        if not res.truncated_bytes and later and res.next_offset > later[0].base_offset:
            raise DataError(f"{seg.log_path}: offsets run to {res.next_offset - 1}, past the next segment's base "
                            f"offset {later[0].base_offset}")
        return False

    def _load_producer_state(self) -> None:
        psm = self.producer_state
        leo = self.log_end_offset
        for w in psm.load(self.log_start_offset, leo, self._now_ms()):
            self._warn(w)
        start = max(psm.map_end_offset, self.log_start_offset)
        if start < leo:
            self._replay_producer_state(start, leo)
        psm.update_map_end_offset(leo)

    def _replay_producer_state(self, start: int, end: int) -> None:
        psm = self.producer_state
        for idx in range(self._segment_for(start), len(self.segments)):
            seg = self.segments[idx]
            bp = seg.translate_offset(start) if seg.base_offset <= start else None
            pos = bp.position if bp is not None else 0
            for p, h in seg.batches(pos):
                if h.base_offset >= end:
                    return
                if h.last_offset < start:
                    continue
                if h.producer_id >= 0:
                    buf = seg.read_batch_bytes(p, h.batch_length + LOG_OVERHEAD) if h.is_control else None
                    psm.update(h, buf, 0)

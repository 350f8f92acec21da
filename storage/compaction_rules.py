"""What log compaction keeps: the cleaner's rules as pure functions (no I/O).

The cleaner (storage/cleaner.py) and the Spark compaction analysis both call
these, so a prediction and a real cleaning cannot drift apart.

Which part of a log is cleaned (Kafka's LogCleanerManager):
- the dirty section starts at the cleaner checkpoint (the log start offset
  when it is missing or out of range) and ends at the first uncleanable
  offset: the active segment's base offset, lowered to the first unstable
  (open transaction) offset and to the first segment younger than
  `min.compaction.lag.ms`;
- dirty ratio = dirty bytes / (clean bytes + dirty bytes); a log is cleaned
  when the ratio is at least `min.cleanable.dirty.ratio`, or when a dirty
  segment's first batch is older than `max.compaction.lag.ms`.

What a cleaning keeps, record by record (Kafka's Cleaner.shouldRetainRecord,
KIP-534 delete horizons), given `latest` = the newest offset of the key in
the dirty section (-1 when the key does not occur there):
- keyless records go;
- a record older than `latest` goes;
- a tombstone (null value) stays until its batch's delete horizon has passed.
  A batch without a horizon that keeps a tombstone gets one: cleaning time +
  `delete.retention.ms`, stored as the base timestamp with attribute bit 6.
  (With `delete.retention.ms=0` that horizon is already due, so the tombstone
  goes in the same cleaning.)
And batch by batch:
- a batch whose records all stay (and needs no new horizon) is copied byte
  for byte;
- a partially kept batch is rebuilt: same base offset, lastOffsetDelta,
  producer id/epoch/base sequence, partition leader epoch, attributes and
  codec; kept records keep their offsets (gaps are normal in compacted logs);
- a batch with nothing left goes, unless it is the last batch of a live
  idempotent producer: then an empty batch (header only, record count 0,
  same offsets and sequences) stays, so the producer's sequence survives;
- control batches (transaction markers): filter_marker (Kafka's delete horizon for markers).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import compress
from operator import ge as _ge
from typing import Callable, NamedTuple, Sequence


from pylog.storage import fastpath
from pylog.core.records import compression
from pylog.core.records.header import (
    CODEC_MASK,
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    pack_batch,
)
from pylog.core.records.errors import CorruptRecordError
from pylog.core.records.varint import decode_varint_py as decode_varint, decode_varlong_py as decode_varlong, encode_varint

LONG_MAX = (1 << 63) - 1


# ---------------------------------------------------------------- which section is cleaned
class SegmentStat(NamedTuple):
    """What selection needs to know of a segment."""

    base_offset: int
    size: int
    largest_timestamp: int  # max timestamp (or mtime when it has none)
    first_batch_timestamp: int  # max timestamp of the first batch, -1 when empty


class CleanableSection(NamedTuple):
    """The part of a log a cleaning covers and the byte counts the dirty ratio is computed from."""
    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    dirty_bytes: int
    max_lag_delay_ms: int  # > 0: some dirty data is older than max.compaction.lag.ms by that much

    @property
    def total_bytes(self) -> int:
        """Clean plus dirty bytes."""
        return self.clean_bytes + self.dirty_bytes

    @property
    def dirty_ratio(self) -> float:
        """Dirty bytes over total bytes (0 when empty)."""
        total = self.total_bytes
        return self.dirty_bytes / total if total else 0.0

    @property
    def needs_compaction_now(self) -> bool:
        """True when max.compaction.lag.ms forces a cleaning whatever the ratio."""
        return self.max_lag_delay_ms > 0


def first_dirty_offset(checkpoint: int | None, log_start_offset: int, active_base: int) -> int:
    """The checkpoint when it lies within [log start, active segment], else the log start."""
    if checkpoint is None or checkpoint < log_start_offset or checkpoint > active_base:
        return log_start_offset
    return checkpoint


def cleanable_section(segments: Sequence[SegmentStat], *, checkpoint: int | None, log_start_offset: int,
                      now_ms: int, min_compaction_lag_ms: int = 0, max_compaction_lag_ms: int = LONG_MAX,
                      first_unstable_offset: int | None = None) -> CleanableSection:
    """The dirty section of a log whose segments (oldest first, the last one active) are given."""
    if not segments:
        return CleanableSection(log_start_offset, log_start_offset, 0, 0, 0)
    active_base = segments[-1].base_offset
    first_dirty = first_dirty_offset(checkpoint, log_start_offset, active_base)
    uncleanable = active_base
    if first_unstable_offset is not None:
        uncleanable = min(uncleanable, first_unstable_offset)
    # dirty non-active segments: from the one holding first_dirty up to the active one
    dirty_segs = [s for i, s in enumerate(segments[:-1])
                  if segments[i + 1].base_offset > first_dirty]
    if min_compaction_lag_ms > 0:
        for s in dirty_segs:
            if s.largest_timestamp > now_ms - min_compaction_lag_ms:
                uncleanable = min(uncleanable, s.base_offset)
                break
    uncleanable = max(uncleanable, first_dirty)
    clean_bytes = sum(s.size for s in segments if s.base_offset < first_dirty)
    dirty_bytes = sum(s.size for i, s in enumerate(segments)
                      if s.base_offset < uncleanable
                      and (i + 1 == len(segments) or segments[i + 1].base_offset > first_dirty))
    delay = 0
    if max_compaction_lag_ms < LONG_MAX:
        firsts = [s.first_batch_timestamp for s in dirty_segs if s.first_batch_timestamp > 0]
        if firsts:
            clean_until = now_ms - max(max_compaction_lag_ms, 0)
            earliest = min(firsts)
            if earliest < clean_until:
                delay = clean_until - earliest
    return CleanableSection(first_dirty, uncleanable, clean_bytes, dirty_bytes, delay)


def should_clean(section: CleanableSection, min_cleanable_dirty_ratio: float) -> bool:
    """Dirty enough (ratio at least the minimum), or overdue by max.compaction.lag.ms."""
    if section.dirty_bytes <= 0 or section.first_uncleanable <= section.first_dirty:
        return False
    return section.needs_compaction_now or section.dirty_ratio >= min_cleanable_dirty_ratio


def group_segments(sizes: Sequence[tuple[int, int, int]], max_size: int, max_index_size: int) -> list[list[int]]:
    """Kafka's groupSegmentsBySize: consecutive segments, given as (base offset, log
    bytes, index bytes), merged while their total stays within segment.bytes and
    segment.index.bytes and their offsets within one segment's int32 range.
    Returns groups of indexes into `sizes`."""
    groups: list[list[int]] = []
    i = 0
    n = len(sizes)
    while i < n:
        group = [i]
        log_size, index_size = sizes[i][1], sizes[i][2]
        j = i + 1
        while j < n:
            base, size, isize = sizes[j]
            nxt = sizes[j + 1][0] if j + 1 < n else None
            if log_size + size > max_size or index_size + isize > max_index_size:
                break
            if nxt is not None and nxt - 1 - sizes[i][0] > 0x7FFFFFFF:
                break
            group.append(j)
            log_size += size
            index_size += isize
            j += 1
        groups.append(group)
        i = j
    return groups


# ---------------------------------------------------------------- records
def record_keys(data, base_offset: int) -> tuple[list, list]:
    """(keys, offsets) of every record in an uncompressed records section (the map-building pass)."""
    _, keys, offsets, _ = _scan_records(data, base_offset, True)
    return keys, offsets


def scan_records(data, base_offset: int, with_keys: bool) -> tuple[list, list, list, list]:
    """(starts, keys, offsets, value positions) of every record: what the retention
    decision and a verbatim copy of the kept records need (keys and value positions
    are empty lists unless `with_keys`). The cleaner's key scan, reference version:
    the compiled fast path (pylog.storage.fastpath) has the same contract."""
    if type(data) is not bytes:
        data = bytes(data)
    starts: list = []
    keys: list = []
    offsets: list = []
    vpos: list = []
    end = len(data)
    pos = 0
    try:
        while pos < end:
            starts.append(pos)
            n, p = decode_varint(data, pos)
            if n <= 0:
                break
            # attributes, then the timestamp delta
            _, p2 = decode_varlong(data, p + 1)
            od, p2 = decode_varint(data, p2)
            offsets.append(base_offset + od)
            if with_keys:
                kl, p2 = decode_varint(data, p2)
                if kl >= 0:
                    keys.append(data[p2:p2 + kl])
                    vpos.append(p2 + kl)
                else:
                    keys.append(None)
                    vpos.append(p2)
            pos = p + n
    except CorruptRecordError:
        raise CorruptRecordError("records run past the end of their batch") from None
    if pos != end:
        raise CorruptRecordError("records run past the end of their batch")
    return starts, keys, offsets, vpos


_scan_records = fastpath.choose("scan_records", scan_records)


def map_keys_py(d: dict, data, base_offset: int, fits: Callable[[int, int, int], bool]) -> int | None:
    """The map pass's loop over one uncompressed records section: when
    `fits(keyed records, longest key, offset of the last keyed one or -1)` is true,
    puts key -> offset of every keyed record into `d` (a later record of a key wins)
    and returns how many; else returns None with `d` untouched (so does a damaged
    section, raising as scan_records does). Reference version of the compiled one,
    which puts the keys into `d` without building lists."""
    _, keys, offsets, _ = scan_records(data, base_offset, True)
    if None in keys:
        offsets = [o for k, o in zip(keys, offsets) if k is not None]
        keys = [k for k in keys if k is not None]
    if not fits(len(keys), max(map(len, keys), default=0), offsets[-1] if offsets else -1):
        return None
    d.update(zip(keys, offsets))
    return len(keys)


map_keys = fastpath.choose("map_keys", map_keys_py)


class RecordSpan(NamedTuple):
    """Where one record lies in a records section, for copying it or re-encoding its timestamp delta."""
    offset: int
    key: bytes | None
    tombstone: bool
    timestamp_delta: int
    start: int  # first byte of the length varint
    body: int  # first byte after it (the attributes)
    ts_end: int  # first byte after the timestamp delta
    end: int


def batch_records_data(raw, h: BatchHeader) -> bytes:
    """The uncompressed records section of the batch `raw` (one whole batch)."""
    body = memoryview(raw)[HEADER_SIZE:h.batch_length + LOG_OVERHEAD]
    codec = h.attributes & CODEC_MASK
    return bytes(body) if codec == 0 else compression.decompress(codec, body)


# ---------------------------------------------------------------- the retention rule
class FilteredBatch(NamedTuple):
    """What the retention rule did to one batch: the bytes to write (None: removed), records kept and
    removed, tombstones removed, whether it was rebuilt."""
    data: object  # None (batch removed), the input (copied as is) or new bytes
    kept: int  # records kept
    removed: int  # records removed
    tombstones_removed: int
    rebuilt: bool


def filter_batch(raw, h: BatchHeader, latest_of: Callable[[bytes], int], now_ms: int,
                 delete_retention_ms: int, retain_empty: bool = False) -> FilteredBatch:
    """Apply the retention rule to one v2 batch (`raw` holds exactly that batch)."""
    return filter_batch_many(raw, h, lambda keys: list(map(latest_of, keys)), now_ms, delete_retention_ms,
                             retain_empty)


def filter_batch_many(raw, h: BatchHeader, latest_many: Callable[[list], list], now_ms: int,
                      delete_retention_ms: int, retain_empty: bool = False) -> FilteredBatch:
    """filter_batch with a bulk lookup: `latest_many(keys)` gives the latest offset
    of each key (-1 when absent) for a list of keys (never None) in one call, so
    the per-record work is one scan of the records and C-level list operations."""
    if h.attributes & CONTROL_MASK:
        return FilteredBatch(raw, h.record_count, 0, 0, False)
    data = batch_records_data(raw, h)
    starts, keys, offsets, vpos = _scan_records(data, h.base_offset, True)
    if None in keys:  # keyless records never stay (and are not looked up)
        latest = iter(latest_many([k for k in keys if k is not None]))
        keep = [k is not None and o >= next(latest) for k, o in zip(keys, offsets)]
    else:
        keep = list(map(_ge, offsets, latest_many(keys)))
    return _filtered(raw, h, data, starts, keep, vpos, now_ms, delete_retention_ms, retain_empty)


def filter_marker(raw, h: BatchHeader, removable: bool, now_ms: int, delete_retention_ms: int,
                  retain_empty: bool = False) -> FilteredBatch:
    """Kafka's rule for a transaction marker (control batch): kept while it guards data of its
    transaction; once it does not (`removable`), it gets a delete horizon (now +
    delete.retention.ms) and goes in a cleaning after that horizon, as a tombstone does (an empty
    batch stays where its producer's state needs it)."""
    n = h.record_count
    if not removable or not n:
        return FilteredBatch(raw, n, 0, 0, False)
    if h.attributes & DELETE_HORIZON_MASK:
        if h.base_timestamp > now_ms:
            return FilteredBatch(raw, n, 0, 0, False)
        if retain_empty:
            return FilteredBatch(empty_batch(h), 0, n, 0, True)
        return FilteredBatch(None, 0, n, 0, False)
    data = batch_records_data(raw, h)
    starts = _scan_records(data, h.base_offset, False)[0]
    ends = starts[1:] + [len(data)]
    spans = [_span_of(data, s, e) for s, e in zip(starts, ends)]
    return FilteredBatch(rebuild_batch(h, data, spans, now_ms + delete_retention_ms), n, 0, 0, True)


def marker_type(raw, h: BatchHeader) -> int | None:
    """The control type (ABORT 0, COMMIT 1, ...) of a control batch's first record, None when empty."""
    if not h.record_count:
        return None
    keys, _ = record_keys(batch_records_data(raw, h), h.base_offset)
    key = keys[0]
    return int.from_bytes(key[2:4], "big") if key is not None and len(key) >= 4 else -1


def filter_batch_survivors(raw, h: BatchHeader, survivors: Sequence[int], now_ms: int, delete_retention_ms: int,
                           retain_empty: bool = False) -> FilteredBatch:
    """filter_batch for a batch all of whose records went into the offset map of
    this cleaning pass. Such a record is the latest of its key exactly when its
    offset is one of the map's offsets, so `survivors` (those offsets, sorted)
    decides without a key lookup: a batch with none of them goes without its
    records being read, the others need only their offsets. Same result as
    filter_batch with the map's lookup."""
    if h.attributes & CONTROL_MASK:
        return FilteredBatch(raw, h.record_count, 0, 0, False)
    lo = bisect_left(survivors, h.base_offset)
    hi = bisect_right(survivors, h.base_offset + h.last_offset_delta, lo)
    if lo == hi:
        n = h.record_count
        if not n:
            return FilteredBatch(raw, 0, 0, 0, False)
        if retain_empty:
            return FilteredBatch(empty_batch(h), 0, n, 0, True)
        return FilteredBatch(None, 0, n, 0, False)
    data = batch_records_data(raw, h)
    starts, _, offsets, vpos = _scan_records(data, h.base_offset, True)
    keep = list(map(set(survivors[lo:hi]).__contains__, offsets))
    return _filtered(raw, h, data, starts, keep, vpos, now_ms, delete_retention_ms, retain_empty)


def _filtered(raw, h: BatchHeader, data: bytes, starts: list, keep: list, vpos: list, now_ms: int,
              delete_retention_ms: int, retain_empty: bool) -> FilteredBatch:
    """The FilteredBatch of a batch once it is known which records are the latest
    of their key (`keep`): tombstones, verbatim copy, empty or rebuilt batch."""
    n = len(starts)
    horizon = h.base_timestamp if h.attributes & DELETE_HORIZON_MASK else -1
    new_horizon = horizon if horizon >= 0 else now_ms + delete_retention_ms
    kept = list(compress(range(n), keep))
    # the value length of a tombstone (-1) is the single byte 0x01
    kept_vlen = bytes(map(data.__getitem__, map(vpos.__getitem__, kept)))
    tomb_gone = 0
    tomb_kept = False
    tombs = kept_vlen.count(1)
    if tombs:
        if now_ms >= new_horizon:
            kept = [i for i, b in zip(kept, kept_vlen) if b != 1]
            tomb_gone = tombs
        else:
            tomb_kept = True
    nk = len(kept)
    if nk == n and (not tomb_kept or horizon >= 0):
        return FilteredBatch(raw, n, 0, 0, False)
    if not nk:
        if retain_empty:
            return FilteredBatch(empty_batch(h), 0, n, tomb_gone, True)
        return FilteredBatch(None, 0, n, tomb_gone, False)
    ends = starts[1:]
    ends.append(len(data))
    kept_starts = list(map(starts.__getitem__, kept))
    kept_ends = list(map(ends.__getitem__, kept))
    if tomb_kept and horizon < 0:
        spans = [_span_of(data, s, e) for s, e in zip(kept_starts, kept_ends)]
        out = rebuild_batch(h, data, spans, new_horizon)
    else:
        # kept records are copied byte for byte
        records = b"".join(map(data.__getitem__, map(slice, kept_starts, kept_ends)))
        if h.attributes & TIMESTAMP_TYPE_MASK:
            max_ts = h.max_timestamp
        else:
            max_ts = h.base_timestamp + _max_timestamp_delta(data, kept_starts)
        out = _build(h, h.attributes, h.base_timestamp, max_ts, records, nk)
    return FilteredBatch(out, nk, n - nk, tomb_gone, True)


def _span_of(data, start: int, end: int) -> RecordSpan:
    """The spans rebuild_batch needs of the record at [start, end)."""
    _, body = decode_varint(data, start)
    tsd, ts_end = decode_varlong(data, body + 1)
    return RecordSpan(0, None, False, tsd, start, body, ts_end, end)


def max_timestamp_delta(data, starts) -> int:
    """The largest timestamp delta of the records starting at `starts` (not empty)."""
    return max(decode_varlong(data, decode_varint(data, s)[1] + 1)[0] for s in starts)


_max_timestamp_delta = fastpath.choose("max_timestamp_delta", max_timestamp_delta)


def rebuild_batch(h: BatchHeader, data, kept: Sequence[RecordSpan], set_horizon: int | None) -> bytes:
    """A batch of the kept records with the original batch's identity (Kafka's
    buildRetainedRecordsInto with the original last offset kept)."""
    attrs = h.attributes
    base_ts = h.base_timestamp
    log_append = attrs & TIMESTAMP_TYPE_MASK
    if set_horizon is None:
        records = b"".join([data[r.start:r.end] for r in kept])
    else:
        # the base timestamp becomes the horizon: timestamp deltas are re-encoded
        parts = []
        for r in kept:
            body = b"".join((data[r.body:r.body + 1], encode_varint(base_ts + r.timestamp_delta - set_horizon),
                             data[r.ts_end:r.end]))
            parts.append(encode_varint(len(body)))
            parts.append(body)
        records = b"".join(parts)
        attrs |= DELETE_HORIZON_MASK
    if log_append:
        max_ts = h.max_timestamp
    else:
        max_ts = base_ts + max(r.timestamp_delta for r in kept)
    new_base_ts = base_ts if set_horizon is None else set_horizon
    return _build(h, attrs, new_base_ts, max_ts, records, len(kept))


def _build(h: BatchHeader, attrs: int, base_ts: int, max_ts: int, records: bytes, count: int) -> bytes:
    """Header (with h's identity) + the records, compressed with the batch's codec."""
    codec = attrs & CODEC_MASK
    payload = records if codec == 0 else compression.compress(codec, records)
    return pack_batch(payload, attributes=attrs, last_offset_delta=h.last_offset_delta, base_timestamp=base_ts,
                      max_timestamp=max_ts, record_count=count, base_offset=h.base_offset,
                      partition_leader_epoch=h.partition_leader_epoch, producer_id=h.producer_id,
                      producer_epoch=h.producer_epoch, base_sequence=h.base_sequence)


def empty_batch(h: BatchHeader) -> bytes:
    """Kafka's writeEmptyHeader: no records, same offsets, producer fields and sequences."""
    attrs = h.attributes & (TIMESTAMP_TYPE_MASK | TRANSACTIONAL_MASK | CONTROL_MASK)
    return pack_batch(b"", attributes=attrs, last_offset_delta=h.last_offset_delta, base_timestamp=h.max_timestamp,
                      max_timestamp=h.max_timestamp, record_count=0, base_offset=h.base_offset,
                      partition_leader_epoch=h.partition_leader_epoch, producer_id=h.producer_id,
                      producer_epoch=h.producer_epoch, base_sequence=h.base_sequence)

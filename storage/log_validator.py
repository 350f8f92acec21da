"""Every check of an append, before anything is written: Kafka's LogValidator.

Batch-shaped: one pass over the batch headers (with CRCs), then one walk of
each batch's record framing (core/records/framing.check_records) with no
Python object per record; compressed batches are decompressed by the codec
library and walked the same way. The rules, each with Kafka's error code:

- the v2 format only (INVALID_RECORD); batch sizes within max.message.bytes
  (MESSAGE_TOO_LARGE) and the request within segment.bytes
  (RECORD_LIST_TOO_LARGE); a CRC that checks (CORRUPT_MESSAGE);
- a known codec, 0..4 (UNSUPPORTED_COMPRESSION_TYPE);
- record count > 0 and equal to lastOffsetDelta + 1; no control batches; a
  producer id needs a base sequence; transactional needs a producer id
  (INVALID_RECORD);
- record framing: lengths, varints, offset deltas within the batch, headers,
  exactly the declared number of records; a compressed payload that does not
  decompress is CORRUPT_MESSAGE, a bad record is INVALID_RECORD with the
  record's index in record_errors;
- CreateTime timestamps within [now - message.timestamp.before.max.ms,
  now + message.timestamp.after.max.ms]; a producer may not set
  LogAppendTime on a LogAppendTime topic (INVALID_TIMESTAMP);
- every record of a compacted topic has a key (INVALID_RECORD).
For the last two Kafka looks at every record of the batch and lists each bad
one in record_errors (`every_bad_record`), INVALID_TIMESTAMP when any
timestamp is among them; the records are decoded only once one is found bad.

`compression.type` other than `producer` re-encodes batches whose codec
differs (`recompress`), as Kafka does; offsets are then assigned in the
re-encoded batch.
"""
from __future__ import annotations

from typing import NamedTuple

from pylog.storage import fastpath
from pylog.core.errors import (
    CorruptMessageError,
    InvalidRecordError,
    InvalidTimestampError,
    MessageTooLargeError,
    RecordListTooLargeError,
    UnsupportedCompressionTypeError,
)
from pylog.core.records import compression
from pylog.core.records.batch import RecordBatch, decode_records
from pylog.core.records.errors import (
    CorruptCompressedError,
    CrcMismatchError,
    InvalidMagicError,
    RecordFormatError,
)
from pylog.core.records.framing import InvalidRecordFraming, check_records
from pylog.core.records.header import (
    CODEC_IDS,
    CODEC_MASK,
    CODEC_NAMES,
    CODEC_NONE,
    CONTROL_MASK,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    iter_headers,
    pack_batch,
)

_unpack_header = HEADER_STRUCT.unpack_from
_new_tuple = tuple.__new__
_MAX_CODEC = max(CODEC_NAMES)
_LONG_MIN = -(1 << 63)
_LONG_MAX = (1 << 63) - 1


class Validated(NamedTuple):
    """A buffer that passed every check: where its batches are, and totals."""

    batches: list  # [(position, BatchHeader)]
    record_count: int
    max_timestamp: int
    has_producer_id: bool


def record_error(cls, index: int, detail: str, summary: str):
    """An exception of `cls` carrying Kafka's record_errors [(batch_index, message)]."""
    e = cls(f"{summary}: record {index}: {detail}")
    e.record_errors = [(index, detail)]
    return e


def target_codec(cfg) -> int | None:
    """The codec compression.type asks for, or None for `producer` (keep the producer's)."""
    name = cfg["compression.type"]
    if name == "producer":
        return None
    return CODEC_NONE if name == "uncompressed" else CODEC_IDS[name]


def _records_section(mv, p: int, h: BatchHeader, tp: str) -> bytes:
    """The uncompressed records of the batch at p (decompressed by the codec library)."""
    body = mv[p + HEADER_SIZE:p + h.batch_length + LOG_OVERHEAD]
    codec = h.attributes & CODEC_MASK
    if codec == CODEC_NONE:
        return bytes(body)
    try:
        return compression.decompress(codec, body)
    except (CorruptCompressedError, RecordFormatError) as e:
        raise CorruptMessageError(f"the {CODEC_NAMES[codec]} payload of a batch for {tp} does not decompress: "
                                  f"{e}") from None
    except Exception as e:  # noqa: BLE001 - a codec library's own error type on garbage input
        raise CorruptMessageError(f"the {CODEC_NAMES[codec]} payload of a batch for {tp} does not decompress: "
                                  f"{e.__class__.__name__}: {e}") from None


def check_batch_records(mv, p: int, h: BatchHeader, tp: str, compacted: bool, window=None) -> bytes:
    """Walk the framing of every record of one batch; returns its records section.
    `window`: (lo, hi, create_time) of the topic's timestamp rules, for the error listing."""
    data = _records_section(mv, p, h, tp)
    try:
        res = check_records(data, h.record_count, h.last_offset_delta)
    except InvalidRecordFraming as e:
        raise record_error(InvalidRecordError, e.index, e.detail,
                           f"a batch for {tp} holds a malformed record") from None
    if compacted and res.first_null_key >= 0:
        raise every_bad_record(data, h, tp, compacted, *(window or (None, None, False)))
    return data


def every_bad_record(data: bytes, h: BatchHeader, tp: str, compacted: bool, lo: int | None, hi: int | None,
                     create_time: bool):
    """The error of a batch holding a bad record, listing each bad record as Kafka's
    LogValidator does: a missing key on a compacted topic first, else the timestamp.
    INVALID_TIMESTAMP when any timestamp is bad, else INVALID_RECORD."""
    append_time = h.attributes & TIMESTAMP_TYPE_MASK
    errors, bad_time = [], False
    records = decode_records(data, h.base_offset, h.base_timestamp, h.max_timestamp if append_time else None)
    for i, rec in enumerate(records):
        ts = rec.timestamp
        if compacted and rec.key is None:
            errors.append((i, f"Compacted topic cannot accept message without key in topic partition {tp}"))
        elif create_time and ts != NO_TIMESTAMP:
            if (lo is not None and ts < lo) or (hi is not None and ts > hi):
                bad_time = True
                errors.append((i, f"Timestamp {ts} of message with offset {rec.offset} is out of range. The "
                                  f"timestamp should be within [{'-inf' if lo is None else lo}, {hi}]"))
        elif append_time:
            bad_time = True
            errors.append((i, "Invalid timestamp type in message. Producer should not set timestamp type to "
                              "LogAppendTime."))
    first = f": record {errors[0][0]}: {errors[0][1]}" if errors else ""
    if bad_time:
        e = InvalidTimestampError(f"One or more records have been rejected due to invalid timestamp{first}")
    else:
        e = InvalidRecordError(f"One or more records have been rejected due to {len(errors)} record errors in "
                               f"total{first}")
    e.record_errors = errors
    return e


def validate_fast(mv, total: int, now: int, cfg, tp: str) -> Validated | None:
    """The checks of `validate` for the common case, in one walk (`validate_batches`).

    Returns None as soon as anything is unusual (damage, a limit exceeded, a
    compacted topic, a timestamp only the records can decide): the caller then
    runs `validate`, which raises the precise error. Accepts exactly what
    `validate` accepts."""
    if total > cfg["segment.bytes"] or "compact" in cfg["cleanup.policy"]:
        return None
    before_max = cfg["message.timestamp.before.max.ms"]
    hi = now + cfg["message.timestamp.after.max.ms"]  # not min(): its argument parsing is ~1,400 instructions
    found = validate_batches(mv if total == len(mv) else mv[:total], cfg["max.message.bytes"],
                             cfg["message.timestamp.type"] == "CreateTime",
                             now - before_max if before_max < now else _LONG_MIN,
                             hi if hi < _LONG_MAX else _LONG_MAX, compressed_records_ok, tp)
    return None if found is None else _new_tuple(Validated, found)  # NamedTuple's __new__ costs ~0.5 us


def compressed_records_ok(mv, pos: int, h: BatchHeader, tp: str) -> bool:
    """validate_batches' walk of a compressed batch's records: True when they are sound."""
    try:
        check_batch_records(mv, pos, h, tp, False)
    except (InvalidRecordError, CorruptMessageError):
        return False
    return True


def validate_batches_py(mv, max_message: int, create_time: bool, lo: int, hi: int, check_compressed,
                        tp: str) -> tuple | None:
    """validate_fast's walk over the whole of `mv`: (batches, record count, max timestamp, has a
    producer id), or None as soon as anything is unusual. `lo`, `hi`: the CreateTime window
    (_LONG_MIN: no lower bound); `check_compressed(mv, pos, header, tp) -> bool` walks a compressed
    batch's records. The reference of the compiled `validate_batches` (one C call per append)."""
    batches = []
    count = 0
    max_ts = -1
    has_pid = False
    try:
        for pos, h in iter_headers(mv, 0, len(mv), verify_crc=True, max_batch_size=max_message):
            attrs = h.attributes
            n = h.record_count
            if n <= 0 or h.last_offset_delta + 1 != n or attrs & CONTROL_MASK or attrs & CODEC_MASK > _MAX_CODEC:
                return None
            if h.producer_id >= 0:
                if h.base_sequence < 0:
                    return None
                has_pid = True
            elif attrs & TRANSACTIONAL_MASK:
                return None
            if create_time:
                if h.max_timestamp > hi or (lo != _LONG_MIN and not (
                        (n == 1 or attrs & TIMESTAMP_TYPE_MASK) and (h.max_timestamp >= lo or h.max_timestamp == NO_TIMESTAMP))):
                    return None  # out of range, or only the records can tell (see check_timestamps)
            elif attrs & TIMESTAMP_TYPE_MASK:
                return None
            if attrs & CODEC_MASK:
                if not check_compressed(mv, pos, h, tp):
                    return None
            else:  # walked where it lies: no copy of the records section
                try:
                    check_records(mv[pos + HEADER_SIZE:pos + h.batch_length + LOG_OVERHEAD], n, h.last_offset_delta)
                except InvalidRecordFraming:
                    return None
            batches.append((pos, h))
            count += n
            if h.max_timestamp > max_ts:
                max_ts = h.max_timestamp
    except RecordFormatError:
        return None  # damage: validate() names it
    return batches, count, max_ts, has_pid


validate_batches = fastpath.choose("validate_batches", validate_batches_py)


def validate(mv, total: int, now: int, cfg, tp: str) -> Validated:
    """Every check of the append, before anything is written; raises the first failure
    as the Kafka error the produce response carries."""
    max_message = cfg["max.message.bytes"]
    segment_bytes = cfg["segment.bytes"]
    if total > segment_bytes:
        raise RecordListTooLargeError(
            f"message batch size is {total} bytes in append to partition {tp}, "
            f"which exceeds the maximum configured segment size of {segment_bytes}")
    create_time = cfg["message.timestamp.type"] == "CreateTime"
    before_max = cfg["message.timestamp.before.max.ms"]
    after_max = cfg["message.timestamp.after.max.ms"]
    lo = now - before_max if before_max < now else _LONG_MIN
    hi = now + after_max
    compacted = "compact" in cfg["cleanup.policy"]
    batches = []
    count, max_ts, has_pid = 0, -1, False
    try:
        for p, h in iter_headers(mv, 0, total, verify_crc=True):
            size = h.batch_length + LOG_OVERHEAD
            if size > max_message:
                raise MessageTooLargeError(
                    f"the batch of {size} bytes at position {p} is larger than max.message.bytes {max_message}")
            codec = h.attributes & CODEC_MASK
            if codec > _MAX_CODEC:
                raise UnsupportedCompressionTypeError(
                    f"compression codec id {codec} of a batch for {tp} is not one of Kafka's (0-{_MAX_CODEC})")
            if h.record_count <= 0:
                raise InvalidRecordError(f"Invalid reported count for record batch: {h.record_count} "
                                         f"in topic partition {tp}")
            if h.last_offset_delta + 1 != h.record_count:
                raise InvalidRecordError(
                    f"Inconsistent batch offset range [{h.base_offset}, {h.last_offset}] and count of records "
                    f"{h.record_count} in topic partition {tp}")
            if h.is_control:
                raise InvalidRecordError(f"Clients are not allowed to write control records in topic partition {tp}")
            if h.producer_id >= 0 and h.base_sequence < 0:
                raise InvalidRecordError(f"Invalid sequence number {h.base_sequence} in record batch with "
                                         f"producerId {h.producer_id} in topic partition {tp}")
            if h.is_transactional and h.producer_id < 0:
                raise InvalidRecordError(f"transactional batch without a producer id in topic partition {tp}")
            window = (lo if before_max < now else None, hi, create_time)
            data = check_batch_records(mv, p, h, tp, compacted, window)
            if create_time:
                check_timestamps(mv, p, h, window[0], hi, lambda: every_bad_record(data, h, tp, compacted, *window))
            elif h.attributes & TIMESTAMP_TYPE_MASK:
                raise every_bad_record(data, h, tp, compacted, *window)
            batches.append((p, h))
            count += h.record_count
            if h.max_timestamp > max_ts:
                max_ts = h.max_timestamp
            has_pid = has_pid or h.producer_id >= 0
    except InvalidMagicError as e:
        raise InvalidRecordError(f"only record batch format v2 is accepted: {e}") from None
    except CrcMismatchError as e:
        raise CorruptMessageError(f"record batch failed its CRC check: {e}") from None
    except RecordFormatError as e:
        raise CorruptMessageError(f"malformed record batch: {e}") from None
    return Validated(batches, count, max_ts, has_pid)


def check_timestamps(mv, p: int, h: BatchHeader, lo: int | None, hi: int, listing=None) -> None:
    """CreateTime window check of every record, as Kafka's LogValidator does per record
    (records without a timestamp, -1, are exempt), decoding records only when needed.

    The header's maxTimestamp is the largest record timestamp, so the upper bound
    is decided by it alone. The lower bound is not: a record's timestamp delta may
    be negative (Java's producer writes one when a later record carries an earlier
    explicit timestamp, as Kafka Streams does), so the first record is not the
    oldest. Records are decoded only when the window has a lower bound
    (message.timestamp.before.max.ms below now; unbounded by default) and the batch
    has several records of their own timestamps. `listing()`: the error to raise (every
    bad record listed), else the first bad record's."""
    out = None
    index = 0
    if h.max_timestamp > hi:
        out = h.max_timestamp
    elif lo is not None:
        if h.record_count == 1 or h.attributes & TIMESTAMP_TYPE_MASK:
            if NO_TIMESTAMP != h.max_timestamp < lo:
                out = h.max_timestamp
        elif NO_TIMESTAMP != h.max_timestamp < lo:
            out = h.max_timestamp  # even the newest record is too old
        else:
            for index, rec in enumerate(RecordBatch(mv, p).records()):
                if NO_TIMESTAMP != rec.timestamp < lo or rec.timestamp > hi:
                    out = rec.timestamp
                    break
    if out is not None and listing is not None:
        raise listing()
    if out is not None:
        raise record_error(
            InvalidTimestampError, index,
            f"Timestamp {out} of message is out of range. The timestamp should be within "
            f"[{'-inf' if lo is None else lo}, {hi}]",
            "One or more records have been rejected due to invalid timestamp")


def recompress(mv, batches: list, codec: int, tp: str) -> tuple[bytearray, list] | None:
    """Re-encode the batches whose codec is not `codec` (compression.type), as Kafka's
    LogValidator does; None when every batch already has it. Returns the new buffer and
    its [(position, BatchHeader)]."""
    if all(h.attributes & CODEC_MASK == codec for _, h in batches):
        return None
    out = bytearray()
    new = []
    for p, h in batches:
        size = h.batch_length + LOG_OVERHEAD
        if h.attributes & CODEC_MASK == codec:
            raw = mv[p:p + size]
        else:
            records = _records_section(mv, p, h, tp)
            payload = records if codec == CODEC_NONE else compression.compress(codec, records)
            raw = pack_batch(payload, attributes=(h.attributes & ~CODEC_MASK) | codec,
                             last_offset_delta=h.last_offset_delta, base_timestamp=h.base_timestamp,
                             max_timestamp=h.max_timestamp, record_count=h.record_count,
                             base_offset=h.base_offset, partition_leader_epoch=h.partition_leader_epoch,
                             producer_id=h.producer_id, producer_epoch=h.producer_epoch,
                             base_sequence=h.base_sequence)
        new.append((len(out), _new_tuple(BatchHeader, _unpack_header(raw, 0))))
        out += raw
    return out, new

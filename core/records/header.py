"""RecordBatch v2 header: layout, parsing, in-place patching and walking.

This is the fast path shared by the broker, storage, verify and recovery: it
reads only the 61-byte header of each batch and never decodes records.

Layout (big-endian), offsets from the start of the batch:
  0 baseOffset int64 | 8 batchLength int32 | 12 partitionLeaderEpoch int32
  16 magic int8 | 17 crc uint32 | 21 attributes int16 | 23 lastOffsetDelta int32
  27 baseTimestamp int64 | 35 maxTimestamp int64 | 43 producerId int64
  51 producerEpoch int16 | 53 baseSequence int32 | 57 recordCount int32
CRC-32C covers bytes 21..end of batch. batchLength counts bytes after offset 12.
"""
from __future__ import annotations

import struct
from typing import Iterator, NamedTuple

from pylog.core.records import fastpath
from pylog.core.records.crc import crc32c

from pylog.core.records.errors import (
    CrcMismatchError,
    InvalidBatchSizeError,
    InvalidMagicError,
    TruncatedBatchError,
)

LOG_OVERHEAD = 12  # baseOffset + batchLength: the part not counted by batchLength
HEADER_SIZE = 61
# Named field offsets of the header: every module that reads or patches one uses these.
BASE_OFFSET_OFFSET = 0
BATCH_LENGTH_OFFSET = 8
LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORD_COUNT_OFFSET = 57
# Smallest legal batchLength for v2 (the header with zero records).
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

# attributes bits
CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
CODEC_IDS = {v: k for k, v in CODEC_NAMES.items()}

TIMESTAMP_CREATE_TIME = 0
TIMESTAMP_LOG_APPEND_TIME = 1

# The whole header, field by field in BatchHeader's order: the one declaration of the layout.
HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
_HEADER = HEADER_STRUCT
# baseOffset and batchLength: the part every magic shares.
PREFIX_STRUCT = struct.Struct(">qi")
_PREFIX = PREFIX_STRUCT
# baseOffset .. lastOffsetDelta: enough to locate a batch and its offsets.
LOCATE_STRUCT = struct.Struct(">qiibIhi")
# baseOffset, batchLength, partitionLeaderEpoch: what the leader patches on append.
APPEND_PATCH_STRUCT = struct.Struct(">qii")
# producerId, producerEpoch, baseSequence.
PRODUCER_STRUCT = struct.Struct(">qhi")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")


class BatchHeader(NamedTuple):
    """The 61-byte v2 batch header, field by field (HEADER_STRUCT's order)."""
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies in the log."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        """The offset of the batch's last record."""
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """The offset after the batch's last record."""
        return self.base_offset + self.last_offset_delta + 1

    @property
    def codec(self) -> int:
        """The compression codec id (attributes bits 0-2)."""
        return self.attributes & CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        """0 for CreateTime, 1 for LogAppendTime."""
        return (self.attributes & TIMESTAMP_TYPE_MASK) >> 3

    @property
    def is_transactional(self) -> bool:
        """True for batches of a transaction."""
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        """True for control batches (transaction markers)."""
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        """True when the base timestamp is a delete horizon (KIP-534)."""
        return bool(self.attributes & DELETE_HORIZON_MASK)

    @property
    def delete_horizon_ms(self) -> int:
        """The delete horizon (base timestamp when the flag is set), else -1."""
        return self.base_timestamp if self.has_delete_horizon else NO_TIMESTAMP

    @property
    def last_sequence(self) -> int:
        """The sequence of the batch's last record (wrapping at 2**31), or -1."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        # Sequences wrap at Int32.MAX_VALUE as in Kafka's DefaultRecordBatch.
        return (self.base_sequence + self.last_offset_delta) % (1 << 31)

    @property
    def has_producer_id(self) -> bool:
        """True for batches of an idempotent or transactional producer."""
        return self.producer_id >= 0


def parse_header(buf, pos: int = 0) -> BatchHeader:
    """Parse the v2 header at `pos`; the caller has checked magic and length."""
    return BatchHeader._make(_HEADER.unpack_from(buf, pos))


def with_append_fields(h: BatchHeader, base_offset: int, partition_leader_epoch: int) -> BatchHeader:
    """h with the two fields the leader sets on append (a NamedTuple _replace costs ~10x this)."""
    return tuple.__new__(BatchHeader, (base_offset, h.batch_length, partition_leader_epoch) + h[MAGIC_INDEX:])


# index of magic in BatchHeader: the fields from it on are the producer's, kept on append
MAGIC_INDEX = BatchHeader._fields.index("magic")


def patch_append_fields_py(buf, batches: list, base_offset: int, partition_leader_epoch: int) -> tuple[list, int]:
    """The leader's patch of an append, in place: offsets from `base_offset` and the leader epoch
    (both outside the CRC) into the batches [(position, BatchHeader)] of buf. Returns [(position,
    the header as written)] and the next offset. The reference of the compiled patch_append_fields."""
    patched = []
    patch = APPEND_PATCH_STRUCT.pack_into
    for p, h in batches:
        patch(buf, p, base_offset, h.batch_length, partition_leader_epoch)
        patched.append((p, with_append_fields(h, base_offset, partition_leader_epoch)))
        base_offset += h.last_offset_delta + 1
    return patched, base_offset


patch_append_fields = fastpath.choose("patch_append_fields", patch_append_fields_py)


def compute_crc(buf, pos: int, size: int) -> int:
    """CRC-32C of a v2 batch of `size` bytes starting at `pos` (attributes..end)."""
    mv = memoryview(buf)[pos + ATTRIBUTES_OFFSET : pos + size]
    return crc32c(mv)


def stored_crc(buf, pos: int = 0) -> int:
    """The CRC stored in the header of the batch at pos."""
    return _U32.unpack_from(buf, pos + CRC_OFFSET)[0]


def check_crc(buf, pos: int, size: int) -> None:
    """Raise CrcMismatchError when the stored CRC is not the computed one."""
    expected = stored_crc(buf, pos)
    found = compute_crc(buf, pos, size)
    if expected != found:
        raise CrcMismatchError(expected, found, pos)


# ---- in-place patching (the broker assigns offsets without re-encoding) ----

def set_base_offset(buf, pos: int, base_offset: int) -> None:
    """baseOffset is outside the CRC, so no recomputation is needed."""
    _I64.pack_into(buf, pos, base_offset)


def set_log_append_time(buf, pos: int, size: int, timestamp: int) -> None:
    """Stamp LogAppendTime: set the timestamp-type bit and maxTimestamp, re-CRC."""
    attrs = _I16.unpack_from(buf, pos + ATTRIBUTES_OFFSET)[0]
    _I16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attrs | TIMESTAMP_TYPE_MASK)
    _I64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, timestamp)
    write_crc(buf, pos, size)


def write_crc(buf, pos: int, size: int) -> None:
    """Recompute and store the CRC of the batch of `size` bytes at `pos`."""
    _U32.pack_into(buf, pos + CRC_OFFSET, compute_crc(buf, pos, size))


def set_producer(buf, pos: int, size: int, producer_id: int, producer_epoch: int, base_sequence: int) -> None:
    """Patch the producer fields of a built batch (inside the CRC, so re-CRC)."""
    PRODUCER_STRUCT.pack_into(buf, pos + PRODUCER_ID_OFFSET, producer_id, producer_epoch, base_sequence)
    write_crc(buf, pos, size)


# ---- building: the one place a v2 header is written ----

def pack_batch(payload, *, attributes: int, last_offset_delta: int, base_timestamp: int, max_timestamp: int,
               record_count: int, base_offset: int = 0, partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
               producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH,
               base_sequence: int = NO_SEQUENCE, mutable: bool = False):
    """A whole v2 batch: the header for these fields, then `payload` (the records
    section, already compressed when the codec says so), CRC-32C filled in.

    Returns bytes, or a bytearray when `mutable` (a producer patches its
    sequence into the built batch later, see set_producer)."""
    header = bytearray(HEADER_SIZE)
    HEADER_STRUCT.pack_into(
        header, 0, base_offset, HEADER_SIZE - LOG_OVERHEAD + len(payload), partition_leader_epoch, 2, 0,
        attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
        base_sequence, record_count,
    )
    crc = crc32c(payload, crc32c(memoryview(header)[ATTRIBUTES_OFFSET:]))
    _U32.pack_into(header, CRC_OFFSET, crc)
    if mutable:
        header += payload
        return header
    return b"".join((header, payload))


def seal_batch(buf, *, attributes: int, last_offset_delta: int, base_timestamp: int, max_timestamp: int,
               record_count: int, base_offset: int = 0, partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
               producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH,
               base_sequence: int = NO_SEQUENCE) -> None:
    """Write a v2 header, CRC-32C filled in, into the HEADER_SIZE bytes reserved at the
    front of `buf` (its uncompressed records section follows them): the same bytes as
    pack_batch of buf[HEADER_SIZE:], built where the records were encoded, without a copy."""
    size = len(buf)
    HEADER_STRUCT.pack_into(
        buf, 0, base_offset, size - LOG_OVERHEAD, partition_leader_epoch, 2, 0,
        attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
        base_sequence, record_count,
    )
    write_crc(buf, 0, size)


# ---- walking: the one batch walker ----

def iter_headers(
    buf,
    start: int = 0,
    end: int | None = None,
    *,
    verify_crc: bool = True,
    max_batch_size: int | None = None,
    partial_ok: bool = False,
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) for every v2 batch in buf[start:end].

    The one batch walker over bytes (a bytes-like object or an mmap): the log's
    append validation, recovery, verify and dump (storage.scan), the cleaner and
    the Spark jobs (storage.scan.file_batches for files) all step through batches
    with it. Only headers are read (and, with verify_crc, each batch's CRC-32C).

    Raises TruncatedBatchError when the buffer ends inside a batch (the bytes
    before it were good), and InvalidBatchSizeError / InvalidMagicError /
    CrcMismatchError for real damage, each with the batch's position: a caller
    that cuts (recovery) or skips (dump, verify, salvage) goes on from there.
    With `partial_ok` a buffer ending inside a batch just ends the walk: a reader
    of a file in chunks reads on from the end of the last batch yielded.
    """
    if end is None:
        end = len(buf)
    pos = start
    unpack = _HEADER.unpack_from
    new = tuple.__new__
    limit = max_batch_size if max_batch_size is not None else 1 << 62
    mv = memoryview(buf) if verify_crc else None
    try:
        while pos < end:
            if end - pos >= HEADER_SIZE:
                h = new(BatchHeader, unpack(buf, pos))
                size = h.batch_length + LOG_OVERHEAD
                # the common case, kept short: a whole, sane v2 batch
                if h.magic == 2 and h.batch_length >= MIN_BATCH_LENGTH and size <= limit:
                    if pos + size <= end:
                        if mv is not None:
                            found = crc32c(mv[pos + ATTRIBUTES_OFFSET:pos + size])
                            if found != h.crc:
                                raise CrcMismatchError(h.crc, found, pos)
                        yield pos, h
                        pos += size
                        continue
                    if partial_ok:
                        return
            elif partial_ok and (end - pos < LOG_OVERHEAD or _PREFIX.unpack_from(buf, pos)[1] >= MIN_BATCH_LENGTH):
                return
            raise _damage_at(buf, pos, end, max_batch_size)
    finally:
        if mv is not None:
            mv.release()


def _damage_at(buf, pos: int, end: int, max_batch_size: int | None):
    """The precise error for the batch at pos that the walker's fast check refused."""
    if end - pos < LOG_OVERHEAD:
        return TruncatedBatchError(f"{end - pos} trailing bytes, less than a batch header", pos)
    length = _PREFIX.unpack_from(buf, pos)[1]
    if length < MIN_BATCH_LENGTH:
        # v0/v1 entries are smaller, but a v2 walker must not accept them
        if end - pos > MAGIC_OFFSET and buf[pos + MAGIC_OFFSET] in (0, 1) and length >= 14:
            return InvalidMagicError(buf[pos + MAGIC_OFFSET], pos)
        return InvalidBatchSizeError(f"batch length {length} below the minimum {MIN_BATCH_LENGTH}", pos)
    size = length + LOG_OVERHEAD
    if max_batch_size is not None and size > max_batch_size:
        return InvalidBatchSizeError(f"batch size {size} above the limit {max_batch_size}", pos)
    if end - pos < HEADER_SIZE:
        return TruncatedBatchError(f"{end - pos} trailing bytes, less than a batch header", pos)
    magic = buf[pos + MAGIC_OFFSET]
    if magic != 2:
        return InvalidMagicError(magic, pos)
    return TruncatedBatchError(f"batch of {size} bytes but only {end - pos} remain", pos)


def read_batch_header(buf, pos: int = 0, end: int | None = None, *, verify_crc: bool = False,
                      max_batch_size: int | None = None) -> BatchHeader:
    """Check and parse the one v2 batch at `pos` (the single-batch form of iter_headers).

    Raises the same errors as iter_headers for that batch; a buffer that ends
    inside the batch is TruncatedBatchError.
    """
    if end is None:
        end = len(buf)
    if end - pos > MAGIC_OFFSET and buf[pos + MAGIC_OFFSET] != 2 and \
            _I32.unpack_from(buf, pos + BATCH_LENGTH_OFFSET)[0] >= 14:
        raise InvalidMagicError(buf[pos + MAGIC_OFFSET], pos)  # an old-format entry, whatever its size
    if end - pos >= HEADER_SIZE:
        header = BatchHeader._make(_HEADER.unpack_from(buf, pos))
        size = header.batch_length + LOG_OVERHEAD
        if header.batch_length >= MIN_BATCH_LENGTH and pos + size <= end and \
                (max_batch_size is None or size <= max_batch_size):
            if verify_crc:
                found = crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET : pos + size])
                if found != header.crc:
                    raise CrcMismatchError(header.crc, found, pos)
            return header
    raise _damage_at(buf, pos, end, max_batch_size)


def attributes_for(
    codec: int = CODEC_NONE,
    timestamp_type: int = TIMESTAMP_CREATE_TIME,
    is_transactional: bool = False,
    is_control: bool = False,
    has_delete_horizon: bool = False,
) -> int:
    """The v2 attributes int16 for these flags."""
    return (
        (codec & CODEC_MASK)
        | (TIMESTAMP_TYPE_MASK if timestamp_type else 0)
        | (TRANSACTIONAL_MASK if is_transactional else 0)
        | (CONTROL_MASK if is_control else 0)
        | (DELETE_HORIZON_MASK if has_delete_horizon else 0)
    )

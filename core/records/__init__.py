"""Kafka record formats: RecordBatch v2, legacy message sets v0/v1, codecs.

No I/O here: everything works on bytes, bytearrays and memoryviews.

Modules: header (v2 header, walker, in-place patches), batch (v2 reader and
builder), control (transaction markers), legacy (magic 0/1), memory (walker
over any magic), compression (codecs), varint (zig-zag varints), errors.
"""
from pylog.core.records.batch import BatchBuilder, Record, RecordBatch, build_batch, decode_records
from pylog.core.records.compression import compress, decompress
from pylog.core.records.control import (
    ABORT,
    COMMIT,
    ControlMarker,
    build_end_txn_batch,
    read_control_record,
)
from pylog.core.records.errors import (
    CorruptCompressedError,
    CorruptRecordError,
    CrcMismatchError,
    InvalidBatchSizeError,
    InvalidMagicError,
    RecordCountMismatchError,
    RecordFormatError,
    TruncatedBatchError,
    UnknownCodecError,
)
from pylog.core.records.header import (
    CODEC_GZIP,
    CODEC_IDS,
    CODEC_LZ4,
    CODEC_NAMES,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    HEADER_SIZE,
    LOG_OVERHEAD,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    BatchHeader,
    iter_headers,
    parse_header,
    read_batch_header,
)
from pylog.core.records.legacy import LegacyBatch, LegacyBuilder, LegacyHeader, read_legacy_header
from pylog.core.records.memory import iter_batches, iter_entries, iter_records

__all__ = [
    "ABORT",
    "COMMIT",
    "CODEC_GZIP",
    "CODEC_IDS",
    "CODEC_LZ4",
    "CODEC_NAMES",
    "CODEC_NONE",
    "CODEC_SNAPPY",
    "CODEC_ZSTD",
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "TIMESTAMP_CREATE_TIME",
    "TIMESTAMP_LOG_APPEND_TIME",
    "BatchBuilder",
    "BatchHeader",
    "ControlMarker",
    "CorruptCompressedError",
    "CorruptRecordError",
    "CrcMismatchError",
    "InvalidBatchSizeError",
    "InvalidMagicError",
    "LegacyBatch",
    "LegacyBuilder",
    "LegacyHeader",
    "Record",
    "RecordBatch",
    "RecordCountMismatchError",
    "RecordFormatError",
    "TruncatedBatchError",
    "UnknownCodecError",
    "build_batch",
    "build_end_txn_batch",
    "compress",
    "decode_records",
    "decompress",
    "iter_batches",
    "iter_entries",
    "iter_headers",
    "iter_records",
    "parse_header",
    "read_batch_header",
    "read_control_record",
    "read_legacy_header",
]

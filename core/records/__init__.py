"""Kafka record formats: RecordBatch v2, legacy message sets v0/v1, codecs.

No I/O here: everything works on bytes, bytearrays and memoryviews.

Modules: header (v2 header, walker, in-place patches), batch (v2 reader and
builder), control (transaction markers), legacy (magic 0/1), memory (walker
over any magic), compression (codecs), varint (zig-zag varints), errors.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from pylog.core.lazy_exports import lazy_getattr

# imported on first use (PEP 562), as pylog.core.client: a producer builds v2 batches and never needs
# the legacy, control-record or any-magic walker modules; whoever names one of them loads it
_MODULES = {  # module: the names it gives the package
    "batch": "BatchBuilder Record RecordBatch build_batch decode_records",
    "compression": "compress decompress",
    "control": "ABORT COMMIT ControlMarker build_end_txn_batch read_control_record",
    "errors": (
        "CorruptCompressedError CorruptRecordError CrcMismatchError InvalidBatchSizeError "
        "InvalidMagicError RecordCountMismatchError RecordFormatError TruncatedBatchError "
        "UnknownCodecError"),
    "header": (
        "CODEC_GZIP CODEC_IDS CODEC_LZ4 CODEC_NAMES CODEC_NONE CODEC_SNAPPY CODEC_ZSTD "
        "HEADER_SIZE LOG_OVERHEAD TIMESTAMP_CREATE_TIME TIMESTAMP_LOG_APPEND_TIME "
        "BatchHeader iter_headers parse_header read_batch_header"),
    "legacy": "LegacyBatch LegacyBuilder LegacyHeader read_legacy_header",
    "memory": "iter_batches iter_entries iter_records",
}

if TYPE_CHECKING:
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


__getattr__ = lazy_getattr(__name__, _MODULES)


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

"""Kafka record formats: RecordBatch v2, legacy message sets v0/v1, codecs.

No I/O here: everything works on bytes, bytearrays and memoryviews.

Modules: header (v2 header, walker, in-place patches), batch (v2 reader and
builder), control (transaction markers), legacy (magic 0/1), memory (walker
over any magic), compression (codecs), varint (zig-zag varints), errors.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# imported on first use (PEP 562), as pylog.core.client: a producer builds v2 batches and never needs
# the legacy, control-record or any-magic walker modules; whoever names one of them loads it
_WHERE = {
    "BatchBuilder": "batch", "Record": "batch", "RecordBatch": "batch", "build_batch": "batch",
    "decode_records": "batch", "compress": "compression", "decompress": "compression", "ABORT": "control",
    "COMMIT": "control", "ControlMarker": "control", "build_end_txn_batch": "control",
    "read_control_record": "control", "CorruptCompressedError": "errors", "CorruptRecordError": "errors",
    "CrcMismatchError": "errors", "InvalidBatchSizeError": "errors", "InvalidMagicError": "errors",
    "RecordCountMismatchError": "errors", "RecordFormatError": "errors", "TruncatedBatchError": "errors",
    "UnknownCodecError": "errors", "CODEC_GZIP": "header", "CODEC_IDS": "header", "CODEC_LZ4": "header",
    "CODEC_NAMES": "header", "CODEC_NONE": "header", "CODEC_SNAPPY": "header", "CODEC_ZSTD": "header",
    "HEADER_SIZE": "header", "LOG_OVERHEAD": "header", "TIMESTAMP_CREATE_TIME": "header",
    "TIMESTAMP_LOG_APPEND_TIME": "header", "BatchHeader": "header", "iter_headers": "header",
    "parse_header": "header", "read_batch_header": "header", "LegacyBatch": "legacy",
    "LegacyBuilder": "legacy", "LegacyHeader": "legacy", "read_legacy_header": "legacy",
    "iter_batches": "memory", "iter_entries": "memory", "iter_records": "memory",
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


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


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

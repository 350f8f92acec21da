"""KRaft's bootstrap snapshot: the metadata records a new cluster starts from.

`kafka-storage format` writes it: Kafka 4.3 and older as `bootstrap.checkpoint` in
every log dir, Kafka 4.4 as the metadata log's first snapshot
(`__cluster_metadata-0/00000000000000000000-0000000000.checkpoint`). Either is a snapshot-format file
of v2 batches, a SnapshotHeader control batch, data batches of metadata
records (FeatureLevelRecord for metadata.version and the other features,
ClusterIdRecord on newer versions), then a SnapshotFooter control batch. When
the controller activates on an empty metadata log it appends every data
record of the file (BootstrapMetadata / ActivationRecordsGenerator), so
records added here (TopicRecord, PartitionRecord, ConfigRecord,
ProducerIdsRecord) become the cluster's first metadata.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from pylog.core.errors import DataError
from pylog.core.records import BatchBuilder
from pylog.core.records.batch import RecordBatch
from pylog.core.records.control import SNAPSHOT_FOOTER, decode_control_key, encode_control_key
from pylog.core.records.errors import RecordFormatError
from pylog.core.records.metadata_records import decode_metadata_record, encode_metadata_record
from pylog.storage.checkpoint import atomic_write

BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"
# Kafka 4.4's format: the bootstrap records are the metadata log's snapshot 0-0
BOOTSTRAP_SNAPSHOT = "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"
SNAPSHOT_FOOTER_V0 = b"\x00\x00\x00"  # int16 version 0, no tagged fields
RECORDS_PER_BATCH = 1000  # far below the controller's per-batch limit


@dataclass
class BootstrapCheckpoint:
    """The parsed file: its header batch bytes, data records (values) and feature levels."""

    path: Path
    header: bytes
    records: list[bytes] = field(default_factory=list)

    def features(self) -> dict[str, int]:
        out = {}
        for value in self.records:
            rec = decode_metadata_record(value)
            if rec["type"] == "FEATURE_LEVEL_RECORD":
                out[rec["data"]["name"]] = rec["data"]["featureLevel"]
        return out

    def types(self) -> list[str]:
        return [decode_metadata_record(v)["type"] for v in self.records]

    def add(self, record_type: str, version: int, data: dict) -> None:
        self.records.append(encode_metadata_record(record_type, version, data))

    def to_bytes(self, now_ms: int | None = None) -> bytes:
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        parts = [self.header]
        offset = 1  # the header record is offset 0
        for i in range(0, len(self.records), RECORDS_PER_BATCH):
            b = BatchBuilder(base_offset=offset, partition_leader_epoch=0)
            for value in self.records[i:i + RECORDS_PER_BATCH]:
                b.append(now_ms, None, value)
            parts.append(b.build())
            offset = b.next_offset
        footer = BatchBuilder(base_offset=offset, is_control=True, partition_leader_epoch=0)
        footer.append(now_ms, encode_control_key(SNAPSHOT_FOOTER), SNAPSHOT_FOOTER_V0)
        parts.append(footer.build())
        return b"".join(parts)

    def write(self, path: str | os.PathLike | None = None) -> None:
        atomic_write(Path(path or self.path), self.to_bytes())


def bootstrap_path(metadata_dir: str | os.PathLike) -> Path:
    """Where a formatted node keeps its bootstrap records: bootstrap.checkpoint (Kafka 4.3 and
    older) or, failing that, the metadata log's snapshot 0-0 (Kafka 4.4)."""
    metadata_dir = Path(metadata_dir)
    old = metadata_dir / BOOTSTRAP_CHECKPOINT
    new = metadata_dir / BOOTSTRAP_SNAPSHOT
    return new if not old.exists() and new.exists() else old


def read_bootstrap_checkpoint(path: str | os.PathLike) -> BootstrapCheckpoint:
    """Parse a bootstrap snapshot, given the file or a metadata dir (FileNotFoundError when
    missing, DataError when unreadable)."""
    path = Path(path)
    if path.is_dir():
        path = bootstrap_path(path)
    buf = path.read_bytes()
    pos = 0
    header = None
    records: list[bytes] = []
    try:
        while pos < len(buf):
            batch = RecordBatch(buf, pos, verify_crc=True)
            size = batch.header.size
            if batch.is_control:
                _, ctype = decode_control_key(batch.records()[0].key)
                if header is None:
                    header = bytes(buf[pos:pos + size])
                elif ctype != SNAPSHOT_FOOTER:
                    raise DataError(f"{path}: unexpected control record type {ctype} at position {pos}")
            else:
                if header is None:
                    raise DataError(f"{path}: data before the snapshot header at position {pos}")
                records.extend(bytes(r.value) for r in batch.records())
            pos += size
    except RecordFormatError as e:
        raise DataError(f"{path}: {e}") from None
    if header is None:
        raise DataError(f"{path}: no snapshot header (not a KRaft bootstrap checkpoint)")
    return BootstrapCheckpoint(path, header, records)

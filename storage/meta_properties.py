"""KRaft `meta.properties`: the identity of a log dir.

    #
    #<date>
    cluster.id=<22-char base64url uuid>
    directory.id=<22-char base64url uuid>
    node.id=<int>
    version=1

Kafka writes it as a Java .properties file (a comment line with the date first);
readers ignore comments and key order.
"""
from __future__ import annotations

import base64
import datetime
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from pylog.core.errors import DataError
from pylog.core.records.kafka_types import random_uuid
from pylog.core.properties import parse_properties
from pylog.storage.checkpoint import atomic_write

META_PROPERTIES = "meta.properties"


def uuid_to_base64(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 of the 16 bytes, no padding (22 chars)."""
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode("ascii")


def uuid_from_base64(text: str) -> uuid.UUID:
    text = text.strip()
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, base64.binascii.Error):
        raise DataError(f"invalid base64url uuid {text!r}") from None
    if len(raw) != 16 or len(text) != 22:
        raise DataError(f"invalid uuid {text!r}: expected 22 base64url characters")
    return uuid.UUID(bytes=raw)


random_kafka_uuid = random_uuid  # the name storage's callers use


def generate_cluster_id() -> str:
    return uuid_to_base64(random_kafka_uuid())


@dataclass(frozen=True)
class MetaProperties:
    cluster_id: str
    node_id: int
    directory_id: str
    version: int = 1

    def to_text(self, now: datetime.datetime | None = None) -> str:
        now = now or datetime.datetime.now(datetime.timezone.utc)
        return (
            "#\n"
            f"#{now.strftime('%a %b %d %H:%M:%S %Z %Y')}\n"
            f"cluster.id={self.cluster_id}\n"
            f"directory.id={self.directory_id}\n"
            f"node.id={self.node_id}\n"
            f"version={self.version}\n"
        )


def read_meta_properties(path: str | os.PathLike) -> MetaProperties:
    """Parse a meta.properties file (FileNotFoundError when missing, DataError when bad)."""
    path = Path(path)
    if path.is_dir():
        path = path / META_PROPERTIES
    text = path.read_text(encoding="utf-8", errors="replace")
    props = parse_properties(text, str(path))
    version = props.get("version")
    if version != "1":
        raise DataError(f"{path}: unsupported meta.properties version {version!r} (pylog reads KRaft version 1)")
    missing = [k for k in ("cluster.id", "node.id") if not props.get(k)]
    if missing:
        raise DataError(f"{path}: missing {', '.join(missing)}")
    try:
        node_id = int(props["node.id"])
    except ValueError:
        raise DataError(f"{path}: node.id {props['node.id']!r} is not an integer") from None
    return MetaProperties(props["cluster.id"], node_id, props.get("directory.id", ""), 1)


def write_meta_properties(path: str | os.PathLike, meta: MetaProperties) -> None:
    path = Path(path)
    if path.is_dir():
        path = path / META_PROPERTIES
    atomic_write(path, meta.to_text())


def ensure_meta_properties(log_dir: str | os.PathLike, node_id: int, cluster_id: str | None = None) -> MetaProperties:
    """Read the dir's meta.properties, or create one (new directory id, given or new cluster id).

    A dir belonging to another node or cluster is refused, as Kafka does.
    """
    path = Path(log_dir) / META_PROPERTIES
    try:
        meta = read_meta_properties(path)
    except FileNotFoundError:
        meta = MetaProperties(cluster_id or generate_cluster_id(), node_id, uuid_to_base64(random_kafka_uuid()))
        write_meta_properties(path, meta)
        return meta
    if meta.node_id != node_id:
        raise DataError(f"{path}: node.id {meta.node_id} does not match the configured node.id {node_id}")
    if cluster_id is not None and meta.cluster_id != cluster_id:
        raise DataError(f"{path}: cluster.id {meta.cluster_id} does not match the expected cluster id {cluster_id}")
    if not meta.directory_id:
        meta = MetaProperties(meta.cluster_id, meta.node_id, uuid_to_base64(random_kafka_uuid()))
        write_meta_properties(path, meta)
    return meta

"""Values of KRaft's control records (LeaderChange, SnapshotHeader/Footer, KRaftVersion, Voters).

The `__cluster_metadata` log and its snapshots (and `bootstrap.checkpoint`)
carry control batches whose record value is one of these messages: an
explicit int16 Version field first, then the struct, every version flexible.
Declared once in the wire protocol's `Field` form after Kafka's specs
(raft/src/main/resources/common/message/*.json) and rendered as Kafka's JSON,
the way kafka-dump-log prints them.
"""
from __future__ import annotations

import json

from pylog.core.protocol.embedded import Embedded, MalformedDataError
from pylog.core.protocol.schema import Field as F
from pylog.core.protocol.types import INT16, INT32, INT64, STRING, UINT16, UUID, Struct
from pylog.core.records.control import KRAFT_VERSION, KRAFT_VOTERS, LEADER_CHANGE, SNAPSHOT_FOOTER, SNAPSHOT_HEADER
from pylog.core.records.schema_json import to_kafka_json

_VOTER = [F("voter_id", INT32)]

# control type -> (kafka-dump-log's label, schema)
_SPECS = {
    LEADER_CHANGE: ("LeaderChange:", Embedded("LeaderChangeMessage", "0", "0+", [
        F("version", INT16), F("leader_id", INT32), F("voters", _VOTER), F("granting_voters", _VOTER)])),
    SNAPSHOT_HEADER: ("SnapshotHeader", Embedded("SnapshotHeaderRecord", "0", "0+", [
        F("version", INT16), F("last_contained_log_timestamp", INT64)])),
    SNAPSHOT_FOOTER: ("SnapshotFooter", Embedded("SnapshotFooterRecord", "0", "0+", [F("version", INT16)])),
    KRAFT_VERSION: ("KRaftVersion", Embedded("KRaftVersionRecord", "0", "0+", [
        F("version", INT16), F("k_raft_version", INT16)])),
    KRAFT_VOTERS: ("KRaftVoters", Embedded("VotersRecord", "0", "0+", [
        F("version", INT16),
        F("voters", [
            F("voter_id", INT32),
            F("voter_directory_id", UUID),
            F("endpoints", [F("name", STRING), F("host", STRING), F("port", UINT16)]),
            F("k_raft_version_feature", Struct(F("min_supported_version", INT16), F("max_supported_version", INT16))),
        ]),
    ])),
}


def format_raft_control(control_type: int, value: bytes | None) -> str | None:
    """' <Label> <json>' as kafka-dump-log prints the record, or None for other types or bad bytes."""
    spec = _SPECS.get(control_type)
    if spec is None or value is None:
        return None
    label, schema = spec
    try:
        body = schema.decode_body(bytes(value), 0, 0, strict=False)
    except MalformedDataError:
        return None
    return f" {label} " + json.dumps(to_kafka_json(schema.fields, 0, body), separators=(",", ":"))

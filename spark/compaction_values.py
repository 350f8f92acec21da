"""The hottest keys of `pylog spark-compaction`, decoded through a schema registry when one is set.

The report names each partition's hottest keys with the offset of their last
record (the value compaction keeps for the key). With `--schema-registry`
the driver reads just those records (the offset index finds each; one batch
decoded per key) and decodes keys and values written in the registry's wire
format (magic byte, schema id: Avro, Protobuf, JSON Schema) to JSON, as
`pylog consume --value-format auto` does; other values are shown as UTF-8.
"""
from __future__ import annotations

import json


def _latest_record(path: str, topic: str, partition: int, offset: int):
    from pylog.spark.log_plan import READ_UNCOMMITTED, ReadOptions, plan_log_dir
    from pylog.spark.log_rows import read_task

    ro = ReadOptions(topics=(topic,), partitions=(partition,), from_offset=offset, until_offset=offset + 1,
                     isolation=READ_UNCOMMITTED)
    for plan in plan_log_dir(path, ro):
        for task in plan.tasks:
            for batch in read_task(task):
                for row in batch.select(["key", "value"]).to_pylist():
                    return row
    return None


def decode_hottest_keys(doc: dict, path: str, client) -> int:
    """Add `latest_value` (decoded) to every hottest key of `doc`, and decode keys in the registry's
    wire format; the number of keys decoded."""
    from pylog.core.client.schema_registry import Deserializer, is_framed

    dec = Deserializer(client)

    def show(data):
        if data is None:
            return None
        if is_framed(data):
            v = dec.decode(data)
            return v if isinstance(v, str) else json.dumps(v, sort_keys=True)
        return data.decode("utf-8", "replace")

    n = 0
    for p in doc["partitions"]:
        for k in p["hottest_keys"]:
            if k.get("last_offset") is None:
                continue
            row = _latest_record(path, p["topic"], p["partition"], k["last_offset"])
            if row is None:
                continue
            if is_framed(row["key"]):
                k["key"] = show(row["key"])
            k["latest_value"] = show(row["value"])
            n += 1
    doc["values_decoded_with"] = client.url
    return n

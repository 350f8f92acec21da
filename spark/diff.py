"""`pylog diff --spark`: the topic diff as a Spark job, for topics too large to stream through one process.

One Spark task per (side, partition) reads its partition with a pylog consumer up to the end
offset captured when the diff started (as the streaming diff does) and emits one row per
record with 16-byte digests of the compared fields, never the payloads. Spark then joins the
sides: by position on (partition, ordinal), by key on the latest record of every key. The
driver reads back from the brokers only the records it shows (the first difference of a
partition), so the result document is the streaming diff's (commands/diff.py), field for
field.
"""
from __future__ import annotations

import hashlib
import json

_SCHEMA_POSITION = ("side string, partition int, ordinal long, offset long, kd binary, vd binary, hd binary, "
                    "ts long")
_SCHEMA_KEY = "side string, partition int, offset long, ts long, key binary, vd binary"
_FLUSH = 8192
_DECODE = "pylog.diff.value.decoding"  # the --value-format spec, carried to the tasks with the props


FIELDS = ("key", "value", "headers", "timestamp")  # what diff compares


def record_fields(r, ignore):
    """The fields of record `r` that diff compares (all but those in `ignore`)."""
    out = {}
    if "key" not in ignore:
        out["key"] = r.key
    if "value" not in ignore:
        out["value"] = r.value
    if "headers" not in ignore:
        out["headers"] = [(k, bytes(v) if v is not None else None) for k, v in (r.headers or [])]
    if "timestamp" not in ignore:
        out["timestamp"] = r.timestamp
    return out


def show_value(v):
    """A value as the report shows it (bytes as text where they decode, else hex)."""
    if v is None:
        return None
    if isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v)
        try:
            return b.decode()
        except UnicodeDecodeError:
            return "0x" + b.hex()
    if isinstance(v, list):
        return [[k, show_value(x)] for k, x in v]
    return v


def record_value_decoder(spec: dict | None):
    """For diff: a function Record -> Record whose value is the registry-decoded value as canonical
    JSON bytes (sorted keys), so values written with different schema ids but equal content compare
    equal; values not in the wire format stay as they are. `spec`: {"url", "auth", "format"}."""
    if not spec:
        return None
    from pylog.core.client.schema_registry import Deserializer, RegistryClient, is_framed

    deser = Deserializer(RegistryClient(spec["url"].split(",")[0].strip(), spec.get("auth")))

    def decode(r):
        v = r.value
        if v is None or not is_framed(v):
            return r
        try:
            obj = deser.decode(bytes(v))
        except Exception:  # noqa: BLE001 - not decodable: compared as bytes
            return r
        return r._replace(value=json.dumps(obj, sort_keys=True, separators=(",", ":")).encode())
    return decode


def _digest(b) -> bytes:
    """16 bytes for a field value; None (a null key or value) differs from every byte string."""
    if b is None:
        return b"\x00"
    return b"\x01" + hashlib.blake2b(bytes(b), digest_size=16).digest()


def _headers_digest(headers) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for k, v in headers or []:
        kb = k.encode() if isinstance(k, str) else bytes(k)
        h.update(len(kb).to_bytes(4, "big") + kb)
        h.update(b"\xff\xff\xff\xff" if v is None else len(v).to_bytes(4, "big") + bytes(v))
    return h.digest()


def value_digest(value, headers, ignore) -> bytes:
    """What --by-key compares of a key's latest record: its value and (unless ignored) headers."""
    h = hashlib.blake2b(digest_size=16)
    h.update(bytes(value))
    if "headers" not in ignore:
        h.update(_headers_digest(headers))
    return h.digest()


def read_partition(props: dict, topic: str, partition: int, start: int, end: int):
    """Every record of [start, end) of one partition, in offset order (runs in the Spark task).
    Records deleted since the diff took its offsets (retention, DeleteRecords) are an error at
    once: the consumer does not reset past them (auto.offset.reset none) to wait for records
    that are gone."""
    import time

    from pylog.core.client import Consumer, TopicPartition
    from pylog.core.errors import DataError, OffsetOutOfRangeError

    tp = TopicPartition(topic, partition)
    with Consumer({**props, "auto.offset.reset": "none", "enable.auto.commit": "false"}) as c:
        c.assign([tp])
        c.seek(tp, start)
        idle_since = time.monotonic()
        while True:
            try:
                polled = c.poll(500)
            except OffsetOutOfRangeError:
                raise DataError(gone_message(f"{topic}-{partition}", start, end)) from None
            if polled:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > 60:
                raise DataError(f"{topic}-{partition}: no records for 60 s before the end offset {end}")
            for recs in polled.values():
                for r in recs:
                    if r.offset >= end:
                        return
                    yield r
                    if r.offset + 1 >= end:
                        return


def gone_message(what: str, start: int, end: int) -> str:
    """The error for records of [start, end) deleted while a diff read them."""
    return (f"{what}: records of offsets [{start}, {end}) were deleted while the diff ran (retention or "
            f"DeleteRecords moved the log start offset past them); compare again")


def _rows_task(batches, ignore: list, by_key: bool):
    """mapInArrow: task rows (side, topic, partition, start, end, props) -> record rows."""
    import pyarrow as pa

    s, i32, i64, b = pa.string(), pa.int32(), pa.int64(), pa.binary()
    schema = pa.schema(list(zip(["side", "partition", "offset", "ts", "key", "vd"], [s, i32, i64, i64, b, b]))
                       if by_key else list(zip(["side", "partition", "ordinal", "offset", "kd", "vd", "hd", "ts"],
                                               [s, i32, i64, i64, b, b, b, i64])))
    names = schema.names
    skip = set(ignore)
    for batch in batches:
        for task in batch.to_pylist():
            props = json.loads(task["props"])
            decode = record_value_decoder(props.pop(_DECODE, None))
            cols: list[list] = [[] for _ in names]
            for i, r in enumerate(read_partition(props, task["topic"], task["partition"], task["start"],
                                                 task["end"])):
                if decode is not None:
                    r = decode(r)
                if by_key:
                    vd = None if r.value is None or r.key is None else value_digest(r.value, r.headers, skip)
                    row = (task["side"], task["partition"], r.offset, r.timestamp,
                           None if r.key is None else bytes(r.key), vd)
                else:
                    row = (task["side"], task["partition"], i, r.offset,
                           None if "key" in skip else _digest(r.key),
                           None if "value" in skip else _digest(r.value),
                           None if "headers" in skip else _headers_digest(r.headers),
                           None if "timestamp" in skip else r.timestamp)
                for c, v in zip(cols, row):
                    c.append(v)
                if len(cols[0]) >= _FLUSH:
                    yield pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(cols, schema)],
                                                     schema=schema)
                    cols = [[] for _ in names]
            if cols[0]:
                yield pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(cols, schema)], schema=schema)


def _record_rows(spark, sides, ignore: set, by_key: bool):
    """The DataFrame of every record of both sides (one Spark task per side and partition)."""
    tasks = [(s.label, s.topic, p, s.start[p], s.end[p],
              json.dumps({**s.props, _DECODE: s.decode_spec} if getattr(s, "decode_spec", None) else s.props))
             for s in sides for p in s.partitions if s.end[p] > s.start[p]]
    schema = _SCHEMA_KEY if by_key else _SCHEMA_POSITION
    if not tasks:
        return spark.createDataFrame([], schema)
    df = spark.createDataFrame(tasks, "side string, topic string, partition int, start long, end long, "
                                      "props string").repartition(len(tasks))
    ig = sorted(ignore)
    return df.mapInArrow(lambda it: _rows_task(it, ig, by_key), schema)


def fetch_record(side, partition: int, offset: int):
    """The one record at `offset` (the driver shows the first difference's fields)."""
    for r in read_partition(side.props, side.topic, partition, offset, offset + 1):
        return side.decode(r) if getattr(side, "decode", None) else r
    return None


def spark_diff_by_position(spark, a, b, ignore: set) -> list[dict]:
    """diff_by_position's result, computed by Spark."""
    from pyspark.sql import functions as F

    rows = _record_rows(spark, [a, b], ignore, False)
    cols = ["offset", "kd", "vd", "hd", "ts"]
    sa = rows.filter(F.col("side") == "A").select("partition", "ordinal", *[F.col(c).alias(c + "_a") for c in cols])
    sb = rows.filter(F.col("side") == "B").select("partition", "ordinal", *[F.col(c).alias(c + "_b") for c in cols])
    j = sa.join(sb, on=["partition", "ordinal"], how="full_outer")
    both = F.col("offset_a").isNotNull() & F.col("offset_b").isNotNull()
    differs = both & ~(F.col("kd_a").eqNullSafe(F.col("kd_b")) & F.col("vd_a").eqNullSafe(F.col("vd_b"))
                       & F.col("hd_a").eqNullSafe(F.col("hd_b")) & F.col("ts_a").eqNullSafe(F.col("ts_b")))
    agg = j.groupBy("partition").agg(
        F.sum(F.when(both, 1).otherwise(0)).alias("compared"),
        F.sum(F.when(F.col("offset_b").isNull(), 1).otherwise(0)).alias("only_in_a"),
        F.sum(F.when(F.col("offset_a").isNull(), 1).otherwise(0)).alias("only_in_b"),
        # the first difference's offsets come with the counts (a struct orders by its first field):
        # one job, not a second one reading both topics again for them
        F.min(F.when(differs, F.struct("ordinal", "offset_a", "offset_b"))).alias("first"),
    ).collect()
    stats = {r["partition"]: r for r in agg}
    at = {r["partition"]: r["first"] for r in agg if r["first"] is not None}
    results = []
    for p in sorted(set(a.partitions) | set(b.partitions)):
        s = stats.get(p)
        compared, only_a, only_b = (s["compared"], s["only_in_a"], s["only_in_b"]) if s else (0, 0, 0)
        first = None
        if p in at:
            oa, ob = at[p]["offset_a"], at[p]["offset_b"]
            fx, fy = record_fields(fetch_record(a, p, oa), ignore), record_fields(fetch_record(b, p, ob), ignore)
            diff_fields = [f for f in FIELDS if f in fx and fx[f] != fy[f]]
            first = {"offset_a": oa, "offset_b": ob, "fields": diff_fields,
                     "a": {f: show_value(fx[f]) for f in diff_fields}, "b": {f: show_value(fy[f]) for f in diff_fields}}
        results.append({"partition": p, "equal": first is None and only_a == 0 and only_b == 0,
                        "compared": compared, "first_difference": first, "only_in_a": only_a, "only_in_b": only_b})
    return results


def spark_diff_by_key(spark, a, b, ignore: set, examples: int = 5) -> dict:
    """diff_by_key's result, computed by Spark: the latest record of each key is the one with the highest
    offset in its partition (across partitions, the newest timestamp); examples come in the order of
    each key's first record."""
    from pyspark.sql import functions as F

    rows = _record_rows(spark, [a, b], ignore, True)
    keyless = {r["side"]: r["n"] for r in rows.filter(F.col("key").isNull()).groupBy("side")
               .agg(F.count(F.lit(1)).alias("n")).collect()}
    keyed = rows.filter(F.col("key").isNotNull())
    per_part = keyed.groupBy("side", "key", "partition").agg(
        F.max(F.struct("offset", "ts", "vd")).alias("last"), F.min("offset").alias("first_offset"))
    latest = per_part.groupBy("side", "key").agg(
        F.max(F.struct(F.col("last.ts"), F.col("partition"), F.col("last.vd").alias("vd"))).alias("l"),
        F.min(F.struct("first_offset", "partition")).alias("first")
    ).select("side", "key", F.col("l.vd").alias("vd"), F.col("first.first_offset").alias("fo"),
             F.col("first.partition").alias("fp")).filter(F.col("vd").isNotNull())
    la = latest.filter(F.col("side") == "A").select("key", F.col("vd").alias("va"), F.col("fo").alias("foa"),
                                                  F.col("fp").alias("fpa"))
    lb = latest.filter(F.col("side") == "B").select("key", F.col("vd").alias("vb"), F.col("fo").alias("fob"),
                                                  F.col("fp").alias("fpb"))
    j = la.join(lb, on="key", how="full_outer").cache()
    try:
        only_a = F.col("va").isNotNull() & F.col("vb").isNull()
        only_b = F.col("va").isNull() & F.col("vb").isNotNull()
        changed = F.col("va").isNotNull() & F.col("vb").isNotNull() & (F.col("va") != F.col("vb"))
        c = j.agg(F.sum(F.when(F.col("va").isNotNull(), 1).otherwise(0)).alias("keys_a"),
                  F.sum(F.when(F.col("vb").isNotNull(), 1).otherwise(0)).alias("keys_b"),
                  F.sum(F.when(only_a, 1).otherwise(0)).alias("only_a"),
                  F.sum(F.when(only_b, 1).otherwise(0)).alias("only_b"),
                  F.sum(F.when(changed, 1).otherwise(0)).alias("changed")).collect()[0]

        def first_keys(cond, order):
            return [show_value(bytes(r["key"])) for r in j.filter(cond).orderBy(*order).limit(examples).collect()]

        n = {k: c[k] or 0 for k in ("keys_a", "keys_b", "only_a", "only_b", "changed")}
        ex = {"only_in_a": first_keys(only_a, ["foa", "fpa"]) if n["only_a"] else [],
              "only_in_b": first_keys(only_b, ["fob", "fpb"]) if n["only_b"] else [],
              "different": first_keys(changed, ["foa", "fpa"]) if n["changed"] else []}
    finally:
        j.unpersist()
    return {"keys_a": n["keys_a"], "keys_b": n["keys_b"],
            "equal": not (n["only_a"] or n["only_b"] or n["changed"]),
            "only_in_a": n["only_a"], "only_in_b": n["only_b"], "different": n["changed"],
            "keyless_records_a": keyless.get("A", 0), "keyless_records_b": keyless.get("B", 0), "examples": ex}

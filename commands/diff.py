"""`pylog diff TOPIC_A TOPIC_B`: are two topics the same, and where do they first differ?

Two ways to compare:
  * by position (default): partition i of A against partition i of B, record by record in
    offset order from each partition's start. The first record whose key, value, headers or
    timestamp differ is reported with its offset on both sides, and the records past the
    shorter side are counted as only on one side. Offsets themselves may differ (a mirrored
    topic starts at another offset), so records are paired by position.
  * `--by-key`: the latest value of every key over the whole topic (what a compacted topic
    or a migration must agree on), whatever the partitioning. A key whose latest record is
    a tombstone counts as absent. Only a digest per key is kept in memory.

Both sides are streamed up to the end offsets they had when the diff started, so records
produced meanwhile do not count. The two topics can be on two clusters (`--bootstrap-b`).
"""
from __future__ import annotations

import time

import click

from pylog.commands.client_common import client_props
from pylog.commands.console import emit_json, err, out
from pylog.commands.options import bootstrap_option, json_option, properties_options
from pylog.commands.registry_options import make_client, pop_registry_props, registry_options
from pylog.commands.spark_jobs import spark_options
from pylog.core.config import CONSUMER_CONFIGS
from pylog.core.errors import DataError
from pylog.spark.diff import FIELDS, record_fields, record_value_decoder, show_value

POLL_MS = 500


class Side:
    """One topic on one cluster: its partitions and the [start, end) offsets captured at the start."""

    def __init__(self, label: str, topic: str, props: dict, decode_spec: dict | None = None):
        from pylog.core.client import Admin

        self.label, self.topic, self.props = label, topic, props
        self.decode_spec = decode_spec  # --value-format: values compared decoded (registry)
        self.decode = record_value_decoder(decode_spec)
        with Admin(props) as admin:
            try:
                parts = sorted(admin.describe_topic(topic).partitions)
            except Exception as e:  # noqa: BLE001 - reported as the one-line error below
                raise DataError(f"topic {label} {topic!r}: {e}") from None
            self.start, self.end = admin.offsets(topic, parts) if parts else ({}, {})
        self.partitions = parts

    def records(self, partitions):
        """(partition, record) in offset order per partition, for the given partitions, up to the captured ends."""
        from pylog.spark.diff import gone_message
        from pylog.core.client import Consumer, TopicPartition
        from pylog.core.errors import OffsetOutOfRangeError

        want = {p: self.end[p] for p in partitions if self.end[p] > self.start[p]}
        if not want:
            return
        # from the start offsets taken with the ends; records deleted since then are an error, not
        # a reset past them (auto.offset.reset none)
        with Consumer({**self.props, "auto.offset.reset": "none", "enable.auto.commit": "false"}) as c:
            c.assign([TopicPartition(self.topic, p) for p in want])
            for p in want:
                c.seek(TopicPartition(self.topic, p), self.start[p])
            idle_since = time.monotonic()
            while want:
                try:
                    polled = c.poll(POLL_MS)
                except OffsetOutOfRangeError:
                    raise DataError(gone_message(f"topic {self.label} {self.topic!r}", min(self.start[p] for p in want),
                                                 max(want.values()))) from None
                if polled:
                    idle_since = time.monotonic()
                elif time.monotonic() - idle_since > 60:
                    raise DataError(f"topic {self.label} {self.topic!r}: no records for 60 s before the end "
                                    f"offsets {want}")
                for tp, recs in polled.items():
                    end = want.get(tp.partition)
                    if end is None:
                        continue
                    for r in recs:
                        if r.offset >= end:
                            break
                        yield tp.partition, (self.decode(r) if self.decode else r)
                    if recs and recs[-1].offset + 1 >= end:
                        del want[tp.partition]
                        c.pause([tp])


def _records(n: int) -> str:
    return f"{n:,} record" + ("" if n == 1 else "s")


def diff_by_position(a: Side, b: Side, ignore: set) -> list[dict]:
    """One result per partition number present on either side."""
    results = []
    for p in sorted(set(a.partitions) | set(b.partitions)):
        ra = a.records([p]) if p in a.partitions else iter(())
        rb = b.records([p]) if p in b.partitions else iter(())
        compared = 0
        first = None
        only_a = only_b = 0
        while True:
            x = next(ra, None)
            y = next(rb, None)
            if x is None and y is None:
                break
            if x is None:
                only_b += 1 + sum(1 for _ in rb)
                break
            if y is None:
                only_a += 1 + sum(1 for _ in ra)
                break
            compared += 1
            if first is None:
                fx, fy = record_fields(x[1], ignore), record_fields(y[1], ignore)
                if fx != fy:
                    diff_fields = [f for f in FIELDS if f in fx and fx[f] != fy[f]]
                    first = {"offset_a": x[1].offset, "offset_b": y[1].offset, "fields": diff_fields,
                             "a": {f: show_value(fx[f]) for f in diff_fields},
                             "b": {f: show_value(fy[f]) for f in diff_fields}}
        results.append({"partition": p, "equal": first is None and only_a == 0 and only_b == 0,
                        "compared": compared, "first_difference": first, "only_in_a": only_a, "only_in_b": only_b})
    return results


def _latest_by_key(side: Side, ignore: set) -> tuple[dict, dict, int]:
    """({key: digest of its latest value}, {key: (offset, partition) of its first record}, keyless count).

    The latest record of a key is the one with the highest offset in its partition and, when
    the key is in several partitions, the newest timestamp (then the higher partition): an
    order that does not depend on how the partitions' fetches interleave (the Spark diff
    uses the same). Tombstoned keys are absent."""
    from pylog.spark.diff import value_digest

    latest: dict[bytes, dict[int, tuple]] = {}  # key -> partition -> (timestamp, digest or None)
    first: dict[bytes, tuple[int, int]] = {}
    keyless = 0
    for p, r in side.records(side.partitions):
        if r.key is None:
            keyless += 1
            continue
        k = bytes(r.key)
        latest.setdefault(k, {})[p] = (r.timestamp, None if r.value is None else value_digest(r.value, r.headers,
                                                                                           ignore))
        if k not in first or (r.offset, p) < first[k]:
            first[k] = (r.offset, p)
    out = {}
    for k, parts in latest.items():
        _, _, digest = max((ts, p, d) for p, (ts, d) in parts.items())
        if digest is not None:
            out[k] = digest
    return out, first, keyless


def diff_by_key(a: Side, b: Side, ignore: set, examples: int = 5) -> dict:
    ka, first_a, keyless_a = _latest_by_key(a, ignore)
    kb, first_b, keyless_b = _latest_by_key(b, ignore)
    only_a = sorted((k for k in ka if k not in kb), key=first_a.__getitem__)
    only_b = sorted((k for k in kb if k not in ka), key=first_b.__getitem__)
    changed = sorted((k for k in ka if k in kb and ka[k] != kb[k]), key=first_a.__getitem__)
    return {"keys_a": len(ka), "keys_b": len(kb), "equal": not (only_a or only_b or changed),
            "only_in_a": len(only_a), "only_in_b": len(only_b), "different": len(changed),
            "keyless_records_a": keyless_a, "keyless_records_b": keyless_b,
            "examples": {"only_in_a": [show_value(k) for k in only_a[:examples]],
                         "only_in_b": [show_value(k) for k in only_b[:examples]],
                         "different": [show_value(k) for k in changed[:examples]]}}


@click.command("diff")
@click.argument("topic_a")
@click.argument("topic_b")
@bootstrap_option
@click.option("--bootstrap-b", "bootstrap_b", metavar="HOST:PORT[,...]", default=None,
              help="Bootstrap servers of TOPIC_B's cluster (default: the same as TOPIC_A's).")
@click.option("--by-key", is_flag=True,
              help="Compare the latest value of every key over the whole topic instead of record by record.")
@click.option("--ignore", "ignore", multiple=True, type=click.Choice(["key", "value", "headers", "timestamp"]),
              help="Leave this field out of the comparison (repeatable), e.g. timestamps of a re-produced copy.")
@click.option("--spark", is_flag=True,
              help="Compare with a Spark job (one task per side and partition; for large topics). Runs where "
                   "--master/--remote say, like the other Spark commands; the result is the same.")
@click.option("--value-format", type=click.Choice(["avro", "protobuf", "json-schema", "auto"]), default=None,
              help="Compare values in the schema registry's wire format decoded (equal content under another "
                   "schema id is equal).")
@registry_options
@spark_options(when="spark")
@properties_options
@json_option
def diff(topic_a, topic_b, bootstrap, bootstrap_b, by_key, ignore, spark, value_format, registry_url, registry_auth,
         settings, properties, as_json):
    """Compare TOPIC_A with TOPIC_B, partition by partition or (--by-key) key by key.

    Per partition: equal, or the first position where key, value, headers or
    timestamp differ (with the offset on each side), and how many records only
    one side has. With --by-key: keys only in A, only in B, and keys whose
    latest value differs (tombstoned keys count as absent), whatever the
    partitioning. Both sides are read up to the end offsets they had when the
    diff started.

    --spark runs the comparison as a Spark job on the options of the other
    Spark commands (--master local[*] by default, spark://HOST:PORT,
    --remote sc://HOST:PORT, --ship-env, --conf): one task per side and
    partition reads it with a pylog consumer and Spark joins the sides; the
    output is the streaming diff's.

    By key, the latest record of a key is the one with the highest offset in
    its partition (for a key in several partitions, the newest timestamp);
    examples are listed in the order of each key's first record.

    \b
    Examples:
      pylog diff orders orders-mirror
      pylog diff users users -b old:9092 --bootstrap-b new:9092 --by-key
      pylog diff events events-copy --ignore timestamp --json
      pylog diff clicks clicks-copy --spark --master spark://10.0.0.5:7077
      pylog diff orders orders-v2 --value-format auto --schema-registry http://127.0.0.1:8081

    Exit status: 0 equal, 1 different (or an error), 2 usage error.
    """
    properties = dict(properties)
    reg_props = pop_registry_props(properties)
    spec = None
    if value_format:
        client = make_client(registry_url, registry_auth, reg_props)
        spec = {"url": client.url, "auth": client.auth, "format": value_format}
    props_a = client_props(bootstrap, properties, CONSUMER_CONFIGS)
    props_b = client_props(bootstrap_b or bootstrap, {k: v for k, v in properties.items()
                                                      if k != "bootstrap.servers"}, CONSUMER_CONFIGS)
    ignore = set(ignore)
    a = Side("A", topic_a, props_a, spec)
    b = Side("B", topic_b, props_b, spec)
    spark_info = None
    if spark:
        from pylog.commands.spark_jobs import run_spark_diff

        result, spark_info = run_spark_diff(settings, a, b, ignore, by_key, say=err.print if not as_json else None)
    if by_key:
        result = result if spark else diff_by_key(a, b, ignore)
        equal = result["equal"]
        if as_json:
            emit_json({"topic_a": topic_a, "topic_b": topic_b, "mode": "by-key", **result,
                       **({"spark": spark_info} if spark_info else {})})
        else:
            verdict = "equal" if equal else "different"
            out.print(f"{topic_a} vs {topic_b} by key: {verdict}: {result['keys_a']:,} keys in A, "
                      f"{result['keys_b']:,} in B; {result['only_in_a']:,} only in A, {result['only_in_b']:,} only "
                      f"in B, {result['different']:,} with a different latest value", markup=False)
            for what in ("only_in_a", "only_in_b", "different"):
                if result["examples"][what]:
                    out.print(f"  {what.replace('_', ' ')}: " + ", ".join(map(str, result["examples"][what])),
                              markup=False)
            if result["keyless_records_a"] or result["keyless_records_b"]:
                err.print(f"skipped records without a key: {result['keyless_records_a']:,} in A, "
                          f"{result['keyless_records_b']:,} in B", markup=False)
    else:
        parts = result if spark else diff_by_position(a, b, ignore)
        equal = all(p["equal"] for p in parts)
        if as_json:
            emit_json({"topic_a": topic_a, "topic_b": topic_b, "mode": "by-position", "equal": equal,
                       "partitions": parts, **({"spark": spark_info} if spark_info else {})})
        else:
            for p in parts:
                if p["equal"]:
                    out.print(f"partition {p['partition']}: equal ({_records(p['compared'])})", markup=False)
                    continue
                bits = []
                f = p["first_difference"]
                if f:
                    bits.append(f"first difference at offset {f['offset_a']} (A) / {f['offset_b']} (B) in "
                                f"{', '.join(f['fields'])}")
                if p["only_in_a"]:
                    bits.append(f"{_records(p['only_in_a'])} only in A")
                if p["only_in_b"]:
                    bits.append(f"{_records(p['only_in_b'])} only in B")
                out.print(f"partition {p['partition']}: different: " + "; ".join(bits), markup=False)
            out.print(f"{topic_a} vs {topic_b}: {'equal' if equal else 'different'}", markup=False)
    raise SystemExit(0 if equal else 1)

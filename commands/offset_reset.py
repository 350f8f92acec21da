"""How `pylog groups reset-offsets` and `pylog share-groups reset-offsets` pick partitions and
new offsets, as kafka-consumer-groups.sh and kafka-share-groups.sh do."""
from __future__ import annotations

import datetime as _dt

from pylog.core.errors import UsageError


def parse_datetime(text: str) -> int:
    """Kafka's --to-datetime 'YYYY-MM-DDTHH:mm:SS.sss' (local time unless a zone is given), or ms."""
    t = text.strip()
    if t.isdigit():
        return int(t)
    try:
        d = _dt.datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--to-datetime {text!r}: expected YYYY-MM-DDTHH:mm:SS[.sss][+HH:MM] "
                         "or milliseconds since the epoch") from None
    if d.tzinfo is None:
        d = d.astimezone()  # local time, as kafka-consumer-groups does
    return int(d.timestamp() * 1000)


def parse_topic_spec(spec: str):
    """--topic TOPIC or TOPIC:P[,P...] -> (name, sorted partitions or None for all)."""
    name, sep, parts = spec.partition(":")
    if not name:
        raise UsageError(f"--topic {spec!r}: expected TOPIC or TOPIC:P[,P...]")
    if not sep:
        return name, None
    try:
        return name, sorted({int(p) for p in parts.split(",") if p.strip()})
    except ValueError:
        raise UsageError(f"--topic {spec!r}: partitions must be numbers") from None


def named_partitions(admin, topic_specs) -> list:
    """The TopicPartitions the --topic options name; a partition the topic lacks is a usage error."""
    from pylog.core.client.consumer import TopicPartition

    tps = []
    for spec in topic_specs:
        name, parts = parse_topic_spec(spec)
        have = admin.partitions(name)
        for p in parts if parts is not None else have:
            if p not in have:
                raise UsageError(f"topic {name} has no partition {p}")
            tps.append(TopicPartition(name, p))
    return tps


def new_offsets(admin, tps, mode: str, to_offset=None, to_datetime=None, shifted=None) -> dict:
    """Each partition's new offset for `mode` (earliest, latest, offset, datetime, or shift:
    `shifted(tp, end)`), clamped to the partition's start..end."""
    start = admin.list_offsets({tp: -2 for tp in tps})
    end = admin.list_offsets({tp: -1 for tp in tps})
    at = admin.list_offsets({tp: parse_datetime(to_datetime) for tp in tps}) if mode == "datetime" else {}
    new = {}
    for tp in tps:
        lo, hi = start[tp], end[tp]
        if mode == "earliest":
            n = lo
        elif mode == "latest":
            n = hi
        elif mode == "offset":
            n = to_offset
        elif mode == "datetime":
            n = at.get(tp, -1)
            n = hi if n < 0 else n
        else:
            n = shifted(tp, hi)
        new[tp] = min(max(n, lo), hi)
    return new

"""How `pylog groups reset-offsets` and `pylog share-groups reset-offsets` pick partitions and
new offsets, as kafka-consumer-groups.sh and kafka-share-groups.sh do."""
from __future__ import annotations

import datetime as _dt

import click

from pylog.core.errors import UsageError

# where `reset-offsets` moves a group: the options every group kind's command takes, in help order
_TARGETS = (
    click.option("--to-earliest", "how", flag_value="earliest", help="To each partition's log start offset."),
    click.option("--to-latest", "how", flag_value="latest", help="To each partition's log end offset."),
    click.option("--to-offset", type=click.IntRange(min=0), default=None, metavar="N",
                 help="To offset N (clamped to the partition's start..end)."),
    click.option("--to-datetime", default=None, metavar="T",
                 help="To the first offset at or after T (YYYY-MM-DDTHH:mm:SS.sss or epoch ms)."),
)


def reset_target_options(f):
    """--to-earliest, --to-latest, --to-offset N, --to-datetime T (as `how`, `to_offset`, `to_datetime`)."""
    for option in reversed(_TARGETS):
        f = option(f)
    return f


def reset_mode(how, to_offset, to_datetime) -> str:
    """earliest, latest, offset or datetime: exactly one of the target options, else a usage error."""
    modes = [m for m in (how, to_offset is not None and "offset", to_datetime is not None and "datetime") if m]
    if len(modes) != 1:
        raise UsageError("give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime")
    return modes[0]


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

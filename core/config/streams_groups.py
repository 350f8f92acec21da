"""Kafka 4.4's broker properties for streams groups (KIP-1071): group.streams.*.

Each is the broker default of a group's `streams.*` group config; the min/max pairs bound
what a group may set (GroupConfig's ranges)."""
from __future__ import annotations

from pylog.core.config.definitions import BOOLEAN, INT, INT_MAX, LIST, LONG, ConfigDef, at_least, definition as _d


def _ranged(name: str, default: int, smallest: int, largest: int, doc: str, floor: int = 1) -> list[ConfigDef]:
    """group.streams.NAME with its bounds group.streams.min.NAME and group.streams.max.NAME."""
    return [_d(f"group.streams.{name}", INT, default, doc, at_least(floor)),
            _d(f"group.streams.min.{name}", INT, smallest, f"The minimum {doc[0].lower()}{doc[1:]}", at_least(floor)),
            _d(f"group.streams.max.{name}", INT, largest, f"The maximum {doc[0].lower()}{doc[1:]}", at_least(floor))]


STREAMS_GROUP_CONFIGS: list[ConfigDef] = [
    *_ranged("session.timeout.ms", 45000, 45000, 60000, "Session timeout of streams group members."),
    *_ranged("heartbeat.interval.ms", 5000, 5000, 15000, "Heartbeat interval given to streams group members."),
    _d("group.streams.max.size", INT, INT_MAX, "Largest number of members in one streams group.", at_least(1)),
    _d("group.streams.num.standby.replicas", INT, 0, "Standby replicas of each stateful task of a streams group.",
       at_least(0)),
    _d("group.streams.max.standby.replicas", INT, 2, "Most standby replicas a streams group may ask for.",
       at_least(0)),
    _d("group.streams.initial.rebalance.delay.ms", INT, 3000,
       "How long the first assignment of a new streams group waits for more members.", at_least(0)),
    *_ranged("assignment.interval.ms", 1000, 0, 15000, "Interval between assignment updates of a streams group.",
             floor=0),
    _d("group.streams.assignors", LIST, ["sticky"], "Server-side task assignors of streams groups."),
    _d("group.streams.rack.aware.assignment.tags", LIST, [],
       "Client tags a streams group spreads standby tasks over (rack-aware standby assignment)."),
    _d("group.streams.assignor.offload.enable", BOOLEAN, True,
       "Whether Kafka offloads streams group assignment to a background thread (accepted; pylog assigns inline)."),
    _d("group.streams.task.offset.interval.ms", INT, 60000,
       "How often streams group members report their tasks' changelog offsets.", at_least(1)),
    _d("group.streams.min.task.offset.interval.ms", INT, 15000,
       "The minimum task offset interval of a streams group.", at_least(1)),
    _d("group.streams.num.warmup.replicas", INT, 2, "Warm-up replicas a streams group may have at once.",
       at_least(0)),
    _d("group.streams.max.warmup.replicas", INT, 20, "Most warm-up replicas a streams group may ask for.",
       at_least(0)),
    _d("group.streams.acceptable.recovery.lag", LONG, 10000,
       "Largest changelog lag at which a streams task counts as caught up.", at_least(0)),
]

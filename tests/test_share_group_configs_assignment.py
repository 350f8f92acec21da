"""The group configs Kafka 4.4 added for the assignment (share.assignment.interval.ms,
share.assignor.offload.enable, consumer.assignment.interval.ms, consumer.assignor.offload.enable)
on pylog and Apache Kafka 4.4 in the same test: DescribeConfigs of a GROUP resource before and
after IncrementalAlterConfigs (values, sources, defaults, synonyms), the errors and messages of
values out of the broker's bounds or of the wrong type, and the interval's effect: a member that
joins within share.assignment.interval.ms of the last assignment gets its partitions only at a
heartbeat after the interval, as on Kafka."""
from __future__ import annotations

import time

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from support import share_scenarios as sc
from support.share_members import Member, connect, describe

NAMES = ("share.assignment.interval.ms", "share.assignor.offload.enable",
         "consumer.assignment.interval.ms", "consumer.assignor.offload.enable")


def _describe(bs: str, group: str) -> dict:
    a = AdminClient({"bootstrap.servers": bs})
    res = ConfigResource(ResourceType.GROUP, group)
    entries = a.describe_configs([res])[res].result(60)
    return {n: (e.value, str(e.source), e.is_default, e.is_read_only, e.is_sensitive,
                sorted((s.name, s.value, str(s.source)) for s in e.synonyms.values()))
            for n, e in entries.items() if n in NAMES}


def _set(bs: str, group: str, **configs):
    try:
        sc.set_group_configs(bs, group, **configs)
    except KafkaException as e:
        return e.args[0].name(), e.args[0].str()
    return None


def test_described_and_altered_as_on_kafka(share_brokers):
    def scenario(bs):
        group = sc.name("asg-g")
        before = _describe(bs, group)
        errors = [
            _set(bs, group, share_assignment_interval_ms="20000"),
            _set(bs, group, share_assignment_interval_ms="-1"),
            _set(bs, group, share_assignment_interval_ms="soon"),
            _set(bs, group, consumer_assignment_interval_ms="15001"),
            _set(bs, group, share_assignor_offload_enable="maybe"),
        ]
        ok = _set(bs, group, share_assignment_interval_ms="0", consumer_assignment_interval_ms="15000",
                  share_assignor_offload_enable="false", consumer_assignor_offload_enable="true")
        # Kafka applies an altered group config once its metadata log reaches the broker
        deadline, after = time.monotonic() + 60, _describe(bs, group)
        while after["share.assignment.interval.ms"][0] != "0" and time.monotonic() < deadline:
            time.sleep(0.2)
            after = _describe(bs, group)
        return before, errors, ok, after

    out = sc.on_both(share_brokers, scenario)
    for part in range(4):
        assert out["pylog"][part] == out["kafka"][part], (part, out["pylog"][part], out["kafka"][part])
    before, errors, ok, after = out["kafka"]
    assert set(before) == {"share.assignment.interval.ms", "consumer.assignment.interval.ms"}  # offload: internal
    assert all(e is not None and e[0] == "INVALID_CONFIG" for e in errors) and ok is None
    assert after["share.assignment.interval.ms"][0] == "0" and after["share.assignor.offload.enable"][0] == "false"


# every share.* and consumer.* group config at and past its bounds (the broker's min/max, the
# definition's floor, the type); with several wrong, Kafka's order decides the message
# (the share brokers run with group.share.min.heartbeat.interval.ms=1000: support.share_fixtures)
INVALID = [
    {"share.session.timeout.ms": "44999"}, {"share.session.timeout.ms": "60001"}, {"share.session.timeout.ms": "0"},
    {"share.heartbeat.interval.ms": "999"}, {"share.heartbeat.interval.ms": "15001"},
    {"share.heartbeat.interval.ms": "x"},
    {"share.session.timeout.ms": "45000", "share.heartbeat.interval.ms": "45000"},
    {"share.record.lock.duration.ms": "999"}, {"share.record.lock.duration.ms": "60001"},
    {"share.record.lock.duration.ms": "1.5"},
    {"share.delivery.count.limit": "1"}, {"share.delivery.count.limit": "11"},
    {"share.partition.max.record.locks": "99"}, {"share.partition.max.record.locks": "4001"},
    {"share.partition.max.record.locks": "2147483648"},
    {"share.assignment.interval.ms": "15001"}, {"share.isolation.level": "committed"},
    {"share.renew.acknowledge.enable": "yes"}, {"share.assignor.offload.enable": "1"},
    {"consumer.session.timeout.ms": "44999"}, {"consumer.session.timeout.ms": "60001"},
    {"consumer.session.timeout.ms": "0"}, {"consumer.heartbeat.interval.ms": "4999"},
    {"consumer.heartbeat.interval.ms": "15001"}, {"consumer.heartbeat.interval.ms": "-5"},
    {"consumer.session.timeout.ms": "44999", "consumer.heartbeat.interval.ms": "15001"},
    {"consumer.assignment.interval.ms": "-1"}, {"consumer.assignment.interval.ms": "15001"},
    {"consumer.assignor.offload.enable": "on"}, {"errors.deadletterqueue.copy.record.enable": "maybe"},
    {"share.delivery.count.limit": "1", "consumer.session.timeout.ms": "0"},
]
VALID = [{"share.session.timeout.ms": "60000", "share.heartbeat.interval.ms": "15000",
          "share.record.lock.duration.ms": "1000", "share.delivery.count.limit": "10",
          "share.partition.max.record.locks": "4000", "consumer.session.timeout.ms": "45000",
          "consumer.heartbeat.interval.ms": "5000"}]


def test_every_bound_and_message_as_on_kafka(share_brokers):
    def scenario(bs):
        group = sc.name("bnd-g")
        return [_set(bs, group, **{k.replace(".", "_"): v for k, v in c.items()}) for c in INVALID + VALID]

    out = sc.on_both(share_brokers, scenario)
    for i, (p, k) in enumerate(zip(out["pylog"], out["kafka"])):
        assert p == k, (i, (INVALID + VALID)[i], p, k)
    accepted = [c for c, e in zip(INVALID, out["kafka"]) if e is None or e[0] != "INVALID_CONFIG"]
    assert not accepted, (accepted, out["kafka"])
    assert out["kafka"][len(INVALID)] is None


def test_the_assignment_interval_defers_a_new_target_assignment_as_on_kafka(share_brokers):
    interval = 4.0

    def scenario(bs):
        topic, group = sc.name("asg-t"), sc.name("asg-g")
        sc.create_topic(bs, topic, 2)
        sc.set_group_configs(bs, group, share_assignment_interval_ms=str(int(interval * 1000)))
        s = connect(bs)
        a = Member(s, group, [topic])
        a.heartbeat()
        a.until(2)
        assigned_at = time.monotonic()
        b = Member(s, group, [topic])
        b.heartbeat()
        _, epoch, assignment_epoch, _ = describe(s, group)
        early = (assignment_epoch < epoch, b.parts)
        b.heartbeat()
        _, epoch, assignment_epoch, _ = describe(s, group)
        still = (assignment_epoch < epoch, b.parts)
        time.sleep(max(0.0, assigned_at + interval + 0.5 - time.monotonic()))
        b.heartbeat()
        state = b.until(1)
        a.until(1)
        s.close()
        return early, still, (state[1] == state[2], b.parts, a.parts)

    out = sc.on_both(share_brokers, scenario)
    assert out["pylog"] == out["kafka"], out
    assert out["kafka"] == ((True, 0), (True, 0), (True, 1, 1)), out

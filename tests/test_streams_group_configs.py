"""The streams.* group configs (streams groups, KIP-1071) on pylog and Apache Kafka 4.4 in the same
test: DescribeConfigs of a GROUP resource before and after IncrementalAlterConfigs (values, sources,
defaults, synonyms), and the errors and messages of values out of the broker's bounds or of the
wrong type."""
from __future__ import annotations

import time

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from support import share_scenarios as sc


def _describe(bs: str, group: str) -> dict:
    a = AdminClient({"bootstrap.servers": bs})
    res = ConfigResource(ResourceType.GROUP, group)
    entries = a.describe_configs([res])[res].result(60)
    return {n: (e.value, str(e.source), e.is_default, e.is_read_only, e.is_sensitive,
                sorted((s.name, s.value, str(s.source)) for s in e.synonyms.values()))
            for n, e in entries.items() if n.startswith("streams.")}


def _set(bs: str, group: str, configs: dict):
    try:
        sc.set_group_configs(bs, group, **{k.replace(".", "_"): v for k, v in configs.items()})
    except KafkaException as e:
        return e.args[0].name(), e.args[0].str()
    return None


INVALID = [
    {"streams.session.timeout.ms": "44999"}, {"streams.session.timeout.ms": "60001"},
    {"streams.heartbeat.interval.ms": "4999"}, {"streams.heartbeat.interval.ms": "15001"},
    {"streams.heartbeat.interval.ms": "x"}, {"streams.num.standby.replicas": "3"},
    {"streams.num.standby.replicas": "-1"}, {"streams.assignment.interval.ms": "15001"},
    {"streams.num.warmup.replicas": "21"}, {"streams.initial.rebalance.delay.ms": "-1"},
    {"streams.acceptable.recovery.lag": "-1"}, {"streams.task.offset.interval.ms": "0"},
    {"streams.assignor.offload.enable": "maybe"},
]


def test_streams_group_configs_as_on_kafka(share_brokers):
    def scenario(bs):
        group = sc.name("stc-g")
        before = _describe(bs, group)
        errors = [_set(bs, group, c) for c in INVALID]
        ok = _set(bs, group, {"streams.num.standby.replicas": "1", "streams.session.timeout.ms": "50000",
                              "streams.initial.rebalance.delay.ms": "0"})
        deadline, after = time.monotonic() + 60, _describe(bs, group)
        while after["streams.num.standby.replicas"][0] != "1" and time.monotonic() < deadline:
            time.sleep(0.2)  # Kafka applies it once its metadata log reaches the broker
            after = _describe(bs, group)
        return before, errors, ok, after

    out = sc.on_both(share_brokers, scenario)
    for part, what in enumerate(("described", "errors", "altered", "described after")):
        if part == 1:
            for i, (p, k) in enumerate(zip(out["pylog"][1], out["kafka"][1])):
                assert p == k, (INVALID[i], p, k)
        assert out["pylog"][part] == out["kafka"][part], (what, out["pylog"][part], out["kafka"][part])
    before, errors, ok, after = out["kafka"]
    assert "streams.num.standby.replicas" in before and ok is None
    assert all(e is not None and e[0] == "INVALID_CONFIG" for e in errors), errors

"""Kafka property definitions: names, defaults, parsing and validation."""
import pytest

from pylog.core import errors
from pylog.core.config import (
    BROKER_CONFIGS,
    CONSUMER_CONFIGS,
    LONG_MAX,
    PRODUCER_CONFIGS,
    TOPIC_CONFIGS,
    ConfigError,
    topic_defaults_from_broker,
)


def test_kafka_defaults():
    p = PRODUCER_CONFIGS.defaults()
    assert p["batch.size"] == 16384
    assert p["linger.ms"] == 5
    assert p["buffer.memory"] == 32 * 1024 * 1024
    assert p["acks"] == "all"
    assert p["enable.idempotence"] is True
    assert p["delivery.timeout.ms"] == 120000
    assert p["max.in.flight.requests.per.connection"] == 5
    c = CONSUMER_CONFIGS.defaults()
    assert c["auto.offset.reset"] == "latest"
    assert c["max.poll.records"] == 500
    t = TOPIC_CONFIGS.defaults()
    assert t["segment.bytes"] == 1 << 30
    assert t["segment.index.bytes"] == 10 * 1024 * 1024
    assert t["index.interval.bytes"] == 4096
    assert t["max.message.bytes"] == 1048588
    assert t["flush.messages"] == LONG_MAX
    assert t["cleanup.policy"] == ["delete"]


def test_parse_types_and_overrides():
    cfg = PRODUCER_CONFIGS.resolve({"linger.ms": "20", "enable.idempotence": "false", "compression.type": "zstd"})
    assert cfg["linger.ms"] == 20 and cfg["enable.idempotence"] is False
    assert cfg.overridden == {"linger.ms", "enable.idempotence", "compression.type"}
    t = TOPIC_CONFIGS.resolve({"cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": "0.1"})
    assert t["cleanup.policy"] == ["compact", "delete"]
    assert t.rendered()["cleanup.policy"] == "compact,delete"
    assert t["min.cleanable.dirty.ratio"] == pytest.approx(0.1)


@pytest.mark.parametrize(
    "props,needle",
    [
        ({"linger.ms": "soon"}, "expected a whole number"),
        ({"acks": "2"}, "must be one of"),
        ({"no.such.thing": "1"}, "unknown producer property"),
        ({"enable.idempotence": "yes"}, "expected true or false"),
        ({"batch.size": "-1"}, "must be at least 0"),
    ],
)
def test_bad_values_are_usage_errors(props, needle):
    with pytest.raises(ConfigError) as e:
        PRODUCER_CONFIGS.resolve(props)
    assert needle in str(e.value)
    assert isinstance(e.value, errors.UsageError)


def test_topic_defaults_follow_broker_synonyms():
    b = BROKER_CONFIGS.resolve({"log.segment.bytes": "2048", "log.roll.hours": "2", "log.retention.hours": "1"})
    t = topic_defaults_from_broker(b)
    assert t["segment.bytes"] == 2048
    assert t["segment.ms"] == 2 * 3600000
    assert t["retention.ms"] == 3600000
    b = BROKER_CONFIGS.resolve({"log.retention.ms": "5", "log.retention.hours": "1"})
    assert topic_defaults_from_broker(b)["retention.ms"] == 5
    assert topic_defaults_from_broker(BROKER_CONFIGS.resolve({}))["retention.ms"] == 604800000


def test_error_codes_match_kafka():
    assert errors.error_name(1) == "OFFSET_OUT_OF_RANGE"
    assert errors.error_name(87) == "INVALID_RECORD"
    e = errors.error_for_code(45)
    assert isinstance(e, errors.OutOfOrderSequenceNumberError) and e.code == 45
    assert errors.CorruptMessageError.retriable and not errors.MessageTooLargeError.retriable
    assert errors.error_for_code(9999).code == 9999

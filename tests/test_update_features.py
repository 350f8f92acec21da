"""UpdateFeatures: transaction.version and share.version upgraded, downgraded and disabled at run
time with Kafka 4.4's rules, each request sent to pylog and to a Kafka 4.4.0 node in the same test
(the same answers, and the same finalized levels after each); Kafka's `kafka-features.sh`
(FeatureCommand) giving the same output against both; the levels kept across a restart and
`--feature transaction.version=N` at start finalizing that level.

The Kafka node is shared by the session: every test here puts both features back to 2.
"""
from __future__ import annotations

import socket

import pytest

from support.broker_fixtures import call
from support.kafka_peer import run_main

pytestmark = pytest.mark.timeout(600)

UPGRADE, SAFE, UNSAFE = 1, 2, 3
SERVED = ("share.version", "transaction.version")


def _ask(port: int, key: int, version: int, body: dict) -> dict:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        return call(s, key, version, body)


def _update(port: int, version: int, updates, validate_only=False) -> dict:
    return _ask(port, 57, version, {"timeout_ms": 60000, "validate_only": validate_only, "feature_updates": [
        {"feature": f, "max_version_level": level, "allow_downgrade": kind != UPGRADE, "upgrade_type": kind}
        for f, level, kind in updates]})


def _levels(port: int) -> dict:
    r = _ask(port, 18, 4, {"client_software_name": "t", "client_software_version": "1"})
    return {f["name"]: f["max_version_level"] for f in r["finalized_features"] if f["name"] in SERVED}


def _restore(port: int) -> None:
    r = _update(port, 2, [("transaction.version", 2, UPGRADE), ("share.version", 2, UPGRADE)])
    assert r["error_code"] == 0, r


# (request version, [(feature, level, upgrade type)], validate only)
CASES = [
    (2, [("transaction.version", 1, UPGRADE)], False),          # a downgrade asked as an upgrade
    (1, [("transaction.version", 1, UPGRADE)], False),
    (2, [("transaction.version", 1, SAFE)], True),              # validated only: nothing changes
    (2, [("transaction.version", 3, UPGRADE)], False),          # above the supported range
    (2, [("transaction.version", -1, UNSAFE)], False),
    (2, [("foo.version", 1, UPGRADE)], False),
    (1, [("foo.version", 1, UPGRADE), ("transaction.version", 1, SAFE)], False),  # all or none
    (2, [("transaction.version", 1, 4)], False),                # unknown upgrade type
    (2, [("transaction.version", 1, 0)], False),
    (2, [("transaction.version", 2, SAFE)], False),             # the same level: nothing to do
    (2, [("share.version", 0, SAFE)], False),                   # share groups off
    (1, [("share.version", 1, SAFE), ("transaction.version", 1, SAFE)], False),  # "downgrade" to newer
    (2, [("share.version", 2, UPGRADE)], False),
    (0, [("transaction.version", 1, SAFE)], False),             # v0: always an upgrade (forwarded)
    (1, [("transaction.version", 2, UPGRADE), ("transaction.version", 1, UNSAFE)], False),  # the last wins
    (2, [("transaction.version", 2, UPGRADE), ("foo", 1, UPGRADE)], False),
    (1, [("transaction.version", 2, UPGRADE), ("share.version", 3, UPGRADE)], False),
    (2, [("transaction.version", 0, UNSAFE)], False),           # disabled: not listed as finalized
    (2, [], False),
    (1, [("transaction.version", 2, UPGRADE)], True),
    (2, [("transaction.version", 2, UPGRADE)], False),
]


def test_update_features_answers_as_kafka(broker, kafka_node):
    mismatches = []
    try:
        for version, updates, validate_only in CASES:
            theirs = _update(kafka_node.port, version, updates, validate_only)
            ours = _update(broker.port, version, updates, validate_only)
            if theirs != ours:
                mismatches.append(f"{version} {updates}:\n  Kafka: {theirs}\n  pylog: {ours}")
            kl, pl = _levels(kafka_node.port), _levels(broker.port)
            if kl != pl:
                mismatches.append(f"levels after {version} {updates}: Kafka {kl}, pylog {pl}")
    finally:
        _restore(kafka_node.port)
        _restore(broker.port)
    assert not mismatches, "\n".join(mismatches)


def _features(port: int, *args: str):
    p = run_main("org.apache.kafka.tools.FeatureCommand", "--bootstrap-server", f"127.0.0.1:{port}", *args)
    # describe: the features pylog serves (Kafka also lists metadata.version, group.version, ...)
    lines = [line.split("Epoch:")[0].rstrip() for line in p.stdout.splitlines()
             if not line.startswith("Feature: ") or line.split()[1] in SERVED]
    return p.returncode, lines


def test_kafka_features_tool_against_both(broker, kafka_node):
    steps = [["describe"], ["downgrade", "--feature", "transaction.version=1"], ["describe"],
             ["upgrade", "--feature", "transaction.version=1"],
             ["upgrade", "--feature", "transaction.version=2", "--dry-run"], ["describe"],
             ["upgrade", "--feature", "transaction.version=2"],
             ["downgrade", "--feature", "share.version=0", "--unsafe"], ["describe"],
             ["upgrade", "--feature", "share.version=2"], ["upgrade", "--feature", "foo.version=1"],
             ["disable", "--feature", "transaction.version"], ["describe"],
             ["upgrade", "--feature", "transaction.version=2"], ["describe"]]
    try:
        for args in steps:
            theirs, ours = _features(kafka_node.port, *args), _features(broker.port, *args)
            assert ours == theirs, f"{args}:\n  Kafka: {theirs}\n  pylog: {ours}"
    finally:
        _restore(kafka_node.port)
        _restore(broker.port)


def test_levels_survive_a_restart_and_feature_option_sets_one(broker_factory, tmp_path):
    b = broker_factory(tmp_path / "d")
    assert _levels(b.port) == {"share.version": 2, "transaction.version": 2}
    assert _update(b.port, 2, [("transaction.version", 1, SAFE), ("share.version", 1, SAFE)])["error_code"] == 0
    b.stop_clean()
    b = broker_factory(tmp_path / "d")
    assert _levels(b.port) == {"share.version": 1, "transaction.version": 1}
    epoch = _ask(b.port, 18, 4, {"client_software_name": "t", "client_software_version": "1"})[
        "finalized_features_epoch"]
    b.stop_clean()
    b = broker_factory(tmp_path / "d", "--feature", "transaction.version=2")
    r = _ask(b.port, 18, 4, {"client_software_name": "t", "client_software_version": "1"})
    assert {f["name"]: f["max_version_level"] for f in r["finalized_features"]} == {
        "share.version": 1, "transaction.version": 2}
    assert r["finalized_features_epoch"] > epoch


SHARE_REQUESTS = [
    (76, 1, {"group_id": "sg-off", "member_id": "m0123456789012345678", "member_epoch": 0, "rack_id": None,
             "subscribed_topic_names": ["t"]}),
    (77, 1, {"group_ids": ["sg-off"], "include_authorized_operations": False}),
    (78, 1, {"group_id": "sg-off", "member_id": "m", "share_session_epoch": 0, "max_wait_ms": 0, "min_bytes": 1,
             "max_bytes": 100, "max_records": 10, "batch_size": 10, "topics": [], "forgotten_topics_data": []}),
    (90, 1, {"groups": [{"group_id": "sg-off", "topics": None}]}),
]


def test_share_groups_off_at_share_version_0(broker, kafka_node):
    try:
        for port in (kafka_node.port, broker.port):
            assert _update(port, 2, [("share.version", 0, UNSAFE)])["error_code"] == 0
        for key, version, body in SHARE_REQUESTS:
            theirs, ours = _ask(kafka_node.port, key, version, body), _ask(broker.port, key, version, body)
            assert ours == theirs, f"api {key}:\n  Kafka: {theirs}\n  pylog: {ours}"
    finally:
        _restore(kafka_node.port)
        _restore(broker.port)
    assert _ask(broker.port, 77, 1, SHARE_REQUESTS[1][2])["groups"][0]["error_code"] != 35

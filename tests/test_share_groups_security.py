"""Share groups under Kafka's StandardAuthorizer: READ on the group and on the topic, as Kafka checks.

A pylog broker with a SASL_PLAINTEXT listener (PLAIN) for alice and a PLAINTEXT one for the
super user; alice's share consumer is refused until the ACLs grant what Kafka requires."""
from __future__ import annotations

import socket
import uuid

import pytest
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType, \
    ResourceType

from support import share_scenarios as sc
from support.broker_fixtures import BrokerProcess, call
from support.security_fixtures import listener_line

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("share-acl")
    cfg = tmp / "server.properties"
    cfg.write_text("\n".join([
        "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms=PLAIN",
        f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users=User:admin;User:ANONYMOUS",
    ]) + "\n")
    b = BrokerProcess(tmp / "data", "--config", str(cfg)).start(timeout=120)
    yield b
    b.stop_clean()


def _alice(b) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", listener_line(b, "SASL_PLAINTEXT")), timeout=10)
    assert call(s, 17, 1, {"mechanism": "PLAIN"})["error_code"] == 0
    assert call(s, 36, 2, {"auth_bytes": b"\0alice\0alice-secret"})["error_code"] == 0
    return s


def _allow(rtype, name, op):
    return AclBinding(rtype, name, ResourcePatternType.LITERAL, "User:alice", "*", op, AclPermissionType.ALLOW)


def _heartbeat(s, group, topic):
    return call(s, 76, 1, {"group_id": group, "member_id": str(uuid.uuid4()), "member_epoch": 0,
                           "subscribed_topic_names": [topic]})


def _fetch(s, group, member, tid):
    return call(s, 78, 1, {"group_id": group, "member_id": member, "share_session_epoch": 0, "max_wait_ms": 0,
                           "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 100, "batch_size": 100,
                           "topics": [{"topic_id": tid, "partitions": [
                               {"partition_index": 0, "acknowledgement_batches": []}]}],
                           "forgotten_topics_data": []})


def test_share_apis_need_read_on_group_and_topic(secured):
    bs = f"127.0.0.1:{listener_line(secured, 'PLAINTEXT')}"
    topic, group = sc.fresh(bs, 5)
    admin = AdminClient({"bootstrap.servers": bs})
    with socket.create_connection(("127.0.0.1", listener_line(secured, "PLAINTEXT")), timeout=10) as ps:
        tid = call(ps, 3, 12, {"topics": [{"name": topic, "topic_id": uuid.UUID(int=0)}]})["topics"][0]["topic_id"]
    s = _alice(secured)
    try:
        assert _heartbeat(s, group, topic)["error_code"] == 30  # GROUP_AUTHORIZATION_FAILED
        assert _fetch(s, group, "m", tid)["error_code"] == 30
        for f in admin.create_acls([_allow(ResourceType.GROUP, group, AclOperation.READ)]).values():
            f.result(30)
        assert _heartbeat(s, group, topic)["error_code"] == 29  # TOPIC_AUTHORIZATION_FAILED: no DESCRIBE
        r = _fetch(s, group, "m", tid)
        assert r["error_code"] == 0 and r["responses"][0]["partitions"][0]["error_code"] == 29
        r = call(s, 77, 1, {"group_ids": [group], "include_authorized_operations": False})
        assert r["groups"][0]["error_code"] != 30  # READ on the group implies DESCRIBE
        for f in admin.create_acls([_allow(ResourceType.TOPIC, topic, AclOperation.READ)]).values():
            f.result(30)
        hb = _heartbeat(s, group, topic)
        assert hb["error_code"] == 0, hb
        r = call(s, 78, 1, {"group_id": group, "member_id": hb["member_id"], "share_session_epoch": 0,
                            "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 100,
                            "batch_size": 100, "topics": [{"topic_id": tid, "partitions": [
                                {"partition_index": 0, "acknowledgement_batches": []}]}],
                            "forgotten_topics_data": []})
        p = r["responses"][0]["partitions"][0]
        assert p["error_code"] == 0 and p["acquired_records"][0]["first_offset"] == 0
    finally:
        s.close()

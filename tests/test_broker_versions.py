"""Every API version the broker advertises answers sanely (requests built with pylog's codec).

Version negotiation is where Kafka-compatible brokers break most often (Tansu
0.6 fails kcat 1.7's ApiVersions exchange), so this walks each advertised
(api, version) pair rather than only the newest.
"""
from __future__ import annotations

import struct
import uuid

import pytest

from support.broker_fixtures import build_batch, call, connect, is_closed, recv_frame
from support.waiting import wait_until
from pylog.core.protocol import API_NAMES, SCHEMAS, decode_response, encode_request

ZERO = uuid.UUID(int=0)
TOPIC = "vt"
GROUP_KEYS = {8, 9, 10, 11, 12, 13, 14, 15, 16, 42, 47}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """This module's broker: no group.initial.rebalance.delay.ms (nor its streams-group
    twin), so the join done for each group API version completes at once. PLAINTEXT and no
    delegation.token.secret.key, as most of this suite's brokers."""
    from support.broker_fixtures import BrokerProcess

    b = BrokerProcess(tmp_path_factory.mktemp("versions") / "data",
                      "--set", "group.initial.rebalance.delay.ms=0",
                      "--set", "group.streams.initial.rebalance.delay.ms=0").start()
    yield b
    b.stop_clean()


@pytest.fixture(scope="module")
def sock(broker):
    s = connect(broker)
    call(s, 19, 5, {"topics": [{"name": TOPIC, "num_partitions": 1, "replication_factor": 1}], "timeout_ms": 5000})
    # one record from the start, so Fetch and OffsetForLeaderEpoch find data whichever worker and
    # order the Produce case runs in
    r = call(s, 0, 9, {"acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": TOPIC, "partition_data": [{"index": 0, "records": build_batch([(b"k", b"v", [])])}]}]})
    assert r["responses"][0]["partition_responses"][0]["error_code"] == 0
    yield s
    s.close()


@pytest.fixture(scope="module")
def advertised(sock):
    resp = call(sock, 18, 3, {"client_software_name": "pylog-tests", "client_software_version": "1"})
    assert resp["error_code"] == 0
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in resp["api_keys"]}


def topic_id(sock):
    md = call(sock, 3, 12, {"topics": [{"name": TOPIC, "topic_id": ZERO}]})
    return md["topics"][0]["topic_id"]


def test_advertises_what_clients_need(advertised):
    for key in (0, 1, 2, 3, 18, 19, 20, 21, 22, 23, 32, 33, 35, 37, 44, 60):
        assert key in advertised, API_NAMES[key]
    assert advertised[18][0] == 0  # ApiVersions v0 must stay for the fallback
    assert advertised[0][0] <= 3 and advertised[0][1] >= 9
    assert advertised[1][0] <= 4 and advertised[1][1] >= 12


# APIs the codec knows that this broker deliberately does not serve (yet)
# schemas in the tree whose handlers are still being built; each leaves this set as it is served
NOT_SERVED: set[int] = set()


@pytest.mark.parametrize("api_key", sorted(SCHEMAS), ids=lambda k: API_NAMES.get(k, str(k)))
def test_every_advertised_version(sock, advertised, api_key):
    if api_key not in advertised:
        assert api_key in NOT_SERVED, f"{API_NAMES[api_key]} is neither advertised nor known to be unserved"
        return
    lo, hi = advertised[api_key]
    if api_key == 0:
        # Kafka 4 lists Produce from v0 but serves v3+ (KAFKA-18659): see test_produce_validation.py
        assert lo == 0
        lo = SCHEMAS[0].min_version
    assert SCHEMAS[api_key].min_version <= lo <= hi <= SCHEMAS[api_key].max_version
    for version in range(lo, hi + 1):
        try:
            check_version(sock, advertised, api_key, version)
        except AssertionError as e:
            raise AssertionError(f"{API_NAMES[api_key]} v{version}: {e}") from e


def check_version(sock, advertised, api_key, version):
    name = f"vt-{api_key}-{version}"
    tid = topic_id(sock)
    if api_key == 0:
        batch = build_batch([(b"k", f"v{version}".encode(), [("h", b"1")])])
        r = call(sock, 0, version, {"acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": TOPIC, "topic_id": tid, "partition_data": [{"index": 0, "records": batch}]}]})
        p = r["responses"][0]["partition_responses"][0]
        assert p["error_code"] == 0 and p["base_offset"] >= 0
    elif api_key == 1:
        r = call(sock, 1, version, {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "topics": [
            {"topic": TOPIC, "topic_id": tid, "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]})
        assert r.get("error_code", 0) == 0
        p = r["responses"][0]["partitions"][0]
        assert p["error_code"] == 0 and p["high_watermark"] >= 1
        records = bytes(p["records"])
        assert len(records) > 61 and records[16] == 2
    elif api_key == 2:
        r = call(sock, 2, version, {"replica_id": -1, "topics": [
            {"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": -2, "max_num_offsets": 1}]}]})
        p = r["topics"][0]["partitions"][0]
        assert p["error_code"] == 0
        assert (p["old_style_offsets"] == [0]) if version == 0 else p["offset"] == 0
    elif api_key == 3:
        r = call(sock, 3, version, {"topics": [{"name": TOPIC, "topic_id": ZERO}], "allow_auto_topic_creation": False})
        t = r["topics"][0]
        assert t["error_code"] == 0 and t["name"] == TOPIC and len(t["partitions"]) == 1
        assert r["brokers"][0]["node_id"] == 1
        if version >= 10:
            assert t["topic_id"] == tid
            if version >= 12:  # v12: look up by id with a null name
                r = call(sock, 3, version, {"topics": [{"name": None, "topic_id": tid}]})
                assert r["topics"][0]["name"] == TOPIC
    elif api_key == 18:
        r = call(sock, 18, version, {"client_software_name": "t", "client_software_version": "1"})
        assert r["error_code"] == 0 and len(r["api_keys"]) == len(advertised)
    elif api_key == 19:
        r = call(sock, 19, version, {"topics": [{"name": name, "num_partitions": -1 if version >= 4 else 1,
                                                 "replication_factor": -1 if version >= 4 else 1}],
                                     "timeout_ms": 5000})
        assert r["topics"][0]["error_code"] == 0
        if version >= 5:
            assert r["topics"][0]["num_partitions"] == 1
    elif api_key == 20:
        call(sock, 19, 5, {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1}],
                           "timeout_ms": 5000})
        body = {"topics": [{"name": name, "topic_id": ZERO}]} if version >= 6 else {"topic_names": [name]}
        r = call(sock, 20, version, dict(body, timeout_ms=5000))
        assert r["responses"][0]["error_code"] == 0
    elif api_key == 21:
        r = call(sock, 21, version, {"topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "offset": 0}]}],
                                     "timeout_ms": 5000})
        p = r["topics"][0]["partitions"][0]
        assert p["error_code"] == 0 and p["low_watermark"] == 0
    elif api_key == 22:
        r = call(sock, 22, version, {"transactional_id": None, "transaction_timeout_ms": 1000,
                                     "producer_id": -1, "producer_epoch": -1})
        assert r["error_code"] == 0 and r["producer_id"] >= 0 and r["producer_epoch"] == 0
    elif api_key == 23:
        r = call(sock, 23, version, {"replica_id": -1, "topics": [
            {"topic": TOPIC, "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}]})
        p = r["topics"][0]["partitions"][0]
        assert p["error_code"] == 0 and p["end_offset"] >= 1
    elif api_key == 32:
        r = call(sock, 32, version, {"resources": [{"resource_type": 2, "resource_name": TOPIC,
                                                    "configuration_keys": None}],
                                     "include_synonyms": True, "include_documentation": True})
        res = r["results"][0]
        assert res["error_code"] == 0
        assert {c["name"] for c in res["configs"]} >= {"retention.ms", "cleanup.policy", "segment.bytes"}
    elif api_key == 33:
        r = call(sock, 33, version, {"resources": [{"resource_type": 2, "resource_name": TOPIC, "configs": [
            {"name": "retention.ms", "value": "86400000"}]}]})
        assert r["responses"][0]["error_code"] == 0
    elif api_key == 35:
        r = call(sock, 35, version, {"topics": None})
        assert r.get("error_code", 0) == 0 and len(r["results"]) == 1
        assert any(t["name"] == TOPIC for t in r["results"][0]["topics"])
    elif api_key == 37:
        call(sock, 19, 5, {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1}],
                           "timeout_ms": 5000})
        r = call(sock, 37, version, {"topics": [{"name": name, "count": 2, "assignments": None}], "timeout_ms": 5000})
        assert r["results"][0]["error_code"] == 0
    elif api_key == 44:
        r = call(sock, 44, version, {"resources": [{"resource_type": 2, "resource_name": TOPIC, "configs": [
            {"name": "retention.ms", "config_operation": 0, "value": "86400001"}]}]})
        assert r["responses"][0]["error_code"] == 0
    elif api_key == 60:
        r = call(sock, 60, version, {"include_cluster_authorized_operations": False})
        assert r["error_code"] == 0 and [b["broker_id"] for b in r["brokers"]] == [1]
    elif api_key in (17, 36):  # a PLAINTEXT listener: Kafka answers ILLEGAL_SASL_STATE and keeps the connection
        body = {"mechanism": "PLAIN"} if api_key == 17 else {"auth_bytes": b"\0a\0b"}
        assert call(sock, api_key, version, body)["error_code"] == 34
    elif api_key in (29, 30, 31):  # no authorizer configured: SECURITY_DISABLED
        f = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
             "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}
        body = {29: f, 30: {"creations": [{"resource_type": 2, "resource_name": "t", "resource_pattern_type": 3,
                                          "principal": "User:a", "host": "*", "operation": 3,
                                          "permission_type": 3}]},
                31: {"filters": [f]}}[api_key]
        r = call(sock, api_key, version, body)
        codes = [r.get("error_code")] + [x["error_code"] for x in r.get("results", []) + r.get("filter_results", [])]
        assert 54 in codes, r
    elif api_key == 51:
        r = call(sock, 51, version, {"deletions": [], "upsertions": [
            {"name": f"u{version}", "mechanism": 1, "iterations": 4096, "salt": b"salt", "salted_password": b"x" * 32}]})
        assert r["results"] == [{"user": f"u{version}", "error_code": 0, "error_message": None}]
    elif api_key == 50:
        r = call(sock, 50, version, {"users": None})
        assert r["error_code"] == 0
    elif api_key == 49:
        ent = [{"entity_type": "user", "entity_name": f"q{version}"}]
        r = call(sock, 49, version, {"entries": [{"entity": ent, "ops": [
            {"key": "producer_byte_rate", "value": 1e9, "remove": False}]}], "validate_only": False})
        assert r["entries"] == [{"error_code": 0, "error_message": None, "entity": ent}]
    elif api_key == 48:
        r = call(sock, 48, version, {"components": [{"entity_type": "user", "match_type": 2, "match": None}],
                                     "strict": False})
        assert r["error_code"] == 0 and isinstance(r["entries"], list)
    elif api_key in GROUP_KEYS:
        check_group_version(sock, api_key, version, f"vg-{api_key}-{version}")
    elif api_key == 68:  # KIP-848: join (v1+: the member names itself), then leave
        mid = f"m{version}vt-member-id-000000" if version >= 1 else ""
        body = {"group_id": name, "member_id": mid, "member_epoch": 0, "instance_id": None, "rack_id": None,
                "rebalance_timeout_ms": 3000, "subscribed_topic_names": [name], "subscribed_topic_regex": None,
                "server_assignor": None, "topic_partitions": []}
        r = call(sock, 68, version, body)
        assert r["error_code"] == 0 and r["member_epoch"] >= 1 and r["member_id"], r
        r = call(sock, 68, version, dict(body, member_id=r["member_id"], member_epoch=-1, topic_partitions=None))
        assert r["error_code"] == 0 and r["member_epoch"] == -1, r
    elif api_key == 69:
        r = call(sock, 69, version, {"group_ids": [name], "include_authorized_operations": False})
        assert r["groups"][0]["error_code"] == 69, r  # GROUP_ID_NOT_FOUND
    elif api_key == 43:  # one replica, already the leader: nothing to elect
        r = call(sock, 43, version, {"election_type": 0, "topic_partitions": [{"topic": TOPIC, "partitions": [0]}],
                                     "timeout_ms": 5000})
        assert r.get("error_code", 0) == 0
        assert r["replica_election_results"][0]["partition_result"][0]["error_code"] == 84  # ELECTION_NOT_NEEDED
    elif api_key == 45:  # moved to where it is: accepted, nothing moves
        r = call(sock, 45, version, {"timeout_ms": 5000, "topics": [
            {"name": TOPIC, "partitions": [{"partition_index": 0, "replicas": [1]}]}]})
        assert r["error_code"] == 0 and r["responses"][0]["partitions"][0]["error_code"] == 0
    elif api_key == 46:
        r = call(sock, 46, version, {"timeout_ms": 5000, "topics": None})
        assert r["error_code"] == 0 and r["topics"] == []
    elif api_key in (38, 39, 40, 41):
        # a PLAINTEXT listener: Kafka refuses token requests before it looks at the secret key
        body = {38: {"owner_principal_type": None, "owner_principal_name": None, "renewers": [],
                     "max_lifetime_ms": -1},
                39: {"hmac": b"not-a-token", "renew_period_ms": -1},
                40: {"hmac": b"not-a-token", "expiry_time_period_ms": -1},
                41: {"owners": None}}[api_key]
        r = call(sock, api_key, version, body)
        assert r["error_code"] == 64, r  # DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        if api_key == 38:
            assert (r["principal_name"], r["token_id"], r["hmac"], r["expiry_timestamp_ms"]) == \
                ("ANONYMOUS", "", b"", -1), r
        elif api_key == 41:
            assert r["tokens"] == []
        else:
            assert r["expiry_timestamp_ms"] == -1
    elif api_key == 55:
        r = call(sock, 55, version, {"topics": [{"topic_name": "__cluster_metadata",
                                                 "partitions": [{"partition_index": 0}]}]})
        assert r["error_code"] == 0, r
        p = r["topics"][0]["partitions"][0]
        assert (p["error_code"], p["leader_id"]) == (0, 1) and p["leader_epoch"] >= 1
        assert [v["replica_id"] for v in p["current_voters"]] == [1] and p["observers"] == []
        if version >= 2:
            assert [n["node_id"] for n in r["nodes"]] == [1]
    elif api_key == 57:  # validated only: transaction.version stays where it is
        r = call(sock, 57, version, {"timeout_ms": 5000, "validate_only": True, "feature_updates": [
            {"feature": "transaction.version", "max_version_level": 2, "allow_downgrade": False, "upgrade_type": 1}]})
        assert r["error_code"] == 0, r
        # v2 answers no per-feature results (KIP-1022)
        assert [(x["feature"], x["error_code"]) for x in r["results"]] == \
            ([] if version >= 2 else [("transaction.version", 0)])
        r = call(sock, 57, version, {"timeout_ms": 5000, "validate_only": True, "feature_updates": [
            {"feature": "no.such.version", "max_version_level": 1, "allow_downgrade": False, "upgrade_type": 1}]})
        assert (r["error_code"], r["results"]) == (95, []), r  # INVALID_UPDATE_VERSION: an unknown feature
    elif api_key == 74:
        if version == 0:  # v0 is KIP-714's ListClientMetricsResources: none configured
            r = call(sock, 74, 0, {})
            assert r["error_code"] == 0 and r["config_resources"] == []
        else:
            r = call(sock, 74, version, {"resource_types": [2]})
            assert r["error_code"] == 0
            assert {"resource_name": TOPIC, "resource_type": 2} in r["config_resources"]
            assert {c["resource_type"] for c in r["config_resources"]} == {2}
    elif api_key == 75:
        r = call(sock, 75, version, {"topics": [{"name": TOPIC}, {"name": name}], "response_partition_limit": 2000,
                                     "cursor": None})
        t, missing = r["topics"]  # sorted by name
        assert (missing["name"], missing["error_code"]) == (name, 3)
        assert (t["name"], t["error_code"], t["topic_id"]) == (TOPIC, 0, tid)
        assert [(p["partition_index"], p["leader_id"], p["isr_nodes"]) for p in t["partitions"]] == [(0, 1, [1])]
        assert r["next_cursor"] is None
    elif api_key in (88, 89, 93):
        check_streams_version(sock, api_key, version, f"vst-{api_key}-{version}")
    elif api_key in SHARE_STATE_KEYS:
        check_share_state_version(sock, api_key, version, f"vss-{api_key}-{version}", tid)
    elif api_key in TXN_KEYS:
        check_txn_version(sock, api_key, version, f"vx-{api_key}-{version}")
    elif api_key in SHARE_KEYS:
        check_share_version(sock, api_key, version, f"vs-{api_key}-{version}", tid)
    else:
        raise AssertionError(f"{API_NAMES.get(api_key)} is advertised but this test has no case for it")


# ---- group APIs: a real exchange at every served version ----------

SUBSCRIPTION = b"\x00\x00\x00\x00\x00\x01\x00\x02vt\xff\xff\xff\xff"  # ConsumerProtocol v0: ["vt"]


def join(sock, group, version=5):
    body = {"group_id": group, "session_timeout_ms": 6000, "rebalance_timeout_ms": 3000, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": SUBSCRIPTION}]}
    r = call(sock, 11, version, body)
    if version >= 4:  # KIP-394 member-id handshake
        assert r["error_code"] == 79 and r["member_id"]
        r = call(sock, 11, version, dict(body, member_id=r["member_id"]))
    assert r["error_code"] == 0, r
    assert r["leader"] == r["member_id"] and r["generation_id"] >= 1 and r["protocol_name"] == "range"
    assert [m["member_id"] for m in r["members"]] == [r["member_id"]]
    assert r["members"][0]["metadata"] == SUBSCRIPTION
    return r["member_id"], r["generation_id"]


def simple_commit(sock, group, offset, version=8):
    r = call(sock, 8, version, {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                                "topics": [{"name": TOPIC, "topic_id": topic_id(sock), "partitions": [
                                    {"partition_index": 0, "committed_offset": offset,
                                     "committed_metadata": f"m{offset}"}]}]})
    assert r["topics"][0]["partitions"][0]["error_code"] == 0


def fetch_committed(sock, group, version=8):
    topics = [{"name": TOPIC, "topic_id": topic_id(sock), "partition_indexes": [0]}]  # v10: by id
    if version >= 8:
        r = call(sock, 9, version, {"groups": [{"group_id": group, "topics": topics}]})
        assert r["groups"][0]["error_code"] == 0
        p = r["groups"][0]["topics"][0]["partitions"][0]
    else:
        r = call(sock, 9, version, {"group_id": group, "topics": topics})
        assert r.get("error_code", 0) == 0
        p = r["topics"][0]["partitions"][0]
    assert p["error_code"] == 0
    return p["committed_offset"], p["metadata"]


def group_state(sock, group):
    return call(sock, 15, 5, {"groups": [group]})["groups"][0]["group_state"]


def check_group_version(sock, api_key, version, group):
    if api_key == 8:
        simple_commit(sock, group, 40 + version, version)
        assert fetch_committed(sock, group) == (40 + version, f"m{40 + version}")
    elif api_key == 9:
        simple_commit(sock, group, 7)
        assert fetch_committed(sock, group, version) == (7, "m7")
        if version >= 8:  # several groups in one request, an unknown one included
            r = call(sock, 9, version, {"groups": [{"group_id": group, "topics": None},
                                                   {"group_id": group + "-none", "topics": None}]})
            assert [g["group_id"] for g in r["groups"]] == [group, group + "-none"]
            assert r["groups"][1]["topics"] == []
    elif api_key == 10:
        if version >= 4:
            r = call(sock, 10, version, {"key_type": 0, "coordinator_keys": [group, group + "-b"]})
            assert [(c["key"], c["error_code"], c["node_id"]) for c in r["coordinators"]] == \
                [(group, 0, 1), (group + "-b", 0, 1)]
        else:
            r = call(sock, 10, version, {"key": group, "key_type": 0})
            assert r["error_code"] == 0 and r["node_id"] == 1 and r["port"] > 0
    elif api_key == 11:
        mid, _ = join(sock, group, version)
        assert call(sock, 13, 0, {"group_id": group, "member_id": mid})["error_code"] == 0
    elif api_key == 12:
        mid, gen = join(sock, group)
        assert call(sock, 14, 3, {"group_id": group, "generation_id": gen, "member_id": mid,
                                  "assignments": [{"member_id": mid, "assignment": b""}]})["error_code"] == 0
        assert call(sock, 12, version, {"group_id": group, "generation_id": gen, "member_id": mid})["error_code"] == 0
        assert call(sock, 12, version, {"group_id": group, "generation_id": gen + 5,
                                        "member_id": mid})["error_code"] == 22  # ILLEGAL_GENERATION
        call(sock, 13, 0, {"group_id": group, "member_id": mid})
    elif api_key == 13:
        mid, _ = join(sock, group)
        if version >= 3:
            r = call(sock, 13, version, {"group_id": group, "members": [{"member_id": mid}]})
            assert r["error_code"] == 0 and [(m["member_id"], m["error_code"]) for m in r["members"]] == [(mid, 0)]
        else:
            assert call(sock, 13, version, {"group_id": group, "member_id": mid})["error_code"] == 0
        assert group_state(sock, group) == "Empty"
    elif api_key == 14:
        mid, gen = join(sock, group)
        r = call(sock, 14, version, {"group_id": group, "generation_id": gen, "member_id": mid,
                                     "protocol_type": "consumer", "protocol_name": "range",
                                     "assignments": [{"member_id": mid, "assignment": b"\x00\x01"}]})
        assert r["error_code"] == 0 and r["assignment"] == b"\x00\x01"
        if version >= 5:
            assert (r["protocol_type"], r["protocol_name"]) == ("consumer", "range")
        assert group_state(sock, group) == "Stable"
        call(sock, 13, 0, {"group_id": group, "member_id": mid})
    elif api_key == 15:
        mid, gen = join(sock, group)
        g = call(sock, 15, version, {"groups": [group]})["groups"][0]
        # as Kafka: before Stable, no protocol and no member metadata/assignment
        assert (g["group_state"], g["protocol_data"], g["members"][0]["member_metadata"]) == \
            ("CompletingRebalance", "", b"")
        call(sock, 14, 3, {"group_id": group, "generation_id": gen, "member_id": mid,
                           "assignments": [{"member_id": mid, "assignment": b"\x00\x02"}]})
        r = call(sock, 15, version, {"groups": [group, group + "-none"], "include_authorized_operations": False})
        g, none = r["groups"]
        assert (g["error_code"], g["group_state"], g["protocol_type"], g["protocol_data"]) == \
            (0, "Stable", "consumer", "range")
        assert [(m["member_id"], m["member_metadata"], m["member_assignment"]) for m in g["members"]] == \
            [(mid, SUBSCRIPTION, b"\x00\x02")]
        assert none["group_state"] == "Dead"
        call(sock, 13, 0, {"group_id": group, "member_id": mid})
    elif api_key == 16:
        simple_commit(sock, group, 1)
        r = call(sock, 16, version, {"states_filter": [], "types_filter": []})
        assert r["error_code"] == 0
        listed = {g["group_id"]: g for g in r["groups"]}
        assert listed[group]["protocol_type"] in ("", "consumer")
        if version >= 4:
            assert listed[group]["group_state"] == "Empty"
            r = call(sock, 16, version, {"states_filter": ["Stable"]})
            assert group not in {g["group_id"] for g in r["groups"]}
    elif api_key == 42:
        simple_commit(sock, group, 3)
        r = call(sock, 42, version, {"groups_names": [group, group + "-none"]})
        assert [(x["group_id"], x["error_code"]) for x in r["results"]] == [(group, 0), (group + "-none", 69)]
        assert fetch_committed(sock, group)[0] == -1
    elif api_key == 47:
        simple_commit(sock, group, 3)
        r = call(sock, 47, version, {"group_id": group, "topics": [{"name": TOPIC, "partitions": [
            {"partition_index": 0}]}]})
        assert r["error_code"] == 0 and r["topics"][0]["partitions"][0]["error_code"] == 0
        assert fetch_committed(sock, group)[0] == -1


def test_api_versions_fallback_for_a_too_new_version(broker, advertised):
    s = connect(broker)
    # ApiVersions v99 with a flexible (v2) header, as a future client would send it
    body = b"\x02t\x021\x00"
    header = struct.pack(">hhi", 18, 99, 7) + struct.pack(">h", 4) + b"test" + b"\x00"
    frame = header + body
    s.sendall(struct.pack(">i", len(frame)) + frame)
    corr, resp = decode_response(18, 0, recv_frame(s))
    assert corr == 7 and resp["error_code"] == 35
    assert {k["api_key"]: (k["min_version"], k["max_version"]) for k in resp["api_keys"]} == advertised
    # the connection stays usable: the client retries at a version we support
    assert call(s, 18, 0, {}, correlation_id=8)["error_code"] == 0
    s.close()


def test_version_outside_codec_range_closes_only_that_connection(broker, sock):
    s = connect(broker)
    s.sendall(encode_request(3, 1, 1, "t", {"topics": None}))  # fine
    recv_frame(s)
    frame = struct.pack(">hhi", 0, 1, 2) + struct.pack(">h", 1) + b"t" + b"\x00" * 10  # Produce v1: removed in Kafka 4
    s.sendall(struct.pack(">i", len(frame)) + frame)
    assert is_closed(s)
    assert call(sock, 18, 3, {}, correlation_id=99)["error_code"] == 0


def fetch_body(topic, session_id=0, epoch=-1):
    return {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "session_id": session_id,
            "session_epoch": epoch, "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}


def test_fetch_sessions_are_answered_as_sessionless(sock):
    r = call(sock, 1, 12, fetch_body(TOPIC, 0, 0))  # a client asking for a new session
    assert r["error_code"] == 0 and r["session_id"] == 0  # 0: no session was created
    assert r["responses"][0]["partitions"][0]["error_code"] == 0
    r = call(sock, 1, 12, fetch_body(TOPIC, 1234, 3))  # an incremental fetch on a session we never made
    assert r["error_code"] == 70  # FETCH_SESSION_ID_NOT_FOUND
    r = call(sock, 1, 12, fetch_body(TOPIC, 1234, -1))  # closing it: a full sessionless fetch
    assert r["error_code"] == 0 and r["session_id"] == 0


def test_delete_topic_by_id_and_unknown_id(sock):
    r = call(sock, 19, 7, {"topics": [{"name": "vt-del-id", "num_partitions": 1, "replication_factor": 1}],
                           "timeout_ms": 5000})
    tid = r["topics"][0]["topic_id"]
    assert tid != ZERO
    r = call(sock, 20, 6, {"topics": [{"name": None, "topic_id": tid}], "timeout_ms": 5000})
    assert r["responses"][0]["error_code"] == 0 and r["responses"][0]["name"] == "vt-del-id"
    r = call(sock, 20, 6, {"topics": [{"name": None, "topic_id": tid}], "timeout_ms": 5000})
    assert r["responses"][0]["error_code"] == 100  # UNKNOWN_TOPIC_ID
    md = call(sock, 3, 12, {"topics": [{"name": None, "topic_id": tid}]})
    assert md["topics"][0]["error_code"] == 100


def test_create_topics_validation(sock):
    def create(topic, **kw):
        body = {"name": topic, "num_partitions": -1, "replication_factor": -1}
        body.update(kw)
        r = call(sock, 19, 7, {"topics": [body], "timeout_ms": 5000})
        return r["topics"][0]

    t = create("vt-defaults")
    assert t["error_code"] == 0 and t["num_partitions"] == 1 and t["replication_factor"] == 1
    configs = {c["name"]: c for c in t["configs"]}
    assert configs["retention.ms"]["value"] == "604800000" and configs["retention.ms"]["config_source"] == 5
    assert create("vt-defaults")["error_code"] == 36  # TOPIC_ALREADY_EXISTS
    assert create("vt-rf", replication_factor=2)["error_code"] == 38
    assert create("vt-parts", num_partitions=0)["error_code"] == 37
    assert create("bad/name")["error_code"] == 17
    assert create("x" * 250)["error_code"] == 17
    assert create("..")["error_code"] == 17
    bad = create("vt-badconf", configs=[{"name": "retention.ms", "value": "soon"}])
    assert bad["error_code"] == 40 and "retention.ms" in bad["error_message"]
    assert create("vt-unknownconf", configs=[{"name": "no.such", "value": "1"}])["error_code"] == 40
    r = call(sock, 19, 7, {"topics": [{"name": "vt-validate", "num_partitions": 3, "replication_factor": 1}],
                           "timeout_ms": 5000, "validate_only": True})
    assert r["topics"][0]["error_code"] == 0 and r["topics"][0]["num_partitions"] == 3
    md = call(sock, 3, 12, {"topics": [{"name": "vt-validate"}], "allow_auto_topic_creation": False})
    assert md["topics"][0]["error_code"] == 3  # validate_only created nothing


def test_describe_configs_documentation_and_synonyms(sock):
    r = call(sock, 32, 4, {"resources": [{"resource_type": 2, "resource_name": TOPIC,
                                          "configuration_keys": ["segment.bytes"]}],
                           "include_synonyms": True, "include_documentation": True})
    (c,) = r["results"][0]["configs"]
    assert c["name"] == "segment.bytes" and c["documentation"] and c["config_type"] == 3  # INT
    assert {"name": "log.segment.bytes", "value": "1073741824", "source": 5} in c["synonyms"]
    r = call(sock, 32, 4, {"resources": [{"resource_type": 4, "resource_name": "1", "configuration_keys": [
        "num.partitions", "listeners"]}]})
    values = {c["name"]: c["value"] for c in r["results"][0]["configs"]}
    assert values["num.partitions"] == "1" and values["listeners"].startswith("PLAINTEXT://127.0.0.1:")
    r = call(sock, 32, 4, {"resources": [{"resource_type": 2, "resource_name": "no-such-topic",
                                          "configuration_keys": None}]})
    assert r["results"][0]["error_code"] == 3
    r = call(sock, 44, 1, {"resources": [{"resource_type": 4, "resource_name": "1", "configs": [
        {"name": "num.partitions", "config_operation": 0, "value": "3"}]}]})
    assert r["responses"][0]["error_code"] == 42  # num.partitions is not a dynamic broker config


def test_describe_log_dirs_reports_sizes(sock):
    r = call(sock, 35, 4, {"topics": [{"topic": TOPIC, "partitions": [0]}]})
    (d,) = r["results"]
    assert d["error_code"] == 0 and d["total_bytes"] > 0 and d["usable_bytes"] > 0
    (t,) = d["topics"]
    assert t["name"] == TOPIC and t["partitions"][0]["partition_size"] > 0


def test_log_append_time_topic_returns_the_broker_timestamp(sock):
    import time

    call(sock, 19, 7, {"topics": [{"name": "vt-lat", "num_partitions": 1, "replication_factor": 1,
                                   "configs": [{"name": "message.timestamp.type", "value": "LogAppendTime"}]}],
                       "timeout_ms": 5000})
    before = int(time.time() * 1000)
    batch = build_batch([(None, b"v", [])], base_timestamp=1000)
    r = call(sock, 0, 9, {"acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": "vt-lat", "partition_data": [{"index": 0, "records": batch}]}]})
    p = r["responses"][0]["partition_responses"][0]
    assert p["error_code"] == 0 and before - 5000 <= p["log_append_time_ms"] <= int(time.time() * 1000) + 5000
    r = call(sock, 2, 7, {"replica_id": -1, "topics": [{"name": "vt-lat", "partitions": [
        {"partition_index": 0, "timestamp": -3}]}]})
    assert r["topics"][0]["partitions"][0]["timestamp"] == p["log_append_time_ms"]


def test_acks_all_with_min_insync_replicas_above_one_is_refused(sock):
    call(sock, 19, 7, {"topics": [{"name": "vt-isr", "num_partitions": 1, "replication_factor": 1,
                                   "configs": [{"name": "min.insync.replicas", "value": "2"}]}],
                       "timeout_ms": 5000})

    def produce(acks):
        r = call(sock, 0, 9, {"acks": acks, "timeout_ms": 5000, "topic_data": [
            {"name": "vt-isr", "partition_data": [{"index": 0, "records": build_batch([(None, b"v", [])])}]}]})
        return r["responses"][0]["partition_responses"][0]

    assert produce(-1)["error_code"] == 19  # NOT_ENOUGH_REPLICAS, nothing appended
    p = produce(1)
    assert p["error_code"] == 0 and p["base_offset"] == 0


# ---- transaction APIs: a whole transaction at every served version --

TXN_KEYS = {24, 25, 26, 27, 28, 61, 65, 66}


def check_txn_version(sock, api_key, version, tid):
    """Init, add a partition and a group, commit an offset, end: `api_key` at `version`, the
    others at their newest served one; the admin APIs then see the transaction."""
    def at(key, newest):
        return version if key == api_key else newest
    init = call(sock, 22, 4, {"transactional_id": tid, "transaction_timeout_ms": 60000,
                              "producer_id": -1, "producer_epoch": -1})
    assert init["error_code"] == 0, init
    pid, epoch = init["producer_id"], init["producer_epoch"]
    if at(24, 3) >= 4:  # a partition leader's form: several transactions, added or only verified
        txn = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
               "topics": [{"name": TOPIC, "partitions": [0]}]}
        r = call(sock, 24, version, {"transactions": [dict(txn, verify_only=True)]})
        assert r["results_by_transaction"][0]["topic_results"][0]["results_by_partition"][0][
            "partition_error_code"] == 48  # INVALID_TXN_STATE: not in the transaction yet
        r = call(sock, 24, version, {"transactions": [dict(txn, verify_only=False)]})
        assert r["error_code"] == 0
        results = r["results_by_transaction"][0]["topic_results"]
    else:
        r = call(sock, 24, at(24, 3), {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
                                       "v3_and_below_producer_epoch": epoch,
                                       "v3_and_below_topics": [{"name": TOPIC, "partitions": [0]}]})
        results = r["results_by_topic_v3_and_below"]
    assert results[0]["results_by_partition"][0]["partition_error_code"] == 0
    r = call(sock, 25, at(25, 3), {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                   "group_id": tid + "-g"})
    assert r["error_code"] == 0
    r = call(sock, 28, at(28, 3), {"transactional_id": tid, "group_id": tid + "-g", "producer_id": pid,
                                   "producer_epoch": epoch, "generation_id_or_member_epoch": -1, "member_id": "",
                                   "group_instance_id": None, "topics": [{"name": TOPIC, "topic_id": topic_id(sock),
                                                                          "partitions": [
                                       {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                                        "committed_metadata": ""}]}]})
    assert r["topics"][0]["partitions"][0]["error_code"] == 0
    if api_key == 65:
        r = call(sock, 65, version, {"transactional_ids": [tid, tid + "-missing"]})
        s, missing = r["transaction_states"]
        assert (s["error_code"], s["transaction_state"], s["producer_id"]) == (0, "Ongoing", pid)
        assert missing["error_code"] == 105  # TRANSACTIONAL_ID_NOT_FOUND
    if api_key == 66:
        r = call(sock, 66, version, {"state_filters": ["Ongoing", "Bogus"], "producer_id_filters": [pid],
                                     "duration_filter": -1, "transactional_id_pattern": None})
        assert r["unknown_state_filters"] == ["Bogus"]
        assert [(t["transactional_id"], t["transaction_state"]) for t in r["transaction_states"]] == [(tid, "Ongoing")]
    if api_key == 27:  # what kafka-transactions.sh abort sends: an ABORT marker, out of band
        r = call(sock, 27, version, {"markers": [{"producer_id": pid, "producer_epoch": epoch,
                                                  "transaction_result": False, "coordinator_epoch": 0,
                                                  "topics": [{"name": TOPIC, "partition_indexes": [0]}]}]})
        assert r["markers"][0]["topics"][0]["partitions"][0]["error_code"] == 0
        stale = call(sock, 27, version, {"markers": [{"producer_id": pid, "producer_epoch": epoch - 1,
                                                      "transaction_result": False, "coordinator_epoch": 0,
                                                      "topics": [{"name": TOPIC, "partition_indexes": [0]}]}]})
        assert stale["markers"][0]["topics"][0]["partitions"][0]["error_code"] == 47  # INVALID_PRODUCER_EPOCH
    r = call(sock, 26, at(26, 3), {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                   "committed": True})
    assert r["error_code"] == 0
    if api_key == 61:
        r = call(sock, 61, version, {"topics": [{"name": TOPIC, "partition_indexes": [0]}]})
        p = r["topics"][0]["partitions"][0]
        assert p["error_code"] == 0 and pid in [a["producer_id"] for a in p["active_producers"]]
    off = call(sock, 9, 8, {"groups": [{"group_id": tid + "-g", "topics": None}], "require_stable": True})
    assert off["groups"][0]["topics"][0]["partitions"][0]["committed_offset"] == 1


SHARE_KEYS = {76, 77, 78, 79, 90, 91, 92}


def _share_join(sock, group, tid):
    mid = str(uuid.uuid4())
    r = call(sock, 76, 1, {"group_id": group, "member_id": mid, "member_epoch": 0,
                           "subscribed_topic_names": [TOPIC]})
    assert r["error_code"] == 0 and r["member_epoch"] >= 1, r
    assert r["assignment"]["topic_partitions"] == [{"topic_id": tid, "partitions": [0]}]
    return mid, r["member_epoch"]


def _produce_one(sock, value):
    r = call(sock, 0, 9, {"acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": TOPIC, "partition_data": [{"index": 0, "records": build_batch([(b"k", value.encode(), [])])}]}]})
    p = r["responses"][0]["partition_responses"][0]
    assert p["error_code"] == 0, r
    return p["base_offset"]


def _share_leave(sock, group, mid):
    r = call(sock, 76, 1, {"group_id": group, "member_id": mid, "member_epoch": -1})
    assert r["error_code"] == 0 and r["member_epoch"] == -1


def _share_fetch(sock, version, group, mid, epoch, tid):
    return call(sock, 78, version, {"group_id": group, "member_id": mid, "share_session_epoch": epoch,
                                    "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 100,
                                    "batch_size": 100, "topics": [{"topic_id": tid, "partitions": [
                                        {"partition_index": 0, "acknowledgement_batches": []}]}] if epoch == 0 else [],
                                    "forgotten_topics_data": []})


def check_share_version(sock, api_key, version, group, tid):
    if api_key == 76:
        mid, epoch = _share_join(sock, group, tid)
        r = call(sock, 76, version, {"group_id": group, "member_id": mid, "member_epoch": epoch})
        assert r["error_code"] == 0 and r["member_epoch"] == epoch and r["assignment"] is None
        r = call(sock, 76, version, {"group_id": group, "member_id": mid, "member_epoch": epoch + 9})
        assert r["error_code"] == 110  # FENCED_MEMBER_EPOCH
        _share_leave(sock, group, mid)
    elif api_key == 77:
        mid, epoch = _share_join(sock, group, tid)
        r = call(sock, 77, version, {"group_ids": [group, group + "-none"], "include_authorized_operations": False})
        g, none = r["groups"]
        assert (g["error_code"], g["group_state"], g["assignor_name"]) == (0, "Stable", "simple")
        assert [m["member_id"] for m in g["members"]] == [mid]
        assert none["error_code"] == 69  # GROUP_ID_NOT_FOUND
        _share_leave(sock, group, mid)
    elif api_key == 78:
        mid, _ = _share_join(sock, group, tid)
        r = _share_fetch(sock, version, group, mid, 0, tid)
        assert r["error_code"] == 0 and r["acquisition_lock_timeout_ms"] == 30000, r
        assert r["responses"][0]["partitions"][0]["error_code"] == 0
        assert _share_fetch(sock, version, group, mid, 1, tid)["error_code"] == 0
        assert _share_fetch(sock, version, group, mid, 7, tid)["error_code"] == 123  # INVALID_SHARE_SESSION_EPOCH
        assert _share_fetch(sock, version, group, mid, -1, tid)["error_code"] == 0
        assert _share_fetch(sock, version, group, mid, 3, tid)["error_code"] == 122  # SHARE_SESSION_NOT_FOUND
        _share_leave(sock, group, mid)
    elif api_key == 79:
        mid, _ = _share_join(sock, group, tid)
        ack = {"group_id": group, "member_id": mid, "share_session_epoch": 0, "topics": []}
        assert call(sock, 79, version, ack)["error_code"] == 123
        # the session opens at the end of the log (share.auto.offset.reset=latest): one record to acquire
        assert _share_fetch(sock, 1, group, mid, 0, tid)["error_code"] == 0
        offset = _produce_one(sock, f"s{version}")
        acquired = wait_until(lambda: _share_fetch(sock, 1, group, mid, 1, tid)["responses"], 30,
                              "the new record acquired")[0]["partitions"][0]["acquired_records"]
        assert [(a["first_offset"], a["last_offset"]) for a in acquired] == [(offset, offset)], acquired

        def accept(epoch, first, last):
            r = call(sock, 79, version, {**ack, "share_session_epoch": epoch, "topics": [
                {"topic_id": tid, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                    {"first_offset": first, "last_offset": last, "acknowledge_types": [1]}]}]}]})
            assert r["error_code"] == 0, r
            return r["responses"][0]["partitions"][0]["error_code"]
        assert accept(2, offset, offset + 1) == 42  # INVALID_REQUEST: past the acquired records
        assert accept(3, offset, offset) == 0  # ACCEPT
        assert accept(4, offset, offset) == 0  # now below the start offset: skipped, NONE
        assert call(sock, 79, version, {**ack, "share_session_epoch": -1})["error_code"] == 0
        _share_leave(sock, group, mid)
    elif api_key == 90:
        mid, _ = _share_join(sock, group, tid)
        r = call(sock, 90, version, {"groups": [{"group_id": group, "topics": None},
                                                {"group_id": group + "-none", "topics": None}]})
        g, none = r["groups"]
        p = g["topics"][0]["partitions"][0]
        assert (g["error_code"], g["topics"][0]["topic_name"], p["partition_index"]) == (0, TOPIC, 0)
        # no acknowledgement, release or lock timeout written yet: -1, as Kafka 4.4
        assert (p["error_code"], p["start_offset"]) == (0, -1), p
        assert none["error_code"] == 69
        _share_leave(sock, group, mid)
    elif api_key == 91:
        r = call(sock, 91, version, {"group_id": group, "topics": [
            {"topic_name": TOPIC, "partitions": [{"partition_index": 0, "start_offset": 0}]}]})
        assert r["error_code"] == 0 and r["responses"][0]["partitions"][0]["error_code"] == 0
        r = call(sock, 90, 1, {"groups": [{"group_id": group, "topics": [{"topic_name": TOPIC, "partitions": [0]}]}]})
        assert r["groups"][0]["topics"][0]["partitions"][0]["start_offset"] == 0
    elif api_key == 92:
        call(sock, 91, 0, {"group_id": group, "topics": [
            {"topic_name": TOPIC, "partitions": [{"partition_index": 0, "start_offset": 0}]}]})
        r = call(sock, 92, version, {"group_id": group, "topics": [{"topic_name": TOPIC}]})
        assert r["error_code"] == 0 and r["responses"][0]["error_code"] == 0
        r = call(sock, 90, 1, {"groups": [{"group_id": group, "topics": None}]})
        assert r["groups"][0]["topics"] == []


# ---- share-group state APIs: the share coordinator's answers, initialize to delete --

SHARE_STATE_KEYS = {83, 84, 85, 86, 87}


def check_share_state_version(sock, api_key, version, group, tid):
    """Initialize, write, read, summarise, delete one share-partition's state: `api_key` at
    `version`, the others at v0."""
    def ask(key, part):
        r = call(sock, key, version if key == api_key else 0,
                 {"group_id": group, "topics": [{"topic_id": tid, "partitions": [part]}]})
        (t,) = r["results"]
        (p,) = t["partitions"]
        assert t["topic_id"] == tid and p["partition"] == 0, r
        return p

    read = {"partition": 0, "leader_epoch": 1}
    if api_key in (84, 85):  # before initialize: INVALID_REQUEST, as Kafka's coordinator
        p = ask(84, read) if api_key == 84 else ask(85, {
            "partition": 0, "state_epoch": 0, "leader_epoch": 1, "start_offset": 0,
            "delivery_complete_count": -1, "state_batches": []})
        assert p["error_code"] == 42 and "uninitialized share partition" in p["error_message"], p
    if api_key == 87:
        p = ask(87, read)
        assert (p["error_code"], p["start_offset"]) == (0, -1), p
    assert ask(83, {"partition": 0, "state_epoch": 0, "start_offset": 5})["error_code"] == 0
    batch = {"first_offset": 6, "last_offset": 7, "delivery_state": 0, "delivery_count": 1}
    p = ask(85, {"partition": 0, "state_epoch": 0, "leader_epoch": 1, "start_offset": 6,
                 "delivery_complete_count": 1, "state_batches": [batch]})
    assert p["error_code"] == 0, p
    p = ask(84, read)
    assert (p["error_code"], p["state_epoch"], p["start_offset"], p["state_batches"]) == (0, 0, 6, [batch]), p
    p = ask(87, read)
    assert (p["error_code"], p["state_epoch"], p["leader_epoch"], p["start_offset"]) == (0, 0, 1, 6), p
    assert ask(86, {"partition": 0})["error_code"] == 0
    assert ask(84, read)["error_code"] == 42  # deleted: uninitialized again


# ---- streams groups (KIP-1071): join, describe, leave ----------------

def _streams_heartbeat(sock, version, group, **fields):
    body = {"group_id": group, "member_id": "m-1", "member_epoch": 0, "endpoint_information_epoch": 0,
            "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 30000,
            "topology": {"epoch": 0, "subtopologies": [{
                "subtopology_id": "0", "source_topics": [TOPIC], "source_topic_regex": [], "state_changelog_topics": [],
                "repartition_sink_topics": [], "repartition_source_topics": [], "copartition_groups": []}]},
            "active_tasks": [], "standby_tasks": [], "warmup_tasks": [], "process_id": "p-1", "user_endpoint": None,
            "client_tags": None, "task_offsets": None, "task_end_offsets": None, "shutdown_application": False}
    return call(sock, 88, version, {**body, **fields})


def check_streams_version(sock, api_key, version, group):
    r = _streams_heartbeat(sock, version if api_key == 88 else 1, group)
    assert r["error_code"] == 0 and r["member_id"] == "m-1" and r["member_epoch"] >= 1, r
    epoch = r["member_epoch"]
    if api_key == 88:  # one member: the join's answer carries the whole assignment
        assert r["status"] == [] and r["active_tasks"] == [{"subtopology_id": "0", "partitions": [0]}], r
        assert r["standby_tasks"] == [] and r["warmup_tasks"] == []
        steady = dict(member_epoch=epoch, topology=None, active_tasks=None, standby_tasks=None, warmup_tasks=None,
                      process_id=None)
        hb = _streams_heartbeat(sock, version, group, **steady)
        assert (hb["error_code"], hb["member_epoch"], hb["active_tasks"]) == (0, epoch, None), hb  # unchanged
        stale = _streams_heartbeat(sock, version, group, member_epoch=epoch + 9, topology=None, active_tasks=None,
                                   standby_tasks=None, warmup_tasks=None, process_id=None)
        assert stale["error_code"] == 110, stale  # FENCED_MEMBER_EPOCH
    elif api_key == 89:
        r = call(sock, 89, version, {"group_ids": [group, group + "-none"], "include_authorized_operations": False,
                                     "include_topology_description": False})
        g, none = r["groups"]
        assert (g["error_code"], g["group_id"], [m["member_id"] for m in g["members"]]) == (0, group, ["m-1"]), r
        assert g["topology"]["subtopologies"][0]["source_topics"] == [TOPIC]
        assert (none["error_code"], none["group_epoch"]) == (69, -1)  # GROUP_ID_NOT_FOUND
    elif api_key == 93:
        desc = {"subtopologies": [], "global_stores": []}
        r = call(sock, 93, version, {"group_id": group, "member_id": "m-2", "topology_epoch": 0,
                                     "topology_description": desc})
        assert r["error_code"] == 25, r  # UNKNOWN_MEMBER_ID
        r = call(sock, 93, version, {"group_id": group, "member_id": "m-1", "topology_epoch": 0,
                                     "topology_description": desc})
        assert r["error_code"] == 0, r
        r = call(sock, 93, version, {"group_id": group + "-none", "member_id": "m-1", "topology_epoch": 0,
                                     "topology_description": desc})
        assert r["error_code"] == 69, r
    r = _streams_heartbeat(sock, version if api_key == 88 else 1, group, member_epoch=-1, topology=None,
                           active_tasks=None, standby_tasks=None, warmup_tasks=None, process_id=None)
    assert r["error_code"] == 0 and r["member_epoch"] == -1, r


"""pylog serves every API at the versions Apache Kafka 4.4 serves, and the fields those versions
added mean on pylog what they mean on Kafka.

ApiVersions of a real Kafka 4.4.0 node (the reference peer) is compared with pylog's: every API
both serve has the same range, and each API only Kafka serves is listed below with the reason.
Then the same requests at the new versions go to both (topic ids in Produce 13, OffsetCommit and
OffsetFetch 10, TxnOffsetCommit 6; ApiVersions 5's cluster and node check; Metadata 13's error
code; DescribeGroups 6 and DeleteGroups 3 error messages; DescribeCluster 2; DescribeLogDirs 5;
ListOffsets 11's earliest-pending-upload timestamp) and the answers must be equal once node and
cluster specific values (ids, ports, paths, sizes) are normalised.
"""
from __future__ import annotations

import socket
import time
import uuid

import pytest

from support.broker_fixtures import build_batch, call
from support.kafka_peer import KAFKA_VERSION

pytestmark = pytest.mark.timeout(600)

Z = uuid.UUID(int=0)
UNKNOWN_ID = uuid.UUID("6f1d3c5e-0a4b-4d7e-9c2f-8b1a2d3e4f50")

# APIs Kafka 4.4 serves that have no meaning on one node (README's Compatibility lists them):
# the "Done when" of pylog's ApiVersions is every other API at Kafka 4.4's range
ONE_NODE = {
    34: "AlterReplicaLogDirs: pylog moves no replica between log dirs",
    64: "UnregisterBroker: no controller",
    80: "AddRaftVoter: no KRaft quorum",
    81: "RemoveRaftVoter: no KRaft quorum",
    94: "UnregisterController: no controller",
}
# APIs still to come, with the reason: each leaves this list when it is served
PENDING = {
    38: "CreateDelegationToken: no delegation tokens yet (SASL/SCRAM and PLAIN only)",
    39: "RenewDelegationToken: no delegation tokens yet",
    40: "ExpireDelegationToken: no delegation tokens yet",
    41: "DescribeDelegationToken: no delegation tokens yet",
}
NOT_SERVED = {**ONE_NODE, **PENDING}


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _api_versions(port: int) -> dict:
    with _connect(port) as s:
        r = call(s, 18, 3, {"client_software_name": "pylog-tests", "client_software_version": "1"})
    assert r["error_code"] == 0
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in r["api_keys"]}


def test_reference_peer_is_kafka_4_4():
    assert KAFKA_VERSION == "4.4.0"


def test_every_api_at_kafka_4_4_versions(broker, kafka_node):
    ours, theirs = _api_versions(broker.port), _api_versions(kafka_node.port)
    differ = {k: (ours[k], theirs[k]) for k in ours if k in theirs and ours[k] != theirs[k]}
    assert not differ, f"version ranges differ (pylog, Kafka): {differ}"
    assert not set(ours) - set(theirs), "pylog serves an API Kafka 4.4 does not"
    missing = set(theirs) - set(ours)
    assert missing <= set(NOT_SERVED), f"not served and not explained: {sorted(missing - set(NOT_SERVED))}"
    served_now = set(NOT_SERVED) & set(ours)
    assert not served_now, f"served now: take them out of NOT_SERVED: {sorted(served_now)}"


# ---- the same requests at the new versions --------------------------------------------

def _norm(value, ids: dict):
    """Node- and cluster-specific values replaced by their kind (ids by first-seen order)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in ("port", "node_id", "broker_id", "controller_id", "leader_id") and isinstance(v, int) and v >= 0:
                v = "<node>"
            elif k in ("host", "cluster_id", "log_dir") and isinstance(v, str) and v:
                v = f"<{k}>"
            elif k in ("total_bytes", "usable_bytes", "partition_size"):
                v = "<bytes>"
            elif k == "api_keys":
                v = "<api keys>"
            elif k in ("supported_features", "finalized_features", "finalized_features_epoch"):
                v = "<features>" if v not in ([], -1) else v
            out[k] = _norm(v, ids)
        return out
    if isinstance(value, list):
        return [_norm(v, ids) for v in value]
    if isinstance(value, uuid.UUID) and value not in (Z, UNKNOWN_ID):
        return ids.setdefault(value, f"<topic id {len(ids)}>")
    return value


class Peer:
    """One broker under test: a connection, the node's cluster id and a topic's id."""

    def __init__(self, port: int, topic: str):
        self.port = port
        self.sock = _connect(port)
        self.topic = topic
        md = call(self.sock, 3, 12, {"topics": None, "allow_auto_topic_creation": False,
                                     "include_topic_authorized_operations": False})
        self.cluster_id = md["cluster_id"]
        self.node_id = md["brokers"][0]["node_id"]
        call(self.sock, 19, 7, {"topics": [{"name": topic, "num_partitions": 2, "replication_factor": 1,
                                            "assignments": [], "configs": []}],
                                "timeout_ms": 30000, "validate_only": False})
        deadline = time.monotonic() + 60
        while True:
            md = call(self.sock, 3, 12, {"topics": [{"name": topic, "topic_id": Z}],
                                         "allow_auto_topic_creation": False,
                                         "include_topic_authorized_operations": False})
            t = md["topics"][0]
            if t["error_code"] == 0 and len(t["partitions"]) == 2 and all(p["leader_id"] >= 0 for p in t["partitions"]):
                break
            assert time.monotonic() < deadline, md
            time.sleep(0.2)
        self.topic_id = t["topic_id"]
        # the group coordinator is ready (Kafka creates __consumer_offsets on first lookup)
        deadline = time.monotonic() + 90
        while True:
            r = call(self.sock, 10, 4, {"key_type": 0, "coordinator_keys": ["g44", "missing44"]})
            if all(c["error_code"] == 0 for c in r["coordinators"]):
                break
            assert time.monotonic() < deadline, r
            time.sleep(0.5)

    def ask(self, key: int, version: int, body: dict, fresh: bool = False) -> dict:
        if fresh:  # an answer that may close the connection (ApiVersions errors)
            with _connect(self.port) as s:
                return call(s, key, version, body)
        deadline = time.monotonic() + 60
        while True:
            r = call(self.sock, key, version, body)
            # the coordinator may still be loading its partition just after the lookup
            if not _loading(r) or time.monotonic() > deadline:
                return r
            time.sleep(0.5)


def _loading(r) -> bool:
    codes = set()

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                if k == "error_code":
                    codes.add(x)
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(r)
    return bool(codes & {14, 15, 16})  # COORDINATOR_LOAD_IN_PROGRESS, NOT_AVAILABLE, NOT_COORDINATOR


def _commit(tid, parts, group="g44", version=10):
    return {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "topics": [{"topic_id": tid, "partitions": [
                {"partition_index": p, "committed_offset": off, "committed_leader_epoch": -1, "committed_metadata": md}
                for p, off, md in parts]}]}


def _scenarios(peer: Peer):
    """(name, api key, version, body, fresh connection) in order; later ones see earlier ones' effects."""
    tid = peer.topic_id
    av = {"client_software_name": "pylog-tests", "client_software_version": "1"}
    yield "ApiVersions v5 naming this node", 18, 5, dict(av, cluster_id=peer.cluster_id, node_id=peer.node_id), True
    yield "ApiVersions v5 naming neither", 18, 5, dict(av, cluster_id=None, node_id=-1), True
    yield "ApiVersions v5 another cluster", 18, 5, dict(av, cluster_id="AAAAAAAAAAAAAAAAAAAAAA", node_id=peer.node_id), True
    yield "ApiVersions v5 another node", 18, 5, dict(av, cluster_id=peer.cluster_id, node_id=peer.node_id + 7), True
    yield "ApiVersions v5 node without cluster", 18, 5, dict(av, cluster_id=None, node_id=peer.node_id), True
    yield "ApiVersions v5 cluster without node", 18, 5, dict(av, cluster_id=peer.cluster_id, node_id=-1), True
    md = {"allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    yield "Metadata v13 by id", 3, 13, dict(md, topics=[{"name": None, "topic_id": tid}]), False
    yield "Metadata v13 unknown id", 3, 13, dict(md, topics=[{"name": None, "topic_id": UNKNOWN_ID}]), False
    rec = _records()
    yield "Produce v13 by id", 0, 13, {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [
        {"topic_id": tid, "partition_data": [{"index": 0, "records": rec}, {"index": 7, "records": rec}]},
        {"topic_id": UNKNOWN_ID, "partition_data": [{"index": 0, "records": rec}]}]}, False
    for ts in (-1, -2, -4, -5, -6):
        yield f"ListOffsets v11 timestamp {ts}", 2, 11, {"replica_id": -1, "isolation_level": 0, "timeout_ms": 5000,
                                                         "topics": [{"name": peer.topic, "partitions": [
                                                             {"partition_index": 0, "current_leader_epoch": -1,
                                                              "timestamp": ts}]}]}, False
    yield "OffsetCommit v10 by id", 8, 10, _commit(tid, [(0, 1, "m0"), (1, 0, "")]), False
    yield "OffsetCommit v10 unknown id", 8, 10, _commit(UNKNOWN_ID, [(0, 1, "")]), False
    yield "OffsetFetch v10 by id", 9, 10, {"require_stable": False, "groups": [
        {"group_id": "g44", "member_id": None, "member_epoch": -1,
         "topics": [{"topic_id": tid, "partition_indexes": [0, 1]},
                    {"topic_id": UNKNOWN_ID, "partition_indexes": [0]}]}]}, False
    yield "OffsetFetch v10 every partition", 9, 10, {"require_stable": False, "groups": [
        {"group_id": "g44", "member_id": None, "member_epoch": -1, "topics": None}]}, False
    yield "OffsetFetch v9 every partition", 9, 9, {"require_stable": False, "groups": [
        {"group_id": "g44", "member_id": None, "member_epoch": -1, "topics": None}]}, False
    yield "TxnOffsetCommit v6 unknown id", 28, 6, {
        "transactional_id": "t44", "group_id": "g44", "producer_id": 5, "producer_epoch": 0,
        "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"topic_id": UNKNOWN_ID, "partitions": [
            {"partition_index": 0, "committed_offset": 0, "committed_leader_epoch": -1,
             "committed_metadata": ""}]}]}, False
    yield "DescribeGroups v6 missing", 15, 6, {"groups": ["missing44"], "include_authorized_operations": False}, False
    yield "DescribeGroups v5 missing", 15, 5, {"groups": ["missing44"], "include_authorized_operations": False}, False
    yield "DeleteGroups v3 missing", 42, 3, {"groups_names": ["missing44"]}, False
    yield "DeleteGroups v3 empty group", 42, 3, {"groups_names": ["g44"]}, False
    yield "DescribeCluster v2", 60, 2, {"include_cluster_authorized_operations": False, "endpoint_type": 1,
                                        "include_fenced_brokers": True}, False
    yield "DescribeLogDirs v5", 35, 5, {"topics": [{"topic": peer.topic, "partitions": [0]}]}, False
    # partition placement on one node: nothing to elect, nothing moving, nowhere else to go
    named = [{"topic": peer.topic, "partitions": [0, 5]}, {"topic": "missing44", "partitions": [0]}]
    for v in (0, 1, 2):
        yield f"ElectLeaders v{v} named", 43, v, {"election_type": 0, "topic_partitions": named,
                                                   "timeout_ms": 5000}, False
    yield "ElectLeaders v2 unclean", 43, 2, {"election_type": 1, "topic_partitions": named[:1], "timeout_ms": 5000}, False
    yield "ElectLeaders v2 bad type", 43, 2, {"election_type": 5, "topic_partitions": None, "timeout_ms": 5000}, False
    yield "ListPartitionReassignments v0 all", 46, 0, {"timeout_ms": 5000, "topics": None}, False
    yield "ListPartitionReassignments v0 named", 46, 0, {"timeout_ms": 5000, "topics": [
        {"name": peer.topic, "partition_indexes": [0, 9]}, {"name": "missing44", "partition_indexes": [0]}]}, False
    for v in (0, 1):
        yield f"AlterPartitionReassignments v{v}", 45, v, {
            "timeout_ms": 5000, "allow_replication_factor_change": True, "topics": [
                {"name": peer.topic, "partitions": [{"partition_index": 0, "replicas": [peer.node_id]},
                                                    {"partition_index": 1, "replicas": None},
                                                    {"partition_index": 7, "replicas": [peer.node_id]}]},
                {"name": "missing44", "partitions": [{"partition_index": 0, "replicas": [peer.node_id]}]}]}, False
    yield "AlterPartitionReassignments v1 invalid", 45, 1, {
        "timeout_ms": 5000, "allow_replication_factor_change": False, "topics": [
            {"name": peer.topic, "partitions": [{"partition_index": 0, "replicas": [peer.node_id + 1]},
                                                {"partition_index": 1, "replicas": [peer.node_id, peer.node_id]}]}]}, False
    yield "AlterPartitionReassignments v1 empty list", 45, 1, {
        "timeout_ms": 5000, "allow_replication_factor_change": True, "topics": [
            {"name": peer.topic, "partitions": [{"partition_index": 1, "replicas": []}]}]}, False
    yield "AlterPartitionReassignments v1 nothing", 45, 1, {
        "timeout_ms": 5000, "allow_replication_factor_change": True, "topics": []}, False


def _records() -> bytes:
    return bytes(build_batch([(b"k", b"v", [])], base_timestamp=1_700_000_000_000))


def _sorted_parts(r):
    """Kafka lists failed partitions of a request before the others: compare as sets."""
    for key in ("topics", "responses"):
        for t in r.get(key) or ():
            for pk in ("partitions", "partition_responses"):
                if pk in t:
                    t[pk] = sorted(t[pk], key=lambda p: p.get("partition_index", p.get("index", 0)))
        if key in r and isinstance(r[key], list):
            r[key] = sorted(r[key], key=lambda t: (str(t.get("name")), str(t.get("topic_id"))))
    for key, pk in (("replica_election_results", "partition_result"), ("responses", "partitions")):
        for t in r.get(key) or ():
            if pk in t:
                t[pk] = sorted(t[pk], key=lambda p: p.get("partition_id", p.get("partition_index", 0)))
        if isinstance(r.get(key), list):
            r[key] = sorted(r[key], key=lambda t: str(t.get("topic", t.get("name"))))
    for g in r.get("groups") or ():
        if isinstance(g, dict) and "topics" in g:
            _sorted_parts(g)
    return r


def test_new_versions_answer_as_kafka(broker, kafka_node):
    theirs_peer, ours_peer = Peer(kafka_node.port, "v44"), Peer(broker.port, "v44")
    mismatches = []
    for (name, key, version, kbody, fresh), (_, _, _, pbody, _) in zip(_scenarios(theirs_peer), _scenarios(ours_peer)):
        theirs = _sorted_parts(_norm(theirs_peer.ask(key, version, kbody, fresh), {}))
        ours = _sorted_parts(_norm(ours_peer.ask(key, version, pbody, fresh), {}))
        if theirs != ours:
            mismatches.append(f"{name}:\n  Kafka: {theirs}\n  pylog: {ours}")
    assert not mismatches, "\n".join(mismatches)

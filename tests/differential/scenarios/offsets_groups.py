"""Offsets and classic groups: commits to unknown topics and partitions at every OffsetCommit
version, generations, fetches, deletes, the classic join/sync/heartbeat/leave cycle."""

T = "o-{u}"


def commit(v, topic=T, partition=0, offset=5, group="og-{u}", gen=-1, member="", metadata=""):
    body = {"group_id": group, "generation_id_or_member_epoch": gen, "member_id": member,
            "group_instance_id": None, "retention_time_ms": -1,
            "topics": [{"name": topic, "partitions": [{"partition_index": partition, "committed_offset": offset,
                                                      "committed_leader_epoch": -1, "committed_metadata": metadata,
                                                      "commit_timestamp": -1}]}]}
    return {"api": "OffsetCommit", "v": v, "body": body}


def fetch(v=8, topic=T, partitions=(0, 1), group="og-{u}"):
    if v >= 8:
        body = {"groups": [{"group_id": group, "topics": [{"name": topic, "partition_indexes": list(partitions)}]}],
                "require_stable": False}
    else:
        body = {"group_id": group, "topics": [{"name": topic, "partition_indexes": list(partitions)}],
                "require_stable": False}
    return {"api": "OffsetFetch", "v": v, "body": body}


def join(member="", group="og-{u}", v=9):
    return {"api": "JoinGroup", "v": v, "body": {
        "group_id": group, "session_timeout_ms": 30000, "rebalance_timeout_ms": 30000, "member_id": member,
        "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": {"subscription": [T]}}], "reason": None}}


def sync(member, gen, group="og-{u}"):
    return {"api": "SyncGroup", "v": 5, "body": {"group_id": group, "generation_id": gen, "member_id": member,
                                                 "group_instance_id": None, "protocol_type": "consumer",
                                                 "protocol_name": "range",
                                                 "assignments": [{"member_id": member, "assignment": b"\x00"}]}}


def heartbeat(member, gen, group="og-{u}"):
    return {"api": "Heartbeat", "v": 4, "body": {"group_id": group, "generation_id": gen, "member_id": member,
                                                 "group_instance_id": None}}


def leave(member, group="og-{u}"):
    return {"api": "LeaveGroup", "v": 5, "body": {"group_id": group, "members": [
        {"member_id": member, "group_instance_id": None, "reason": None}]}}


def describe(group="og-{u}"):
    return {"api": "DescribeGroups", "v": 5, "body": {"groups": [group], "include_authorized_operations": False}}


def delete(group="og-{u}"):
    return {"api": "DeleteGroups", "v": 2, "body": {"groups_names": [group]}}


def offset_delete(topic=T, group="og-{u}"):
    return {"api": "OffsetDelete", "v": 0, "body": {"group_id": group, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0}]}]}}


MID = "$0.member_id"
GEN = "$1.generation_id"
CLASSIC = [join(), join(MID), sync(MID, GEN)]  # MEMBER_ID_REQUIRED, then the member's join, then sync

SEQUENCES = [
    ("commit-fetch", [commit(8), fetch()]),
    ("commit-unknown-partition", [commit(8, partition=9), fetch(partitions=(9,))]),
    ("commit-generation-to-unknown-group", [commit(8, gen=3, member="m")]),
    ("commit-metadata-too-large", [commit(8, metadata="x" * 5000)]),
    ("fetch-unknown-group", [fetch()]),
    ("fetch-unknown-topic", [fetch(topic="nx-{u}")]),
    ("delete-unknown-group", [delete()]),
    ("delete-simple-group", [commit(8), delete(), fetch()]),
    ("offset-delete", [commit(8), offset_delete(), fetch()]),
    ("offset-delete-unknown-group", [offset_delete()]),
    ("classic-cycle", CLASSIC + [heartbeat(MID, GEN), commit(8, gen=GEN, member=MID), fetch(), describe(),
                                 leave(MID), describe()]),
    ("classic-wrong-generation", CLASSIC + [commit(8, gen=99, member=MID), heartbeat(MID, 99)]),
    ("classic-unknown-member-commit", CLASSIC + [commit(8, gen=GEN, member="zz")]),
    ("classic-admin-commit-to-active-group", CLASSIC + [commit(8)]),
    ("classic-delete-non-empty", CLASSIC + [delete()]),
    ("classic-delete-after-leave", CLASSIC + [leave(MID), delete(), describe()]),
    ("classic-offset-delete-subscribed", CLASSIC + [commit(8, gen=GEN, member=MID), offset_delete()]),
    ("classic-txn-offset-commit-wrong-generation", CLASSIC + [
        {"api": "InitProducerId", "v": 4, "body": {"transactional_id": "otx-{u}", "transaction_timeout_ms": 60000,
                                                   "producer_id": -1, "producer_epoch": -1}},
        {"api": "AddOffsetsToTxn", "v": 3, "body": {"transactional_id": "otx-{u}", "producer_id": "$3.producer_id",
                                                    "producer_epoch": "$3.producer_epoch", "group_id": "og-{u}"}},
        {"api": "TxnOffsetCommit", "v": 3, "body": {
            "transactional_id": "otx-{u}", "group_id": "og-{u}", "producer_id": "$3.producer_id",
            "producer_epoch": "$3.producer_epoch", "generation_id": 99, "member_id": MID, "group_instance_id": None,
            "topics": [{"name": T, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                   "committed_leader_epoch": -1, "committed_metadata": ""}]}]}},
        {"api": "EndTxn", "v": 3, "body": {"transactional_id": "otx-{u}", "producer_id": "$3.producer_id",
                                           "producer_epoch": "$3.producer_epoch", "committed": False}}]),
    ("heartbeat-unknown-group", [heartbeat("m", 1)]),
    ("sync-unknown-group", [sync("m", 1)]),
    ("leave-unknown-group", [leave("m")]),
    ("describe-unknown-group", [describe()]),
]

SCENARIOS = [{"name": f"offsets {label}", "topics": {T: 2}, "steps": steps} for label, steps in SEQUENCES]
# every OffsetCommit version pylog serves: a known partition, an unknown topic, an unknown partition
for v in range(2, 10):
    for what, topic, part in (("known", T, 0), ("unknown-topic", "nx-{u}", 0), ("unknown-partition", T, 5)):
        SCENARIOS.append({"name": f"offsets commit v{v} {what}", "topics": {T: 2},
                          "steps": [commit(v, topic=topic, partition=part), fetch(v=min(v, 8), topic=topic,
                                                                                   partitions=(part,))]})

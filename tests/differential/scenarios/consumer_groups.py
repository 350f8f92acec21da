"""KIP-848 member lifecycles: join, heartbeat, leave, static leave and rejoin, fencing, errors,
epochs on offset commits and fetches. Topic `c-{u}` (2 partitions) is each scenario's own."""

TOPIC = "c-{u}"


def hb(member, epoch=0, topics=(TOPIC,), instance=None, owned=(), group="cg-{u}", rebalance=30000,
       regex=None, assignor=None, **kw):
    return {"api": "ConsumerGroupHeartbeat", "v": 1, "body": {
        "group_id": group, "member_id": member, "member_epoch": epoch, "instance_id": instance, "rack_id": None,
        "rebalance_timeout_ms": rebalance if epoch == 0 else -1,
        "subscribed_topic_names": list(topics) if topics is not None and epoch == 0 else None,
        "subscribed_topic_regex": regex, "server_assignor": assignor,
        "topic_partitions": owned if isinstance(owned, str) else list(owned) if epoch == 0 else None}, **kw}


def describe(group="cg-{u}"):
    return {"api": "ConsumerGroupDescribe", "v": 1, "body": {"group_ids": [group],
                                                             "include_authorized_operations": False}}


def commit(member, epoch, offset=5, v=9, group="cg-{u}", partition=0):
    return {"api": "OffsetCommit", "v": v, "body": {
        "group_id": group, "generation_id_or_member_epoch": epoch, "member_id": member, "group_instance_id": None,
        "topics": [{"name": TOPIC, "partitions": [{"partition_index": partition, "committed_offset": offset,
                                                  "committed_leader_epoch": -1, "committed_metadata": ""}]}]}}


def fetch(member, epoch, group="cg-{u}"):
    return {"api": "OffsetFetch", "v": 9, "body": {"groups": [{"group_id": group, "member_id": member,
                                                              "member_epoch": epoch, "topics": [
                                                                  {"name": TOPIC, "partition_indexes": [0, 1]}]}],
                                                   "require_stable": False}}


M1, M2 = "m1-{u}", "m2-{u}"
E0 = "$0.member_epoch"
OWNED0 = "$0.assignment.topic_partitions"

LIFECYCLES = [
    ("join-heartbeat-leave", [hb(M1), hb(M1, E0), describe(), hb(M1, -1), describe()]),
    ("join-twice-same-member", [hb(M1), hb(M1), describe()]),
    ("unknown-member", [hb("zz-{u}", 3)]),
    ("fenced-epoch", [hb(M1), hb(M1, 99), hb(M1, 0)]),
    ("leave-unknown-group", [hb(M1, -1, group="nx-{u}")]),
    ("leave-unknown-member", [hb(M1), hb(M2, -1)]),
    ("static-leave-rejoin", [hb(M1, instance="i1"), hb(M1, -2, instance="i1"), describe(),
                             hb(M2, instance="i1"), describe()]),
    ("static-rejoin-while-active", [hb(M1, instance="i1"), hb(M2, instance="i1"), describe()]),
    ("static-same-member-rejoins", [hb(M1, instance="i1"), hb(M1, instance="i1"), describe()]),
    ("static-wrong-member-heartbeat", [hb(M1, instance="i1"), hb(M2, E0, instance="i1")]),
    ("static-leave-wrong-member", [hb(M1, instance="i1"), hb(M2, -2, instance="i1")]),
    ("static-full-leave", [hb(M1, instance="i1"), hb(M1, -1, instance="i1"), describe()]),
    ("invalid-regex", [hb(M1, topics=None, regex="[unclosed")]),
    ("unknown-assignor", [hb(M1, assignor="nonsense")]),
    ("uniform-assignor", [hb(M1, assignor="uniform"), describe()]),
    ("no-rebalance-timeout", [hb(M1, rebalance=-1)]),
    ("empty-group-id", [hb(M1, group="")]),
    ("empty-member-id", [hb("")]),
    ("no-subscription", [hb(M1, topics=None)]),
    ("unknown-topic-subscription", [hb(M1, topics=("nx-{u}",)), describe()]),
    # Kafka says Assigning until its assignment job has run; pylog assigns at once (Reconciling)
    ("two-members", [hb(M1), hb(M2), {**describe(), "ignore": ["group_state"]}]),
    ("commit-current-epoch", [hb(M1), commit(M1, E0), fetch(M1, E0)]),
    ("commit-future-epoch", [hb(M1), commit(M1, 99)]),
    ("commit-unknown-member", [hb(M1), commit("zz-{u}", E0)]),
    ("commit-unknown-group-v9", [commit(M1, 1, group="nx-{u}")]),
    ("commit-classic-generation-to-consumer-group", [hb(M1), commit(M1, E0, v=8)]),
    ("commit-admin-to-consumer-group", [hb(M1), commit("", -1, v=8)]),
    ("fetch-unknown-member", [hb(M1), fetch("zz-{u}", E0)]),
    ("fetch-stale-epoch", [hb(M1), fetch(M1, 99)]),
    ("fetch-without-member", [hb(M1), fetch(None, -1)]),
    ("classic-join-on-consumer-group", [hb(M1), {"api": "JoinGroup", "v": 9, "body": {
        "group_id": "cg-{u}", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": "",
        "group_instance_id": None, "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}],
        "reason": None}}]),
    ("delete-non-empty-consumer-group", [hb(M1), {"api": "DeleteGroups", "v": 2,
                                                  "body": {"groups_names": ["cg-{u}"]}}]),
    ("delete-after-leave", [hb(M1), hb(M1, -1), {"api": "DeleteGroups", "v": 2, "body": {"groups_names": ["cg-{u}"]}},
                            describe()]),
    ("describe-unknown", [describe("nx-{u}")]),
    ("list-groups-by-type", [hb(M1), {"api": "ListGroups", "v": 5, "body": {"states_filter": [],
                                                                           "types_filter": ["consumer"]},
                                      "ignore": ["group_state"]}]),
]

# Kafka 4.3 computes target assignments off the heartbeat path and bumps a new group's epoch
# twice on the first join; pylog assigns within the heartbeat. Epochs and assignments are
# compared by the tests that wait for them to settle (test_deviations), not step by step here.
SETTLING = ["member_epoch", "group_epoch", "assignment_epoch", "assignment", "target_assignment", "group_state"]

SCENARIOS = [{"name": f"kip848 {label}", "topics": {TOPIC: 2}, "steps": steps, "ignore": SETTLING,
              **({"known": rest[0]} if rest else {})} for label, steps, *rest in LIFECYCLES]

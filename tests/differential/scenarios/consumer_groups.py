"""KIP-848 member lifecycles: join, heartbeat, leave, static leave and rejoin, fencing, errors,
epochs on offset commits and fetches. Topic `c-{u}` (2 partitions) is each scenario's own."""

TOPIC = "c-{u}"


def hb(member, epoch=0, topics=(TOPIC,), instance=None, owned=(), group="cg-{u}", rebalance=30000,
       regex=None, assignor=None, full=False, **kw):
    """A heartbeat; `full`: with everything a joining member sends (after a lost answer)."""
    first = epoch == 0 or full
    return {"api": "ConsumerGroupHeartbeat", "v": 1, "body": {
        "group_id": group, "member_id": member, "member_epoch": epoch, "instance_id": instance, "rack_id": None,
        "rebalance_timeout_ms": rebalance if first else -1,
        "subscribed_topic_names": list(topics) if topics is not None and first else None,
        "subscribed_topic_regex": regex, "server_assignor": assignor,
        "topic_partitions": owned if isinstance(owned, (str, dict)) else list(owned) if epoch == 0 or owned or full
        else None}, **kw}


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


def owns(ref_step, *partitions):
    """The owned-partitions list of a heartbeat: `partitions` of the topic step `ref_step` was given."""
    return [{"topic_id": f"${ref_step}.assignment.topic_partitions.0.topic_id", "partitions": list(partitions)}]


def given(*partitions, **kw):
    """Repeat the heartbeat until the answer assigns exactly `partitions` (Kafka assigns a moment
    after the heartbeat that changed the group; pylog within it)."""
    return {"repeat_until": {"assignment.topic_partitions.0.partitions": list(partitions)}, **kw}


# These lifecycles wait for each assignment (given), so the assignment itself is compared
# (topic ids are each broker's own); epochs still move differently (SETTLING) and are only used.
# A join's own answer is not compared (Kafka may assign a moment later); a full heartbeat
# after it (owning nothing yet) answers the member's assignment on both.
def joined(member, **kw):
    """A join, then full heartbeats until it owns both partitions (two steps)."""
    return [{**hb(member, **kw), "ignore": ["assignment"]},
            hb(member, "@epoch", owned=[], full=True, **kw, **given(0, 1))]


def settled_steps(*parts):
    """Steps with "@epoch" (in a member_epoch) meaning the epoch step 1 answered."""
    steps = [st for part in parts for st in (part if isinstance(part, list) else [part])]
    for st in steps:
        if st["body"].get("member_epoch") == "@epoch":
            st["body"]["member_epoch"] = "$0.member_epoch" if st is steps[1] else "$1.member_epoch"
    return steps


E1 = "$1.member_epoch"
# m1 owns both (steps 0-1); m2 joins (2); m1 is asked to give partition 1 up (3) and does (4)
ONE_REBALANCE = [joined(M1), {**hb(M2), "ignore": ["assignment"]}, hb(M1, E1, owned=owns(1, 0, 1), **given(0)),
                 hb(M1, E1, owned=owns(1, 0))]
SETTLED = [
    # an older epoch commits for partitions owned since then; not for one given up, nor from the future
    ("commit-older-epoch-owned-since", ONE_REBALANCE + [
        commit(M1, E1, partition=0), commit(M1, E1, partition=1), commit(M1, "$4.member_epoch", partition=0),
        fetch(M1, "$4.member_epoch")]),
    # a static member leaving (-2) while it revokes: the partition it held goes to m2 at once
    ("static-leave-while-revoking", [
        joined(M1, instance="i1"), {**hb(M2), "ignore": ["assignment"]},
        hb(M1, E1, instance="i1", owned=owns(1, 0, 1), **given(0)), hb(M1, -2, instance="i1"),
        hb(M2, "$2.member_epoch", **given(1))]),
    # a regex member's full heartbeat gets its assignment back; a plain one nothing new
    ("regex-full-heartbeat", [
        joined(M1, topics=None, regex="c-{u}"),
        hb(M1, E1, topics=None, regex="c-{u}", owned=owns(1, 0, 1), full=True), hb(M1, E1)]),
]
SETTLED = [(label, settled_steps(*parts)) for label, parts in SETTLED]
SCENARIOS += [{"name": f"kip848 {label}", "topics": {TOPIC: 2}, "steps": steps,
               "ignore": [f for f in SETTLING if f not in ("assignment", "target_assignment")]}
              for label, steps in SETTLED]

"""What an admin or a client sees, beside the state machines: ListTransactions' duration filter
(v1+), DescribeTransactions and OffsetFetch for topics the caller may not describe, and
Produce's record_errors listing every bad record of a batch."""

T = "dt"
FIXED_TS = 1_700_000_000_000


def init(tid="tx-{u}"):
    return {"api": "InitProducerId", "v": 4, "body": {"transactional_id": tid, "transaction_timeout_ms": 60000,
                                                      "producer_id": -1, "producer_epoch": -1}}


P, E = "$0.producer_id", "$0.producer_epoch"


def add(topics, **kw):
    return {"api": "AddPartitionsToTxn", "v": 3, "body": {
        "v3_and_below_transactional_id": "tx-{u}", "v3_and_below_producer_id": P, "v3_and_below_producer_epoch": E,
        "v3_and_below_topics": [{"name": t, "partitions": [0]} for t in topics]}, **kw}


def end(commit):
    return {"api": "EndTxn", "v": 3, "body": {"transactional_id": "tx-{u}", "producer_id": P, "producer_epoch": E,
                                              "committed": commit}}


def settled(who="admin"):
    return {"api": "DescribeTransactions", "v": 0, "as": who, "body": {"transactional_ids": ["tx-{u}"]},
            "ignore": ["transaction_timeout_ms"],
            "repeat_until": {"transaction_states.0.transaction_state": "!Prepare"}}


def listing(v, duration, **kw):
    body = {"state_filters": [], "producer_id_filters": [P], "duration_filter": duration}
    if v >= 2:
        body["transactional_id_pattern"] = "tx-{u}"
    return {"api": "ListTransactions", "v": v, "body": body, **kw}


def duration_scenarios(v):
    return [
        # a transactional id with no transaction yet (Empty, no start time)
        ("empty", [init(), listing(v, 0), listing(v, 600000)]),
        ("ongoing", [init(), add([T]), listing(v, 0, wait_ms=1500), listing(v, 1000), listing(v, 600000), end(False)]),
        ("completed", [init(), add([T]), end(True), settled(), listing(v, 0, wait_ms=1500), listing(v, 1000),
                       listing(v, 600000)]),
    ]


def describe(who):
    return {"api": "DescribeTransactions", "v": 0, "as": who, "body": {"transactional_ids": ["tx-{u}", "ty-{u}"]},
            "ignore": ["transaction_timeout_ms"]}


def commit(topic):
    return {"api": "OffsetCommit", "v": 8, "body": {
        "group_id": "g-{u}", "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 2,
                                                   "committed_leader_epoch": -1, "committed_metadata": "m"}]}]}}


def fetch_offsets(v, who, topics):
    named = None if topics is None else [{"name": t, "partition_indexes": [0]} for t in topics]
    if v >= 8:
        body = {"groups": [{"group_id": "g-{u}", "topics": named}], "require_stable": False}
    else:
        body = {"group_id": "g-{u}", "topics": named, "require_stable": False}
    return {"api": "OffsetFetch", "v": v, "as": who, "body": body}


# bob: DESCRIBE on its own transactional id, group and on one of the two topics
BOB_ACLS = [("bob", "TRANSACTIONAL_ID", "tx-{u}", "DESCRIBE"), ("bob", "GROUP", "g-{u}", "DESCRIBE"),
            ("bob", "TOPIC", "seen-{u}", "DESCRIBE")]
TOPICS = {"seen-{u}": 1, "hidden-{u}": 1}

SCENARIOS = []
for v in (1, 2):
    for label, steps in duration_scenarios(v):
        SCENARIOS.append({"name": f"admin list-transactions duration {label} v{v}", "steps": steps})

SCENARIOS.append({"name": "admin describe-transactions hides topics", "topics": TOPICS, "acls": BOB_ACLS,
                  "steps": [init(), add(["seen-{u}", "hidden-{u}", T]), describe("admin"), describe("bob"),
                            describe("p-transactionalid-describe"), describe("p-topic-describe"),
                            describe("nobody"), end(False)]})

for v in (1, 5, 7, 8):
    SCENARIOS.append({"name": f"admin offset-fetch hides topics v{v}", "topics": TOPICS, "acls": BOB_ACLS, "steps": [
        commit("seen-{u}"), commit("hidden-{u}"), commit(T),
        *[fetch_offsets(v, who, topics) for who in ("admin", "bob", "p-group-describe", "p-group-read")
          for topics in (["seen-{u}", "hidden-{u}", "nx-{u}"], None) if v >= 2 or topics is not None]]})


def produce(records, topic="r-{u}"):
    return {"api": "Produce", "v": 9, "body": {"transactional_id": None, "acks": -1, "timeout_ms": 5000,
                                               "topic_data": [{"name": topic, "partition_data": [
                                                   {"index": 0, "records": records}]}]}}


def bad_records(label, configs, keys, stamps):
    for codec in (0, 4):
        records = {"values": ["a", "b", "c", "d"], "keys": keys, "timestamps": stamps, "codec": codec}
        SCENARIOS.append({"name": f"produce record-errors {label} codec-{codec}", "topics": {"r-{u}": 1},
                          "topic_configs": {"r-{u}": configs}, "steps": [produce(records)]})


NOW = "now"
HOUR = {"message.timestamp.before.max.ms": 3600000}
bad_records("compacted-no-keys", {"cleanup.policy": "compact"}, ["k", None, "k", None], [NOW] * 4)
bad_records("compacted-all-no-keys", {"cleanup.policy": "compact"}, None, [NOW] * 4)
bad_records("timestamps-too-old", HOUR, None, [NOW, FIXED_TS, NOW, FIXED_TS])
bad_records("timestamps-too-new", {"message.timestamp.after.max.ms": 3600000}, None,
            [NOW, 4_000_000_000_000, 4_000_000_000_000, NOW])
bad_records("key-and-timestamp", {"cleanup.policy": "compact", **HOUR}, [None, "k", "k", None],
            [NOW, FIXED_TS, NOW, FIXED_TS])
bad_records("keys-only-when-timestamps-fine", {"cleanup.policy": "compact", **HOUR}, [None, "k", None, "k"],
            [NOW] * 4)

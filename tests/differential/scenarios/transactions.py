"""The transaction state machine: init, fence, KIP-360 re-init, add, end, timeout, offsets in a
transaction, the admin's view (DescribeTransactions, ListTransactions). Each sequence runs at
several request versions, on brokers at transaction.version 2 (both brokers' default) and at
transaction.version 1 ("transaction_version": 1: the harness starts both at that level). The
level-2 client's sequences (Produce v12 and TxnOffsetCommit v5 adding implicitly, EndTxn v5
bumping the epoch) run at both levels too. `$N.field` is step N's answer on the same broker."""

from pylog.core.errors import ErrorCode

T = "dt"


def init(v=4, tid="tx-{u}", pid=-1, epoch=-1, timeout=60000, **kw):
    return {"api": "InitProducerId", "v": v, "body": {"transactional_id": tid, "transaction_timeout_ms": timeout,
                                                      "producer_id": pid, "producer_epoch": epoch}, **kw}


def add(v, pid, epoch, topics=((T, 0),), tid="tx-{u}", **kw):
    by = {}
    for t, p in topics:
        by.setdefault(t, []).append(p)
    return {"api": "AddPartitionsToTxn", "v": v, "body": {
        "v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid, "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in by.items()]}, **kw}


def end(v, pid, epoch, commit=True, tid="tx-{u}", **kw):
    return {"api": "EndTxn", "v": v, "body": {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                              "committed": commit}, **kw}


def add_offsets(v, pid, epoch, group="g-{u}", **kw):
    return {"api": "AddOffsetsToTxn", "v": v, "body": {"transactional_id": "tx-{u}", "producer_id": pid,
                                                       "producer_epoch": epoch, "group_id": group}, **kw}


def txn_commit(v, pid, epoch, topic=T, offset=1, group="g-{u}", generation=-1, member="", **kw):
    return {"api": "TxnOffsetCommit", "v": v, "body": {
        "transactional_id": "tx-{u}", "group_id": group, "producer_id": pid, "producer_epoch": epoch,
        "generation_id_or_member_epoch": generation, "member_id": member, "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": offset,
                                                   "committed_leader_epoch": -1, "committed_metadata": ""}]}]}, **kw}


def describe(**kw):
    return {"api": "DescribeTransactions", "v": 0, "body": {"transactional_ids": ["tx-{u}"]},
            "ignore": ["transaction_timeout_ms"], **kw}


def settled(**kw):
    """DescribeTransactions once the markers are written: Kafka answers EndTxn after the
    Prepare record and writes the markers after; pylog writes them before it answers."""
    return {**describe(), "repeat_until": {"transaction_states.0.transaction_state": "!Prepare"}, **kw}


def offsets(group="g-{u}", topic=T):
    return {"api": "OffsetFetch", "v": 8, "body": {"groups": [{"group_id": group, "topics": [
        {"name": topic, "partition_indexes": [0]}]}], "require_stable": True},
        "repeat_until": {"groups.0.topics.0.partitions.0.error_code": 0}}


def produce(pid, epoch, seq=0, v=9, tid="tx-{u}", topic=T):
    return {"api": "Produce", "v": v, "body": {"transactional_id": tid, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": {
            "values": ["t"], "producer_id": pid, "producer_epoch": epoch, "base_sequence": seq,
            "transactional": True}}]}]}, "ignore": ["base_offset"]}


P, E = "$0.producer_id", "$0.producer_epoch"
CONCURRENT_TRANSACTIONS = int(ErrorCode.CONCURRENT_TRANSACTIONS)


def sequences(av, ev, iv):
    """(label, steps) of one version combination: AddPartitionsToTxn av, EndTxn ev, InitProducerId iv."""
    return [
        ("commit-empty-then-retry", [init(iv), add(av, P, E), end(ev, P, E), settled(), end(ev, P, E),
                                     end(ev, P, E, False), describe()]),
        ("abort-then-retry", [init(iv), add(av, P, E), end(ev, P, E, False), settled(), end(ev, P, E, False),
                              end(ev, P, E, True), describe()]),
        ("abort-nothing-added", [init(iv), end(ev, P, E, False), describe()]),
        ("commit-nothing-added", [init(iv), end(ev, P, E, True), describe()]),
        ("reinit-fences-old-epoch", [init(iv), init(iv), add(av, P, E), end(ev, P, E), settled()]),
        ("wrong-producer-id", [init(iv), add(av, 987654, E), end(ev, 987654, E)]),
        ("unknown-transactional-id", [add(av, 4242, 0, tid="nx-{u}"), end(ev, 4242, 0, tid="nx-{u}")]),
        ("unknown-topic", [init(iv), add(av, P, E, topics=(("nx-{u}", 0), (T, 0))), describe()]),
        ("unknown-partition", [init(iv), add(av, P, E, topics=((T, 7),)), describe()]),
        ("internal-topic", [init(iv), add(av, P, E, topics=(("__consumer_offsets", 0),))]),
        ("produce-and-commit", [init(iv), add(av, P, E), produce(P, E), end(ev, P, E), settled()]),
        ("produce-not-added", [init(iv), produce(P, E), add(av, P, E), end(ev, P, E, False)]),
        ("offsets-in-transaction", [init(iv), add_offsets(ev, P, E), txn_commit(ev, P, E, offset=2), end(ev, P, E),
                                    offsets()]),
        ("offsets-without-add-offsets", [init(iv), txn_commit(ev, P, E), end(ev, P, E, False)]),
        ("offsets-aborted", [init(iv), add_offsets(ev, P, E), txn_commit(ev, P, E, offset=3),
                             end(ev, P, E, False), offsets()]),
        ("offsets-unknown-topic", [init(iv), add_offsets(ev, P, E), txn_commit(ev, P, E, topic="nx-{u}"),
                                   end(ev, P, E, False)]),
    ]


def txn_commit_v6(pid, epoch, topic_id, generation=-1, member="", group="g-{u}"):
    """TxnOffsetCommit v6 names the topic by id (`topic_id`: a `$N` reference)."""
    return {"api": "TxnOffsetCommit", "v": 6, "body": {
        "transactional_id": "tx-{u}", "group_id": group, "producer_id": pid, "producer_epoch": epoch,
        "generation_id_or_member_epoch": generation, "member_id": member, "group_instance_id": None,
        "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                          "committed_leader_epoch": -1, "committed_metadata": ""}]}]}}


METADATA_DT = {"api": "Metadata", "v": 12, "body": {"topics": [{"name": T, "topic_id": None}],
                                                    "allow_auto_topic_creation": False,
                                                    "include_topic_authorized_operations": False}}
V6 = [
    # a member's commit to a group that does not exist: v6 names it, older versions say ILLEGAL_GENERATION
    ("offsets-v6-unknown-group", [init(), METADATA_DT, add_offsets(3, P, E),
                                  txn_commit_v6(P, E, "$1.topics.0.topic_id", generation=3, member="m"),
                                  txn_commit(3, P, E, generation=3, member="m"),
                                  txn_commit_v6(P, E, "$1.topics.0.topic_id"), end(3, P, E, False)]),
]

KIP360 = V6 + [
    # a producer recovering with its current epoch bumps it; the retry gets the same epoch
    ("kip360-recover", [init(), init(pid=P, epoch=E), init(pid=P, epoch=E), describe()]),
    # a re-init by another producer: the old epoch is fenced for good
    ("kip360-fenced", [init(), init(), init(pid=P, epoch=E), describe()]),
    ("kip360-unknown-producer", [init(), init(pid=987654, epoch=0)]),
    # the re-init aborts the open transaction, answering CONCURRENT_TRANSACTIONS until the abort is
    # done; then at level 2 the bumped epoch, at level 1 PRODUCER_FENCED (the abort took the epoch)
    ("kip360-during-transaction", [init(), add(3, P, E),
                                   init(pid=P, epoch=E, repeat_while={"error_code": CONCURRENT_TRANSACTIONS}),
                                   describe()]),
    ("fresh-init-during-transaction", [init(), add(3, P, E), init(repeat_until={"error_code": 0}), end(3, P, E),
                                       settled()]),
    ("bad-timeout-zero", [init(timeout=0)]),
    ("bad-timeout-huge", [init(timeout=2_000_000_000)]),
    ("timeout-aborts-and-fences", [init(timeout=1000), add(3, P, E), describe(),
                                   {**describe(), "repeat_until": {"transaction_states.0.transaction_state":
                                                                   "CompleteAbort"}},
                                   end(3, P, E)]),
    ("list-by-state", [init(), add(3, P, E), {"api": "ListTransactions", "v": 2, "body": {
        "state_filters": ["Ongoing"], "producer_id_filters": [], "duration_filter": -1,
        "transactional_id_pattern": "tx-{u}"}}, end(3, P, E, False), {"api": "ListTransactions", "v": 2, "body": {
            "state_filters": ["Ongoing", "Nonsense"], "producer_id_filters": [], "duration_filter": -1,
            "transactional_id_pattern": "tx-{u}"}}]),
    ("describe-unknown", [describe()]),
]

def v2_sequences():
    """A level-2 client: no AddPartitionsToTxn/AddOffsetsToTxn; EndTxn v5 answers the producer
    id and epoch of the next transaction ($N.producer_epoch of that step)."""
    def end5(epoch, commit=True, **kw):
        return end(5, P, epoch, commit, **kw)

    return [
        ("produce-and-commit", [init(5), produce(P, E, v=12), end5(E), settled(),
                                produce(P, "$2.producer_epoch", v=12), end5("$2.producer_epoch", False), settled()]),
        ("end-retried", [init(5), produce(P, E, v=12), end5(E), settled(), end5(E), end5(E, False), settled()]),
        ("abort-nothing-added", [init(5), end5(E, False), settled(), end5("$1.producer_epoch", False), settled()]),
        ("commit-nothing-added", [init(5), end5(E), describe()]),
        ("old-epoch-after-end", [init(5), produce(P, E, v=12), end5(E), settled(), produce(P, E, seq=1, v=12),
                                 end5(E, False)]),
        ("offsets-implicitly-added", [init(5), txn_commit(5, P, E, offset=4), end5(E), offsets()]),
        ("offsets-aborted", [init(5), txn_commit(5, P, E, offset=5), end5(E, False), offsets()]),
        ("reinit-fences", [init(5), init(5), produce(P, E, v=12), end5(E)]),
        ("kip360-after-end", [init(5), produce(P, E, v=12), end5(E), settled(),
                              init(5, pid=P, epoch="$2.producer_epoch"), describe()]),
        ("unknown-partition", [init(5), produce(P, E, v=12, topic="nx-{u}"), end5(E, False)]),
        ("timeout-aborts", [init(5, timeout=1000), produce(P, E, v=12),
                            {**describe(), "repeat_until": {"transaction_states.0.transaction_state":
                                                            "CompleteAbort"}}, end5(E)]),
    ]


SCENARIOS = []
for level in (2, 1):
    tv = {} if level == 2 else {"transaction_version": 1}
    at = "" if level == 2 else " tv1"
    for av, ev, iv in ((3, 3, 4), (2, 2, 3), (1, 1, 2), (0, 0, 1)):
        if level == 1 and av < 2:
            continue  # the request versions below 2 change nothing a level could
        for label, steps in sequences(av, ev, iv):
            SCENARIOS.append({"name": f"txn{at} {label} add-v{av} end-v{ev} init-v{iv}", "steps": steps, **tv})
    for label, steps in KIP360:
        SCENARIOS.append({"name": f"txn{at} {label}", "steps": steps, **tv})
    for label, steps in v2_sequences():
        SCENARIOS.append({"name": f"txn{at} v2-client {label}", "steps": steps, **tv})


def old_epoch_sequences():
    """A producer fenced by a second InitProducerId sends each transactional request at each version
    with its old epoch: Kafka 4.4 answers INVALID_PRODUCER_EPOCH or PRODUCER_FENCED by API and version."""
    P, OLD = "$0.producer_id", "$0.producer_epoch"
    for v in range(0, 6):
        yield f"txn-offset-commit-v{v}", [init(5), init(5), txn_commit(v, P, OLD)]
    for v in range(0, 5):
        yield f"add-offsets-v{v}", [init(5), init(5), add_offsets(v, P, OLD)]
    for v in range(0, 6):
        yield f"end-v{v}", [init(5), init(5), end(v, P, OLD)]
    for v in range(0, 4):
        yield f"add-partitions-v{v}", [init(5), init(5), add(v, P, OLD)]
    for v in range(3, 6):
        yield f"init-id-without-epoch-v{v}", [init(5), init(v, pid=P, epoch=-1)]


for label, steps in old_epoch_sequences():
    SCENARIOS.append({"name": f"txn old-epoch {label}", "steps": steps})

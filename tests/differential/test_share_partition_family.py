"""The share-partition family of the differential harness (share_family.py): generated and
scripted sequences of ShareFetch / ShareAcknowledge, with lock expiry, session close and reopen,
members leaving, delivery and in-flight limits, read_committed with aborted transactions, record
and byte limits and a broker restart, run on pylog and on Apache Kafka 4.4; every transcript
(answers, then what a fresh member drains with delivery counts, and DescribeShareGroupOffsets)
must be the same on both.

The sequences of a test run side by side (each has its own topic and share group), so the family
takes a couple of minutes for its few hundred sequences.
"""
from __future__ import annotations

import pytest

import share_family as sf
from support.share_scenarios import on_both  # noqa: F401 - the share brokers' module (tiers)

GENERATED = 300


@pytest.fixture(scope="module")
def brokers(share_brokers):
    return share_brokers


def _check(results: dict) -> None:
    diffs = sf.differences(results)
    assert not diffs, f"{len(diffs)} of {len(results)} sequences differ: {diffs}"
    broken = {n: by["pylog"][-1] for n, by in results.items() if by["pylog"] and by["pylog"][-1][0] == "error"}
    assert not broken, f"sequences that did not run to their end on either broker: {broken}"
    assert all(by["pylog"][-2][0] == "drain" for by in results.values())
    assert all(by["pylog"] for by in results.values())


def test_generated_sequences(brokers):
    seqs = sf.generated(GENERATED)
    kinds = {st for s in seqs for st in ("expiry" if s.expiry else "", "txn" if s.transactional else "") if st}
    assert kinds == {"expiry", "txn"}
    _check(sf.run_all(brokers, seqs, "gen"))


FETCH = {"max_records": 500}


def _scripted() -> list:
    """Sequences written out, one behaviour each."""
    S = sf.Seq
    out = [
        S("types-whole", [10], {}, steps=[("ack", 0, [(0, 1, "accept"), (2, 3, "release"), (4, 5, "reject"),
                                                     (6, 7, "gap")], False), ("fetch", 0, FETCH, None),
                                          ("describe",)]),
        S("types-each", [6], {}, steps=[("fetch", 0, FETCH, [(0, 5, ["accept", "release", "reject", "gap", "accept",
                                                                     "release"])]), ("describe",)]),
        S("gap-past-records", [5, 5], {}, steps=[("ack", 0, [(0, 4, "gap"), (5, 9, "accept")], False), ("describe",)]),
        S("renew-then-expire", [5], {"share_record_lock_duration_ms": sf.EXPIRE_LOCK_MS}, first={"max_records": 5},
          steps=[("ack", 0, [(0, 4, "renew")], True), ("renew_fetch", 0, [(0, 2, "renew")]), ("expire",),
                 ("fetch", 0, FETCH, None)]),
        S("renew-disabled", [5], {"share_renew_acknowledge_enable": "false"},
          steps=[("ack", 0, [(0, 4, "renew")], True), ("renew_fetch", 0, [(0, 4, "renew")]),
                 ("ack", 0, [(0, 4, "accept")], False)]),
        S("overlap", [10], {}, steps=[("raw_fetch", 0, [_b(0, 4), _b(3, 6)]), ("raw_fetch", 0, [_b(5, 9), _b(0, 3)]),
                                      ("raw_fetch", 0, [_b(0, 4), _b(4, 6)]), ("ack", 0, [(0, 9, "accept")], False),
                                      ("produce", [3]), ("fetch", 0, FETCH, None)]),
        S("malformed", [10], {}, steps=[("raw_fetch", 0, [_b(4, 2)]), ("raw_fetch", 0, [_b(0, 4, 9)]),
                                        ("raw_fetch", 0, [{"first_offset": 0, "last_offset": 4,
                                                           "acknowledge_types": [1, 2]}]),
                                        ("raw_fetch", 0, [_b(0, 12)]), ("raw_fetch", 0, [_b(30, 31)]),
                                        ("raw_fetch", 0, [_b(0, 4, 4)])]),
        S("expiry", [4, 4], {"share_record_lock_duration_ms": sf.EXPIRE_LOCK_MS},
          steps=[("expire",), ("fetch", 0, FETCH, None), ("ack", 0, [(0, 3, "accept")], False), ("expire",),
                 ("fetch", 0, FETCH, None)]),
        S("close-reopen", [5, 5], {}, first={"max_records": 5, "batch_size": 5},
          steps=[("close", 0, [(0, 1, "accept")]), ("fetch", 0, FETCH, None), ("close", 0, None),
                 ("fetch", 0, FETCH, [])]),
        S("leave", [6], {}, members=2, steps=[("leave", 0), ("fetch", 1, FETCH, None), ("leave", 1)]),
        S("limit-2", [8], {"share_delivery_count_limit": 2},
          steps=[("ack", 0, [(0, 7, "release")], False), ("fetch", 0, FETCH, None),
                 ("ack", 0, [(0, 7, "release")], False), ("fetch", 0, FETCH, None)]),
        S("limit-6-throttle", [12], {"share_delivery_count_limit": 6},
          steps=[step for _ in range(7) for step in (("ack", 0, [(0, 11, "release")], False),
                                                      ("fetch", 0, FETCH, None))]),
        S("in-flight-cap", [10] * 11, {"share_partition_max_record_locks": 100},
          steps=[("fetch", 0, FETCH, None), ("ack", 0, [(0, 9, "accept"), (50, 59, "release")], False),
                 ("fetch", 0, FETCH, None), ("fetch", 0, FETCH, None)]),
        S("read-committed", [3], {"share_isolation_level": "read_committed"}, transactional=True,
          steps=[("aborted", 3), ("fetch", 0, FETCH, [(0, 2, "accept")]), ("aborted", 1), ("describe",),
                 ("fetch", 0, {"max_records": 2}, None)]),
        S("read-uncommitted-markers", [2], {}, transactional=True,
          steps=[("aborted", 2), ("fetch", 0, FETCH, [(0, 1, "accept")]), ("describe",)]),
        S("record-limit", [10, 10], {}, first={"max_records": 3, "mode": 1},
          steps=[("fetch", 0, {"max_records": 4, "mode": 1}, None), ("fetch", 0, {"max_records": 2, "mode": 0}, None),
                 ("ack", 0, [(0, 9, "release")], False), ("fetch", 0, {"max_records": 5, "mode": 1}, None)]),
        S("byte-limit", [5, 5, 5], {}, first={"max_bytes": 1},
          steps=[("fetch", 0, {"max_bytes": 100}, None), ("fetch", 0, {"max_bytes": 1 << 20}, None)]),
        S("batch-size", [3, 3, 3, 3, 3], {}, first={"max_records": 500, "batch_size": 4},
          steps=[("ack", 0, [(0, 14, "release")], False), ("fetch", 0, {"max_records": 7, "batch_size": 2}, None)]),
        S("two-members", [4, 4, 4], {}, members=2, first={"max_records": 4, "batch_size": 4},
          steps=[("fetch", 1, {"max_records": 4}, None), ("ack", 1, [(0, 3, "accept")], False),
                 ("ack", 0, [(4, 7, "accept")], False), ("close", 0, [(0, 3, "accept")]), ("fetch", 1, FETCH, None)]),
    ]
    return out


def _b(first: int, last: int, t: int = 1) -> dict:
    return {"first_offset": first, "last_offset": last, "acknowledge_types": [t]}


def test_scripted_sequences(brokers):
    _check(sf.run_all(brokers, _scripted(), "scr"))


def _restart_part1() -> list:
    """Share-partitions left in various states, then both brokers restart."""
    S = sf.Seq
    return [
        S("rs-held", [10], {}, first={"max_records": 5, "batch_size": 5}, steps=[]),
        S("rs-acked", [5, 5], {}, steps=[("ack", 0, [(0, 3, "accept"), (4, 6, "release")], False)]),
        S("rs-mixed", [8], {}, steps=[("ack", 0, [(0, 7, ["accept", "reject", "release", "gap", "accept",
                                                         "release", "accept", "accept"])], False)]),
        S("rs-limit", [6], {"share_delivery_count_limit": 2},
          steps=[("ack", 0, [(0, 5, "release")], False), ("fetch", 0, FETCH, None),
                 ("ack", 0, [(0, 2, "release")], False), ("produce", [2])]),
        S("rs-closed", [4, 4], {}, steps=[("close", 0, [(0, 1, "accept")])]),
        S("rs-record-limit", [10], {}, first={"max_records": 3, "mode": 1},
          steps=[("ack", 0, [(0, 2, "accept")], False)]),
        S("rs-throttled", [10], {"share_delivery_count_limit": 4},
          steps=[step for _ in range(3) for step in (("ack", 0, [(0, 9, "release")], False),
                                                      ("fetch", 0, FETCH, None))]),
        S("rs-none", [3], {}, steps=[("ack", 0, [(0, 2, "accept")], False), ("produce", [4])]),
    ]


def _restart_part2(first: list) -> list:
    """The same share-partitions after the restart: a new member fetches until records come (Kafka
    loads the state first), fetches again, then the final state (DescribeShareGroupOffsets only
    after the drain's writes: README)."""
    out = []
    for s in first:
        nxt = sf.Seq(s.name, s.sizes, s.configs, steps=[("fetch", 0, {"max_records": 2}, None)])
        nxt.topic, nxt.group = s.topic, s.group
        out.append(nxt)
    return out


def test_sequences_across_a_broker_restart(brokers, share_pylog, share_kafka):
    seqs = _restart_part1()
    before = sf.run_all(brokers, seqs, "rs", part=1)
    share_pylog.stop_clean()
    share_kafka.restart()
    share_pylog.restart()
    after = sf.run_all(brokers, _restart_part2(seqs), "rs", part=2)
    _check({n: {b: before[n][b] + after[n][b] for b in brokers} for n in before})

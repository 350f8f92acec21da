"""The share-partition record state machine answers as Apache Kafka 4.4 does, request by request:
the same raw ShareFetch / ShareAcknowledge sequence goes to pylog and to a Kafka 4.4.0 node, and
the answers (error codes, acquired ranges with delivery counts) and what later fetches deliver are
compared, and checked against what Kafka answers.

Each sequence here is one of the places where the two once differed: acknowledgements below the
start offset, redelivery near the delivery limit, overlapping or backwards acknowledgement batches
(and the stall they caused), RENEW with renewals disabled for the group, a renew-only fetch with
fetch limits, an acknowledgement past the acquired records, RENEW without IsRenewAck, new records
cut into acquired batches of the batch size, and the in-flight cap on records acquired again.
"""
from __future__ import annotations

import pytest

from support import share_raw as sr
from support.share_scenarios import on_both


@pytest.fixture(scope="module")
def brokers(share_brokers):
    return share_brokers


def acquired(answer) -> list:
    return [r for _, (_, _, rs) in sorted(sr.parts_of(answer).items()) for r in rs]


def ack_code(answer, partition: int = 0) -> int:
    return sr.parts_of(answer)[partition][1]


def _below_start(bs):
    """a's lock runs out, b gets and accepts the records; a's late accept of them is no failure."""
    t, g = sr.setup(bs, (5,), share_record_lock_duration_ms=1000)
    a, b = sr.Session(bs, g, t).join(), sr.Session(bs, g, t).join()
    first = acquired(a.fetch(want=5, wait=30))
    second = acquired(b.fetch(want=5, wait=30, max_wait_ms=500))
    b_acc = sr.summary(b.acknowledge([(0, 4, "accept")]))
    late = sr.summary(a.fetch(acks=[(0, 4, "accept")]))
    late_ack = sr.summary(a.acknowledge([(0, 4, "accept")]))
    return first, second, b_acc, late, late_ack, sr.describe_offsets(bs, g, t)


def test_acknowledging_below_the_start_offset_is_skipped(brokers):
    out = on_both(brokers, _below_start)
    assert out["pylog"] == out["kafka"], out
    first, second, _, late, late_ack, _ = out["kafka"]
    assert (first, second) == ([(0, 4, 1)], [(0, 4, 2)])
    assert late == (0, {0: (0, 0, [])}) and late_ack == (0, {0: (0, 0, [])}), out


def _near_limit(bs):
    """Limit 5, ten records in one batch, every delivery released."""
    t, g = sr.setup(bs, (10,), share_delivery_count_limit=5)
    s = sr.Session(bs, g, t).join()
    got = acquired(s.fetch(want=1, wait=30))
    seen = []
    while got and len(seen) < 12:
        seen.append(got)
        got = acquired(s.fetch(acks=[(f, la, "release") for f, la, _ in got], max_wait_ms=500))
    return seen


def test_redelivery_near_the_delivery_limit_is_throttled(brokers):
    out = on_both(brokers, _near_limit)
    assert out["pylog"] == out["kafka"], out
    # delivery count 3 (= max(2, ceil(5/2))): half the batch; the last attempt: one record alone
    assert out["kafka"][:7] == [[(0, 9, 1)], [(0, 9, 2)], [(0, 9, 3)], [(0, 4, 4)], [(5, 9, 4)], [(0, 0, 5)],
                                [(1, 1, 5)]], out


def _overlapping(bs):
    t, g = sr.setup(bs, (10,), share_record_lock_duration_ms=1000)
    a = sr.Session(bs, g, t).join()
    got = acquired(a.fetch(want=10, wait=30))
    answers = [ack_code(a.fetch(acks=acks)) for acks in (
        [(0, 4, "accept"), (3, 7, "accept")],   # overlapping
        [(5, 9, "accept"), (0, 3, "accept")],   # backwards
        [(0, 4, "accept"), (4, 6, "accept")],   # one offset twice
        [(3, 2, "accept")],                     # first past last
        [(0, 4, ["accept", "release"])],        # types not one per offset
    )]
    answers.append(sr.summary(a.acknowledge([(0, 4, "accept"), (3, 7, "accept")])))
    a.close_session()
    b = sr.Session(bs, g, t).join()
    again = acquired(b.fetch(want=10, wait=30, max_wait_ms=500))
    sr.produce_batches(b.s, t, (3,))
    more = acquired(b.fetch(acks=[(0, 9, "accept")], want=3, wait=30, max_wait_ms=500))
    return got, answers, again, more, sr.describe_offsets(bs, g, t)


def test_overlapping_batches_are_refused_and_cannot_stall_the_partition(brokers):
    out = on_both(brokers, _overlapping)
    assert out["pylog"] == out["kafka"], out
    got, answers, again, more, described = out["kafka"]
    assert answers[:5] == [42, 42, 121, 42, 42] and answers[5][1][0][0] == 42, out
    # nothing was applied: the session's close released all ten, and what came next is delivered
    assert again == [(0, 9, 2)] and more == [(10, 12, 1)], out


def _overlap_then_lock_expiry(bs):
    t, g = sr.setup(bs, (10,), share_record_lock_duration_ms=1000)
    a = sr.Session(bs, g, t).join()
    acquired(a.fetch(want=10, wait=30))
    bad = ack_code(a.fetch(acks=[(0, 4, "accept"), (3, 7, "accept")]))
    # a keeps its session but never acknowledges: the locks run out and b gets all ten
    b = sr.Session(bs, g, t).join()
    again = acquired(b.fetch(want=10, wait=30, max_wait_ms=500))
    return bad, again


def test_after_a_refused_overlap_lock_expiry_still_releases(brokers):
    out = on_both(brokers, _overlap_then_lock_expiry)
    assert out["pylog"] == out["kafka"] == (42, [(0, 9, 2)]), out


def _renew_disabled(bs):
    t, g = sr.setup(bs, (5,), share_renew_acknowledge_enable="false")
    a = sr.Session(bs, g, t).join()
    acquired(a.fetch(want=5, wait=30))
    renew = dict(renew=True, max_wait_ms=0, min_bytes=0, max_bytes=0, max_records=0, batch_size=0)
    by_fetch = sr.summary(a.fetch(acks=[(0, 4, "renew")], **renew))
    by_ack = sr.summary(a.acknowledge([(0, 4, "renew")], renew=True))
    accepted = sr.summary(a.acknowledge([(0, 4, "accept")]))  # still acquired: nothing was applied
    return by_fetch, by_ack, accepted


def test_renew_refused_when_the_group_disables_it(brokers):
    out = on_both(brokers, _renew_disabled)
    assert out["pylog"] == out["kafka"], out
    assert out["kafka"] == ((0, {0: (0, 121, [])}), (0, {0: (121, 0, [])}), (0, {0: (0, 0, [])})), out


def _renew_only_limits(bs):
    t, g = sr.setup(bs, (5,))
    a = sr.Session(bs, g, t).join()
    acquired(a.fetch(want=5, wait=30))
    zero = dict(max_wait_ms=0, min_bytes=0, max_bytes=0, max_records=0)
    answers = []
    for field, value in (("max_bytes", 1024), ("min_bytes", 1), ("max_records", 5), ("max_wait_ms", 100)):
        limits = {**zero, field: value}
        answers.append(sr.summary(a.fetch(acks=[(0, 4, "renew")], renew=True, batch_size=0, **limits)))
    ok = sr.summary(a.fetch(acks=[(0, 4, "renew")], renew=True, batch_size=5, **zero))  # the same epoch
    done = sr.summary(a.acknowledge([(0, 4, "accept")]))
    return answers, ok, done


def test_renew_only_fetch_with_fetch_limits_is_invalid(brokers):
    out = on_both(brokers, _renew_only_limits)
    assert out["pylog"] == out["kafka"], out
    answers, ok, done = out["kafka"]
    assert answers == [(42, {})] * 4 and ok == (0, {0: (0, 0, [])}) and done == (0, {0: (0, 0, [])}), out


def _past_acquired(bs):
    t, g = sr.setup(bs, (5, 5))
    a = sr.Session(bs, g, t).join()
    got = acquired(a.fetch(want=5, wait=30, max_records=5, batch_size=5))
    past = ack_code(a.fetch(acks=[(3, 7, "accept")], max_records=1))
    beyond = sr.summary(a.acknowledge([(20, 22, "accept")]))
    fine = sr.summary(a.acknowledge([(0, 4, "accept")]))
    return got, past, beyond, fine


def test_acknowledging_past_the_acquired_records_is_invalid_request(brokers):
    out = on_both(brokers, _past_acquired)
    assert out["pylog"] == out["kafka"], out
    got, past, beyond, fine = out["kafka"]
    assert got == [(0, 4, 1)] and past == 42 and beyond[1][0][0] == 42 and fine == (0, {0: (0, 0, [])}), out


def _renew_unflagged(bs):
    t, g = sr.setup(bs, (5, 5))
    a = sr.Session(bs, g, t).join()
    acquired(a.fetch(want=5, wait=30, max_records=5, batch_size=5))
    v2 = sr.summary(a.fetch(acks=[(0, 4, "renew")], max_records=5, batch_size=5))  # the fetch still runs
    v1 = sr.summary(a.fetch(acks=[(0, 4, "renew")], version=1, max_records=5, batch_size=5))
    by_ack = sr.summary(a.acknowledge([(0, 4, "renew")]))
    later = sr.summary(a.acknowledge([(0, 4, "accept")]))  # the epoch advanced with each
    return v2, v1, by_ack, later


def test_renew_without_is_renew_ack_fails_the_partition_only(brokers):
    out = on_both(brokers, _renew_unflagged)
    assert out["pylog"] == out["kafka"], out
    v2, v1, by_ack, later = out["kafka"]
    assert v2 == (0, {0: (0, 42, [(5, 9, 1)])}) and v1 == (0, {0: (0, 42, [])}), out
    assert by_ack == (0, {0: (42, 0, [])}) and later == (0, {0: (0, 0, [])}), out


def _batch_cut(bs):
    t, g = sr.setup(bs, (5, 5, 5, 3, 2, 2))
    a = sr.Session(bs, g, t).join()
    raw = a.fetch(want=22, wait=30, batch_size=7)
    return [(r["first_offset"], r["last_offset"], r["delivery_count"])
            for tp in raw["responses"] for p in tp["partitions"] for r in p["acquired_records"]]


def test_new_records_are_acquired_in_batches_of_the_batch_size(brokers):
    out = on_both(brokers, _batch_cut)
    assert out["pylog"] == out["kafka"], out
    assert out["kafka"] == [(0, 9, 1), (10, 17, 1), (18, 21, 1)], out


def _cap(bs):
    """Cap 100: 100 in flight, 10 released; at the cap only records already in flight are acquired."""
    t, g = sr.setup(bs, (10,) * 12, share_partition_max_record_locks=100)
    a = sr.Session(bs, g, t).join()
    got = acquired(a.fetch(want=100, wait=30))
    again = acquired(a.fetch(acks=[(20, 29, "release")], max_wait_ms=500))
    more = acquired(a.fetch(acks=[(0, 9, "accept")], max_wait_ms=500))
    return got, again, more


def test_the_in_flight_cap_and_records_acquired_again(brokers):
    out = on_both(brokers, _cap)
    assert out["pylog"] == out["kafka"], out
    assert out["kafka"] == ([(0, 99, 1)], [(20, 29, 2)], [(100, 109, 1)]), out


def _cap_room(bs):
    """Cap 100, 95 in flight, two ranges of one acquired batch released: the room left (5) is a
    soft limit, by acquired batch: both ranges come back in the next fetch; the batch after them is
    not acquired then."""
    t, g = sr.setup(bs, (10,) * 9 + (5,), share_partition_max_record_locks=100)
    a = sr.Session(bs, g, t).join()
    got = acquired(a.fetch(want=95, wait=30, batch_size=50))
    again = acquired(a.fetch(acks=[(20, 29, "release"), (40, 49, "release"), (60, 69, "release")],
                             max_wait_ms=500, batch_size=50))
    rest = acquired(a.fetch(max_wait_ms=500, batch_size=50))
    return got, again, rest


def test_the_in_flight_cap_limits_records_acquired_again(brokers):
    out = on_both(brokers, _cap_room)
    assert out["pylog"] == out["kafka"], out
    assert out["kafka"] == ([(0, 49, 1), (50, 94, 1)], [(20, 29, 2), (40, 49, 2)], [(60, 69, 2)]), out


def test_a_fetch_past_the_share_session_limit_waits_max_wait(tmp_path):
    """Kafka 4.4 (group.share.max.share.sessions=1) answered SHARE_SESSION_LIMIT_REACHED after the
    fetch's MaxWaitMs (2 s), not at once; pylog does the same."""
    import time

    from support.broker_fixtures import BrokerProcess
    from support.share_fixtures import BROKER_SETTINGS

    settings = {**BROKER_SETTINGS, "group.share.max.share.sessions": "1", "group.share.max.size": "1"}
    b = BrokerProcess(tmp_path / "data", *[a for k, v in settings.items() for a in ("--set", f"{k}={v}")])
    b.start(timeout=60)
    try:
        t1, g1 = sr.setup(b.bootstrap, (5,))
        t2, g2 = sr.setup(b.bootstrap, (5,))
        a = sr.Session(b.bootstrap, g1, t1).join()
        assert acquired(a.fetch(want=5, wait=30)) == [(0, 4, 1)]
        c = sr.Session(b.bootstrap, g2, t2).join()
        t0 = time.monotonic()
        r = c.fetch(max_wait_ms=1500)
        waited = time.monotonic() - t0
        assert r["error_code"] == 133 and waited >= 1.4, (r, waited)
        t0 = time.monotonic()
        assert c.fetch(max_wait_ms=0)["error_code"] == 133 and time.monotonic() - t0 < 1.0
    finally:
        b.stop_clean()

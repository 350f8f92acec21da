"""The cluster checker over planted histories: every anomaly kind it names is found, with the
operations that show it, and clean histories (offset gaps from transaction markers, aborted
transactions nobody read, rebalances, share-group redeliveries, a crashed run) raise none."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pylog.checker.analysis import KINDS, analyze, analyze_dir
from pylog.checker.history import HistoryWriter, read_history

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for bench/
from bench.checker import simulate  # noqa: E402

K, X, Y = "q/0", "q/1", "q/2"


class H:
    """A history built by hand: each call adds an invoke and its completion; returns the
    completion's index (what the checker names)."""

    def __init__(self):
        self.events, self.t = [], 0

    def op(self, process, f, value, type="ok", invoke=None, at=None, **extra):
        t0 = self.t if at is None else at
        self.t = max(self.t, t0) + 10
        self.events.append({"index": len(self.events), "process": process, "type": "invoke", "f": f,
                            "time": t0, "value": invoke if invoke is not None else value})
        done = {"index": len(self.events), "process": process, "type": type, "f": f, "time": t0 + 5,
                "start": t0, "value": value}
        done.update(extra)
        self.events.append(done)
        return done["index"]

    def send(self, process, key, *pairs, type="ok"):
        return self.op(process, "send", [["send", key, v, o] for o, v in pairs], type=type)

    def txn(self, process, mops, type="ok", **extra):
        return self.op(process, "txn", mops, type=type, **extra)

    def poll(self, process, reads):
        return self.op(process, "poll", [["poll", {k: [list(p) for p in v] for k, v in reads.items()}]])

    def event(self, process, f, value):
        return self.op(process, f, value)

    def check(self, tmp_path):
        path = tmp_path / "history.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in self.events))
        return analyze_dir(tmp_path)


def kinds(results):
    return {a["kind"] for a in results["anomalies"]}


def only(results, kind):
    found = [a for a in results["anomalies"] if a["kind"] == kind]
    assert found, results["anomaly_counts"]
    return found[0]


# ---------------------------------------------------------------- clean histories


def test_clean_queue_with_markers_aborts_and_unseen_sends(tmp_path):
    h = H()
    h.send("w-1.0", K, (0, 1), (1, 2))
    h.txn("w-2.0", [["send", K, 3, 2], ["send", K, 4, 3]], commit_at=15)   # marker at 4
    h.txn("w-2.0", [["send", K, 5, 5]], type="fail")                         # aborted, marker at 6
    h.send("w-1.0", K, (7, 6))
    h.send("w-1.0", K, (8, 7))                                              # never read: unseen, not lost
    h.send("w-1.0", K, (None, 8), type="info")                              # timed out, never read
    h.poll("r-1.0", {K: [(0, 1), (1, 2), (2, 3)]})
    h.poll("r-1.0", {K: [(3, 4), (7, 6)]})
    r = h.check(tmp_path)
    assert r["valid"], r["anomalies"]
    assert r["stats"]["unseen"] == 1


def test_clean_group_rebalance_starts_at_committed_offset(tmp_path):
    h = H()
    h.send("w.0", K, (0, 1), (1, 2), (2, 3), (3, 4))
    h.event("a.0", "rebalance", {"group": "g", "assigned": [K], "revoked": []})
    h.poll("a.0", {K: [(0, 1), (1, 2), (2, 3)]})
    h.event("a.0", "commit", {"group": "g", "offsets": {K: 2}})              # processed 1, 2 only
    h.event("a.0", "rebalance", {"group": "g", "assigned": [], "revoked": [K]})
    h.event("b.0", "rebalance", {"group": "g", "assigned": [K], "revoked": []})
    h.poll("b.0", {K: [(2, 3), (3, 4)]})                                     # at-least-once: 3 again
    assert h.check(tmp_path)["valid"]


def test_clean_share_group_redelivery(tmp_path):
    h = H()
    h.send("w.0", "s/0", (0, 1), (1, 2))
    h.op("s1.0", "share-poll", {"group": "s", "records": {"s/0": [[0, 1, 1], [1, 2, 1]]}})
    h.op("s1.0", "share-ack", {"group": "s", "accept": {"s/0": [0]}, "release": {"s/0": [1]}})
    h.op("s2.0", "share-poll", {"group": "s", "records": {"s/0": [[1, 2, 2]]}})
    h.op("s2.0", "share-ack", {"group": "s", "accept": {"s/0": [1]}, "release": {}})
    assert h.check(tmp_path)["valid"]


def test_crashed_run_history_is_still_checked(tmp_path):
    w = HistoryWriter(tmp_path)
    w.invoke("w.0", "send", [["send", K, 1, None]])
    w.complete("w.0", "ok", [["send", K, 1, 0]])
    w.invoke("w.0", "send", [["send", K, 2, None]])                         # never completed
    w.invoke("r.0", "poll", [["poll"]])
    w.complete("r.0", "ok", [["poll", {K: [[0, 1], [1, 2]]}]])
    w.close()
    with open(tmp_path / "history.jsonl", "a") as fh:
        fh.write('{"index": 99, "process": "r.0", "ty')                    # torn by kill -9
    ops = read_history(tmp_path)
    assert [(o.process, o.type) for o in ops] == [("w.0", "ok"), ("r.0", "ok"), ("w.0", "info")]
    assert analyze(ops)["valid"]


def test_simulated_correct_kafka_is_clean(tmp_path):
    simulate(tmp_path / "history.jsonl", 20_000, seed=7)
    r = analyze_dir(tmp_path)
    assert r["valid"], r["anomaly_counts"]
    assert r["stats"]["values_read"] > 10_000


# ---------------------------------------------------------------- planted anomalies


def test_lost_write(tmp_path):
    h = H()
    h.send("w.0", K, (0, 1))
    lost = h.send("w.0", K, (1, 2))
    h.send("w.0", K, (2, 3))
    h.poll("r1.0", {K: [(0, 1)]})
    later = h.poll("r2.0", {K: [(2, 3)]})
    r = h.check(tmp_path)
    assert kinds(r) == {"lost-write"}
    a = only(r, "lost-write")
    assert a["ops"] == [lost, later] and a["value"] == 2


def test_duplicate(tmp_path):
    h = H()
    s = h.send("w.0", K, (0, 1), (1, 2))
    p = h.poll("r.0", {K: [(0, 1), (1, 2), (2, 1)]})
    r = h.check(tmp_path)
    a = only(r, "duplicate")
    assert a["value"] == 1 and a["ops"] == [s, p]


def test_inconsistent_offsets(tmp_path):
    h = H()
    a1 = h.send("w1.0", K, (0, 1))
    a2 = h.send("w2.0", K, (0, 2))
    h.poll("r.0", {K: [(0, 2)]})
    a = only(h.check(tmp_path), "inconsistent-offsets")
    assert a["ops"] == [a1, a2] and a["values"] == [1, 2] and a["offset"] == 0


@pytest.mark.parametrize("f, kind", [("send", "aborted-read"), ("txn", "G1a")])
def test_aborted_read(tmp_path, f, kind):
    h = H()
    w = h.op("w.0", f, [["send", K, 1, 0 if f == "txn" else None]], type="fail")
    p = h.poll("r.0", {K: [(0, 1)]})
    r = h.check(tmp_path)
    assert kinds(r) == {kind} and only(r, kind)["ops"] == [w, p]


def test_read_uncommitted(tmp_path):
    h = H()
    reader = h.op("r.0", "poll", [["poll", {K: [[0, 1]]}]], at=100)          # done at 105
    writer = h.txn("w.0", [["send", K, 1, 0]], at=90, commit_at=110)         # commit began at 110
    own = h.txn("t.0", [["send", X, 2, 0], ["poll", {X: [[0, 2]]}]], commit_at=500)
    r = h.check(tmp_path)
    found = [a for a in r["anomalies"] if a["kind"] == "read-uncommitted"]
    assert sorted(a["ops"] for a in found) == [[reader, writer], [own]]


def test_poll_skip_and_nonmonotonic_poll(tmp_path):
    h = H()
    w = h.send("w.0", K, (0, 1), (1, 2), (2, 3))
    h.poll("all.0", {K: [(0, 1), (1, 2), (2, 3)]})
    first = h.poll("r.0", {K: [(0, 1)]})
    skip = h.poll("r.0", {K: [(2, 3)]})
    back = h.poll("r.0", {K: [(1, 2)]})
    r = h.check(tmp_path)
    assert kinds(r) == {"poll-skip", "nonmonotonic-poll"}
    assert only(r, "poll-skip")["ops"] == [w, first, skip] and only(r, "poll-skip")["skipped"] == [2]
    assert only(r, "nonmonotonic-poll")["ops"] == [skip, back]


def test_assignment_change_resets_poll_order(tmp_path):
    h = H()
    h.send("w.0", K, (0, 1), (1, 2), (2, 3))
    h.poll("all.0", {K: [(0, 1), (1, 2), (2, 3)]})
    h.poll("r.0", {K: [(2, 3)]})
    h.op("r.0", "assign", [K])                                              # and seek to the beginning
    h.poll("r.0", {K: [(0, 1)]})
    assert h.check(tmp_path)["valid"]


def test_nonmonotonic_send(tmp_path):
    h = H()
    a = h.send("w.0", K, (5, 1))
    b = h.send("w.0", K, (3, 2))
    h.poll("r.0", {K: [(3, 2), (5, 1)]})
    r = h.check(tmp_path)
    assert kinds(r) == {"nonmonotonic-send"} and only(r, "nonmonotonic-send")["ops"] == [a, b]


def _group_history(start):
    h = H()
    w = h.send("w.0", K, (0, 1), (1, 2), (2, 3), (3, 4))
    h.poll("all.0", {K: [(0, 1), (1, 2), (2, 3), (3, 4)]})
    c = h.event("a.0", "commit", {"group": "g", "offsets": {K: 2}})
    rb = h.event("b.0", "rebalance", {"group": "g", "assigned": [K], "revoked": []})
    p = h.poll("b.0", {K: start})
    return h, [w, c, rb, p]


def test_commit_skip(tmp_path):
    h, ops = _group_history([(3, 4)])
    a = only(h.check(tmp_path), "commit-skip")
    assert a["ops"] == ops and a["skipped"] == [3]


def test_commit_reread(tmp_path):
    h, ops = _group_history([(0, 1), (1, 2), (2, 3), (3, 4)])
    r = h.check(tmp_path)
    assert kinds(r) == {"commit-reread"} and only(r, "commit-reread")["ops"] == ops[1:]


def test_transaction_offsets_count_as_commits(tmp_path):
    h = H()
    h.send("w.0", K, (0, 1), (1, 2))
    h.txn("t.0", [["poll", {K: [[0, 1]]}], ["send", X, 9, 0]], commit_at=20, group="g", offsets={K: 1})
    h.event("b.0", "rebalance", {"group": "g", "assigned": [K], "revoked": []})
    h.poll("b.0", {K: [(1, 2)]})
    assert h.check(tmp_path)["valid"]
    h.poll("all.0", {X: [(0, 9)]})
    h.txn("t.0", [["poll", {K: [[1, 2]]}]], type="fail", group="g", offsets={K: 2})   # aborted: not committed
    h.event("c.0", "rebalance", {"group": "g", "assigned": [K], "revoked": []})
    h.poll("c.0", {K: [(1, 2)]})
    assert h.check(tmp_path)["valid"]


def test_share_double_accept_count_decrease_and_lost_release(tmp_path):
    h = H()
    h.send("w.0", "s/0", (0, 1), (1, 2), (2, 3))
    p1 = h.op("s1.0", "share-poll", {"group": "s", "records": {"s/0": [[0, 1, 2], [1, 2, 1]]}})
    a1 = h.op("s1.0", "share-ack", {"group": "s", "accept": {"s/0": [0]}, "release": {"s/0": [1]}})
    p2 = h.op("s2.0", "share-poll", {"group": "s", "records": {"s/0": [[0, 1, 1], [2, 3, 1]]}})
    a2 = h.op("s2.0", "share-ack", {"group": "s", "accept": {"s/0": [0, 2]}, "release": {}})
    r = h.check(tmp_path)
    assert kinds(r) == {"double-accept", "delivery-count-decrease", "release-lost"}
    assert only(r, "double-accept")["ops"] == [a1, a2]
    assert only(r, "delivery-count-decrease")["ops"] == [p1, p2]
    assert only(r, "release-lost")["ops"] == [a1, p2] and only(r, "release-lost")["offset"] == 1


def test_failed_acknowledgement_is_not_an_acceptance(tmp_path):
    h = H()
    h.send("w.0", "s/0", (0, 1))
    h.op("s1.0", "share-poll", {"group": "s", "records": {"s/0": [[0, 1, 1]]}})
    h.op("s1.0", "share-ack", {"group": "s", "accept": {"s/0": [0]}, "release": {}, "failed": ["s/0"]})
    h.op("s2.0", "share-poll", {"group": "s", "records": {"s/0": [[0, 1, 2]]}})
    h.op("s2.0", "share-ack", {"group": "s", "accept": {"s/0": [0]}, "release": {}})
    assert h.check(tmp_path)["valid"]


def test_g0_write_cycle(tmp_path):
    h = H()
    t1 = h.txn("t1.0", [["send", X, 1, 0], ["send", Y, 4, 1]], commit_at=0)
    t2 = h.txn("t2.0", [["send", X, 2, 1], ["send", Y, 3, 0]], commit_at=0)
    h.poll("r.0", {X: [(0, 1), (1, 2)], Y: [(0, 3), (1, 4)]})
    r = h.check(tmp_path)
    assert kinds(r) == {"G0"}
    a = only(r, "G0")
    assert a["ops"] == [t1, t2] and {e[2] for e in a["edges"]} == {"ww"}


def test_g1c_circular_information_flow(tmp_path):
    h = H()
    h.send("w.0", X, (0, 10))
    h.send("w.0", Y, (0, 20))
    t1 = h.txn("t1.0", [["send", X, 1, 1], ["poll", {Y: [[0, 20], [1, 2]]}]])
    t2 = h.txn("t2.0", [["send", Y, 2, 1], ["poll", {X: [[0, 10], [1, 1]]}]])
    r = h.check(tmp_path)
    assert kinds(r) == {"G1c"}
    a = only(r, "G1c")
    assert a["ops"] == [t1, t2] and {e[2] for e in a["edges"]} == {"wr"}


def test_g1b_intermediate_read(tmp_path):
    h = H()
    t = h.txn("t.0", [["send", K, 1, 0], ["send", K, 2, 1]], commit_at=0)
    h.send("w.0", K, (3, 3))
    h.poll("all.0", {K: [(0, 1), (1, 2), (3, 3)]})
    first = h.poll("r.0", {K: [(0, 1)]})
    skip = h.poll("r.0", {K: [(3, 3)]})
    r = h.check(tmp_path)
    assert kinds(r) == {"G1b", "poll-skip"}
    assert only(r, "G1b")["ops"] == [t, first, skip]


# -------------------------------------------- the shapes Jepsen's Kafka checker describes


def test_jepsen_internal_read_gap_and_inversion(tmp_path):
    """Within one transaction, reads of a key that skip a value, or go backwards (its items 5)."""
    h = H()
    w = h.send("w.0", K, (0, 1), (1, 2), (2, 3))
    h.poll("all.0", {K: [(0, 1), (1, 2), (2, 3)]})
    gap = h.txn("t.0", [["poll", {K: [[0, 1]]}], ["poll", {K: [[2, 3]]}]])
    inv = h.txn("u.0", [["poll", {K: [[1, 2]]}], ["poll", {K: [[0, 1]]}]])
    r = h.check(tmp_path)
    assert kinds(r) == {"poll-skip", "nonmonotonic-poll"}
    assert only(r, "poll-skip")["ops"] == [w, gap] and only(r, "nonmonotonic-poll")["ops"] == [inv]


def test_jepsen_internal_write_inversion(tmp_path):
    """A transaction sends v1 then v2 to one key but v2 lands before v1 (its item 6)."""
    h = H()
    t = h.txn("t.0", [["send", K, 1, 1], ["send", K, 2, 0]])
    h.poll("r.0", {K: [(0, 2), (1, 1)]})
    r = h.check(tmp_path)
    assert kinds(r) == {"nonmonotonic-send"} and only(r, "nonmonotonic-send")["ops"] == [t]


def test_jepsen_precommitted_read(tmp_path):
    """A transaction observing its own write, which Kafka's read_committed never shows (item 8)."""
    h = H()
    t = h.txn("t.0", [["send", K, 1, 0], ["poll", {K: [[0, 1]]}]])
    r = h.check(tmp_path)
    assert kinds(r) == {"read-uncommitted"} and only(r, "read-uncommitted")["ops"] == [t]


def test_jepsen_lost_write_after_leader_change(tmp_path):
    """An acknowledged write whose offset later holds another value, and that nobody reads: the
    shape of the lost writes Jepsen's Redpanda analysis reports (both kinds are named)."""
    h = H()
    acked = h.send("w1.0", K, (0, 1), (1, 2))
    other = h.send("w2.0", K, (1, 3), (2, 4))
    h.poll("r.0", {K: [(0, 1), (1, 3), (2, 4)]})
    r = h.check(tmp_path)
    assert kinds(r) == {"inconsistent-offsets", "lost-write"}
    assert only(r, "inconsistent-offsets")["ops"] == [acked, other]
    assert only(r, "lost-write")["value"] == 2 and "at that offset" in only(r, "lost-write")["detail"]


def test_every_kind_is_planted_above():
    planted = {"lost-write", "duplicate", "inconsistent-offsets", "aborted-read", "G1a", "read-uncommitted",
               "poll-skip", "nonmonotonic-poll", "nonmonotonic-send", "commit-skip", "commit-reread",
               "double-accept", "delivery-count-decrease", "release-lost", "G0", "G1b", "G1c"}
    assert planted == set(KINDS)


def test_interleaved_sends_in_one_partition_are_no_write_cycle(tmp_path):
    """Kafka appends concurrent producers' records interleaved, transactions or not."""
    h = H()
    h.txn("t1.0", [["send", K, 1, 0], ["send", K, 3, 2]], commit_at=0)
    h.txn("t2.0", [["send", K, 2, 1], ["send", K, 4, 3]], commit_at=0)
    h.poll("r.0", {K: [(0, 1), (1, 2), (2, 3), (3, 4)]})
    assert h.check(tmp_path)["valid"]


def test_indeterminate_transaction_retried_is_no_duplicate(tmp_path):
    """A transaction whose commit timed out, done again after: its value's first offset counts
    only if someone read it there (the run against pylog that found this false alarm)."""
    h = H()
    h.txn("t.0", [["send", K, -9, 0]], type="info")
    h.txn("t.1", [["send", K, -9, 2]], commit_at=12)
    h.poll("r.0", {K: [(2, -9)]})
    assert h.check(tmp_path)["valid"]
    h.poll("r.1", {K: [(0, -9)]})                                            # it did commit: twice
    assert kinds(h.check(tmp_path)) == {"duplicate"}

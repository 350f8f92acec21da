"""The streams groups' sticky task assignor (broker/groups/streams/assignor.py): every task active
exactly once, standby replicas only on other processes, balanced counts, and stickiness: a task stays
with its previous owner, and an active task moves to a member that held it as standby (or reports the
most offsets for it) before anyone else."""
from __future__ import annotations

from pylog.broker.groups.streams.assignor import MemberSpec, assign


def _check(out, members, partitions, stateful, standbys):
    actives = [t for a in out.values() for t in a["active"]]
    assert sorted(actives) == sorted((s, p) for s, n in partitions.items() for p in range(n))
    for t in {(s, p) for s in stateful for p in range(partitions[s])}:
        holders = [members[m].process_id for m, a in out.items() if t in a["active"] | a["standby"]]
        assert len(holders) == len(set(holders)) == min(1 + standbys, len({x.process_id for x in members.values()}))
    assert all(not a["warmup"] for a in out.values())


def test_word_count_shape_two_processes_one_standby():
    partitions, stateful = {"0": 4, "1": 4}, {"1"}
    members = {"a": MemberSpec("pa"), "b": MemberSpec("pb")}
    out = assign(members, partitions, stateful, 1)
    _check(out, members, partitions, stateful, 1)
    assert {m: len(a["active"]) for m, a in out.items()} == {"a": 4, "b": 4}
    assert {m: len(a["standby"]) for m, a in out.items()} == {"a": 2, "b": 2}
    # each member stands by for the other's stateful tasks
    assert out["a"]["standby"] == {t for t in out["b"]["active"] if t[0] == "1"}
    # B joining A, which ran everything: A keeps the first half of each subtopology, B takes the rest
    members = {"a": MemberSpec("pa", active={(s, p) for s in "01" for p in range(4)}), "b": MemberSpec("pb")}
    out = assign(members, partitions, stateful, 1)
    assert out["a"]["active"] == {("0", 0), ("0", 1), ("1", 0), ("1", 1)}
    assert out["b"]["standby"] == {("1", 0), ("1", 1)} and out["a"]["standby"] == {("1", 2), ("1", 3)}


def test_sticky_with_a_new_member():
    partitions, stateful = {"0": 6}, {"0"}
    first = assign({"a": MemberSpec("pa"), "b": MemberSpec("pb")}, partitions, stateful, 0)
    members = {"a": MemberSpec("pa", active=first["a"]["active"]), "b": MemberSpec("pb", active=first["b"]["active"]),
               "c": MemberSpec("pc")}
    out = assign(members, partitions, stateful, 0)
    _check(out, members, partitions, stateful, 0)
    assert all(len(a["active"]) == 2 for a in out.values())
    assert out["a"]["active"] <= first["a"]["active"] and out["b"]["active"] <= first["b"]["active"]


def test_an_active_task_goes_to_its_standby_first():
    partitions, stateful = {"0": 2}, {"0"}
    # b held 0_0 as standby and reports more offsets for it than c does: when a goes, b takes it
    members = {"b": MemberSpec("pb", active={("0", 1)}, standby={("0", 0)}, task_offsets={("0", 0): 50}),
               "c": MemberSpec("pc", task_offsets={("0", 0): 10})}
    out = assign(members, partitions, stateful, 1)
    _check(out, members, partitions, stateful, 1)
    assert ("0", 0) in out["b"]["active"] or ("0", 1) in out["b"]["active"]
    assert out["b"]["active"] | out["c"]["active"] == {("0", 0), ("0", 1)}


def test_not_enough_processes_for_every_standby():
    members = {"a": MemberSpec("p"), "b": MemberSpec("p")}  # two threads of one process
    out = assign(members, {"0": 2}, {"0"}, 1)
    assert all(not a["standby"] for a in out.values())
    assert sorted(t for a in out.values() for t in a["active"]) == [("0", 0), ("0", 1)]

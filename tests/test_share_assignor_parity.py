"""pylog's share assignor (broker/groups/share/assignor.py) against Kafka 4.4's
SimpleAssignor from the 4.4.0 group-coordinator jar: one JVM (tests/kafka/java/
ShareAssignorParity.java) runs Kafka's assignor on generated groups (1-40 members, 1-4 topics of
1-30 partitions, homogeneous and heterogeneous subscriptions, names of topics that do not exist,
previous assignments restored from records, then several rounds of members joining, leaving and
changing subscriptions, each starting from the previous round's assignment), and every member's
assignment must be the same on both sides, round after round."""
from __future__ import annotations

import json
import random
import string
import subprocess
import uuid
from pathlib import Path

from pylog.broker.groups.share.assignor import AssignorError, MemberSpec, assign
from pylog.broker.groups.share.javahash import JavaHashMap, JavaHashSet, java_hash
from pylog.storage.meta_properties import uuid_from_base64, uuid_to_base64
from support.kafka_peer import compile_java, java_command

JAVA = Path(__file__).parent / "kafka" / "java" / "ShareAssignorParity.java"
CASES = 300


def _member_id(rng: random.Random, i: int) -> str:
    if rng.random() < 0.3:
        return f"member-{i}"
    return "".join(rng.choice(string.ascii_letters + string.digits + "-_") for _ in range(22))


def _topic_id(rng: random.Random) -> uuid.UUID:
    while True:
        u = uuid.UUID(int=rng.getrandbits(128))
        if u.int > 1 and not uuid_to_base64(u).startswith("-"):
            return u


def _subscription(rng: random.Random, names: list[str]) -> list[str]:
    return rng.sample(names, rng.randint(1, len(names)))


def _prev(rng: random.Random, topics: dict) -> list:
    out = []
    for name in rng.sample(sorted(topics), rng.randint(0, len(topics))):
        tid, n = topics[name]
        out.append([uuid_to_base64(tid), rng.sample(range(n), rng.randint(0, min(n, 6)))])
    return out


def _round(rng: random.Random, ids: list[str], names: list[str], topics: dict, homogeneous: bool,
           with_prev: bool) -> dict:
    common = _subscription(rng, names)
    members = []
    for mid in ids:
        subs = common if homogeneous else _subscription(rng, names)
        m = {"id": mid, "names": rng.sample(subs, len(subs))}
        if with_prev and rng.random() < 0.7:
            m["prev"] = _prev(rng, topics)
        members.append(m)
    same = len({frozenset(m["names"]) for m in members}) == 1
    return {"members": members, "homogeneous": same}


def case(rng: random.Random) -> dict:
    topics = {f"t{i}": (_topic_id(rng), rng.randint(1, 30)) for i in range(rng.randint(1, 4))}
    names = sorted(topics) + (["missing"] if rng.random() < 0.1 else [])
    homogeneous = rng.random() < 0.5
    pool = [_member_id(rng, i) for i in range(45)]
    ids = rng.sample(pool, rng.randint(1, 40))
    rounds = [_round(rng, ids, names, topics, homogeneous, with_prev=rng.random() < 0.5)]
    for _ in range(rng.randint(0, 3)):
        ids = [m for m in ids if rng.random() < 0.8] + rng.sample([m for m in pool if m not in ids], rng.randint(0, 5))
        ids = ids[:40] or [pool[0]]
        rounds.append(_round(rng, ids, names, topics, homogeneous and rng.random() < 0.8, with_prev=False))
    out = {"topics": {n: [uuid_to_base64(t), c] for n, (t, c) in topics.items()}, "rounds": rounds}
    if rng.random() < 0.15:
        out["allowed"] = {uuid_to_base64(t): sorted(rng.sample(range(c), rng.randint(0, c)))
                          for t, c in list(topics.values())[:2]}
    return out


def pylog_rounds(c: dict) -> list[dict]:
    """The case through pylog's assignor, built the way Kafka's coordinator builds its inputs."""
    ids = {n: uuid_from_base64(v[0]) for n, v in c["topics"].items()}
    describe = {ids[n]: v[1] for n, v in c["topics"].items()}
    allowed = None
    if c.get("allowed") is not None:
        allowed = {uuid_from_base64(t): set(ps) for t, ps in c["allowed"].items()}
    last: JavaHashMap = JavaHashMap()
    results = []
    for rnd in c["rounds"]:
        specs = JavaHashMap()
        for m in rnd["members"]:
            prev = last.get(m["id"]) or JavaHashMap()
            if m.get("prev") is not None:
                prev = JavaHashMap()
                for t, ps in m["prev"]:
                    prev[uuid_from_base64(t)] = JavaHashSet.of(ps)
            subscribed = [ids[n] for n in JavaHashSet.of(m["names"]) if n in ids]
            specs[m["id"]] = MemberSpec(subscribed, prev, named=bool(m["names"]))
        try:
            last = assign(specs, rnd["homogeneous"], describe, allowed)
        except AssignorError:
            last = JavaHashMap()
            results.append({"error": True})
            continue
        results.append({mid: {uuid_to_base64(t): sorted(ps) for t, ps in a.items()} for mid, a in last.items()})
    return results


def test_java_hash_codes():
    # String.hashCode and Uuid.hashCode worked out by hand from their definitions
    assert java_hash("a") == 97 and java_hash("ab") == 97 * 31 + 98
    u = uuid.UUID(int=(5 << 64) | 3)
    assert java_hash(u) == 6
    assert java_hash((u, 2)) == 31 * 6 + 2


def test_assignments_equal_kafka_44_member_by_member():
    rng = random.Random(4404)
    cases = [case(rng) for _ in range(CASES)]
    classes, name = compile_java(JAVA.read_text())
    proc = subprocess.run(java_command(name, extra_cp=classes), input="".join(json.dumps(c) + "\n" for c in cases),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    kafka = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(kafka) == len(cases)
    rounds = errors = 0
    for i, (c, theirs) in enumerate(zip(cases, kafka)):
        ours = pylog_rounds(c)
        for r, (a, b) in enumerate(zip(ours, theirs)):
            if "error" in b or "error" in a:
                assert ("error" in a) == ("error" in b), (i, r, a, b)
                errors += 1
                continue
            assert set(a) == set(b), (i, r)
            for mid in b:
                assert a[mid] == b[mid], f"case {i} round {r} member {mid}: pylog {a[mid]} kafka {b[mid]}\n{json.dumps(c)}"
            rounds += 1
    assert rounds > CASES and errors < rounds // 10

"""kafkajs (Node.js, an independent Kafka client) against `pylog broker start`.

The Node scripts in tests/js/ drive kafkajs and print one JSON document on
stdout; the assertions are here. kafkajs is installed into tests/js on first
use (`.ci/run` does it up front). A missing node/npm fails these tests: they
are part of the interop promise, not optional.
"""
from __future__ import annotations


import pytest

from support.broker_fixtures import stored_batches
from support.client_fixtures import groups_describe
from support.js import JS, kafkajs_ready, run_js  # noqa: F401


GZIP = 1


def test_kafkajs_producer_keys_headers_gzip(broker):
    topic, parts, count = "js-produce", 3, 300
    res = run_js("produce.js", broker, {"topic": topic, "partitions": parts, "count": count})

    assert res["acks"] and all(a["errorCode"] == 0 for a in res["acks"])
    by_part: dict[int, list] = {}
    for rec in res["records"]:
        by_part.setdefault(rec["partition"], []).append(rec)
    assert sorted(by_part) == list(range(parts))
    for p, recs in by_part.items():
        recs.sort(key=lambda r: r["offset"])
        expect = list(range(p, count, parts))
        assert [r["offset"] for r in recs] == list(range(len(expect)))
        assert [r["value"] for r in recs] == [f"value-{i}" for i in expect]
        assert [r["key"] for r in recs] == [f"key-{i}" for i in expect]
        assert [r["headers"] for r in recs] == [{"seq": str(i), "source": "kafkajs"} for i in expect]

        # On disk: kafkajs' GZIP batches kept as sent (compression.type=producer),
        # with the idempotent producer's id and gap-free sequences.
        batches = stored_batches(broker, topic, p)
        assert batches and all(h.codec == GZIP for h in batches)
        assert len({(h.producer_id, h.producer_epoch) for h in batches}) == 1 and batches[0].producer_id >= 0
        assert [h.base_sequence for h in batches] == [h.base_offset for h in batches]
        assert batches[-1].next_offset == len(expect)


def test_kafkajs_consumer_group_two_members(broker):
    topic, group, parts, count = "js-group", "js-group-g", 4, 40
    res = run_js("group.js", broker, {"topic": topic, "group": group, "partitions": parts, "count": count})

    members = res["members"]
    assert len({m["memberId"] for m in members}) == 2
    assert sum(m["isLeader"] for m in members) == 1
    owned = [set(m["assignment"]) for m in members]
    assert all(owned) and not owned[0] & owned[1] and owned[0] | owned[1] == set(range(parts))

    # The coordinator's own view, read back by kafkajs' admin client.
    (desc,) = res["described"]
    assert (desc["groupId"], desc["state"], desc["protocolType"]) == (group, "Stable", "consumer")
    assert desc["protocol"] == members[0]["groupProtocol"]
    assert {d["memberId"]: sorted(d["assignment"][topic]) for d in desc["members"]} == \
        {m["memberId"]: sorted(m["assignment"]) for m in members}

    # Records produced while the group was stable: each read once, by its partition's owner.
    after = [(i, r["partition"], r["offset"]) for i, m in enumerate(members) for r in m["records"]
             if r["value"].startswith("after-")]
    assert len(after) == count and len({(p, o) for _, p, o in after}) == count
    assert all(p in owned[i] for i, p, _ in after)
    before = {r["value"] for m in members for r in m["records"] if r["value"].startswith("before-")}
    assert before == {f"before-{i}" for i in range(count)}

    # Leaving committed what was consumed: the group is empty and has no lag.
    d = groups_describe(broker.bootstrap, group)
    assert d["state"] == "Empty" and d["members"] == []
    offs = {o["partition"]: o for o in d["offsets"] if o["topic"] == topic}
    assert sorted(offs) == list(range(parts))
    per_part = 2 * count // parts
    assert all((o["current_offset"], o["log_end_offset"], o["lag"]) == (per_part, per_part, 0)
               for o in offs.values())


def test_kafkajs_admin_create_offsets_delete(broker):
    topic = "js-admin"
    configs = {"retention.ms": "3600000", "segment.bytes": "1048576"}
    res = run_js("admin.js", broker, {"topic": topic, "partitions": 3, "configs": configs})

    assert res["created"] is True and res["createdAgain"] is False
    assert topic in res["listed"] and topic not in res["listedAfterDelete"]
    assert res["metadata"] == [{"name": topic, "partitions": [
        {"partition": p, "leader": 1, "replicas": [1], "isr": [1]} for p in range(3)]}]
    (cfg,) = res["configs"]
    assert cfg["errorCode"] == 0 and cfg["name"] == topic
    assert cfg["entries"] == {k: {"value": v, "isDefault": False} for k, v in configs.items()}

    assert res["offsetsBefore"] == [{"partition": p, "offset": "0", "high": "0", "low": "0"} for p in range(3)]
    assert res["offsetsAfter"][0] == {"partition": 0, "offset": "5", "high": "5", "low": "0"}
    assert res["offsetsAfter"][1:] == res["offsetsBefore"][1:]
    # Five records one second apart from base: the first at or after base+2.5s is offset 3.
    assert res["byTime"][0] == {"partition": 0, "offset": "3"}

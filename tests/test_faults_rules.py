"""The fault rules' model and matching, without a network: the JSON form, validation, which
requests and partitions a rule takes, limits, and an empty table while no rule is set."""
from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from pylog.broker.ops.request_faults import FaultEngine, FaultRuleError, rule_from_dict
from pylog.core.errors import ErrorCode
from pylog.core.protocol import API_KEYS

PRODUCE, HEARTBEAT, METADATA = API_KEYS["Produce"], API_KEYS["Heartbeat"], API_KEYS["Metadata"]


class Handler:
    """Records the body it was given; answers every partition with NONE."""

    def __init__(self):
        self.bodies = []

    def handle(self, broker, ctx, body):
        self.bodies.append(body)
        if ctx.api_key == PRODUCE:
            return {"responses": [{"name": t["name"], "partition_responses": [
                {"index": p["index"], "error_code": 0, "base_offset": 7} for p in t["partition_data"]]}
                for t in body["topic_data"]], "throttle_time_ms": 0}
        if ctx.api_key == METADATA:
            return {"topics": [{"name": "t", "error_code": 0, "partitions": [
                {"partition_index": i, "error_code": 0, "leader_id": 1, "isr_nodes": [1]} for i in range(2)]}]}
        return {"error_code": 0, "throttle_time_ms": 0}

    @staticmethod
    def error(body, version, code, msg):
        return {"error_code": code, "throttle_time_ms": 0}


def ctx(api_key, version=9, client_id="c"):
    return SimpleNamespace(api_key=api_key, api_version=version, correlation_id=1, client_id=client_id,
                           conn=SimpleNamespace(peer="127.0.0.1:1", principal="User:ANONYMOUS"))


def produce_body(*parts):
    return {"acks": -1, "timeout_ms": 1000, "transactional_id": None,
            "topic_data": [{"name": t, "partition_data": [{"index": p, "records": b""}]} for t, p in parts]}


def fire(engine, api_key, body, handler=None, **kw):
    handler = handler or Handler()
    rules = engine.table.get(api_key)
    if rules is None:
        return handler.handle(None, ctx(api_key, **kw), body), handler
    return engine.run(rules, None, handler, ctx(api_key, **kw), body), handler


def test_no_rule_no_table_entry():
    e = FaultEngine()
    assert e.table == {}
    r = e.add(api="Heartbeat", error="REBALANCE_IN_PROGRESS")
    assert set(e.table) == {HEARTBEAT}
    r.clear()
    assert e.table == {} and len(e) == 0


def test_only_the_named_partition_fails_and_the_rest_is_performed():
    e = FaultEngine()
    e.add(api="Produce", topic="t", partition=1, error="NOT_LEADER_OR_FOLLOWER")
    res, h = fire(e, PRODUCE, produce_body(("t", 0), ("t", 1), ("u", 1)))
    assert [(t["name"], [p["index"] for p in t["partition_data"]]) for t in h.bodies[0]["topic_data"]] == \
        [("t", [0]), ("u", [1])]
    codes = {(t["name"], p["index"]): p["error_code"] for t in res["responses"] for p in t["partition_responses"]}
    assert codes == {("t", 0): 0, ("t", 1): ErrorCode.NOT_LEADER_OR_FOLLOWER, ("u", 1): 0}


def test_after_handling_performs_then_answers_the_error():
    e = FaultEngine()
    rule = e.add(api="Produce", topic="t", error="REQUEST_TIMED_OUT", after_handling=True, count=1)
    res, h = fire(e, PRODUCE, produce_body(("t", 0)))
    assert len(h.bodies) == 1  # written
    assert res["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.REQUEST_TIMED_OUT
    assert rule.hits == 1 and rule.exhausted and e.table == {}  # fired out: off the table
    res, _ = fire(e, PRODUCE, produce_body(("t", 0)))
    assert res["responses"][0]["partition_responses"][0]["error_code"] == 0


def test_request_level_matching():
    e = FaultEngine()
    rule = e.add(api="Heartbeat", group="g", client_id="svc", versions="3-4", error="REBALANCE_IN_PROGRESS")
    for body, kw, hit in [({"group_id": "g"}, {"version": 4, "client_id": "svc"}, True),
                          ({"group_id": "other"}, {"version": 4, "client_id": "svc"}, False),
                          ({"group_id": "g"}, {"version": 2, "client_id": "svc"}, False),
                          ({"group_id": "g"}, {"version": 4, "client_id": "x"}, False)]:
        res, _ = fire(e, HEARTBEAT, body, **kw)
        assert (res["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS) is hit
    assert rule.hits == 1


def test_fraction_and_window():
    e = FaultEngine()
    half = e.add(api="Heartbeat", error="REBALANCE_IN_PROGRESS", fraction=0.5)
    for _ in range(400):
        fire(e, HEARTBEAT, {"group_id": "g"})
    assert 120 < half.hits < 280
    half.clear()
    later = e.add(api="Heartbeat", error="REBALANCE_IN_PROGRESS", start_in_ms=300, for_ms=300)
    fire(e, HEARTBEAT, {"group_id": "g"})
    assert later.hits == 0
    time.sleep(0.35)
    fire(e, HEARTBEAT, {"group_id": "g"})
    assert later.hits == 1
    time.sleep(0.35)
    fire(e, HEARTBEAT, {"group_id": "g"})
    assert later.hits == 1 and later.to_dict()["state"] == "done"


def test_offline_partition_in_metadata():
    e = FaultEngine()
    e.offline("t", partition=1)
    res, _ = fire(e, METADATA, {"topics": None}, version=12)
    parts = res["topics"][0]["partitions"]
    assert (parts[0]["leader_id"], parts[0]["error_code"]) == (1, 0)
    assert (parts[1]["leader_id"], parts[1]["error_code"]) == (-1, ErrorCode.LEADER_NOT_AVAILABLE)


def test_json_form_round_trips_and_rejects_typos():
    r = rule_from_dict({"id": "x1", "api": "produce", "topic": "t", "partition": 0, "error": "not_enough_replicas",
                        "count": 2})
    d = r.to_dict()
    assert d["api"] == "Produce" and d["error"] == "NOT_ENOUGH_REPLICAS" and d["id"] == "x1"
    assert rule_from_dict(d).describe() == r.describe()
    for bad, what in [({"error": "X", "topc": "t"}, "topc"), ({"kind": "delay"}, "ms"), ({"error": "NOPE"}, "NOPE"),
                      ({"kind": "offline"}, "topic"), ({"error": "NONE", "count": 0}, "count"),
                      ({"api": "Nope", "kind": "close"}, "Nope"), ({"error": 1, "id": "a/b"}, "id")]:
        with pytest.raises(FaultRuleError, match=what):
            rule_from_dict(bad)
    with pytest.raises(FaultRuleError, match="one action"):
        FaultEngine().add(api="Produce", close=True, no_answer=True)

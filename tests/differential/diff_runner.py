"""Runs a scenario (data: a list of requests with principals) against a peer, normalises the
answers and compares Kafka's with pylog's.

A scenario is a dict:
    name:     unique; `{u}` in any string of the scenario becomes a suffix unique to it
    topics:   {name: partitions} created by admin before the steps (waited for)
    steps:    [{"api": "Metadata" or 3, "v": version, "as": principal (default admin),
                "body": {...}, "compare": True, "wait_ms": 0, "repeat_until": {...},
                "repeat_while": {...}}]
A body value "$N.path.to.field" is the value at that path of step N's answer (on the same
broker: producer ids, epochs and member ids differ between brokers). A "records" value that is
a dict {"values": [...], "producer_id", "producer_epoch", "base_sequence", "transactional",
"keys", "timestamps", "codec"}
is built into a v2 batch with pylog's BatchBuilder (the same bytes for both brokers).
`ignore`: extra field names left out of the comparison of that step, with the reason in
`why` (README's Compatibility section lists them).
`repeat_until` resends a step (every `repeat_every_ms`, up to `repeat_s`) until its answer has
the values given; `repeat_while` resends it as long as its answer has them (a retriable error).
A step's `client_id` sends it on a connection with that client id (quotas are per client id).
A scenario's `acls` [(principal, resource type, name, operation)] are granted (ALLOW, LITERAL)
on each broker before its steps.
A step's `band` {measure: [slack, fraction]} compares a number that legitimately varies
(throttle_time_ms, delivered_bytes: the records bytes of a Fetch answer) within
max(slack, fraction * the larger of the two) instead of exactly.
"""
from __future__ import annotations

import json
import re
import runpy
import time
from pathlib import Path

from diff_peers import ADMIN, OPERATIONS, RESOURCE_TYPES, Peer, grant_acls
from pylog.core.protocol import API_KEYS, API_NAMES, encode_subscription
from pylog.core.records import BatchBuilder

SCENARIO_DIR = Path(__file__).resolve().parent / "scenarios"
FIXED_TS = 1_700_000_000_000

# fields that legitimately differ between two brokers: ids they hand out, addresses, clocks
VOLATILE = {
    "throttle_time_ms", "error_message", "node_id", "leader_id", "host", "port", "cluster_id", "controller_id",
    "coordinator_id", "rack", "log_append_time_ms", "log_start_offset", "transaction_start_time_ms",
    "last_timestamp", "session_lifetime_ms", "batch_index_error_message", "client_host", "client_id",
    "leader_epoch", "current_leader", "node_endpoints", "brokers", "endpoints", "end_point",
    "cluster_authorized_operations", "topic_authorized_operations", "authorized_operations",
    "supported_features", "finalized_features", "finalized_features_epoch", "zk_migration_ready",
    "heartbeat_interval_ms", "message", "configs", "results_by_transaction", "member_assignment",
    "assignor_name", "log_dirs_total_bytes", "total_bytes", "usable_bytes", "size", "offset_lag",
    "api_keys", "coordinators_error_message", "replica_nodes", "isr_nodes", "offline_replicas",
    "eligible_leader_replicas", "last_known_elr", "is_future_key", "log_dir", "epoch_end_offset_leader_epoch",
    "partition_leader_epoch", "committed_leader_epoch", "preferred_read_replica", "snapshot_id",
    "diverging_epoch", "current_leader_epoch", "topic_id", "records",
}
# identifiers a broker makes up: replaced by their order of appearance (M1, P1, ...)
SYMBOLIC = {"member_id": "M", "producer_id": "P", "leader": "M", "group_instance_id": None}


def load_scenarios() -> list[dict]:
    """Every scenario of scenarios/*.py (each file's SCENARIOS list), in file order."""
    out = []
    for path in sorted(SCENARIO_DIR.glob("*.py")):
        data = runpy.run_path(str(path))
        for sc in data["SCENARIOS"]:
            sc.setdefault("file", path.stem)
            out.append(sc)
    names = [s["name"] for s in out]
    dupes = {n for n in names if names.count(n) > 1}
    assert not dupes, f"duplicate scenario names: {sorted(dupes)}"
    return out


def api_key(api) -> int:
    return api if isinstance(api, int) else API_KEYS[api]


def _suffix(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[-60:]


def _lookup(answers: list, ref: str):
    step, *path = ref[1:].split(".")
    v = answers[int(step)]
    for p in path:
        v = v[int(p)] if isinstance(v, list) else v[p]
    return v


def render(value, u: str, answers: list):
    """The request body of a step: `{u}` filled in, `$N.path` looked up, records built."""
    if isinstance(value, str):
        if value.startswith("$") and value[1:2].isdigit():
            return _lookup(answers, value)
        return value.replace("{u}", u)
    if isinstance(value, list):
        return [render(v, u, answers) for v in value]
    if isinstance(value, dict):
        if "values" in value and set(value) <= {"values", "producer_id", "producer_epoch", "base_sequence",
                                                 "transactional", "keys", "timestamps", "codec"}:
            return _batch({k: render(v, u, answers) for k, v in value.items()})
        if set(value) == {"subscription"}:  # a classic consumer's JoinGroup metadata
            return encode_subscription({"topics": render(value["subscription"], u, answers), "user_data": None,
                                        "owned_partitions": [], "generation_id": -1, "rack_id": None}, 0)
        return {k: render(v, u, answers) for k, v in value.items()}
    return value


def _batch(spec: dict) -> bytes:
    """`keys` and `timestamps` (ms, or "now") per record when given; else no key and FIXED_TS + i."""
    b = BatchBuilder(producer_id=spec.get("producer_id", -1), producer_epoch=spec.get("producer_epoch", -1),
                     base_sequence=spec.get("base_sequence", -1), is_transactional=spec.get("transactional", False),
                     codec=spec.get("codec", 0))
    keys, stamps = spec.get("keys"), spec.get("timestamps")
    for i, v in enumerate(spec["values"]):
        ts = stamps[i] if stamps else FIXED_TS + i
        key = keys[i] if keys else None
        b.append(int(time.time() * 1000) if ts == "now" else ts, key.encode() if isinstance(key, str) else key,
                 v.encode() if isinstance(v, str) else v, [])
    return bytes(b.build())


def _wait_topics(peer: Peer, names: list[str], timeout: float = 60.0) -> None:
    admin = peer.client(ADMIN)
    deadline = time.monotonic() + timeout
    while True:
        md = admin.call(3, 12, {"topics": [{"name": n, "topic_id": None} for n in names],
                                "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
        ok = all(t["error_code"] == 0 and t["partitions"] and all(p["error_code"] == 0 and p["leader_id"] >= 0
                                                                   for p in t["partitions"]) for t in md["topics"])
        if ok:
            return
        assert time.monotonic() < deadline, f"{peer.name}: topics {names} not ready: {md['topics']}"
        time.sleep(0.1)


def create_topics(peer: Peer, topics: dict, configs: dict | None = None) -> None:
    if not topics:
        return
    body = {"topics": [{"name": n, "num_partitions": p, "replication_factor": 1, "assignments": [],
                        "configs": [{"name": k, "value": str(v)} for k, v in (configs or {}).get(n, {}).items()]}
                       for n, p in topics.items()], "timeout_ms": 30000, "validate_only": False}
    r = peer.client(ADMIN).call(19, 7, body)
    assert all(t["error_code"] in (0, 36) for t in r["topics"]), (peer.name, r)
    _wait_topics(peer, list(topics))


def _wait_coordinator_topics(peer: Peer, topics: dict, u: str, timeout: float = 60.0) -> None:
    """Until the group coordinator assigns every partition of `topics` to a probe member of a group of
    its own (left and deleted after). Kafka's coordinator learns a new topic a moment after Metadata
    shows it; a regex it resolves before then stays unresolved for Kafka's 10 s between resolutions."""
    admin = peer.client(ADMIN)
    group, member = f"probe-{u}", f"probe-{u}"
    body = {"group_id": group, "member_id": member, "member_epoch": 0, "instance_id": None, "rack_id": None,
            "rebalance_timeout_ms": 30000, "subscribed_topic_names": sorted(topics), "subscribed_topic_regex": None,
            "server_assignor": None, "topic_partitions": []}
    deadline = time.monotonic() + timeout
    while True:
        r = admin.call(68, 1, body)
        if r["error_code"] == 0:
            owned = sum(len(t["partitions"]) for t in (r["assignment"] or {}).get("topic_partitions") or ())
            if owned == sum(topics.values()):
                break
            body = {**body, "member_epoch": r["member_epoch"], "rebalance_timeout_ms": -1,
                    "subscribed_topic_names": None, "topic_partitions": None}
        assert time.monotonic() < deadline, f"{peer.name}: the group coordinator never assigned {topics}: {r}"
        time.sleep(0.1)
    admin.call(68, 1, {**body, "member_epoch": -1})
    r = admin.call(42, 2, {"groups_names": [group]})
    assert r["results"][0]["error_code"] == 0, r


def run(peer: Peer, sc: dict) -> list[dict]:
    """Every step's answer (or {"closed": True} when the broker closed the connection)."""
    u = _suffix(sc["name"])
    topics = {render(k, u, []): v for k, v in (sc.get("topics") or {}).items()}
    create_topics(peer, topics, {render(k, u, []): v for k, v in (sc.get("topic_configs") or {}).items()})
    if topics and any((st.get("body") or {}).get("subscribed_topic_regex") for st in sc["steps"]):
        _wait_coordinator_topics(peer, topics, u)
    if sc.get("acls"):
        grant_acls(peer, [{"resource_type": RESOURCE_TYPES[rt], "resource_name": render(name, u, []),
                           "resource_pattern_type": 3, "principal": f"User:{who}", "host": "*",
                           "operation": OPERATIONS[op], "permission_type": 3} for who, rt, name, op in sc["acls"]])
    answers: list = []
    for step in sc["steps"]:
        if step.get("wait_ms"):
            time.sleep(step["wait_ms"] / 1000)
        user = step.get("as", ADMIN)
        key, version = api_key(step["api"]), step["v"]
        until, while_ = step.get("repeat_until"), step.get("repeat_while")
        deadline = time.monotonic() + step.get("repeat_s", 20)
        while True:
            body = render(step.get("body") or {}, u, answers)
            cid = step.get("client_id")
            cid = render(cid, u, answers) if cid else None
            c = peer.client(user, cid)
            try:
                ans = c.call(key, version, body)
            except (ConnectionError, OSError):
                peer.drop(user, cid)
                ans = {"closed": True}
            if not (until or while_) and _loading(ans) and time.monotonic() < deadline:
                time.sleep(0.2)  # a coordinator still loading: clients retry these
                continue
            settled = (not until or _matches(ans, until)) and (not while_ or not _matches(ans, while_))
            if settled or time.monotonic() > deadline:
                break
            time.sleep(step.get("repeat_every_ms", 200) / 1000)
        answers.append(ans)
    return answers


RETRIABLE = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
NOT_LEADER = 6  # a partition just created, its leader not yet serving on Kafka: producers retry


def _loading(ans: dict) -> bool:
    if ans.get("error_code") in RETRIABLE:
        return True
    if any(p.get("error_code") == NOT_LEADER for t in ans.get("responses") or ()
           for p in t.get("partition_responses") or ()):
        return True
    # a share coordinator loading its `__share_group_state` partition (the share-group state APIs)
    if any(p.get("error_code") in RETRIABLE for t in ans.get("results") or () for p in t.get("partitions") or ()):
        return True
    # a transaction coordinator still taking its partition over (seen on a node just started)
    return any(c.get("error_code") in RETRIABLE for c in [*(ans.get("coordinators") or ()),
                                                          *(ans.get("transaction_states") or ())])


def _matches(ans: dict, want: dict) -> bool:
    """Every path has the value wanted ("!text": a string value not starting with text)."""
    for k, v in want.items():
        try:
            got = _lookup([ans], "$0." + k)
        except (KeyError, IndexError, TypeError):
            return False
        if isinstance(v, str) and v.startswith("!"):
            if not isinstance(got, str) or got.startswith(v[1:]):
                return False
        elif got != v:
            return False
    return True


def normalise(value, ignore=frozenset(), symbols: dict | None = None, key: str | None = None):
    """Volatile fields removed, made-up ids renamed by order of appearance, lists of entries
    sorted (brokers may list groups, topics or partitions in another order)."""
    if symbols is None:
        symbols = {}
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in VOLATILE or k in ignore:
                continue
            if k in SYMBOLIC and SYMBOLIC[k] and isinstance(v, (str, int)) and v not in ("", -1, None):
                table = symbols.setdefault(SYMBOLIC[k], {})
                out[k] = table.setdefault(v, f"{SYMBOLIC[k]}{len(table) + 1}")
                continue
            out[k] = normalise(v, ignore, symbols, k)
        return out
    if isinstance(value, list):
        if value and all(isinstance(i, dict) for i in value):
            value = sorted(value, key=_order_key)  # before symbols are handed out, by agreed fields
        return [normalise(v, ignore, symbols, key) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{len(bytes(value))} bytes>"
    return value


def _order_key(item: dict) -> str:
    """Sort entries by what both brokers agree on (not by the symbols their made-up ids got)."""
    return json.dumps(normalise({k: v for k, v in item.items() if k not in SYMBOLIC}), sort_keys=True, default=str)


def compare(sc: dict, kafka_answers: list, pylog_answers: list) -> list[str]:
    """Differences, each with the request, Kafka's answer and pylog's (empty when they agree)."""
    problems = []
    ks, ps = {}, {}
    for i, (step, ka, pa) in enumerate(zip(sc["steps"], kafka_answers, pylog_answers)):
        ignore = frozenset(step.get("ignore", ())) | frozenset(sc.get("ignore", ()))
        kn, pn = normalise(ka, ignore, ks), normalise(pa, ignore, ps)
        if not step.get("compare", True):
            continue
        for what, (slack, fraction) in (step.get("band") or {}).items():
            k, p = measure(what, ka), measure(what, pa)
            if abs(k - p) > max(slack, fraction * max(abs(k), abs(p))):
                problems.append(f"scenario {sc['name']} step {i}: {what} out of band "
                                f"(slack {slack}, fraction {fraction}): Kafka {k}, pylog {p}")
        if kn != pn:
            key = api_key(step["api"])
            problems.append(
                f"scenario {sc['name']} step {i}: {API_NAMES[key]} v{step['v']} as {step.get('as', ADMIN)}\n"
                f"  request: {json.dumps(step.get('body'), default=str)}\n"
                f"  Kafka:   {json.dumps(kn, sort_keys=True, default=str)}\n"
                f"  pylog:   {json.dumps(pn, sort_keys=True, default=str)}")
    return problems


def measure(what: str, ans: dict) -> int:
    """A number of an answer compared within a band."""
    if what == "delivered_bytes":
        return sum(len(bytes(p.get("records") or b"")) for t in ans.get("responses") or ()
                   for p in t.get("partitions") or ())
    return ans.get(what) or 0

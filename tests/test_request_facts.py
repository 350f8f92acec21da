"""Facts about requests are declared once, with the protocol schemas (core/protocol/facts.py, set
per API in core/protocol/apis): where a request names topics and partitions, by name or by id,
and where its answer puts a partition's error; its group and transactional-id fields; the ACL it
needs. The broker derives from them its authorization rules, topic-id resolution, the fault
engine's answer shapes and the partitioned APIs' error answers.

Shown here: every place the broker names an API (by name, schema constant or key number) is
listed, and outside the handler table each is a named exception with its reason; a new API,
declared with its facts and served by one handler function, gets everything else.
"""
from __future__ import annotations

import types
from pathlib import Path

from pylog.broker.api.handlers import HANDLERS, served
from pylog.broker.api.topic_ids import FIRST_ID_VERSION, by_id_of
from pylog.broker.ops.request_faults.shapes import COORDINATOR_APIS, OFFLINE_APIS, SHAPES, shapes_of
from pylog.broker.security.authorizer import CUSTOM_RULES, OPEN_APIS, rules_of
from pylog.core.errors import ErrorCode
from pylog.core.protocol import API_KEYS, SCHEMAS, Api, Field as F
from pylog.core.protocol.facts import Acl, Facts, Partitions
from pylog.core.protocol.types import INT32, STRING
from support.api_mentions import mentions

ROOT = Path(__file__).resolve().parent.parent
TABLE = "broker/api/handlers.py"  # names every served API: the one table

TOKEN_APIS = {"CreateDelegationToken", "RenewDelegationToken", "ExpireDelegationToken", "DescribeDelegationToken"}

# the places besides the table that name an API, each for its own reason
SPECIAL: dict[str, set[str]] = {
    # the APIs whose authorization is more than one ACL on one resource (KafkaApis' own checks)
    "broker/security/authorizer.py": set(CUSTOM_RULES) - {
        "ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge", "DescribeShareGroupOffsets",
        "AlterShareGroupOffsets", "DeleteShareGroupOffsets", "StreamsGroupHeartbeat", "StreamsGroupDescribe",
        "StreamsGroupTopologyDescriptionUpdate", "DescribeTopicPartitions", *TOKEN_APIS},
    "broker/security/share_rules.py": {
        "ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge", "DescribeShareGroupOffsets",
        "AlterShareGroupOffsets", "DeleteShareGroupOffsets", "StreamsGroupHeartbeat", "StreamsGroupDescribe",
        "StreamsGroupTopologyDescriptionUpdate"},
    # DescribeTopicPartitions and the delegation token APIs check their ACLs in their handlers
    "broker/security/cluster_rules.py": {"DescribeTopicPartitions", *TOKEN_APIS},
    # authentication: what a SASL listener lets through before (and during re-)authentication
    "broker/net/sasl.py": {"ApiVersions", "SaslHandshake", "SaslAuthenticate"},
    # quotas: the requests never throttled, and the byte rates of produce and fetch
    "broker/api/quotas.py": {"ApiVersions", "SaslHandshake", "SaslAuthenticate", "Produce", "Fetch"},
    # an unsupported version is answered in ApiVersions' shape (KIP-511)
    "broker/dispatch.py": {"ApiVersions"},
    # faults: a Metadata answer lists offline partitions; FindCoordinator names its keys; an
    # InitProducerId without a transactional id has no coordinator to be unavailable
    "broker/ops/request_faults/shapes.py": {"Metadata", "FindCoordinator"},
    "broker/ops/request_faults/engine.py": {"InitProducerId"},
    # the version from which each transactional API answers an old epoch PRODUCER_FENCED (KIP-588)
    "broker/api/txn.py": {"InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit"},
}


def broker_mentions() -> list[tuple[str, str, int, str]]:
    return [m for p in sorted((ROOT / "broker").rglob("*.py")) for m in mentions(p, ROOT)]


def test_no_api_is_named_by_its_key_number():
    found = [f"{rel}:{line}: {api}" for api, rel, line, how in broker_mentions() if how == "number"]
    assert not found, "APIs named by bare key numbers:\n" + "\n".join(found)


def test_every_place_an_api_is_named_is_the_table_or_a_named_exception():
    places: dict[str, set[str]] = {}
    for api, rel, _line, _how in broker_mentions():
        places.setdefault(rel, set()).add(api)
    served = {h.schema.name for h in HANDLERS}
    assert places.pop(TABLE) == served
    unexpected = {rel: sorted(apis - SPECIAL.get(rel, set())) for rel, apis in places.items()}
    assert {rel: a for rel, a in unexpected.items() if a} == {}
    # the exceptions only shrink: each one still names what it is listed for
    assert {rel: sorted(apis - places.get(rel, set())) for rel, apis in SPECIAL.items()
            if apis - places.get(rel, set())} == {}
    plain = served - set().union(*SPECIAL.values())
    assert len(plain) >= 20  # e.g. DescribeLogDirs, ListOffsets, JoinGroup: named by their schema and the table only


def test_the_mention_finder_finds_each_form(tmp_path):
    (tmp_path / "broker").mkdir()
    probe = tmp_path / "broker" / "probe.py"
    probe.write_text(
        "from pylog.core.protocol.apis import meta\n"
        "from pylog.core.protocol.apis.produce import PRODUCE\n"
        "_FETCH_KEY = 1\n"
        "def f(ctx, api_key):\n"
        "    if api_key in (17, 36):\n"
        "        return meta.METADATA, PRODUCE\n"
        "    return {0: 'a', 2: 'b', 3: 'c'}, API_KEYS['DescribeLogDirs'], ctx.api_key == 22\n")
    found = sorted((api, line, how) for api, _rel, line, how in mentions(probe, tmp_path))
    assert found == sorted([
        ("Fetch", 3, "number"), ("SaslHandshake", 5, "number"), ("SaslAuthenticate", 5, "number"),
        ("Metadata", 6, "name"), ("Produce", 6, "name"),
        ("Produce", 7, "number"), ("ListOffsets", 7, "number"), ("Metadata", 7, "number"),
        ("DescribeLogDirs", 7, "name"), ("InitProducerId", 7, "number")])


def test_the_tables_are_the_declared_facts():
    assert OPEN_APIS == {API_KEYS[n] for n in ("SaslHandshake", "ApiVersions", "SaslAuthenticate", "DescribeCluster")}
    assert FIRST_ID_VERSION == {API_KEYS["Produce"]: 13, API_KEYS["Fetch"]: 13, API_KEYS["Metadata"]: 10,
                                API_KEYS["DeleteTopics"]: 6, API_KEYS["OffsetCommit"]: 10,
                                API_KEYS["OffsetFetch"]: 10, API_KEYS["TxnOffsetCommit"]: 6}
    assert set(SHAPES) == {API_KEYS[n] for n in ("Produce", "Fetch", "ListOffsets", "OffsetForLeaderEpoch",
                                                 "OffsetCommit", "TxnOffsetCommit")}
    assert {API_KEYS["Metadata"], API_KEYS["Produce"]} <= set(OFFLINE_APIS)
    assert API_KEYS["JoinGroup"] in COORDINATOR_APIS


def _probe_api() -> Api:
    """An API no table names: key 1000, topics named by id from v1, DESCRIBE on each topic."""
    return Api(1000, "ProbeTopics", "0-1", "0+",
               request=[F("topics", [F("name", STRING), F("partitions", [F("partition_index", INT32)])])],
               response=[F("topics", [F("name", STRING), F("partitions", [
                   F("partition_index", INT32), F("error_code", INT32)])])],
               facts=Facts(acl=Acl("DESCRIBE", "TOPIC"), partitions=Partitions(
                   "topics", "name", "partitions", "partition_index", "topics", "name", "partitions",
                   "partition_index", lambda i, c: {"partition_index": i, "error_code": c},
                   lambda: {"topics": []}, ids_from=1)))


def test_a_new_api_needs_its_schema_and_its_handler():
    api = _probe_api()
    schemas = {**SCHEMAS, api.key: api}

    def probe_topics(broker, ctx, body):  # the handler: all the new API has besides its schema
        return {"topics": []}

    (handler,) = served(types.SimpleNamespace(probe_topics=probe_topics), api)
    assert handler.key == 1000 and handler.handle is probe_topics
    body = {"topics": [{"name": "a", "partitions": [{"partition_index": 0}, {"partition_index": 2}]}]}
    assert handler.error(body, 0, ErrorCode.NOT_LEADER_OR_FOLLOWER, None) == {"topics": [
        {"name": "a", "partitions": [{"partition_index": 0, "error_code": ErrorCode.NOT_LEADER_OR_FOLLOWER},
                                     {"partition_index": 2, "error_code": ErrorCode.NOT_LEADER_OR_FOLLOWER}]}]}
    assert 1000 in rules_of(schemas)  # authorization: DESCRIBE on each topic
    assert shapes_of(schemas)[1000] is api.facts.partitions  # the fault engine's answer shape
    assert by_id_of(schemas)[1000].ids_from == 1  # topic ids resolved in dispatch from v1

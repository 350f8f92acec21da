"""Transaction APIs: requests in, calls on the transaction coordinator, responses out.

InitProducerId with a transactional id, AddPartitionsToTxn (v0-3, the
client's), AddOffsetsToTxn, TxnOffsetCommit, EndTxn, and the admin's
DescribeTransactions, ListTransactions and DescribeProducers. The state
machine and its records live in txn/coordinator.py.
"""
from __future__ import annotations

import logging
import re
import time

from pylog.broker.api.context import RequestContext, mirror_partitions
from pylog.broker.api.views import TxnView
from pylog.broker.api.groups import commit_answer, commit_requests
from pylog.broker.api.meta import INTERNAL_TOPICS
from pylog.broker.security.authorizer import topic_filter
from pylog.core.security.acl import AclOperation as Op
from pylog.broker.groups.offsets_topic import TOPIC as OFFSETS_TOPIC
from pylog.broker.txn import epoch_bump
from pylog.core.errors import ErrorCode

log = logging.getLogger("pylog.broker.txn")


def _err(code, **extra) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, **extra}


# ---- InitProducerId (transactional) ------------------------------------------

# Kafka 4.4 answers an old producer epoch INVALID_PRODUCER_EPOCH (47) instead of PRODUCER_FENCED (90)
# below these versions (the clients before KIP-588 know only 47); TxnOffsetCommit always answers 47
# (the group coordinator checks the epoch, not the transaction coordinator)
FENCED_SINCE = {"InitProducerId": 4, "AddPartitionsToTxn": 2, "AddOffsetsToTxn": 2, "EndTxn": 2}


def old_epoch_code(api: str, version: int, code: int) -> int:
    """The code Kafka 4.4 answers for `code` at `version` of `api` (see FENCED_SINCE)."""
    if code == ErrorCode.PRODUCER_FENCED and version < FENCED_SINCE.get(api, 1 << 15):
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


def init_transactional(broker: TxnView, body: dict, version: int = 4) -> dict:
    """InitProducerId for a transactional id (apis_produce hands these over)."""
    if (body.get("producer_id", -1) == -1) != (body.get("producer_epoch", -1) == -1):
        # Kafka: a producer id and epoch come together (KIP-360) or not at all
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REQUEST, "producer_id": -1,
                "producer_epoch": -1}
    code, pid, epoch = broker.txn_coordinator.init_producer_id(
        body["transactional_id"], body["transaction_timeout_ms"], body.get("producer_id", -1),
        body.get("producer_epoch", -1))
    code = old_epoch_code("InitProducerId", version, code)
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": pid, "producer_epoch": epoch}


# ---- AddPartitionsToTxn ------------------------------------------------------

def add_partitions_to_txn(broker: TxnView, ctx: RequestContext, body: dict) -> dict:
    """Add partitions to the producer's transaction (v0-3: one transaction per request; v4+, a
    partition leader's form: several transactions, each added or only verified)."""
    if ctx.api_version >= 4:
        return _add_partitions_batched(broker, body)
    topics = body["v3_and_below_topics"]
    wanted = [(t["name"], p) for t in topics for p in t["partitions"]]
    # Kafka: WRITE on each topic, and never an internal topic (with or without an authorizer)
    may_write = topic_filter(broker.authorizer, ctx, Op.WRITE)
    refused = {tp for tp in wanted if tp[0] in INTERNAL_TOPICS or not may_write(tp[0])}
    unknown = {tp for tp in wanted if tp not in refused and broker.logs.get_log(*tp) is None}
    if unknown or refused:
        # Kafka: nothing is added; the failed partitions say why, the others OPERATION_NOT_ATTEMPTED
        def entry(t, p):
            if (t, p) in refused:
                return ErrorCode.TOPIC_AUTHORIZATION_FAILED
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if (t, p) in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED
    else:
        code = broker.txn_coordinator.add_partitions(
            body["v3_and_below_transactional_id"], body["v3_and_below_producer_id"],
            body["v3_and_below_producer_epoch"], wanted)
        code = old_epoch_code("AddPartitionsToTxn", ctx.api_version, code)

        def entry(t, p):
            return code
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": [
        {"name": t["name"], "results_by_partition": [
            {"partition_index": p, "partition_error_code": entry(t["name"], p)} for p in t["partitions"]]}
        for t in topics]}


def _add_partitions_batched(broker: TxnView, body: dict) -> dict:
    tc = broker.txn_coordinator
    results = []
    for txn in body["transactions"]:
        tid, pid, epoch = txn["transactional_id"], txn["producer_id"], txn["producer_epoch"]
        topics = txn["topics"]
        if txn["verify_only"]:
            def entry(t, p, tid=tid, pid=pid, epoch=epoch):
                return tc.verify_partition(tid, pid, epoch, t, p)
        else:
            wanted = [(t["name"], p) for t in topics for p in t["partitions"]]
            unknown = {tp for tp in wanted if broker.logs.get_log(*tp) is None}
            code = (ErrorCode.OPERATION_NOT_ATTEMPTED if unknown else
                    epoch_bump.add_implicitly(tc, tid, pid, epoch, wanted))

            def entry(t, p, unknown=unknown, code=code):
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if (t, p) in unknown else code
        results.append({"transactional_id": tid, "topic_results": [
            {"name": t["name"], "results_by_partition": [
                {"partition_index": p, "partition_error_code": entry(t["name"], p)} for p in t["partitions"]]}
            for t in topics]})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results_by_transaction": results}


def add_partitions_to_txn_error(body, version, code, msg):
    """Every partition with `code`."""
    return {"throttle_time_ms": 0, "error_code": code, "results_by_transaction": [
                {"transactional_id": t["transactional_id"], "topic_results": [
                    {"name": tp["name"], "results_by_partition": [
                        {"partition_index": p, "partition_error_code": code} for p in tp["partitions"]]}
                    for tp in t["topics"]]} for t in body["transactions"] or ()],
            "results_by_topic_v3_and_below": [
                {"name": t["name"], "results_by_partition": [
                    {"partition_index": p, "partition_error_code": code} for p in t["partitions"]]}
                for t in body["v3_and_below_topics"] or ()]}


# ---- AddOffsetsToTxn, TxnOffsetCommit ---------------------------------------

def add_offsets_to_txn(broker: TxnView, ctx: RequestContext, body: dict) -> dict:
    """Add the group's `__consumer_offsets` partition to the transaction."""
    if not body["group_id"]:
        return _err(ErrorCode.INVALID_GROUP_ID)
    tc = broker.txn_coordinator
    code = tc.add_partitions(body["transactional_id"], body["producer_id"], body["producer_epoch"],
                             [(OFFSETS_TOPIC, tc.offsets_partition(body["group_id"]))])
    return _err(old_epoch_code("AddOffsetsToTxn", ctx.api_version, code))


def add_offsets_to_txn_error(body, version, code, msg):
    """`code`."""
    return _err(code)


def txn_offset_commit(broker: TxnView, ctx: RequestContext, body: dict) -> dict:
    """Offsets committed inside the transaction: visible to the group at its COMMIT."""
    topics = body["topics"]
    gid = body["group_id"]
    tc = broker.txn_coordinator
    code = ErrorCode.NONE
    if ctx.api_version >= epoch_bump.FIRST_V2_TXN_OFFSET_COMMIT and gid:
        # transaction.version 2: this request also does AddOffsetsToTxn's work
        code = epoch_bump.add_implicitly(tc, body["transactional_id"], body["producer_id"],
                                         body["producer_epoch"], [(OFFSETS_TOPIC, tc.offsets_partition(gid))])
    if code == ErrorCode.NONE:
        code = tc.check_offsets_commit(body["transactional_id"], body["producer_id"], body["producer_epoch"], gid)
    code = old_epoch_code("TxnOffsetCommit", ctx.api_version, code)
    _, offsets = commit_requests(broker, topics)
    if not offsets:
        codes = []
    elif code == ErrorCode.NONE:
        codes = broker.group_coordinator.txn_commit_offsets(
            gid, body["producer_id"], body["producer_epoch"], body["generation_id_or_member_epoch"], body["member_id"],
            body["group_instance_id"], offsets, stale_epoch_error=ctx.api_version >= 6)
    else:
        codes = [code] * len(offsets)
    return commit_answer(topics, {tp: c for (tp, *_), c in zip(offsets, codes)})


# ---- EndTxn ------------------------------------------------------------------

def end_txn(broker: TxnView, ctx: RequestContext, body: dict) -> dict:
    """Commit or abort: markers on every partition of the transaction (v5, transaction.version 2:
    after an epoch bump, answering the producer id and epoch of the next transaction)."""
    if ctx.api_version >= epoch_bump.FIRST_V2_END_TXN:
        code, pid, epoch = epoch_bump.end_txn(broker.txn_coordinator, body["transactional_id"],
                                              body["producer_id"], body["producer_epoch"], body["committed"])
        return _err(code, producer_id=pid, producer_epoch=epoch)
    # Kafka 4.4 records clientTransactionVersion 0 for an EndTxn below v5, whatever the transaction began with
    code = broker.txn_coordinator.end_txn(body["transactional_id"], body["producer_id"], body["producer_epoch"],
                                          body["committed"], client_version=0)
    return _err(old_epoch_code("EndTxn", ctx.api_version, code))


def end_txn_error(body, version, code, msg):
    """`code`."""
    return _err(code, producer_id=-1, producer_epoch=-1)


# ---- DescribeTransactions, ListTransactions ----------------------------------

def describe_transactions(broker: TxnView, ctx: RequestContext, body: dict) -> dict:
    """The coordinator's state of each transactional id (kafka-transactions.sh describe)."""
    out = []
    for tid in body["transactional_ids"]:
        m = broker.txn_coordinator.describe(tid)
        if m is None:
            out.append({"error_code": ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, "transactional_id": tid,
                        "transaction_state": "", "transaction_timeout_ms": 0, "transaction_start_time_ms": -1,
                        "producer_id": 0, "producer_epoch": 0, "topics": []})
            continue
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(m.partitions):
            by_topic.setdefault(t, []).append(p)
        out.append({"error_code": ErrorCode.NONE, "transactional_id": tid, "transaction_state": m.state.kafka_name,
                    "transaction_timeout_ms": m.timeout_ms, "transaction_start_time_ms": m.start_ms,
                    "producer_id": m.producer_id, "producer_epoch": m.producer_epoch,
                    "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]})
    return {"throttle_time_ms": 0, "transaction_states": out}


def describe_transactions_error(body, version, code, msg):
    """Every id with `code`."""
    return {"throttle_time_ms": 0, "transaction_states": [
        {"error_code": code, "transactional_id": t, "transaction_state": "", "transaction_timeout_ms": 0,
         "transaction_start_time_ms": -1, "producer_id": 0, "producer_epoch": 0, "topics": []}
        for t in body["transactional_ids"]]}


def list_transactions(broker: TxnView, ctx: RequestContext, body: dict) -> dict:
    """Transactional ids filtered by state, producer id and (v1+) how long they have been open."""
    from pylog.core.protocol.txn_log import TxnState

    names = {s.kafka_name: s for s in TxnState}
    states = [s for s in body["state_filters"]]
    unknown = [s for s in states if s not in names]
    pids = set(body["producer_id_filters"])
    duration = body["duration_filter"]
    pattern = body["transactional_id_pattern"]
    if pattern:
        try:
            regex = re.compile(pattern)
        except re.error:
            return list_transactions_error(body, ctx.api_version, ErrorCode.INVALID_REGULAR_EXPRESSION, None)
    else:
        regex = None
    now = int(time.time() * 1000)
    out = []
    for m in sorted(broker.txn_coordinator.list(), key=lambda x: x.transactional_id):
        if m.state == TxnState.DEAD:  # being expired: Kafka never lists it
            continue
        if states and m.state.kafka_name not in states:
            continue
        if pids and m.producer_id not in pids:
            continue
        if regex is not None and not regex.fullmatch(m.transactional_id):
            continue
        # as Kafka: the time since the transaction started, whatever its state (an Empty one has
        # no start, -1, so it is always older than the filter)
        if duration >= 0 and now - m.start_ms <= duration:
            continue
        out.append({"transactional_id": m.transactional_id, "producer_id": m.producer_id,
                    "transaction_state": m.state.kafka_name})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "unknown_state_filters": unknown,
            "transaction_states": out}


def list_transactions_error(body, version, code, msg):
    """`code`, no transactions."""
    return {"throttle_time_ms": 0, "error_code": code, "unknown_state_filters": [], "transaction_states": []}


# ---- DescribeProducers -------------------------------------------------------

def describe_producers(broker: TxnView, ctx: RequestContext, body: dict) -> dict:
    """The active producers of each partition, from its producer state (kafka-transactions.sh
    describe-producers)."""
    def entry(t, p):
        plog = broker.logs.get_log(t["name"], p)
        if plog is None:
            return {"partition_index": p, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    "error_message": None, "active_producers": []}
        producers = [{"producer_id": e.producer_id, "producer_epoch": e.producer_epoch,
                      "last_sequence": e.last_seq, "last_timestamp": e.last_timestamp,
                      "coordinator_epoch": e.coordinator_epoch,
                      "current_txn_start_offset": -1 if e.current_txn_first_offset is None
                      else e.current_txn_first_offset}
                     for e in sorted(plog.producer_state, key=lambda e: e.producer_id)]
        return {"partition_index": p, "error_code": ErrorCode.NONE, "error_message": None,
                "active_producers": producers}
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [entry(t, p) for p in t["partition_indexes"]]} for t in body["topics"]]}


def describe_producers_error(body, version, code, msg):
    """Every partition with `code`."""
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [{"partition_index": p, "error_code": code, "error_message": msg,
                                            "active_producers": []} for p in t["partition_indexes"]]}
        for t in body["topics"]]}


# ---- WriteTxnMarkers ---------------------------------------------------------

def write_txn_markers(broker: TxnView, ctx: RequestContext, body: dict) -> dict:
    """Write COMMIT/ABORT markers as asked (kafka-transactions.sh abort of a hanging transaction):
    a marker older than the partition's producer epoch or coordinator epoch is refused."""
    from pylog.core.records.control import ABORT, COMMIT, build_end_txn_batch

    out = []
    for mk in body["markers"]:
        pid, epoch, commit = mk["producer_id"], mk["producer_epoch"], mk["transaction_result"]

        def entry(t, p, mk=mk, pid=pid, epoch=epoch, commit=commit):
            plog = broker.logs.get_log(t["name"], p)
            if plog is None:
                return {"partition_index": p, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
            last = plog.producer_state.last_entry(pid)
            if last is not None and epoch < last.producer_epoch:
                return {"partition_index": p, "error_code": ErrorCode.INVALID_PRODUCER_EPOCH}
            if last is not None and mk["coordinator_epoch"] < last.coordinator_epoch:
                return {"partition_index": p, "error_code": ErrorCode.TRANSACTION_COORDINATOR_FENCED}
            batch = build_end_txn_batch(COMMIT if commit else ABORT, pid, epoch, mk["coordinator_epoch"],
                                        timestamp=int(time.time() * 1000))
            try:
                plog.append_internal(bytearray(batch), broker.leader_epoch(plog))
            except Exception as e:  # noqa: BLE001 - per-partition storage error
                log.error("WriteTxnMarkers to %s-%d failed: %s", t["name"], p, e)
                return {"partition_index": p, "error_code": ErrorCode.KAFKA_STORAGE_ERROR}
            if t["name"] == OFFSETS_TOPIC:
                broker.group_coordinator.complete_txn(pid, p, commit)
            broker.wake(t["name"], p)
            return {"partition_index": p, "error_code": ErrorCode.NONE}
        out.append({"producer_id": pid, "topics": mirror_partitions(mk["topics"], entry,
                                                                     partitions="partition_indexes")})
        for t in out[-1]["topics"]:
            t["partitions"] = t.pop("partition_indexes")
    return {"markers": out}


def write_txn_markers_error(body, version, code, msg):
    """Every partition of every marker with `code`."""
    return {"markers": [{"producer_id": mk["producer_id"], "topics": [
        {"name": t["name"], "partitions": [{"partition_index": p, "error_code": code}
                                           for p in t["partition_indexes"]]} for t in mk["topics"]]}
        for mk in body["markers"]]}

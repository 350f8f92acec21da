"""Produce and InitProducerId.

Appends run inline on the event loop: storage validates and writes whole
batches (CRC, offsets patched in the header), which is fast enough not to need
a thread hop. On one node the ISR is this broker, so acks=all completes as soon
as the append is done (storage flushes inside the append when
flush.messages says so).
"""
from __future__ import annotations

import logging
import uuid

from pylog.broker.api.meta import INTERNAL_TOPICS
from pylog.broker.api.context import NONE, RequestContext, code_of
from pylog.broker.api.views import ProduceView
from pylog.broker.common.produce_body import (
    ATTRIBUTES, BASE_OFFSET, BATCH_LENGTH, MAGIC, PRODUCER_EPOCH, PRODUCER_ID, headers_of,
)
from pylog.broker.txn import epoch_bump
from pylog.core.errors import ErrorCode
from pylog.core.records.header import CODEC_MASK, CODEC_ZSTD, LOG_OVERHEAD, TRANSACTIONAL_MASK


log = logging.getLogger("pylog.broker")

ZERO_UUID = uuid.UUID(int=0)
INVALID_RECORD = ErrorCode.INVALID_RECORD
# Produce v11 is the first to carry TRANSACTION_ABORTABLE (KIP-890); older ones get INVALID_TXN_STATE
FIRST_ABORTABLE_PRODUCE = 11
NOT_ADDED = "Partition was not added to the transaction"


def _part_response(index, code, base_offset=-1, append_time=-1, start=-1, message=None, record_errors=()):
    return {"index": index, "error_code": code, "base_offset": base_offset,
            "log_append_time_ms": append_time, "log_start_offset": start,
            "record_errors": [{"batch_index": i, "batch_index_error_message": m} for i, m in record_errors],
            "error_message": message}


def _check_batch(broker: ProduceView, tid: str | None, h: tuple | None, size: int, name: str, idx: int,
                 version: int) -> tuple[int, str | None]:
    """The checks of one partition's batch before storage, on its header read once
    (produce_body): Kafka's ProduceRequest.validateRecords and the client-origin checks of
    UnifiedLog.analyzeAndValidateRecords, then KIP-890's for a transactional batch; storage's
    LogValidator checks the rest."""
    if h is None:
        return INVALID_RECORD, "a produce request must carry exactly one record batch"
    magic = h[MAGIC]
    if magic != 2:
        return INVALID_RECORD, (f"Produce requests with version {version} are only allowed to contain "
                                f"record batches with magic version 2, not {magic}")
    length = h[BATCH_LENGTH]
    if length + LOG_OVERHEAD != size:
        if length + LOG_OVERHEAD > size:
            return ErrorCode.CORRUPT_MESSAGE, "truncated record batch"
        return INVALID_RECORD, "a produce request must carry exactly one record batch"
    base_offset = h[BASE_OFFSET]
    if base_offset != 0:
        return INVALID_RECORD, f"The baseOffset of the record batch should be 0, but it is {base_offset}"
    attrs = h[ATTRIBUTES]
    if attrs & CODEC_MASK == CODEC_ZSTD and version < 7:
        return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, \
            f"Produce requests with version {version} are not allowed to use ZStandard compression"
    if not attrs & TRANSACTIONAL_MASK or tid is None:
        return 0, None
    return _verify_txn(broker, tid, h, name, idx, version)


def _verify_txn(broker: ProduceView, tid: str | None, h: tuple, name: str, idx: int, version: int) -> tuple[int, str | None]:
    """KIP-890 part 1: a transactional batch goes only to a partition of the producer's open
    transaction (the header's producer id and epoch, and a set lookup: no per-record work)."""
    pid, epoch = h[PRODUCER_ID], h[PRODUCER_EPOCH]
    if version >= epoch_bump.FIRST_V2_PRODUCE:
        # transaction.version 2: the batch adds its partition to the transaction (KIP-890 part 2)
        code = epoch_bump.add_implicitly(broker.txn_coordinator, tid, pid, epoch, [(name, idx)])
        if code == ErrorCode.PRODUCER_FENCED:
            code = ErrorCode.INVALID_PRODUCER_EPOCH
        return code, None
    code = broker.txn_coordinator.verify_partition(tid, pid, epoch, name, idx)
    if code == ErrorCode.INVALID_TXN_STATE:
        if version >= FIRST_ABORTABLE_PRODUCE:
            return ErrorCode.TRANSACTION_ABORTABLE, NOT_ADDED
        return code, NOT_ADDED
    return code, None


def produce(broker: ProduceView, ctx: RequestContext, body: dict):
    """Append each partition's batch as leader; None for acks=0 (no response). Topics named by id
    arrive with their names (dispatch resolved them: api/topic_ids.py); each batch header is
    read once (produce_body.headers_of) and storage validates the batches."""
    headers, transactional = headers_of(body)
    if body["transactional_id"] is None and transactional:
        # Kafka: a transactional batch needs a transactional id the producer may write
        code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        if body["acks"] == 0:
            ctx.conn.close("transactional records without a transactional id")
            return None
        return produce_error(body, ctx.api_version, code, None)
    v = ctx.api_version
    acks = body["acks"]
    logs = broker.logs
    failed = False
    out_topics = []
    global_code = NONE
    global_msg = None
    txn_id = body["transactional_id"]
    if acks not in (-1, 0, 1):
        global_code, global_msg = ErrorCode.INVALID_REQUIRED_ACKS, f"acks={acks} is not 0, 1 or -1"
    for t, topic_headers in zip(body["topic_data"], headers):
        tid = t.get("topic_id")  # not in the schema before Produce v13
        name = t["name"] or None  # an id dispatch could not resolve was answered there
        parts = []
        for p, h in zip(t["partition_data"], topic_headers):
            idx = p["index"]
            if global_code:
                parts.append(_part_response(idx, global_code, message=global_msg))
                failed = True
                continue
            if name in INTERNAL_TOPICS:
                # Kafka's ReplicaManager: clients never write internal topics
                parts.append(_part_response(idx, ErrorCode.INVALID_TOPIC_EXCEPTION,
                                            message=f"Cannot append to internal topic {name}"))
                failed = True
                continue
            plog = logs.logs.get((name, idx)) if name is not None else None  # LogManager.get_log, inline
            if plog is None:
                code = ErrorCode.UNKNOWN_TOPIC_ID if (tid not in (None, ZERO_UUID) and name is None) \
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if (name, idx) in logs.offline_logs:  # its log dir failed
                    code = ErrorCode.KAFKA_STORAGE_ERROR
                parts.append(_part_response(idx, code))
                failed = True
                continue
            if acks == -1 and plog.config.get("min.insync.replicas", 1) > 1:
                # the ISR is this one broker: acks=all can never be satisfied
                parts.append(_part_response(idx, ErrorCode.NOT_ENOUGH_REPLICAS, message=(
                    f"min.insync.replicas={plog.config['min.insync.replicas']} but the ISR has 1 replica")))
                failed = True
                continue
            records = p["records"]
            code, msg = _check_batch(broker, txn_id, h, len(records) if records is not None else 0, name, idx, v)
            if code:
                parts.append(_part_response(idx, code, message=msg))
                failed = True
                continue
            try:
                info = plog.append_as_leader(records, broker.leader_epoch(plog))
            except Exception as e:  # noqa: BLE001 - per-partition error from storage
                code, msg = code_of(e)
                if code == ErrorCode.UNKNOWN_SERVER_ERROR:
                    log.error("append to %s-%d failed", name, idx, exc_info=e)
                elif isinstance(e, OSError) and broker.dir_health is not None:
                    broker.dir_health.append_failed(plog, e)
                parts.append(_part_response(idx, code, message=msg, record_errors=getattr(e, "record_errors", ())))
                broker.stats.produce_failed(name)
                failed = True
                continue
            if broker.dir_health is not None and broker.dir_health.full:
                broker.dir_health.append_ok(plog)
            if not info.duplicate:
                broker.stats.produced(name, info.record_count, info.bytes)
                broker.wake(name, idx)
            parts.append(_part_response(idx, NONE, info.first_offset, info.log_append_time, info.log_start_offset))
        entry = {"name": name if name is not None else "", "partition_responses": parts}
        if tid is not None:
            entry["topic_id"] = tid
        out_topics.append(entry)
    if acks == 0:
        if failed:
            # no response to carry the error: closing tells the client (as Kafka does)
            ctx.conn.close("acks=0 produce failed; closing so the client notices")
        return None
    return {"responses": out_topics, "throttle_time_ms": 0}


def produce_error(body, version, code, msg):
    """Every partition of the request with `code`."""
    out = []
    for t in body["topic_data"]:
        entry = {"name": t["name"], "partition_responses": [
            _part_response(p["index"], code, message=msg) for p in t["partition_data"]]}
        if "topic_id" in t:
            entry["topic_id"] = t["topic_id"]
        out.append(entry)
    return {"responses": out, "throttle_time_ms": 0}


def init_producer_id(broker: ProduceView, ctx: RequestContext, body: dict):
    """With a transactional id: the transaction coordinator's answer (apis_txn). Without: a new
    producer id at epoch 0, always: Kafka's coordinator without a transactional id ignores the id
    and epoch a request names (idempotent producers bump their epoch locally)."""
    if body["transactional_id"] is not None:
        from pylog.broker.api.txn import init_transactional

        return init_transactional(broker, body, ctx.api_version)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id": broker.producer_ids.next_id(),
            "producer_epoch": 0}


def init_producer_id_error(body, version, code, msg):
    """No producer id: `code`."""
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1}

"""Produce and InitProducerId.

Appends run inline on the event loop: storage validates and writes whole
batches (CRC, offsets patched in the header), which is fast enough not to need
a thread hop. On one node the ISR is this broker, so acks=all completes as soon
as the append is done (storage flushes inside the append when
flush.messages says so).
"""
from __future__ import annotations

import logging
import struct
import uuid
from typing import TYPE_CHECKING

from pylog.commands.broker.context import RequestContext, code_of
from pylog.core.errors import ErrorCode

if TYPE_CHECKING:
    from pylog.commands.broker.broker import Broker

log = logging.getLogger("pylog.broker")

ZERO_UUID = uuid.UUID(int=0)
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
INVALID_RECORD = 87
CODEC_ZSTD = 4
TXN_REFUSED = 53  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED: fatal in every client, so they stop at once
TXN_MESSAGE = "transactions are not supported by this pylog broker"
# the last epoch handed out (Short.MAX_VALUE - 1, as Kafka); a producer there gets a new id
MAX_PRODUCER_EPOCH = 32766


def _part_response(index, code, base_offset=-1, append_time=-1, start=-1, message=None):
    return {"index": index, "error_code": code, "base_offset": base_offset,
            "log_append_time_ms": append_time, "log_start_offset": start,
            "record_errors": [], "error_message": message}


def _check_records(records, version) -> tuple[int, str | None]:
    if records is None or len(records) < 61:
        return INVALID_RECORD, "a produce request must carry exactly one record batch"
    if records[16] != 2:
        return 43, f"record batch magic {records[16]} is not supported (only v2)"  # UNSUPPORTED_FOR_MESSAGE_FORMAT
    (length,) = _I32.unpack_from(records, 8)
    if length + 12 != len(records):
        if length + 12 > len(records):
            return 2, "truncated record batch"  # CORRUPT_MESSAGE
        return INVALID_RECORD, "a produce request must carry exactly one record batch"
    (attrs,) = _I16.unpack_from(records, 21)
    if attrs & 7 == CODEC_ZSTD and version < 7:
        return 76, "zstd needs produce v7 or later"  # UNSUPPORTED_COMPRESSION_TYPE
    if attrs & 0x10:
        return TXN_REFUSED, TXN_MESSAGE
    return 0, None


def produce(broker: Broker, ctx: RequestContext, body: dict):
    """Append each partition's batch as leader; None for acks=0 (no response)."""
    v = ctx.api_version
    acks = body.get("acks", 1)
    logs = broker.logs
    failed = False
    out_topics = []
    global_code = 0
    global_msg = None
    if acks not in (-1, 0, 1):
        global_code, global_msg = 21, f"acks={acks} is not 0, 1 or -1"  # INVALID_REQUIRED_ACKS
    elif body.get("transactional_id") is not None:
        global_code, global_msg = TXN_REFUSED, TXN_MESSAGE
    for t in body.get("topic_data") or []:
        name = t.get("name")
        tid = t.get("topic_id")
        if not name and tid not in (None, ZERO_UUID):
            info = broker.topic_by_id(tid)
            name = info.name if info else None
        parts = []
        for p in t.get("partition_data") or []:
            idx = p.get("index", 0)
            if global_code:
                parts.append(_part_response(idx, global_code, message=global_msg))
                failed = True
                continue
            plog = logs.get_log(name, idx) if name is not None else None
            if plog is None:
                code = 100 if (tid not in (None, ZERO_UUID) and name is None) else 3
                parts.append(_part_response(idx, code))
                failed = True
                continue
            if acks == -1 and plog.config.get("min.insync.replicas", 1) > 1:
                # the ISR is this one broker: acks=all can never be satisfied
                parts.append(_part_response(idx, 19, message=(
                    f"min.insync.replicas={plog.config['min.insync.replicas']} but the ISR has 1 replica")))
                failed = True
                continue
            records = p.get("records")
            code, msg = _check_records(records, v)
            if code:
                parts.append(_part_response(idx, code, message=msg))
                failed = True
                continue
            try:
                info = plog.append_as_leader(records, broker.leader_epoch(plog))
            except Exception as e:  # noqa: BLE001 - per-partition error from storage
                code, msg = code_of(e)
                if code == -1:
                    log.error("append to %s-%d failed", name, idx, exc_info=e)
                parts.append(_part_response(idx, code, message=msg))
                failed = True
                continue
            if not info.duplicate:
                broker.wake(name, idx)
            parts.append(_part_response(idx, 0, info.first_offset, info.log_append_time, info.log_start_offset))
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
    for t in body.get("topic_data") or []:
        entry = {"name": t.get("name") or "", "partition_responses": [
            _part_response(p.get("index", 0), code, message=msg) for p in t.get("partition_data") or []]}
        if "topic_id" in t:
            entry["topic_id"] = t["topic_id"]
        out.append(entry)
    return {"responses": out, "throttle_time_ms": 0}


def init_producer_id(broker: Broker, ctx: RequestContext, body: dict):
    """A new producer id at epoch 0, or (KIP-360) the caller's id at the next epoch."""
    if body["transactional_id"] is not None:
        log.info("refusing transactional id %r from %s: %s", body["transactional_id"], ctx.conn.peer, TXN_MESSAGE)
        return {"throttle_time_ms": 0, "error_code": TXN_REFUSED, "producer_id": -1, "producer_epoch": -1}
    pid, epoch = body["producer_id"], body["producer_epoch"]
    if pid >= 0:
        # KIP-360: an idempotent producer asks to bump its epoch after an error
        if not broker.producer_ids.is_allocated(pid):
            return {"throttle_time_ms": 0, "error_code": ErrorCode.UNKNOWN_PRODUCER_ID, "producer_id": -1,
                    "producer_epoch": -1}
        if 0 <= epoch < MAX_PRODUCER_EPOCH:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id": pid,
                    "producer_epoch": epoch + 1}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id": broker.producer_ids.next_id(),
            "producer_epoch": 0}


def init_producer_id_error(body, version, code, msg):
    """No producer id: `code`."""
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1}

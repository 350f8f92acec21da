"""The `__transaction_state` codec against a partition Apache Kafka wrote.

tests/fixtures/kafka-transaction-log/ holds a segment Kafka 4.3.1's transaction
coordinator wrote (Empty, Ongoing, PrepareCommit, CompleteCommit,
PrepareAbort, CompleteAbort records of one transactional id) and Kafka's own
DumpLogSegments `--transaction-log-decoder` text of it (both from
regenerate.py there). pylog decodes every key and value, re-encodes them to
the same bytes, and renders the same text Kafka printed.
"""
from __future__ import annotations

import re

import pytest

from pylog.core.protocol import txn_log as tl
from pylog.core.records.memory import iter_records
from pylog.core.records.txn_log_records import format_transaction_log_record


@pytest.fixture(scope="module")
def kafka_txn_log(fixtures_dir):
    d = fixtures_dir / "kafka-transaction-log"
    records = list(iter_records((d / "00000000000000000000.log").read_bytes()))
    lines = [ln for ln in (d / "dump.txt").read_text().splitlines() if ln.startswith("| offset:")]
    return records, lines


def test_kafka_records_decode_and_reencode_byte_exact(kafka_txn_log):
    records, _ = kafka_txn_log
    assert len(records) == 7
    states = []
    for r in records:
        tid = tl.decode_key(r.key)
        assert tid == "tlw-id"
        assert tl.encode_key(tid) == bytes(r.key)
        version, value = tl.decode_value(r.value)
        assert version == 1
        assert tl.encode_value(value, version) == bytes(r.value)
        states.append(tl.TxnState(value["transaction_status"]))
    S = tl.TxnState
    assert states == [S.EMPTY, S.ONGOING, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT,
                      S.PREPARE_ABORT, S.COMPLETE_ABORT]
    committed = tl.decode_value(records[3].value)[1]
    assert committed["transaction_partitions"] == [
        {"topic": "__consumer_offsets", "partition_ids": [39]}, {"topic": "tlw", "partition_ids": [0, 1]}]
    assert committed["client_transaction_version"] == 2
    assert tl.decode_value(records[0].value)[1]["transaction_partitions"] is None


def test_dump_text_matches_kafkas_transaction_log_decoder(kafka_txn_log):
    records, lines = kafka_txn_log
    assert len(lines) == len(records)
    for r, line in zip(records, lines):
        m = re.search(r" key: (.*) payload: (.*)$", line)
        assert m, line
        assert format_transaction_log_record(r.key, r.value, r.offset) == (m.group(1), m.group(2))


def test_version_0_and_tombstone():
    value = {"producer_id": 7, "producer_epoch": 3, "transaction_timeout_ms": 60000,
             "transaction_status": int(tl.TxnState.ONGOING),
             "transaction_partitions": [{"topic": "t", "partition_ids": [2]}],
             "transaction_last_update_timestamp_ms": 5, "transaction_start_timestamp_ms": 4}
    raw = tl.encode_value(value, 0)
    assert raw[:2] == b"\x00\x00"
    version, back = tl.decode_value(raw)
    assert version == 0 and {k: back[k] for k in value} == value
    key = tl.encode_key("x")
    assert format_transaction_log_record(key, None, 0) == ('{"type":"0","data":{"transactionalId":"x"}}', "<DELETE>")
    assert tl.decode_record(key, None) == {"transactional_id": "x", "value_version": None, "value": None}
    with pytest.raises(tl.MalformedDataError):
        tl.decode_key(b"\x00\x01\x00\x01x")
    text, payload = format_transaction_log_record(key, b"\x00\x09", 12)
    assert text.startswith("Error at offset 12, skipping.") and payload is None
    assert tl.TxnState.PREPARE_EPOCH_FENCE.kafka_name == "PrepareEpochFence"

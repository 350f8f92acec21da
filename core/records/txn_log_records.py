"""`__transaction_state` records as kafka-dump-log's `--transaction-log-decoder` prints them.

The schemas are the transaction coordinator's own declarations
(`pylog.core.protocol.txn_log`); this module only renders a decoded record
with Kafka's JSON field names, so the text matches DumpLogSegments:
key `{"type":"0","data":{"transactionalId":...}}`, value
`{"version":"1","data":{...}}`, `<DELETE>` for a tombstone.
"""
from __future__ import annotations

from pylog.core.protocol import txn_log as tl
from pylog.core.records.schema_json import decode_versioned, format_dump_record

__all__ = ["decode_transaction_log_key", "decode_transaction_log_value", "format_transaction_log_record"]


def decode_transaction_log_key(key: bytes) -> tuple[int, dict]:
    """(key version, Kafka JSON data) of a TransactionLogKey."""
    return decode_versioned(tl.TRANSACTION_LOG_KEY, key)


def decode_transaction_log_value(value: bytes) -> tuple[int, dict]:
    """(value version, Kafka JSON data) of a TransactionLogValue; the status by its state's name,
    as Kafka 4.4's decoder prints it ("Ongoing", not 1)."""
    version, data = decode_versioned(tl.TRANSACTION_LOG_VALUE, value)
    status = data.get("transactionStatus")
    if isinstance(status, int):
        try:
            data["transactionStatus"] = tl.TxnState(status).kafka_name
        except ValueError:
            pass  # a status Kafka does not define: printed as the number it is
    return version, data


def format_transaction_log_record(key: bytes | None, value: bytes | None,
                                  offset: int) -> tuple[str | None, str | None]:
    """(key text, payload text) of one record, as DumpLogSegments' transaction-log decoder prints them."""
    return format_dump_record(key, value, offset, decode_transaction_log_key,
                              lambda _ktype, v: decode_transaction_log_value(v))

"""The batches of a Produce request, each header read once: what the handler checks (one batch,
magic, base offset, codec, the transactional flag, producer id and epoch) and what the
authorizer asks (are any records transactional), before storage validates the batches."""
from __future__ import annotations

from pylog.core.records.header import HEADER_SIZE, HEADER_STRUCT, TRANSACTIONAL_MASK

_unpack = HEADER_STRUCT.unpack_from
# positions in the header tuple (core.records.header.BatchHeader's fields)
BASE_OFFSET, BATCH_LENGTH, MAGIC, ATTRIBUTES, PRODUCER_ID, PRODUCER_EPOCH = 0, 1, 3, 5, 9, 10


def batch_header(records) -> tuple | None:
    """The v2 header fields of a partition's records, or None when they are too short to hold
    one (the magic decides whether the fields mean anything)."""
    if records is None or len(records) < HEADER_SIZE:
        return None
    return _unpack(records, 0)


def headers_of(body: dict) -> tuple[list[list], bool]:
    """(each topic's partitions' headers in request order, whether any batch is transactional):
    the one read of each batch header (plain loops: this runs for every Produce)."""
    headers = []
    transactional = False
    for t in body["topic_data"]:
        hs = []
        for p in t["partition_data"]:
            records = p["records"]
            if records is None or len(records) < HEADER_SIZE:
                hs.append(None)
                continue
            h = _unpack(records, 0)
            if h[ATTRIBUTES] & TRANSACTIONAL_MASK and h[MAGIC] == 2:
                transactional = True
            hs.append(h)
        headers.append(hs)
    return headers, transactional


def is_transactional(h: tuple | None) -> bool:
    return h is not None and h[MAGIC] == 2 and bool(h[ATTRIBUTES] & TRANSACTIONAL_MASK)


def has_transactional_records(body: dict) -> bool:
    """Any batch of the request has the transactional flag (the authorizer's question)."""
    return any(is_transactional(batch_header(p.get("records")))
               for t in body.get("topic_data") or () for p in t.get("partition_data") or ())

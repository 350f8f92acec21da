"""Facts read from a Produce request's body without parsing its batches: one header field."""
from __future__ import annotations

import struct

from pylog.core.records.header import ATTRIBUTES_OFFSET, HEADER_SIZE, MAGIC_OFFSET, TRANSACTIONAL_MASK

_I16 = struct.Struct(">h")


def has_transactional_records(body: dict) -> bool:
    """Any batch of the request has the transactional flag (one header read per partition)."""
    for t in body.get("topic_data") or ():
        for p in t.get("partition_data") or ():
            records = p.get("records")
            if records is not None and len(records) >= HEADER_SIZE and records[MAGIC_OFFSET] == 2:
                (attrs,) = _I16.unpack_from(records, ATTRIBUTES_OFFSET)
                if attrs & TRANSACTIONAL_MASK:
                    return True
    return False

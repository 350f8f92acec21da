"""The consumer's record parsing: from a fetched record set to records, a batch at a time.

`scan_records` walks a partition's fetched bytes by batch headers only (CRCs
checked when `check.crcs`, batches below the position, control batches and
aborted transactions left out); `decode_batch` turns one kept batch into
records when poll() reaches it; `CompletedFetch` holds one partition's
scanned fetch while poll() drains it.
"""
from __future__ import annotations

import struct

from pylog.core.errors import CorruptMessageError
from pylog.core.records.batch import RecordBatch
from pylog.core.records.errors import RecordFormatError
from pylog.core.records.header import CONTROL_MASK, LOG_OVERHEAD, MAGIC_OFFSET, TRANSACTIONAL_MASK
from pylog.core.records.legacy import LegacyBatch

_PREFIX = struct.Struct(">qi")  # base offset and batch length, common to every magic


class CompletedFetch:
    """One partition's fetched data, decoded a batch at a time as poll() drains it.

    Decoding lazily keeps only about max.poll.records Records alive: records made
    and dropped between two polls die young, whereas a whole decoded fetch
    (~10,000 records per MB) lives through several garbage collections and
    makes every older-generation collection walk it.
    """
    __slots__ = ("tp", "parts", "part", "position", "records", "index", "next_offset", "epoch",
                 "high_watermark")

    def __init__(self, tp, parts, position, next_offset, epoch, hw):
        self.tp = tp
        self.parts = parts  # batches still to decode: (batch, drop records below position?)
        self.part = 0
        self.position = position
        self.records: list = []  # the decoded batch being drained
        self.index = 0
        self.next_offset = next_offset
        self.epoch = epoch
        self.high_watermark = hw


def scan_records(tp, data, position, *, check_crcs=True, read_committed=False, aborted=None):
    """Walk a fetched record set by batch headers. Returns the batches to decode as
    (batch, has records below position), the offset to fetch next and the leader epoch
    of the last batch. No record is decoded here."""
    mv = memoryview(data)
    end = len(mv)
    pos = 0
    out = []
    next_offset = position
    epoch = -1
    aborted_pids = None
    pending_aborts = None
    if read_committed and aborted:
        pending_aborts = sorted(((a["first_offset"], a["producer_id"]) for a in aborted), reverse=True)
        aborted_pids = set()
    while pos + MAGIC_OFFSET + 1 <= end:
        base, length = _PREFIX.unpack_from(mv, pos)
        size = LOG_OVERHEAD + length
        if length < 0 or pos + size > end:
            break  # the partial batch at the end of a fetch
        magic = mv[pos + MAGIC_OFFSET]
        try:
            if magic == 2:
                b = RecordBatch(mv, pos)
                h = b.header
                if check_crcs:
                    b.check_crc()
                last = h.last_offset
                if last < position:
                    pos += size
                    next_offset = max(next_offset, last + 1)
                    continue
                epoch = h.partition_leader_epoch
                if pending_aborts is not None:
                    while pending_aborts and pending_aborts[-1][0] <= last:
                        aborted_pids.add(pending_aborts.pop()[1])
                if h.attributes & CONTROL_MASK:  # hidden, but may end an aborted transaction
                    if aborted_pids and h.producer_id in aborted_pids:
                        aborted_pids.discard(h.producer_id)
                elif aborted_pids and h.attributes & TRANSACTIONAL_MASK and h.producer_id in aborted_pids:
                    pass  # records of an aborted transaction
                elif h.record_count:
                    out.append((b, h.base_offset < position))
                next_offset = last + 1
            elif magic in (0, 1):
                b = LegacyBatch(mv, pos)
                if check_crcs:
                    b.check_crc()
                out.append((b, True))
                next_offset = max(next_offset, b.last_offset + 1)
            else:
                raise CorruptMessageError(f"unknown magic {magic} at offset {base} of {tp}")
        except RecordFormatError as e:
            raise CorruptMessageError(f"corrupt record batch at offset {base} of {tp}: {e}") from None
        pos += size
    return out, next_offset, epoch


def decode_batch(tp, part, position) -> list:
    """The records of one batch kept by scan_records, those below `position` dropped."""
    b, below = part
    try:
        recs = b.records()
    except RecordFormatError as e:
        raise CorruptMessageError(f"corrupt record batch at offset {b.base_offset} of {tp}: {e}") from None
    if below:
        recs = [r for r in recs if r.offset >= position]
    return recs

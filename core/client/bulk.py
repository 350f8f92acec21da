"""The producer's bulk path: runs of records appended to the accumulator as runs.

`Producer.send_many` hands a list of records here. Partitions are chosen for the
whole list at once (murmur2 vectorised over the keys, explicit partitions, the
sticky partition for the rest), records are grouped by partition keeping their
order, and each group is appended to its partition's open batch with
`ProducerBatch.append_run`, a batch at a time. No future, callback or Record
object is made per record: the caller gets back, per batch, which of its records
went into it, and reads the outcome off the batch (`done`, `error`, `base_offset`).

Records the run encoder does not take (one of 16 KiB or more, one with an explicit
timestamp) go through `Producer.send` one by one, in their place in the order.
"""
from __future__ import annotations

import collections
import time
from operator import itemgetter

from pylog.core.client.accumulator import HEADER_SIZE, RECORD_OVERHEAD_MAX
from pylog.core.records.batch import encode_headers
from pylog.core.client.errors import BulkSendStopped, KafkaTimeoutError, record_too_large
from pylog.core.client.partitioner import murmur2_many
from pylog.core.client.runs import column_lengths, frame_groups
from pylog.core.errors import KafkaError

_RUN_LIMIT = 16384 - 2 * RECORD_OVERHEAD_MAX  # larger records take the one-by-one path
_EMPTY_HEADERS = b"\x00"


def _as_bytes(items):
    """Encode str items (utf-8), keep bytes; one pass only when some item is not bytes."""
    if items is None:
        return None
    items = items if isinstance(items, list) else list(items)
    if set(map(type, items)) <= {bytes}:
        return items
    return [x.encode("utf-8") if isinstance(x, str) else (bytes(x) if x is not None else None) for x in items]


def _with_nulls(items):
    """(items with None as b"", lengths with -1 for None)."""
    try:
        return items, list(map(len, items))
    except TypeError:  # a None among them
        pass
    nulls = [i for i, x in enumerate(items) if x is None]
    items = list(items)
    for i in nulls:
        items[i] = b""
    lens = list(map(len, items))
    for i in nulls:
        lens[i] = -1
    return items, lens


def _column(items):
    """(items with None as b"", lengths with -1 for None, how many None, the longest or -1)."""
    got = column_lengths(items)
    if got is None:  # str, bytearray, a tuple...: converted first
        items, lens = _with_nulls(_as_bytes(items))
        return items, lens, lens.count(-1), max(lens, default=-1)
    lens, nulls, longest = got
    if nulls:
        items = [b"" if x is None else x for x in items]
    return items, lens, nulls, longest


def _pick(seq, idx):
    """seq[i] for i in idx, as a list (itemgetter runs in C)."""
    if not idx:
        return []
    if len(idx) == 1:
        return [seq[idx[0]]]
    return list(itemgetter(*idx)(seq))


def _groups(fixed, target, idx) -> list:
    """[(partition, records idx of it in their order)]: one group (-1: the sticky partition)
    unless `target` gives each record's partition."""
    if fixed is not None or target is None:
        return [(fixed if fixed is not None else -1, idx)]
    order = sorted(idx, key=target.__getitem__)
    tally = collections.Counter(_pick(target, order))
    groups = []
    pos = 0
    for part in sorted(tally):
        groups.append((part, order[pos:pos + tally[part]]))
        pos += tally[part]
    return groups


class BulkSender:
    """Appends runs for one Producer; used on the caller's thread."""

    def __init__(self, producer):
        self.p = producer
        self._hcache: tuple = (None, None)  # (headers list, its encoding): -H headers repeat

    def _encode_headers(self, headers):
        if headers is None:
            return _EMPTY_HEADERS
        if self._hcache[0] is headers:
            return self._hcache[1]
        enc = encode_headers(headers) if headers else _EMPTY_HEADERS
        self._hcache = (headers, enc)
        return enc

    def send_many(self, topic, values, keys=None, headers=None, partition=None, partitions=None,
                  timestamps=None):
        """Returns ([(batch, indices, first)], [(index, error)]): which records each batch
        took (indices into `values`; they are its records first, first + 1, ...) and the
        records refused before any batch took them.
        Raises BulkSendStopped (with the runs made so far) on a max.block.ms timeout."""
        runs: list = []
        try:
            return self._send_many(runs, topic, values, keys, headers, partition, partitions, timestamps)
        except KafkaTimeoutError as e:
            raise BulkSendStopped(e, runs) from None

    def _send_many(self, runs, topic, values, keys, headers, partition, partitions, timestamps):
        p = self.p
        try:
            n = p.partition_counts.get(topic) or p.wait_topic(topic)
        except KafkaError as e:
            return runs, [(i, e) for i in range(len(values))]
        # a null key or value: b"" with length -1 (the run encoder writes varint -1)
        values, vls, _, longest = _column(values)
        count = len(values)
        kls, klongest, nullkeys = None, 0, False
        if keys is not None:
            keys, kls, nullkeys, klongest = _column(keys)
        if keys is not None and len(keys) != count:
            raise ValueError("send_many: keys and values differ in length")
        failures: list = []
        if not count:
            return runs, failures
        # headers: one encoding per distinct list object (a shared -H list is encoded once)
        if headers is None:
            hdrs = _EMPTY_HEADERS
            hl = None
        else:
            enc = self._encode_headers
            hdrs = list(map(enc, headers))
            if len(set(map(id, hdrs))) == 1:
                hdrs = hdrs[0]
                hl = None
            else:
                hl = list(map(len, hdrs))
        single = set()
        if timestamps is not None:
            single.update(i for i, t in enumerate(timestamps) if t is not None)
        biggest = longest + klongest + (max(hl) if hl is not None else len(hdrs))
        if biggest + RECORD_OVERHEAD_MAX + HEADER_SIZE > min(p.max_request_size, p.pool.total) or \
                biggest >= _RUN_LIMIT:
            for i in range(count):
                size = vls[i] + (kls[i] if kls else 0) + (hl[i] if hl is not None else len(hdrs)) + RECORD_OVERHEAD_MAX
                too_large = record_too_large(size + HEADER_SIZE, p.max_request_size, p.pool.total)
                if too_large is not None:
                    failures.append((i, too_large))
                elif size >= _RUN_LIMIT:
                    single.add(i)
        refused = {i for i, _ in failures}
        # the partition of every record: explicit, by key, or -1 for the sticky partition
        if partition is not None:
            if not 0 <= partition < n:
                err = KafkaError(f"Invalid partition given with record: {partition} is not in the range "
                                 f"[0...{n}] of topic {topic}.")
                return runs, [(i, err) for i in range(count)]
            target = None
            fixed = partition
        else:
            fixed = None
            target = None
            if keys is not None and not p.ignore_keys:
                if n == 1 and not nullkeys:
                    fixed = 0
                else:
                    target = list(map(n.__rmod__, murmur2_many(keys))) if n > 1 else [0] * count
                    if nullkeys:
                        for i, kl in enumerate(kls):
                            if kl < 0:
                                target[i] = -1
            if partitions is not None and any(x is not None for x in partitions):
                if target is None:
                    target = [fixed if fixed is not None else -1] * count
                    fixed = None
                for i, x in enumerate(partitions):
                    if x is not None:
                        if not 0 <= x < n:
                            failures.append((i, KafkaError(
                                f"Invalid partition given with record: {x} is not in the range "
                                f"[0...{n}] of topic {topic}.")))
                            refused.add(i)
                        target[i] = x
        sticky_part = None
        if target is not None and -1 in target and target.count(-1) != len(target):
            # records for the sticky partition among others: they take the sticky partition
            # now, so each partition keeps the input order (it moves on after this call
            # if its batch filled up, rather than mid-way)
            sticky_part = p.sticky.partition(topic, n)
            target = [sticky_part if t < 0 else t for t in target]
        ctx = (topic, n, values, keys, hdrs, vls, kls, fixed, target, runs)
        try:
            return self._segments(ctx, count, single, refused, failures, topic, values, keys, headers,
                                  timestamps, fixed, target, vls, kls)
        finally:
            if sticky_part is not None and not p.acc.has_open_batch((topic, sticky_part)):
                p.sticky.next_partition(topic, n, prev=sticky_part)

    def _segments(self, ctx, count, single, refused, failures, topic, values, keys, headers, timestamps,
                  fixed, target, vls, kls):
        p = self.p
        runs = ctx[-1]
        if not single and not refused:
            self._segment(ctx, range(count))
            return runs, failures
        # records in input order: the one-by-one records between runs of the others
        seg: list = []
        for i in range(count):
            if i in refused:
                continue
            if i not in single:
                seg.append(i)
                continue
            if seg:
                self._segment(ctx, seg)
                seg = []
            pi = fixed if fixed is not None else target[i] if target is not None else -1
            fut = p.send(topic, values[i] if vls[i] >= 0 else None,
                         keys[i] if keys is not None and kls[i] >= 0 else None,
                         partition=None if pi < 0 else pi,
                         timestamp=timestamps[i] if timestamps is not None else None,
                         headers=(headers[i] if headers is not None else None) or None)
            if fut.error is not None:
                failures.append((i, fut.error))
            else:
                runs.append((fut.batch, [i], fut.index))
        if seg:
            self._segment(ctx, seg)
        return runs, failures

    def _segment(self, ctx, idx):
        """Group records `idx` by partition (keeping their order) and append each group."""
        topic, n, values, keys, hdrs, vls, kls, fixed, target, runs = ctx
        for part, g in _groups(fixed, target, idx):
            if isinstance(g, range):
                self._append(topic, n, part, values, g.start, g.stop, keys, hdrs, vls, kls, g, runs)
                continue
            gk = _pick(keys, g) if keys is not None else None
            gkl = _pick(kls, g) if kls is not None else None
            gh = _pick(hdrs, g) if isinstance(hdrs, list) else hdrs
            self._append(topic, n, part, _pick(values, g), 0, len(g), gk, gh, _pick(vls, g), gkl, g, runs)

    def _append(self, topic, n, part, values, lo, hi, keys, hdrs, vls, kls, idx, runs):
        """Append values[lo:hi] to `part` (-1: the sticky partition), batch after batch."""
        def append(b, ts, pos):
            return b.append_run(ts, values, pos, hi, keys, hdrs, vls, kls)

        def size(pos):
            return vls[pos] + (kls[pos] if kls is not None else 0) + RECORD_OVERHEAD_MAX + \
                (len(hdrs[pos]) if isinstance(hdrs, list) else len(hdrs))
        self._fill(topic, n, part, lo, hi, idx, runs, append, size)

    def _fill(self, topic, n, part, pos, hi, idx, runs, append, size):
        """Records pos..hi-1 into `part`'s batches: `append(batch, ts, pos)` takes as many as fit,
        `size(pos)` is record pos's size for a new batch; `idx` maps positions to the caller's."""
        p = self.p
        acc = p.acc
        sticky = part < 0
        part = p.sticky.partition(topic, n) if sticky else part
        ranged = isinstance(idx, range)
        while pos < hi:
            tp = (topic, part)
            ts = int(time.time() * 1000)
            took = 0
            with acc.lock:
                dq = acc.deques.get(tp)
                b = dq[-1] if dq else None
                if b is not None and not b.full:
                    at = b.count
                    took = append(b, ts, pos)
            if took:
                runs.append((b, idx[pos:pos + took] if not ranged else range(pos, pos + took), at))
                pos += took
                if b.full:
                    p.notify_sender()
                continue
            if b is not None and b.full:
                p.notify_sender()
                if sticky:
                    part = p.sticky.next_partition(topic, n, prev=part)
                    if acc.has_open_batch((topic, part)):
                        continue
            if acc.add_batch(acc.new_batch(topic, part, size(pos))):  # new_batch may block on buffer.memory
                p.notify_sender()

    def send_frame(self, topic, frame, headers=None, partition=None):
        """send_many of framed text records (`frame`: data, offsets, count, longest, keyed: see
        runs.frame_columns) with `headers` shared by every record: records go from the read
        block to the batches without a bytes object each. None when a record is too large for a
        run (the caller sends the columns with send_many)."""
        p = self.p
        hdrs = self._encode_headers(headers or None)
        biggest = frame.longest + len(hdrs) + RECORD_OVERHEAD_MAX
        if biggest >= _RUN_LIMIT or record_too_large(biggest + HEADER_SIZE, p.max_request_size, p.pool.total):
            return None
        runs: list = []
        try:
            return self._send_frame(runs, topic, frame, hdrs, partition)
        except KafkaTimeoutError as e:
            raise BulkSendStopped(e, runs) from None

    def _send_frame(self, runs, topic, frame, hdrs, partition):
        p = self.p
        count = frame.count
        try:
            n = p.partition_counts.get(topic) or p.wait_topic(topic)
        except KafkaError as e:
            return runs, [(i, e) for i in range(count)]
        if not count:
            return runs, []
        fixed = groups = None
        if partition is not None:
            if not 0 <= partition < n:
                err = KafkaError(f"Invalid partition given with record: {partition} is not in the range "
                                 f"[0...{n}] of topic {topic}.")
                return runs, [(i, err) for i in range(count)]
            fixed = partition
        elif frame.keyed and not p.ignore_keys:
            if n == 1:
                fixed = 0
            else:  # murmur2 of the keys and the grouping by partition in one call
                groups = [(part, g) for part, g in enumerate(frame_groups(frame.data, frame.offsets, n)) if g]
        lens = memoryview(frame.offsets).cast("q")

        def size(pos, idx):
            i = idx[pos] * 4
            return max(lens[i + 1], 0) + lens[i + 3] + RECORD_OVERHEAD_MAX + len(hdrs)
        for part, g in groups or [(fixed if fixed is not None else -1, range(count))]:
            gidx = None if isinstance(g, range) else g

            def append(b, ts, pos, gidx=gidx, hi=len(g)):
                return b.append_frame(ts, frame.data, frame.offsets, gidx, pos, hi, hdrs)
            self._fill(topic, n, part, 0, len(g), g, runs, append, lambda pos, g=g: size(pos, g))
        return runs, []

"""What the history says each partition's log holds: offsets, values, writers and readers.

Kafka's transactions put invisible control records in the log, so offsets are not contiguous;
as Jepsen's Kafka checker does, the analysis first checks that every (key, offset) has one value
and every value one place, then works in each key's *version order*: the values known to be
committed, sorted by offset, gaps ignored.
"""
from __future__ import annotations

from pylog.checker.history import FAIL, INFO, OK, Op

READS = ("poll", "txn")
WRITES = ("send", "txn")


def anomaly(kind: str, ops, detail: str, key=None, **facts) -> dict:
    found = {"kind": kind, "ops": sorted({o for o in ops if o is not None}), "detail": detail}
    if key is not None:
        found["key"] = key
    found.update(facts)
    return found


class Log:
    """Sends, reads and the version order of every key of a history (ops by their position)."""

    def __init__(self, ops: list[Op]):
        self.ops = ops
        self.writer: dict[int, int] = {}          # value -> position of the op that sent it
        self.sent_offset: dict[int, int] = {}     # value -> offset its send was acknowledged at
        self.sends: list[tuple] = []              # (key, value, offset or None, op position)
        self.reads: list[tuple] = []              # (op position, key, [(offset, value), ...])
        self.deliveries: list[tuple] = []         # share-poll: (op position, key, [(off, val, count)])
        self.anomalies: list[dict] = []
        self._collect()
        self.place: dict[int, tuple] = {}         # value -> (key, offset)
        self._index()
        self.order: dict[str, list[int]] = {}     # key -> committed values by offset
        self.pos: dict[int, int] = {}             # value -> its index in its key's order
        self.offset: dict[int, int] = {}          # value -> offset
        self._version_order()

    def _collect(self) -> None:
        writer, sent_offset, sends, reads = self.writer, self.sent_offset, self.sends, self.reads
        for i, op in enumerate(self.ops):
            f = op.f
            if f in READS or f == "send":
                for mop in op.value or ():
                    if mop[0] == "send":
                        _, key, value, offset = mop
                        writer[value] = i
                        sends.append((key, value, offset, i))
                        if offset is not None:
                            sent_offset[value] = offset
                    elif op.type != FAIL and len(mop) > 1:
                        for key, pairs in mop[1].items():
                            if pairs:
                                reads.append((i, key, pairs))
            elif f == "share-poll" and op.type == OK:
                for key, recs in op.value["records"].items():
                    if recs:
                        self.deliveries.append((i, key, recs))

    def _observations(self):
        """(key, offset, value, op position) for every acknowledged send, read and delivery."""
        ops = self.ops
        for key, value, offset, i in self.sends:
            op = ops[i]
            # an acknowledged offset is a fact unless the transaction around it may have aborted
            if offset is not None and (op.type == OK or (op.type == INFO and op.f != "txn")):
                yield key, offset, value, i
        for i, key, pairs in self.reads:
            for offset, value in pairs:
                yield key, offset, value, i
        for i, key, recs in self.deliveries:
            for offset, value, _count in recs:
                yield key, offset, value, i

    def _index(self) -> None:
        """One value per (key, offset), one (key, offset) per value."""
        at: dict[tuple, int] = {}
        at_op: dict[tuple, int] = {}
        place, place_op = self.place, {}
        conflicts: dict[tuple, dict] = {}
        dups: dict[int, dict] = {}
        for key, offset, value, i in self._observations():
            ko = (key, offset)
            seen = at.get(ko)
            if seen is None:
                at[ko] = value
                at_op[ko] = i
            elif seen != value:
                c = conflicts.setdefault(ko, {seen: at_op[ko]})
                c.setdefault(value, i)
            p = place.get(value)
            if p is None:
                place[value] = ko
                place_op[value] = i
            elif p != ko:
                d = dups.setdefault(value, {p: place_op[value]})
                d.setdefault(ko, i)
        for (key, offset), values in conflicts.items():
            self.anomalies.append(anomaly(
                "inconsistent-offsets", values.values(), f"offset {offset} of {key} holds {len(values)} values: "
                + ", ".join(map(str, sorted(values))), key=key, offset=offset, values=sorted(values)))
        for value, places in dups.items():
            where = sorted(places)
            self.anomalies.append(anomaly(
                "duplicate", places.values(), f"value {value} is at " + ", ".join(f"{k}@{o}" for k, o in where),
                key=where[0][0], value=value, places=[list(p) for p in where]))

    def _version_order(self) -> None:
        """Per key, the values read, or sent by an operation that succeeded, sorted by offset."""
        ops, writer = self.ops, self.writer
        by_key: dict[str, dict] = {}
        for value, (key, offset) in self.place.items():
            w = writer.get(value)
            if w is not None and ops[w].type != OK and value not in self.read_values:
                continue  # sent by an op that failed or may have failed, and never read
            by_key.setdefault(key, {})[offset] = value
        for key, entries in by_key.items():
            offsets = sorted(entries)
            values = [entries[o] for o in offsets]
            self.order[key] = values
            for idx, (o, v) in enumerate(zip(offsets, values)):
                self.pos[v] = idx
                self.offset[v] = o

    @property
    def read_values(self) -> set:
        cached = getattr(self, "_read_values", None)
        if cached is None:
            cached = set()
            for _i, _key, pairs in self.reads:
                cached.update(v for _o, v in pairs)
            for _i, _key, recs in self.deliveries:
                cached.update(r[1] for r in recs)
            self._read_values = cached
        return cached

    def first_at_or_after(self, key: str, offset: int) -> int:
        """The version-order index of the first committed value of `key` at `offset` or later."""
        values = self.order.get(key, ())
        lo, hi = 0, len(values)
        off = self.offset
        while lo < hi:
            mid = (lo + hi) // 2
            if off[values[mid]] < offset:
                lo = mid + 1
            else:
                hi = mid
        return lo

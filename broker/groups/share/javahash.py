"""Java's HashMap and HashSet iteration order, for porting Kafka code whose choices follow it.

Kafka's share assignor (SimpleHomogeneous/HeterogeneousAssignmentBuilder) picks partitions and
members in the iteration order of java.util.HashMap/HashSet, so matching its assignment means
iterating in that order. JavaHashMap keeps a table of buckets the way java.util.HashMap (JDK 17)
does: a key goes to bucket `spread(hashCode) & (capacity - 1)`, appended at the bucket's tail;
the table doubles when the size passes capacity * 0.75 (each bucket's entries keep their relative
order when split); computeIfAbsent (setdefault here) puts its new key at the head of the bucket
instead, and checks the size before inserting; removal never reorders; iteration goes bucket by bucket. Capacities follow
HashMap's constructors (`new HashMap()`, `new HashMap(n)`, `new HashMap(map)`,
`new HashSet(collection)`), and a bin reaching 9 entries while the table is under 64 buckets
doubles the table as HashMap.treeifyBin does. Treeified bins (9+ keys in one bucket of a table of
64 or more) are not modelled: their order can differ (not reached with a few hundred keys).

Keys and their Java hashCode: int -> Integer, str -> String (over UTF-16 code units),
uuid.UUID -> org.apache.kafka.common.Uuid, (uuid.UUID, int) -> the record
org.apache.kafka.server.common.TopicIdPartition (31 * topicId.hashCode() + partition).
"""
from __future__ import annotations

import uuid

_MASK = 0xFFFFFFFF


def _int32(v: int) -> int:
    v &= _MASK
    return v - (1 << 32) if v & 0x80000000 else v


def java_hash(key) -> int:
    """The key's Java hashCode(), as a signed 32-bit int."""
    if isinstance(key, bool):
        return 1231 if key else 1237
    if isinstance(key, int):
        return _int32(key)
    if isinstance(key, str):
        h = 0
        data = key.encode("utf-16-be")
        for i in range(0, len(data), 2):
            h = (31 * h + (data[i] << 8 | data[i + 1])) & _MASK
        return _int32(h)
    if isinstance(key, uuid.UUID):
        x = (key.int >> 64) ^ (key.int & 0xFFFFFFFFFFFFFFFF)
        return _int32((x >> 32) ^ x)
    if isinstance(key, tuple) and len(key) == 2:  # TopicIdPartition(topicId, partition)
        return _int32(31 * java_hash(key[0]) + java_hash(key[1]))
    raise TypeError(f"no Java hashCode for {type(key).__name__}")


def _spread(h: int) -> int:
    h &= _MASK
    return h ^ (h >> 16)


def table_size_for(cap: int) -> int:
    """HashMap.tableSizeFor: the power of two at or above cap (1 for 0 or less)."""
    n = 1
    while n < cap:
        n <<= 1
    return n


class JavaHashMap:
    """A dict iterating in java.util.HashMap's order (see the module's docstring)."""

    def __init__(self, initial_capacity: int | None = None):
        self._table: list[list] | None = None
        self._threshold = 0 if initial_capacity is None else table_size_for(initial_capacity)
        self._size = 0

    @classmethod
    def copy_of(cls, other: "JavaHashMap") -> "JavaHashMap":
        """`new HashMap<>(map)`: sized for the map, filled in its order."""
        m = cls(table_size_for(int(len(other) / 0.75 + 1.0)) if len(other) else None)
        for k, v in other.items():
            m[k] = v
        return m

    def _resize(self) -> None:
        old = self._table
        old_cap = len(old) if old else 0
        new_thr = 0
        if old_cap > 0:
            new_cap = old_cap << 1
            if old_cap >= 16:
                new_thr = self._threshold << 1
        elif self._threshold > 0:
            new_cap = self._threshold
        else:
            new_cap, new_thr = 16, 12
        if new_thr == 0:
            new_thr = int(new_cap * 0.75)
        self._threshold = new_thr
        table: list[list] = [[] for _ in range(new_cap)]
        for bucket in old or ():
            for entry in bucket:
                table[_spread(entry[2]) & (new_cap - 1)].append(entry)
        self._table = table

    def _find(self, key):
        if not self._table:
            return None, None
        h = java_hash(key)
        bucket = self._table[_spread(h) & (len(self._table) - 1)]
        for entry in bucket:
            if entry[2] == h and entry[0] == key:
                return bucket, entry
        return bucket, None

    def __setitem__(self, key, value) -> None:
        if self._table is None:
            self._resize()
        h = java_hash(key)
        bucket = self._table[_spread(h) & (len(self._table) - 1)]
        for entry in bucket:
            if entry[2] == h and entry[0] == key:
                entry[1] = value
                return
        bucket.append([key, value, h])
        if len(bucket) > 8 and len(self._table) < 64:  # HashMap.treeifyBin on a small table
            self._resize()
        self._size += 1
        if self._size > self._threshold:
            self._resize()

    def __getitem__(self, key):
        _, entry = self._find(key)
        if entry is None:
            raise KeyError(key)
        return entry[1]

    def get(self, key, default=None):
        _, entry = self._find(key)
        return default if entry is None else entry[1]

    def __contains__(self, key) -> bool:
        return self._find(key)[1] is not None

    def setdefault(self, key, factory):
        """HashMap.computeIfAbsent: factory() only when key is absent. Unlike put, it resizes
        before inserting (when the size is already past the threshold) and puts the new entry at
        the head of its bucket, and a bucket reaching 8 entries on a small table doubles it."""
        if self._table is None or self._size > self._threshold:
            self._resize()
        h = java_hash(key)
        bucket = self._table[_spread(h) & (len(self._table) - 1)]
        for entry in bucket:
            if entry[2] == h and entry[0] == key:
                return entry[1]
        value = factory()
        bucket.insert(0, [key, value, h])
        if len(bucket) >= 8 and len(self._table) < 64:
            self._resize()
        self._size += 1
        return value

    def pop(self, key, *default):
        bucket, entry = self._find(key)
        if entry is None:
            if default:
                return default[0]
            raise KeyError(key)
        bucket.remove(entry)
        self._size -= 1
        return entry[1]

    def __len__(self) -> int:
        return self._size

    def items(self):
        """(key, value) in HashMap order; removing the key just yielded is allowed, as with
        Iterator.remove()."""
        for bucket in list(self._table or ()):
            for entry in list(bucket):
                if entry in bucket:
                    yield entry[0], entry[1]

    def __iter__(self):
        return (k for k, _ in self.items())

    def keys(self):
        return list(self)

    def values(self):
        return [v for _, v in self.items()]

    def to_dict(self) -> dict:
        return dict(self.items())


class JavaHashSet:
    """A set iterating in java.util.HashSet's order (a HashMap of its elements)."""

    def __init__(self, initial_capacity: int | None = None, items=()):
        self._map = JavaHashMap(initial_capacity)
        for x in items:
            self.add(x)

    @classmethod
    def of(cls, collection) -> "JavaHashSet":
        """`new HashSet<>(collection)`: capacity max(size / .75 + 1, 16), filled in its order."""
        items = list(collection)
        return cls(max(int(len(items) / 0.75) + 1, 16), items)

    def add(self, x) -> bool:
        if x in self._map:
            return False
        self._map[x] = True
        return True

    def remove(self, x) -> bool:
        """Set.remove: whether x was there."""
        return self._map.pop(x, None) is not None

    discard = remove

    def __contains__(self, x) -> bool:
        return x in self._map

    def __len__(self) -> int:
        return len(self._map)

    def __iter__(self):
        """Elements in HashSet order; removing the element just yielded is allowed."""
        return iter(self._map)

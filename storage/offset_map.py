"""The cleaner's key -> latest offset map in a fixed memory budget.

Like Kafka's SkimpyOffsetMap: an open-addressing hash table (linear probing)
preallocated once from `log.cleaner.dedupe.buffer.size`, holding key digests,
never keys. A slot is 20 bytes in three flat arrays:

  8 bytes  64-bit SipHash of the key (Python's hash() of bytes: C speed)
  4 bytes  CRC-32C of the key (a second, independent 32 bits)
  8 bytes  offset (-1 = empty slot)

96 bits of digest make a false match (two keys taken for one) as unlikely as
Kafka's MD5-based map in practice (about n^2 / 2^97 for n keys), at a tenth of
the cost of hashlib per key. The map never grows: `full` turns true at
`load_factor * slots` entries and the cleaner then starts another pass.
"""
from __future__ import annotations

from array import array
from itertools import repeat

from crc32c import crc32c

SLOT_BYTES = 20
EMPTY = -1


class OffsetMap:
    def __init__(self, memory: int, load_factor: float = 0.9):
        slots = int(memory) // SLOT_BYTES
        if slots < 1:
            raise ValueError(f"dedupe buffer of {memory} bytes cannot hold a single entry ({SLOT_BYTES} bytes)")
        self.slots = slots
        self.load_factor = load_factor
        # at least one entry, and always one empty slot so probing terminates
        self.max_entries = max(1, min(slots - 1, int(slots * load_factor))) if slots > 1 else 1
        self._hashes = array("q", bytes(8 * slots))
        self._crcs = array("I", bytes(4 * slots))
        self._offsets = array("q", [EMPTY]) * slots
        self.size = 0
        self.latest_offset = -1
        self.probes = 0

    @property
    def memory_bytes(self) -> int:
        """Bytes held by the three arrays (what the budget is spent on)."""
        a = self._hashes
        return (len(a) * a.itemsize + len(self._crcs) * self._crcs.itemsize
                + len(self._offsets) * self._offsets.itemsize)

    @property
    def utilization(self) -> float:
        return self.size / self.slots

    @property
    def full(self) -> bool:
        return self.size >= self.max_entries

    def room(self) -> int:
        return self.max_entries - self.size

    def clear(self) -> None:
        self._offsets[:] = array("q", [EMPTY]) * self.slots
        self.size = 0
        self.latest_offset = -1
        self.probes = 0

    def put(self, key: bytes, offset: int) -> None:
        self.put_many((key,), (offset,))

    def put_many(self, keys, offsets) -> None:
        """Record offsets[i] as the latest offset of keys[i] (offsets ascending).

        Callers check room() first: putting more than max_entries new keys
        would overfill the table. Both digests are computed by map() over the
        whole list (C loops); the probing is the only per-key Python.
        """
        hashes, crcs, offs = self._hashes, self._crcs, self._offsets
        n = self.slots
        size = self.size
        probes = 0
        for h, c, off in zip(map(hash, keys), map(crc32c, keys), offsets):
            i = h % n
            o = offs[i]
            while o != -1:  # EMPTY
                if hashes[i] == h and crcs[i] == c:
                    break
                i += 1
                probes += 1
                if i == n:
                    i = 0
                o = offs[i]
            else:
                hashes[i] = h
                crcs[i] = c
                size += 1
            offs[i] = off
        self.size = size
        self.probes += probes
        if offsets:
            last = offsets[-1]
            if last > self.latest_offset:
                self.latest_offset = last

    def get(self, key: bytes) -> int:
        """The latest offset recorded for key, or -1."""
        hashes, crcs, offs = self._hashes, self._crcs, self._offsets
        n = self.slots
        h = hash(key)
        c = crc32c(key)
        i = h % n
        while True:
            o = offs[i]
            if o == EMPTY:
                return EMPTY
            if hashes[i] == h and crcs[i] == c:
                return o
            i += 1
            if i == n:
                i = 0

    def getter(self):
        """A fast lookup function bound to the current arrays (hot loop helper)."""
        hashes, crcs, offs = self._hashes, self._crcs, self._offsets
        n = self.slots

        def get(key: bytes) -> int:
            h = hash(key)
            i = h % n
            while True:
                o = offs[i]
                if o == EMPTY:
                    return EMPTY
                if hashes[i] == h and crcs[i] == crc32c(key):
                    return o
                i += 1
                if i == n:
                    i = 0
        return get

    def get_many(self, keys) -> list:
        """[get(key) for key in keys] in one loop (the rewrite pass's hot path)."""
        hashes, crcs, offs = self._hashes, self._crcs, self._offsets
        n = self.slots
        out = []
        add = out.append
        for key, h in zip(keys, map(hash, keys)):
            i = h % n
            o = offs[i]
            while o != -1:  # EMPTY
                # the CRC only when the 64-bit hash matches: once per key found
                if hashes[i] == h and crcs[i] == crc32c(key):
                    break
                i += 1
                if i == n:
                    i = 0
                o = offs[i]
            add(o)
        return out

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"OffsetMap(slots={self.slots}, size={self.size}, memory={self.memory_bytes})"


class UnboundedOffsetMap:
    """The same interface over a dict, with no memory bound: for dry runs and
    predictions, where one pass over the whole dirty section is wanted."""

    slots = 0
    memory_bytes = 0
    utilization = 0.0
    full = False

    def __init__(self):
        self._d: dict[bytes, int] = {}
        self.latest_offset = -1
        self.max_entries = 1 << 62

    @property
    def size(self) -> int:
        return len(self._d)

    def room(self) -> int:
        return self.max_entries

    def clear(self) -> None:
        self._d.clear()
        self.latest_offset = -1

    def put(self, key: bytes, offset: int) -> None:
        self.put_many((key,), (offset,))

    def put_many(self, keys, offsets) -> None:
        self._d.update(zip(keys, offsets))
        if offsets and offsets[-1] > self.latest_offset:
            self.latest_offset = offsets[-1]

    def get(self, key: bytes) -> int:
        return self._d.get(key, EMPTY)

    def getter(self):
        d = self._d
        return lambda key: d.get(key, EMPTY)

    def get_many(self, keys) -> list:
        return list(map(self._d.get, keys, repeat(EMPTY, len(keys))))

    def __len__(self) -> int:
        return len(self._d)

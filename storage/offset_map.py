"""The cleaner's key -> latest offset map in a fixed memory budget.

Two representations, both strictly within `log.cleaner.dedupe.buffer.size`:

1. A plain dict {key bytes: offset} while it provably fits the budget (the
   common case: keys few or small). Its inserts and lookups run in C over a
   whole batch (dict.update, map(dict.get)), several times cheaper than
   probing arrays from Python, and it matches keys exactly. Before each batch
   `fits()` bounds what the dict would hold after taking it, counting
   every byte: the dict's hash table at its current size and, when the batch
   can make it grow, the old and the new table side by side (CPython resizes
   to the next power of two >= 3 * entries, copying), one bytes object per
   key (its length rounded up to pymalloc's 16-byte size classes) and one
   int object per offset.
2. When the dict would not fit, like Kafka's SkimpyOffsetMap: an
   open-addressing hash table (linear probing) allocated from the budget,
   holding key digests, never keys. A slot is 20 bytes in three flat arrays:

     8 bytes  64-bit SipHash of the key (Python's hash() of bytes: C speed)
     4 bytes  CRC-32C of the key (a second, independent 32 bits)
     8 bytes  offset (-1 = empty slot)

   96 bits of digest make a false match (two keys taken for one) as unlikely
   as Kafka's MD5-based map in practice (about n^2 / 2^97 for n keys), at a
   tenth of the cost of hashlib per key. The arrays never grow: `full` turns
   true at `load_factor * slots` entries and the cleaner then starts another
   pass.

A cleaning starts in dict mode (`reset()`). When a batch does not fit an
empty dict, the map switches to the arrays at once; when it does not fit a
partly filled one, the pass ends there (the map is `full`) and the next
`clear()` switches to the arrays, so the dict and the arrays never coexist.
"""
from __future__ import annotations

from array import array
from itertools import repeat
from sys import getsizeof

from pylog.core.records.crc import crc32c

from pylog.storage.compaction_rules import map_keys, record_keys

SLOT_BYTES = 20
EMPTY = -1

# CPython 3.11 dict internals used for the budget (checked against getsizeof
# at import; any mismatch disables dict mode rather than risk the bound).
_DICT_OBJECT = getsizeof({})  # the dict object itself (GC header included)
_KEYS_HEADER = 32
_ENTRY = 24  # hash, key, value
_EMPTY_BYTES = getsizeof(b"")


def _table_bytes(size: int) -> int:
    """A dict's key table of `size` slots: header, index, entries (2/3 of size)."""
    ix = 1 if size <= 0xFF else 2 if size <= 0xFFFF else 4 if size <= 0xFFFFFFFF else 8
    return _KEYS_HEADER + size * ix + ((size << 1) // 3) * _ENTRY


def _dict_layout_ok() -> bool:
    d: dict = {}
    for i in range(2000):
        d[i] = i
        t = getsizeof(d) - _DICT_OBJECT
        size = _TABLE_SIZE_OF.get(t)
        if size is None or ((size << 1) // 3) < len(d):
            return False
    return True


_TABLE_SIZE_OF = {_table_bytes(1 << k): 1 << k for k in range(3, 48)}
_DICT_MODE = _dict_layout_ok()


def _object_bytes(n: int) -> int:
    """Heap bytes of an object of getsizeof n: pymalloc's 16-byte classes up to
    512 bytes, malloc (about 16 bytes of overhead) above."""
    return (n + 15) & ~15 if n <= 512 else n + 16


class OffsetMap:
    def __init__(self, memory: int, load_factor: float = 0.9):
        slots = int(memory) // SLOT_BYTES
        if slots < 1:
            raise ValueError(f"dedupe buffer of {memory} bytes cannot hold a single entry ({SLOT_BYTES} bytes)")
        self.memory = int(memory)
        self.slots = slots
        self.load_factor = load_factor
        # at least one entry, and always one empty slot so probing terminates
        self.max_entries = max(1, min(slots - 1, int(slots * load_factor))) if slots > 1 else 1
        self._hashes = self._crcs = self._offsets = None
        self._d: dict | None = {} if _DICT_MODE else None
        self._key_bytes = 0  # bound on the heap bytes of the dict's key objects
        self._int_bytes = 32  # heap bytes of one offset int (48 beyond 2**60)
        self._overflowed = False
        self._checked = None  # (keys, dict size, bytes bound) of the last fits()
        self._fit = (0, -1, 0)  # (longest key, last offset, bytes bound) of the last put_records() check
        self.wanted = 0  # keys the last put_records() was given
        self.peak_bytes = 0
        self._size = 0
        self.latest_offset = -1
        self.probes = 0
        if self._d is None:
            self._use_arrays()

    # ---- representation
    @property
    def uses_dict(self) -> bool:
        return self._d is not None

    def _use_arrays(self, keep_entries: bool = False) -> None:
        """Switch to the arrays. The dict is dropped first, so the two never
        coexist, unless keep_entries (put_many called without fits(): its
        entries then move over, correctness before the budget)."""
        d = self._d if keep_entries else None
        self._d = None
        self._key_bytes = 0
        self._overflowed = False
        if self._offsets is None:
            slots = self.slots
            self._hashes = array("q", bytes(8 * slots))
            self._crcs = array("I", bytes(4 * slots))
            self._offsets = array("q", [EMPTY]) * slots
        self._size = 0
        self.peak_bytes = max(self.peak_bytes, self.memory_bytes)
        if d:
            keys = list(d)
            self.put_many(keys, [d[k] for k in keys])

    def reset(self) -> None:
        """Empty, back in dict mode (the start of a cleaning): the arrays are freed."""
        if _DICT_MODE:
            self._hashes = self._crcs = self._offsets = None
            self._d = {}
            self._key_bytes = 0
            self._overflowed = False
            self._size = 0
            self.latest_offset = -1
            self.probes = 0
        else:
            self.clear()

    def _dict_bytes_with(self, keys, offsets) -> int:
        """Upper bound of the heap bytes of dict mode while and after taking keys."""
        return self._dict_bytes_for(len(keys), max(map(len, keys), default=0), offsets[-1] if offsets else 0)

    def _dict_bytes_for(self, count: int, max_key_len: int, last_offset: int) -> int:
        d = self._d
        n = len(d) + count
        now = getsizeof(d) - _DICT_OBJECT
        size = _TABLE_SIZE_OF.get(now, 0)  # 0: no table yet (an empty dict)
        tables = now
        if ((size << 1) // 3) < n:
            # it may grow (even twice in one update): old + new table at the peak
            final = 8
            while final < 3 * n:
                final <<= 1
            tables = max(now, _table_bytes(final >> 1)) + _table_bytes(final)
        int_bytes = 48 if last_offset >= 1 << 60 else self._int_bytes
        key_bytes = self._key_bytes + count * _object_bytes(_EMPTY_BYTES + max_key_len)
        # + the sorted list of its offsets for the rewrite pass (sorted_offsets():
        # 8 bytes a reference, and up to half as much again for the sort's merges)
        return _DICT_OBJECT + tables + key_bytes + n * int_bytes + 12 * n + 128

    def fits(self, keys, offsets) -> bool:
        """Can put_many(keys, offsets) stay within the budget? (keys never None)"""
        if self._d is None:
            return len(keys) <= self.max_entries - self._size
        need = self._dict_bytes_with(keys, offsets)
        self._checked = (keys, len(self._d), need)  # put_many of the same keys reuses it
        return need <= self.memory

    def overflow(self) -> None:
        """The pass ends here for want of room; the next clear() switches to the arrays."""
        if self._d is not None:
            self._overflowed = True

    @property
    def memory_bytes(self) -> int:
        """Bytes held now: the three arrays, or the dict's bound."""
        if self._d is not None:
            d = self._d
            return getsizeof(d) + self._key_bytes + len(d) * self._int_bytes
        a = self._hashes
        return (len(a) * a.itemsize + len(self._crcs) * self._crcs.itemsize
                + len(self._offsets) * self._offsets.itemsize)

    @property
    def size(self) -> int:
        return len(self._d) if self._d is not None else self._size

    @property
    def utilization(self) -> float:
        if self._d is not None:
            return self.memory_bytes / self.memory
        return self._size / self.slots

    @property
    def full(self) -> bool:
        if self._d is not None:
            return self._overflowed
        return self._size >= self.max_entries

    def room(self) -> int:
        """New keys that surely fit (in dict mode: keys of 16 bytes or less)."""
        if self._d is None:
            return self.max_entries - self._size
        lo, hi = 0, self.max_entries
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._dict_bytes_for(mid, 16, self.latest_offset) <= self.memory:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def clear(self) -> None:
        if self._d is not None and self._overflowed:
            self._use_arrays()  # freshly allocated: empty already
        elif self._d is not None:
            self._d = {}
            self._key_bytes = 0
        else:
            # marked empty a block at a time: a whole-size blank would cost
            # 8 bytes a slot on top of the budget
            offs = self._offsets
            n = self.slots
            step = 1 << 16
            blank = array("q", [EMPTY]) * min(n, step)
            for i in range(0, n, step):
                j = min(n, i + step)
                offs[i:j] = blank if j - i == len(blank) else blank[:j - i]
            self._size = 0
        self.latest_offset = -1
        self.probes = 0

    def put(self, key: bytes, offset: int) -> None:
        self.put_many((key,), (offset,))

    def put_records(self, data, base_offset: int) -> int | None:
        """put_many of the keyed records of one uncompressed records section (offsets
        from base_offset) when they fit: returns how many, or None with nothing put
        (`wanted` then says how many keys did not fit). In dict mode the keys go
        straight from the records into the dict (compaction_rules.map_keys)."""
        d = self._d
        if d is not None:
            before = len(d)
            n = map_keys(d, data, base_offset, self._dict_fits)
            if n:
                longest, last, need = self._fit
                self._key_bytes += (len(d) - before) * _object_bytes(_EMPTY_BYTES + longest)
                if last >= 1 << 60:
                    self._int_bytes = 48
                self.peak_bytes = max(self.peak_bytes, need)
                self.latest_offset = max(self.latest_offset, last)
            return n
        keys, offsets = record_keys(data, base_offset)
        if None in keys:
            offsets = [o for k, o in zip(keys, offsets) if k is not None]
            keys = [k for k in keys if k is not None]
        self.wanted = len(keys)
        if len(keys) > self.max_entries - self._size:
            return None
        self.put_many(keys, offsets)
        return len(keys)

    def _dict_fits(self, count: int, longest: int, last: int) -> bool:
        need = self._dict_bytes_for(count, longest, max(last, 0))
        self._fit = (longest, last, need)
        self.wanted = count
        return need <= self.memory

    def put_many(self, keys, offsets) -> None:
        """Record offsets[i] as the latest offset of keys[i] (offsets ascending).

        Callers check fits() first (room() for a count): in dict mode a batch
        that does not fit moves the map to the arrays first, and putting more
        than max_entries new keys would overfill the arrays.
        """
        d = self._d
        if d is not None:
            if not keys:
                return
            checked = self._checked
            if checked is not None and checked[0] is keys and checked[1] == len(d):
                need = checked[2]
            else:
                need = self._dict_bytes_with(keys, offsets)
            self._checked = None
            if need > self.memory:
                self._use_arrays(keep_entries=True)
            else:
                before = len(d)
                d.update(zip(keys, offsets))
                new = len(d) - before
                if new:
                    self._key_bytes += new * _object_bytes(_EMPTY_BYTES + max(map(len, keys)))
                if offsets[-1] >= 1 << 60:
                    self._int_bytes = 48
                if need > self.peak_bytes:
                    self.peak_bytes = need
                last = offsets[-1]
                if last > self.latest_offset:
                    self.latest_offset = last
                return
        hashes, crcs, offs = self._hashes, self._crcs, self._offsets
        n = self.slots
        size = self._size
        probes = 0
        # both digests by map() over the whole list (C loops): the probing is
        # the only per-key Python
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
        self._size = size
        self.probes += probes
        if offsets:
            last = offsets[-1]
            if last > self.latest_offset:
                self.latest_offset = last

    def get(self, key: bytes) -> int:
        """The latest offset recorded for key, or -1."""
        if self._d is not None:
            return self._d.get(key, EMPTY)
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

    def get_many(self, keys) -> list:
        """[get(key) for key in keys] in one call (the rewrite pass's hot path)."""
        if self._d is not None:
            return list(map(self._d.get, keys, repeat(EMPTY, len(keys))))
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

    def sorted_offsets(self) -> list | None:
        """The offsets held, ascending (each the latest of its key), for
        compaction_rules.filter_batch_survivors; None in array mode, where the
        budget has no room for them."""
        if self._d is None:
            return None
        return sorted(self._d.values())

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        mode = "dict" if self._d is not None else "arrays"
        return f"OffsetMap({mode}, slots={self.slots}, size={self.size}, memory={self.memory_bytes})"


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

    def fits(self, keys, offsets) -> bool:
        return True

    def overflow(self) -> None:
        pass

    def clear(self) -> None:
        self._d.clear()
        self.latest_offset = -1

    reset = clear

    def sorted_offsets(self) -> list:
        return sorted(self._d.values())

    def put(self, key: bytes, offset: int) -> None:
        self.put_many((key,), (offset,))

    def put_records(self, data, base_offset: int) -> int:
        """OffsetMap.put_records, always fitting."""
        return map_keys(self._d, data, base_offset, self._note_last)

    def _note_last(self, count: int, longest: int, last: int) -> bool:
        self.latest_offset = max(self.latest_offset, last)
        return True

    def put_many(self, keys, offsets) -> None:
        self._d.update(zip(keys, offsets))
        if offsets and offsets[-1] > self.latest_offset:
            self.latest_offset = offsets[-1]

    def get(self, key: bytes) -> int:
        return self._d.get(key, EMPTY)

    def get_many(self, keys) -> list:
        return list(map(self._d.get, keys, repeat(EMPTY, len(keys))))

    def __len__(self) -> int:
        return len(self._d)

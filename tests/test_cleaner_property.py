"""Property: compaction keeps exactly the newest record of each key (minus expired
tombstones), with original offsets; the consumed key/value map is unchanged."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.cleaner_support import NOW, append, kv_map, open_log, read_records, topic_config
from support.examples import examples
from pylog.storage.checks import verify_partition
from pylog.storage.cleaner import Cleaner
from pylog.storage.offset_map import OffsetMap

batch = st.tuples(
    st.sampled_from([0, 0, 3, 4]),  # codec: none, lz4, zstd
    st.sampled_from([None, 0, 1]),  # producer
    st.lists(st.tuples(st.integers(0, 11), st.booleans(), st.integers(0, 9)), min_size=1, max_size=8),
)


def expected(records, active_base, expired: bool):
    """Newest record per key below the active segment (tombstones dropped when
    expired), plus everything in the active segment."""
    latest = {}
    for off, k, v in records:
        if off < active_base:
            latest[k] = off
    keep = []
    for off, k, v in records:
        if off >= active_base:
            keep.append((off, k, v))
        elif latest[k] == off and not (v is None and expired):
            keep.append((off, k, v))
    return keep


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(batch, min_size=1, max_size=40), buffer_slots=st.sampled_from([10, 40, 1000]))
def test_compaction_keeps_latest_per_key(batches, buffer_slots):
    tmp = Path(tempfile.mkdtemp())
    try:
        lg = open_log(tmp / "t-0", topic_config(segment_bytes=600))
        seqs = {0: 0, 1: 0}
        for codec, prod, recs in batches:
            rows = [(b"key-%d" % k, None if tomb else b"v" * (n + 1) + b"-%d" % k) for k, tomb, n in recs]
            producer = None
            if prod is not None:
                producer = (1000 + prod, 0, seqs[prod])
                seqs[prod] += len(rows)
            append(lg, rows, codec=codec, producer=producer)
        original = read_records(lg)
        active_base = lg.segments[-1].base_offset
        # 8 records per batch at most: 10 slots hold one batch per pass (several passes)
        cleaner = Cleaner(OffsetMap(buffer_slots * 20), fsync=False)
        cleaner.clean(lg, None, now_ms=NOW, force=True)
        first = read_records(lg)
        assert first == expected(original, active_base, expired=False)
        assert kv_map(first) == kv_map(original)
        # after delete.retention.ms, a second cleaning drops the tombstones
        cleaner.clean(lg, None, now_ms=NOW + 1000, force=True)
        second = read_records(lg)
        assert second == expected(original, active_base, expired=True)
        assert kv_map(second) == kv_map(original)
        assert lg.log_end_offset == original[-1][0] + 1
        # the producers continue where they were
        for pid in (0, 1):
            if seqs[pid]:
                append(lg, [(b"key-0", b"after")], producer=(1000 + pid, 0, seqs[pid]))
        lg.close()
        rep = verify_partition(tmp / "t-0")
        assert rep.problems == [], rep.problems
        reopened = open_log(tmp / "t-0", topic_config(segment_bytes=600), clean=False)
        assert read_records(reopened)[: len(second)] == second
        for pid in (0, 1):
            if seqs[pid]:
                append(reopened, [(b"key-1", b"after2")], producer=(1000 + pid, 0, seqs[pid] + 1))
        reopened.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

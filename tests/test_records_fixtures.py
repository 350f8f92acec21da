"""The third-party segment files decode completely, as their README's table says."""
from __future__ import annotations

import re

import pytest

from pylog.core.records import RecordBatch, iter_entries, iter_headers


def _table(fixtures_dir):
    readme = (fixtures_dir / "third-party-segments" / "README.md").read_text()
    rows = {}
    for line in readme.splitlines():
        m = re.match(r"\|\s*(\S+\.log)\s*\|\s*(\d+)\s*\|([^|]+)\|([^|]+)\|", line)
        if m:
            ints = lambda s: [int(x) for x in s.split(",")]  # noqa: E731
            rows[m.group(1)] = (int(m.group(2)), ints(m.group(3)), ints(m.group(4)))
    return rows


def test_readme_lists_the_files(fixtures_dir):
    rows = _table(fixtures_dir)
    files = sorted(p.name for p in (fixtures_dir / "third-party-segments").glob("*.log"))
    assert files and sorted(rows) == files


@pytest.mark.parametrize("name", ["cluster-metadata-a.log", "cluster-metadata-b.log"])
def test_segment_decodes_completely(fixtures_dir, name):
    count, base_offsets, sizes = _table(fixtures_dir)[name]
    buf = (fixtures_dir / "third-party-segments" / name).read_bytes()
    headers = list(iter_headers(buf, verify_crc=True))
    assert len(headers) == count
    assert [h.base_offset for _, h in headers] == base_offsets
    assert [h.size for _, h in headers] == sizes
    assert sum(sizes) == len(buf)
    assert [(p, h) for p, _, h in iter_entries(buf)] == headers
    next_offset = base_offsets[0]
    for pos, h in headers:
        batch = RecordBatch(buf, pos, verify_crc=True)
        assert h.magic == 2 and not h.is_control
        records = batch.records()  # checks framing and the record count
        assert len(records) == h.record_count >= 1
        assert [r.offset for r in records] == list(range(h.base_offset, h.last_offset + 1))
        assert records[0].offset == next_offset  # contiguous across batches
        next_offset = h.next_offset
        for r in records:
            assert h.base_timestamp <= r.timestamp <= h.max_timestamp
            # KRaft metadata records: frame version 1, then the record type
            assert r.key is None and r.value[0] == 1

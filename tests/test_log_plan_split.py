"""log_plan.split_tasks: segment tasks cut at offset-index entries into offset ranges of about
equal bytes, each reading exactly its offsets, together exactly the plan's range."""
from __future__ import annotations

import pytest

from pylog.spark.log_plan import ReadOptions, plan_log_dir
from pylog.spark.log_rows import read_task
from pylog.core.config import TOPIC_CONFIGS
from pylog.core.records.batch import build_batch
from pylog.storage import Log

NOW = 1_700_000_000_000
CFG = TOPIC_CONFIGS.resolve({"segment.bytes": "60000", "index.interval.bytes": "300"})


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("split")
    for part, batches in ((0, 300), (1, 40)):  # one long partition (several segments), one short
        lg = Log(root / f"t-{part}", CFG, clock=lambda: NOW / 1000, fsync=False)
        for i in range(batches):
            lg.append_as_leader(bytearray(build_batch([(NOW + i, b"k%d" % j, b"v" * (20 + i % 50))
                                                       for j in range(1 + i % 5)])), 0)
        lg.flush()
        lg.close()
    return root


def _offsets(tasks) -> list:
    return [o for t in tasks for b in read_task(t) for o in b.column("offset").to_pylist()]


@pytest.mark.parametrize("min_tasks", [1, 2, 7, 16])
@pytest.mark.parametrize("bounds", [(None, None), (13, 611)])
def test_pieces_read_each_offset_once(log_dir, min_tasks, bounds):
    opts = dict(topics=("t",), from_offset=bounds[0], until_offset=bounds[1])
    whole = plan_log_dir(str(log_dir), ReadOptions(**opts))
    split = plan_log_dir(str(log_dir), ReadOptions(**opts), min_tasks)
    assert sum(len(p.tasks) for p in split) >= min(min_tasks, sum(len(p.tasks) for p in whole))
    for w, s in zip(whole, split):
        assert (s.start, s.end) == (w.start, w.end)
        assert _offsets(s.tasks) == list(range(w.start, w.end)) == _offsets(w.tasks)
        assert all(a.end == b.start for a, b in zip(s.tasks, s.tasks[1:]))


def test_pieces_balance_bytes(log_dir):
    plans = plan_log_dir(str(log_dir), ReadOptions(topics=("t",)), 8)
    tasks = [t for p in plans for t in p.tasks]
    rows = [sum(b.num_rows for b in read_task(t)) for t in tasks]
    assert len(tasks) >= 8
    assert max(rows) <= 3 * min(rows), rows  # the short partition is one piece, the long one cut to its size

"""Crash consistency: damage a log at many byte positions, recover, and check that
exactly the complete valid prefix survives and that indexes, producer state and the
epoch cache equal a clean rebuild from that prefix (over 1000 cut points in all)."""
import os
import random
import shutil
import tempfile

import pytest

from pylog.core.config import TOPIC_CONFIGS
from pylog.core.records.batch import build_batch
from pylog.core.records.header import iter_headers
from pylog.storage import Log

NOW = 1_700_000_000_000
CFG = TOPIC_CONFIGS.resolve({"segment.bytes": "1500", "index.interval.bytes": "200", "segment.index.bytes": "4096"})


def clock():
    return NOW / 1000


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    d = tmp_path_factory.mktemp("crash") / "t-0"
    lg = Log(d, CFG, clock=clock, fsync=False)
    rnd = random.Random(7)
    seqs = {1: 0, 2: 0}
    for i in range(60):
        pid = rnd.choice([-1, 1, 2])
        n = rnd.randint(1, 4)
        seq = -1
        if pid > 0:
            seq, seqs[pid] = seqs[pid], seqs[pid] + n
        b = bytearray(build_batch([(NOW + i * 10 + j, b"k%d" % j, os.urandom(rnd.randint(5, 60))) for j in range(n)],
                                  producer_id=pid, producer_epoch=0 if pid > 0 else -1, base_sequence=seq))
        lg.append_as_leader(b, i // 15)
    lg.flush()
    lg.take_snapshot()
    lg.close()
    segs = []  # (file name, [(pos, end, next_offset)])
    for p in sorted(d.glob("*.log")):
        data = p.read_bytes()
        segs.append((p.name, [(pos, pos + h.size, h.next_offset) for pos, h in iter_headers(data)]))
    assert len(segs) >= 4
    return d, segs


def state(lg):
    return {
        "leo": lg.log_end_offset,
        "segments": [(s.base_offset, s.size, s.offset_index.all_entries(), s.time_index.all_entries())
                     for s in lg.segments],
        "producers": lg.producer_state.snapshot_entries(),
        "epochs": lg.epoch_cache.entries,
    }


def log_bytes(d):
    return b"".join(p.read_bytes() for p in sorted(d.glob("*.log")))


# Each case restores the partition from bytes held in memory instead of copying
# directories, and works on a tmpfs when there is one: ~1300 cases x 2 logs
# were spending most of their time in copytree and disk I/O.
_TEMPLATE_FILES: dict = {}


def template_files(tdir) -> dict:
    key = str(tdir)
    if key not in _TEMPLATE_FILES:
        _TEMPLATE_FILES[key] = {p.name: p.read_bytes() for p in tdir.iterdir() if p.is_file()}
    return _TEMPLATE_FILES[key]


def write_dir(d, files: dict) -> None:
    """Make d hold exactly `files` (name -> bytes)."""
    d.mkdir(parents=True, exist_ok=True)
    for name in os.listdir(d):
        if name not in files:
            os.unlink(d / name)
    for name, data in files.items():
        with open(d / name, "wb") as fh:
            fh.write(data)


def fast_tmp(tmp_path):
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        from pathlib import Path
        return Path(tempfile.mkdtemp(prefix="pylog-crash-", dir=shm))
    return tmp_path


def check(case_dir, expected_next, expected_bytes, tmp):
    lg = Log(case_dir, CFG, clock=clock, had_clean_shutdown=False, recovery_point=0, fsync=False)
    got = state(lg)
    lg.close()
    assert got["leo"] == expected_next
    assert log_bytes(case_dir) == expected_bytes
    # a clean rebuild of the surviving prefix: no indexes, snapshots or epoch checkpoint
    rebuild = tmp / "rebuild" / "t-0"
    write_dir(rebuild, {p.name: p.read_bytes() for p in case_dir.iterdir()
                        if p.is_file() and not (p.suffix in (".index", ".timeindex", ".snapshot")
                                                or p.name == "leader-epoch-checkpoint")})
    lg2 = Log(rebuild, CFG, clock=clock, had_clean_shutdown=False, recovery_point=0, fsync=False)
    want = state(lg2)
    lg2.close()
    assert got == want


def prefix(template_dir, segs, seg_idx, cut):
    """Expected (next offset, bytes) when segment seg_idx keeps `cut` bytes and later ones go."""
    out = b""
    nxt = 0
    files = template_files(template_dir)
    for i, (name, batches) in enumerate(segs[: seg_idx + 1]):
        data = files[name]
        keep = 0
        for pos, end, n in batches:
            if i < seg_idx or end <= cut:
                keep, nxt = end, n
        out += data[:keep]
    return nxt, out


def run_cases(template, tmp_path, cases):
    tdir, segs = template
    files = template_files(tdir)
    work = fast_tmp(tmp_path)
    try:
        for damage, seg_idx, cut in cases:
            case = work / "case" / "t-0"
            write_dir(case, files)
            damage(case)
            nxt, data = prefix(tdir, segs, seg_idx, cut)
            if seg_idx == 0 and nxt == 0 and cut < (segs[0][1][0][1]):
                nxt = 0
            check(case, nxt, data, work)
    finally:
        if work != tmp_path:
            shutil.rmtree(work, ignore_errors=True)
    return len(cases)


def _seg_path(d, segs, i):
    return d / segs[i][0]


def test_tail_cuts(template, tmp_path):
    tdir, segs = template
    last = len(segs) - 1
    size = segs[last][1][-1][1]
    rnd = random.Random(1)
    cuts = sorted(set(rnd.randrange(size) for _ in range(600))) + [0, size - 1]

    def cutter(c):
        def f(d):
            with open(_seg_path(d, segs, last), "r+b") as fh:
                fh.truncate(c)
        return f
    assert run_cases(template, tmp_path, [(cutter(c), last, c) for c in cuts]) >= 400


def test_garbage_tails(template, tmp_path):
    tdir, segs = template
    last = len(segs) - 1
    size = segs[last][1][-1][1]
    rnd = random.Random(2)
    cases = []
    for _ in range(150):
        c = rnd.randrange(size)
        junk = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 300)))

        def f(d, c=c, junk=junk):
            p = _seg_path(d, segs, last)
            data = p.read_bytes()[:c] + junk
            p.write_bytes(data)
        cases.append((f, last, c))
    assert run_cases(template, tmp_path, cases) == 150


def test_flipped_bytes(template, tmp_path):
    """A flipped byte anywhere except partitionLeaderEpoch (outside the CRC, as in Kafka)
    cuts the log at the batch holding it and drops every later segment."""
    tdir, segs = template
    rnd = random.Random(3)
    cases = []
    while len(cases) < 350:
        i = rnd.randrange(len(segs))
        batches = segs[i][1]
        pos = rnd.randrange(batches[-1][1])
        start = max(p for p, _, _ in batches if p <= pos)
        if 12 <= pos - start < 16:
            continue
        if pos - start < 8 and start == batches[-1][0]:
            # baseOffset is outside the CRC too: in a segment's last batch a flip to a higher offset is an
            # offset gap that nothing contradicts, which Kafka's recovery keeps (as pylog's does)
            continue

        def f(d, i=i, pos=pos):
            with open(_seg_path(d, segs, i), "r+b") as fh:
                fh.seek(pos)
                b = fh.read(1)[0]
                fh.seek(pos)
                fh.write(bytes([b ^ (1 << rnd.randrange(8))]))
        cases.append((f, i, start))
    assert run_cases(template, tmp_path, cases) == 350


def test_deleted_indexes_and_checkpoints(template, tmp_path):
    tdir, segs = template
    last = len(segs) - 1
    full = segs[last][1][-1][1]
    cases = []
    for i in range(len(segs)):
        for suffix in (".index", ".timeindex"):
            cases.append((lambda d, i=i, s=suffix: os.remove(_seg_path(d, segs, i).with_suffix(s)), last, full))

            def corrupt(d, i=i, s=suffix):
                p = _seg_path(d, segs, i).with_suffix(s)
                p.write_bytes(p.read_bytes() + b"\0" * 24)  # an untrimmed tail
            cases.append((corrupt, last, full))
    rnd = random.Random(4)
    for _ in range(30):
        def half_checkpoint(d, n=rnd.randrange(1, 12)):
            p = d / "leader-epoch-checkpoint"
            (d / "leader-epoch-checkpoint.tmp").write_bytes(p.read_bytes()[:n])
        cases.append((half_checkpoint, last, full))

        def torn_checkpoint(d, n=rnd.randrange(0, 8)):
            p = d / "leader-epoch-checkpoint"
            p.write_bytes(p.read_bytes()[:n])
        cases.append((torn_checkpoint, last, full))

        def torn_snapshot(d, n=rnd.randrange(0, 20)):
            snaps = sorted(d.glob("*.snapshot"))
            snaps[-1].write_bytes(snaps[-1].read_bytes()[:n])
        cases.append((torn_snapshot, last, full))
    assert run_cases(template, tmp_path, cases) >= 100

"""`pylog spark-compaction`: what compaction would leave, predicted with Spark.

Three Spark jobs over the segment files (nothing is written to the log dir):
1. segment summaries, a few segments per task: size, batch count, record count,
   first batch / largest timestamp, each producer's last batch (header walk);
   from them the cleaner's `cleanable_section` gives each partition's dirty
   section;
2. per-key aggregates, a few segments per task: every record of every data batch
   is decoded and counted by key (hash) inside the task, which hands Spark one
   row per key of the segment as Arrow columns (`mapInArrow`): record and
   tombstone counts and the key's latest offset in the dirty section (the
   cleaner's offset map). The driver merges them per key across segments
   with Arrow's group-by; from that come distinct keys, hottest keys and the key-frequency distribution;
3. the rewrite, a few segments per task: every batch goes through the cleaner's
   own `compaction_rules.filter_batch` with that offset map (broadcast), so
   the records and bytes predicted are those `pylog compact` writes.
Whether a partition is cleaned at all comes from `should_clean` (with
`--if-dirty`) as in `pylog compact`. The per-key aggregates and the offset map
are held on the driver: memory there grows with the number of distinct keys
(about 150 bytes each, like the cleaner's own map), plus, briefly, an Arrow row
(about 60 bytes) per key and segment before the merge.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pylog.core.errors import DataError, UsageError
from pylog.storage.layout import segment_base, user_partition_dir

CHUNK = 8 << 20
KEY_PREVIEW = 40

# The cleaner's rules (storage/compaction_rules.py): the prediction calls these
# and nothing else to decide what stays, so it cannot drift from `pylog compact`.
from pylog.storage.compaction_rules import batch_records_data, filter_batch  # noqa: E402


def key_hash(key: bytes) -> bytes:
    """128-bit digest standing for a key in Spark rows and in the offset map."""
    return hashlib.md5(key).digest()


# ---------------------------------------------------------------- discovery (driver)
def find_partitions(path: str, topics: list[str] | None = None) -> tuple[Path, list[tuple[str, int, Path]]]:
    """(log dir, [(topic, partition, folder)]) for a log dir or a partition folder."""
    p = Path(path).resolve()
    if not p.is_dir():
        raise UsageError(f"{path} is not a directory (give a log dir or a partition folder)")
    m = user_partition_dir(p.name)
    if m and any(f.name.endswith(".log") for f in p.iterdir()):
        found = [(m.topic, m.partition, p)]
        log_dir = p.parent
    else:
        log_dir = p
        found = []
        for d in sorted(p.iterdir()):
            mm = user_partition_dir(d.name)
            if d.is_dir() and mm and not d.name.startswith("."):
                found.append((mm.topic, mm.partition, d))
    if topics:
        found = [f for f in found if f[0] in topics]
    found.sort(key=lambda f: (f[0], f[1]))
    if not found:
        raise DataError(f"no partition folders (<topic>-<partition>) in {path}"
                        + (f" for topic {', '.join(topics)}" if topics else ""))
    return log_dir, found


def list_segments(folder: Path) -> list[int]:
    return sorted(b for b in map(segment_base, (f.name for f in folder.iterdir())) if b is not None)


def topic_configs(log_dir: Path, names: set[str], overrides: dict[str, str] | None = None) -> dict:
    """Each topic's typed config as the storage engine resolves it (registry overrides +
    defaults), with `overrides` on top as `pylog compact --set` applies them."""
    from pylog.core.config import BROKER_CONFIGS, TOPIC_CONFIGS, ConfigError, topic_defaults_from_broker
    from pylog.storage import LogManager

    registry = LogManager([str(log_dir)], BROKER_CONFIGS.resolve({})).read_registry()
    base = topic_defaults_from_broker(BROKER_CONFIGS.resolve({}))
    out = {}
    for n in names:
        props = dict(registry.get(n, {}).get("overrides", {}))
        props.update(overrides or {})
        try:
            out[n] = TOPIC_CONFIGS.resolve(props, base=base)
        except ConfigError as e:
            raise UsageError(f"--set: {e}") from None
    return out


def log_start_offsets(log_dir: Path) -> dict:
    from pylog.storage.checkpoint import LOG_START_OFFSET_CHECKPOINT, read_offset_checkpoint_or_empty

    try:
        return read_offset_checkpoint_or_empty(log_dir / LOG_START_OFFSET_CHECKPOINT)
    except DataError:
        return {}


# ---------------------------------------------------------------- executor side
def _batches(path: str):
    """(buffer, position, header) of every v2 batch of a segment file, read in chunks."""
    from pylog.storage.scan import read_batches

    with open(path, "rb", buffering=0) as f:
        yield from read_batches(f.fileno(), 0, os.fstat(f.fileno()).st_size, path, CHUNK)


def segment_summary(seg: dict) -> dict:
    """Header walk of one segment: what the cleaner's section choice needs."""
    size = os.path.getsize(seg["path"])
    batches = records = 0
    first_ts = -1
    max_ts = -1
    last_offset = seg["base"] - 1
    producers: dict[int, list] = {}  # pid -> [last data offset, last timestamp, epoch]
    for _, _, h in _batches(seg["path"]):
        if batches == 0:
            first_ts = h.max_timestamp
        batches += 1
        records += h.record_count
        if h.max_timestamp > max_ts:
            max_ts = h.max_timestamp
        last_offset = h.last_offset
        if h.producer_id >= 0:
            e = producers.get(h.producer_id)
            if h.attributes & 0x20:  # a transaction marker: no data offset; a new epoch forgets the old batches
                if e is None:
                    e = producers[h.producer_id] = [-1, h.max_timestamp, h.producer_epoch]
                elif e[2] != h.producer_epoch:
                    e[0], e[2] = -1, h.producer_epoch
                e[1] = h.max_timestamp
            else:
                producers[h.producer_id] = [h.last_offset, h.max_timestamp, h.producer_epoch]
    if max_ts < 0:
        max_ts = int(os.stat(seg["path"]).st_mtime * 1000)  # LogSegment.largest_timestamp falls back to mtime
    return dict(seg, size=size, batches=batches, records=records, first_batch_ts=first_ts, largest_ts=max_ts,
                last_offset=last_offset, producers=producers)


def segment_rows(seg: dict, bounds: dict | None = None, acc_records=None, acc_bytes=None):
    """One row per record of the data batches of a segment (ROW_SCHEMA). `bounds` maps
    (topic, partition) to the cleaner's (first dirty, first uncleanable) offsets; a row's
    `in_map` says whether the cleaner's offset map would take its key: whole batches
    from the one holding the first dirty offset to the last one below the uncleanable."""
    from pylog.core.records import decode_records

    topic, part, base = seg["topic"], seg["partition"], seg["base"]
    first_dirty, upper = (bounds or {}).get((topic, part), (0, -1))
    n = 0
    nbytes = 0
    for buf, off, h in _batches(seg["path"]):
        size = h.batch_length + 12
        nbytes += size
        if h.attributes & 0x20 or h.record_count == 0:
            continue
        raw = memoryview(buf)[off:off + size]
        data = batch_records_data(raw, h)
        pid = h.producer_id
        in_map = h.last_offset >= first_dirty and h.base_offset < upper
        for r in decode_records(data, h.base_offset, h.base_timestamp):
            k = r.key
            v = r.value
            if k is None:
                yield (topic, part, base, r.offset, None, -1, -1 if v is None else len(v), v is None, r.timestamp,
                       pid, False, None)
            else:
                yield (topic, part, base, r.offset, key_hash(k), len(k), -1 if v is None else len(v), v is None,
                       r.timestamp, pid, in_map, k[:KEY_PREVIEW].decode("utf-8", "replace"))
            n += 1
    if acc_records is not None:
        acc_records.add(n)
        acc_bytes.add(nbytes)


KEYS_SCHEMA = ("topic string, partition int, key_hash binary, n long, tombstones long, latest long, "
               "preview string, last long")


def segment_keys(segs, bounds: dict, acc_records=None, acc_bytes=None):
    """Per-key aggregate of each segment of `segs` ((topic, partition, base, path)
    tuples): one row per key of the segment (KEYS_SCHEMA; keyless
    records form the key_hash-null row) with its record and tombstone counts, its
    latest offset the cleaner's offset map would take (null if none), a preview and its last offset.
    Aggregating inside the task sends Spark one row per key and segment, as Arrow
    columns, instead of one pickled row per record."""
    import pyarrow as pa

    from pylog.core.records import decode_records

    for topic, part, base, path in segs:
        first_dirty, upper = bounds.get((topic, part), (0, -1))
        # key bytes -> [records, tombstones, latest in map, last]; hashed once per distinct key below
        agg: dict = {}
        get = agg.get
        n = nbytes = 0
        for buf, off, h in _batches(path):
            size = h.batch_length + 12
            nbytes += size
            if h.attributes & 0x20 or h.record_count == 0:
                continue
            data = batch_records_data(memoryview(buf)[off:off + size], h)
            in_map = h.last_offset >= first_dirty and h.base_offset < upper
            for r in decode_records(data, h.base_offset, h.base_timestamp):
                n += 1
                k = r.key
                e = get(k)
                if e is None:
                    e = agg[k] = [0, 0, None, 0]
                e[0] += 1
                e[3] = r.offset
                if r.value is None:
                    e[1] += 1
                # offsets grow through a segment: the last one in the map is the latest
                if in_map and k is not None:
                    e[2] = r.offset
        if acc_records is not None:
            acc_records.add(n)
            acc_bytes.add(nbytes)
        if not agg:
            continue
        m = len(agg)
        ks = list(agg)
        vals = list(agg.values())
        yield pa.RecordBatch.from_arrays([
            pa.array([topic] * m, pa.string()), pa.array([part] * m, pa.int32()),
            pa.array([None if k is None else key_hash(k) for k in ks], pa.binary()),
            pa.array([e[0] for e in vals], pa.int64()), pa.array([e[1] for e in vals], pa.int64()),
            pa.array([e[2] for e in vals], pa.int64()),
            pa.array([None if k is None else k[:KEY_PREVIEW].decode("utf-8", "replace") for k in ks],
                     pa.string()), pa.array([e[3] for e in vals], pa.int64()),
        ], names=["topic", "partition", "key_hash", "n", "tombstones", "latest", "preview", "last"])


def segment_after(seg: dict, plan: dict, latest_bc) -> dict:
    """Apply the cleaner's filter to one segment; records/bytes that stay."""
    from pylog.core.records.header import LOG_OVERHEAD

    key = (seg["topic"], seg["partition"])
    p = plan[key]
    if not p["clean"] or seg["base"] >= p["end"] or seg["base"] == p["active_base"]:
        return {"seg": (seg["topic"], seg["partition"], seg["base"]), "records": None, "bytes": None}
    latest_map = latest_bc.value.get(key, {})
    get = latest_map.get

    def latest_of(k):
        return get(key_hash(k), -1)

    producers = p["producers"]
    now = p["now_ms"]
    retention = p["delete_retention_ms"]
    kept = out_bytes = tomb_gone = 0
    for buf, off, h in _batches(seg["path"]):
        size = h.batch_length + LOG_OVERHEAD
        raw = memoryview(buf)[off:off + size]
        pid = h.producer_id
        retain_empty = pid >= 0 and producers.get(pid, -2) == h.last_offset
        r = filter_batch(raw, h, latest_of, now, retention, retain_empty)
        tomb_gone += r.tombstones_removed
        if r.data is None:
            continue
        kept += r.kept
        out_bytes += len(r.data)
    return {"seg": (seg["topic"], seg["partition"], seg["base"]), "records": kept, "bytes": out_bytes,
            "tombstones_removed": tomb_gone}


ROW_SCHEMA = ("topic string, partition int, segment long, offset long, key_hash binary, key_size int, "
              "value_size int, tombstone boolean, timestamp long, producer_id long, in_map boolean, "
              "key_preview string")

"""`pylog spark-compaction`: what compaction would leave, predicted with Spark.

Three Spark jobs over the segment files (nothing is written to the log dir):
1. segment summaries, a few segments per task: size, batch count, record count,
   first batch / largest timestamp, each producer's last batch (header walk);
   from them the cleaner's `cleanable_section` gives each partition's dirty
   section;
2. per-key aggregates, one task per segment: every record of every data batch
   is decoded and counted by key (hash) inside the task, which hands Spark one
   row per key of the segment as Arrow columns (`mapInArrow`): record and
   tombstone counts and the key's latest offset in the dirty section (the
   cleaner's offset map). The driver merges them per key across segments
   with Arrow's group-by; from that come distinct keys, hottest keys and the key-frequency distribution;
3. the rewrite, one task per segment: every batch goes through the cleaner's
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
import re
import time
from pathlib import Path

from pylog.core.errors import DataError, UsageError
from pylog.storage.layout import segment_base, user_partition_dir

CHUNK = 8 << 20
KEY_PREVIEW = 40

# The cleaner's rules (storage/compaction_rules.py): the prediction calls these
# and nothing else to decide what stays, so it cannot drift from `pylog compact`.
from pylog.storage.compaction_rules import (  # noqa: E402
    SegmentStat,
    batch_records_data,
    cleanable_section,
    filter_batch,
    should_clean,
)


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


def segment_keys(batches, bounds: dict, acc_records=None, acc_bytes=None):
    """Per-key aggregate of each segment named in the Arrow input batches (topic,
    partition, base, path): one row per key of the segment (KEYS_SCHEMA; keyless
    records form the key_hash-null row) with its record and tombstone counts, its
    latest offset the cleaner's offset map would take (null if none), a preview and its last offset.
    Aggregating inside the task sends Spark one row per key and segment, as Arrow
    columns, instead of one pickled row per record."""
    import pyarrow as pa

    from pylog.core.records import decode_records

    for batch in batches:
        for topic, part, base, path in zip(*(batch.column(i).to_pylist() for i in range(4))):
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


# ---------------------------------------------------------------- driver side
def live_producers(summaries: list[dict], now_ms: int, expiration_ms: int) -> dict[int, int]:
    """producer id -> last data offset, as the producer state the cleaner asks holds it:
    the newest batch of each producer, producers idle for producer.id.expiration.ms
    forgotten (as a load from the shutdown snapshot does)."""
    state: dict[int, list] = {}
    for s in sorted(summaries, key=lambda s: s["base"]):
        for pid, e in s["producers"].items():
            state[pid] = e
    return {pid: e[0] for pid, e in state.items() if now_ms - e[1] < expiration_ms}


ROW_SCHEMA = ("topic string, partition int, segment long, offset long, key_hash binary, key_size int, "
              "value_size int, tombstone boolean, timestamp long, producer_id long, in_map boolean, "
              "key_preview string")


class _Held:
    """A broadcast's `.value` for Spark Connect, which has no broadcast variables."""

    def __init__(self, value):
        self.value = value


def _pickled_rows(batches, fn):
    import pickle

    import pyarrow as pa

    for batch in batches:
        cols = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        out = [pickle.dumps(fn(dict(zip(batch.schema.names, row)))) for row in zip(*cols)]
        yield pa.RecordBatch.from_arrays([pa.array(out, pa.binary())], names=["r"])


def map_segments(spark, segs: list[dict], fn, slices: int) -> list:
    """[fn(seg) for seg in segs], run in `slices` Spark tasks: an RDD map, or through
    Spark Connect (no RDDs) mapInArrow over a DataFrame of the segments, results pickled."""
    from pylog.commands.spark.ingest import is_connect

    if not is_connect(spark):
        return spark.sparkContext.parallelize(segs, slices).map(fn).collect()
    import pickle

    df = spark.createDataFrame([(x["topic"], x["partition"], x["base"], x["path"]) for x in segs],
                               "topic string, partition int, base long, path string").repartition(slices)
    return [pickle.loads(r["r"]) for r in df.mapInArrow(lambda it: _pickled_rows(it, fn), "r binary").collect()]


def _freq_bucket(n: int) -> str:
    if n <= 1:
        return "1"
    lo = 1 << (n - 1).bit_length() - 1
    return f"{lo + 1}-{lo * 2}" if lo * 2 > lo + 1 else str(lo * 2)


def run_compaction_report(spark, path: str, *, topics: list[str] | None = None, top_keys: int = 5,
                          now_ms: int | None = None, force: bool = True, overrides: dict[str, str] | None = None,
                          progress_factory=None) -> dict:
    """The report. `force` and `overrides` mean what `pylog compact` (force unless
    --if-dirty) and its `--set` mean, so the prediction matches that command."""
    from pylog.storage.cleaner import read_cleaner_checkpoint

    now = int(time.time() * 1000) if now_ms is None else now_ms
    log_dir, parts = find_partitions(path, topics)
    configs = topic_configs(log_dir, {t for t, _, _ in parts}, overrides)
    starts_ckpt = log_start_offsets(log_dir)
    cleaner_ckpt = read_cleaner_checkpoint(log_dir)
    segs = []
    for topic, part, folder in parts:
        for base in list_segments(folder):
            segs.append({"topic": topic, "partition": part, "base": base,
                         "path": str(folder / f"{base:020d}.log")})
    from pylog.commands.spark.ingest import progress_accumulators, is_connect

    connect = is_connect(spark)
    parallelism = 2 if connect else spark.sparkContext.defaultParallelism
    t0 = time.monotonic()
    if not segs:
        raise DataError(f"no segment files under {path}")

    def progress(label, rec=None, byt=None):
        if progress_factory is None:
            from contextlib import nullcontext
            return nullcontext()
        return progress_factory(label, rec, byt)

    with progress("segment summaries"):
        # a header walk is cheap: a few segments per task, not a task each
        summaries = map_segments(spark, segs, segment_summary, min(len(segs), 2 * parallelism))
    by_part: dict[tuple[str, int], list[dict]] = {}
    for s in summaries:
        by_part.setdefault((s["topic"], s["partition"]), []).append(s)

    # the cleaner's view of each partition: dirty section, ratio, whether it would clean
    from pylog.core.config import BROKER_CONFIGS

    expiration_ms = BROKER_CONFIGS.resolve({})["producer.id.expiration.ms"]
    plan = {}
    for topic, part, folder in parts:
        ss = sorted(by_part.get((topic, part), []), key=lambda s: s["base"])
        cfg = configs[topic]
        stats = [SegmentStat(s["base"], s["size"], s["largest_ts"], s["first_batch_ts"]) for s in ss]
        start = max(starts_ckpt.get((topic, part), 0), ss[0]["base"] if ss else 0)
        section = cleanable_section(stats, checkpoint=cleaner_ckpt.get((topic, part)), log_start_offset=start,
                                    now_ms=now, min_compaction_lag_ms=cfg["min.compaction.lag.ms"],
                                    max_compaction_lag_ms=cfg["max.compaction.lag.ms"])
        compacted = "compact" in cfg["cleanup.policy"]
        clean = compacted and section.first_uncleanable > section.first_dirty and \
            (force or should_clean(section, cfg["min.cleanable.dirty.ratio"]))
        plan[(topic, part)] = {
            "clean": clean, "compacted": compacted, "section": section, "end": section.first_uncleanable,
            "first_dirty": section.first_dirty, "active_base": ss[-1]["base"] if ss else 0,
            "producers": live_producers(ss, now, expiration_ms),
            "now_ms": now, "delete_retention_ms": cfg["delete.retention.ms"],
            "min_ratio": cfg["min.cleanable.dirty.ratio"],
        }

    acc_records, acc_bytes = progress_accumulators(spark)
    bounds = {k: (v["first_dirty"], v["end"]) for k, v in plan.items()}
    # one task per segment
    seg_tuples = [(x["topic"], x["partition"], x["base"], x["path"]) for x in segs]
    seg_schema = "topic string, partition int, base long, path string"
    if connect:  # no RDDs: a local relation spread round-robin, one row per task
        seg_df = spark.createDataFrame(seg_tuples, seg_schema).repartition(len(segs))
    else:  # parallelize's one-per-slice split, without a shuffle
        seg_df = spark.createDataFrame(spark.sparkContext.parallelize(seg_tuples, len(segs)), seg_schema)
    seg_keys = seg_df.mapInArrow(lambda it: segment_keys(it, bounds, acc_records, acc_bytes), KEYS_SCHEMA)
    # The per-segment aggregates (one row per key and segment, Arrow columns) are
    # merged per key on the driver with Arrow's group-by: cheaper than another
    # Spark shuffle stage at this size. Like the offset map the rewrite needs,
    # the result is as large as the number of distinct keys.
    with progress("decode records", acc_records, acc_bytes):
        table = seg_keys.toArrow()
    table = table.group_by(["topic", "partition", "key_hash"], use_threads=False).aggregate(
        [("n", "sum"), ("tombstones", "sum"), ("latest", "max"), ("preview", "first"), ("last", "max")])
    table = table.rename_columns([c.rsplit("_", 1)[0] if c.endswith(("_sum", "_max", "_first")) else c
                                  for c in table.column_names])
    per_part: dict = {}
    latest: dict = {}
    by_key: dict = {}
    cols = [table.column(c).to_pylist() for c in ("topic", "partition", "key_hash", "n", "tombstones", "latest",
                                                   "preview", "last")]
    del table
    for topic, part, kh, n, tombs, last, pv, at in zip(*cols):
        tp = (topic, part)
        pp = per_part.get(tp)
        if pp is None:
            pp = per_part[tp] = {"tombstones": 0, "keyless": 0, "keys": 0}
            latest[tp] = {}
            by_key[tp] = []
        pp["tombstones"] += tombs
        if kh is None:
            pp["keyless"] += n
            continue
        pp["keys"] += 1
        by_key[tp].append((n, pv or "", at))
        if last is not None:
            latest[tp][kh] = last
    del cols
    hot: dict = {}
    freq: dict[str, dict[str, int]] = {}
    for tp, ks in by_key.items():
        if top_keys:
            ks.sort(key=lambda kv: (-kv[0], kv[1]))
            hot[tp] = [{"key": pv, "records": n, "last_offset": at} for n, pv, at in ks[:top_keys]]
        b = freq.setdefault(tp[0], {})
        for n, *_ in ks:
            label = _freq_bucket(n)
            b[label] = b.get(label, 0) + 1
    del by_key
    # the offset map: a broadcast, or through Spark Connect part of the task's closure
    latest_bc = _Held(latest) if connect else spark.sparkContext.broadcast(latest)
    with progress("predict rewrite"):
        after = {a["seg"]: a for a in map_segments(spark, segs, lambda x: segment_after(x, plan, latest_bc),
                                                   len(segs))}
    if not connect:
        latest_bc.unpersist()
    elapsed = time.monotonic() - t0

    out_parts = []
    tot = {"segments": 0, "records": 0, "bytes": 0, "records_after": 0, "bytes_after": 0}
    for topic, part, folder in parts:
        ss = sorted(by_part.get((topic, part), []), key=lambda s: s["base"])
        p = plan[(topic, part)]
        sec = p["section"]
        records = sum(s["records"] for s in ss)
        size = sum(s["size"] for s in ss)
        rec_after = byt_after = 0
        seg_rows = []
        for s in ss:
            a = after[(topic, part, s["base"])]
            ra = s["records"] if a["records"] is None else a["records"]
            ba = s["size"] if a["bytes"] is None else a["bytes"]
            rec_after += ra
            byt_after += ba
            seg_rows.append({"base_offset": s["base"], "bytes": s["size"], "records": s["records"],
                             "cleaned": a["records"] is not None, "bytes_after": ba, "records_after": ra})
        pp = per_part.get((topic, part))
        entry = {
            "topic": topic, "partition": part, "segments": len(ss), "records": records, "bytes": size,
            "distinct_keys": pp["keys"] if pp else 0,
            "tombstones": pp["tombstones"] if pp else 0, "keyless_records": pp["keyless"] if pp else 0,
            "compacted_topic": p["compacted"], "would_clean": p["clean"],
            "cleaner_checkpoint": sec.first_dirty, "first_uncleanable_offset": sec.first_uncleanable,
            "clean_bytes": sec.clean_bytes, "dirty_bytes": sec.dirty_bytes, "dirty_ratio": round(sec.dirty_ratio, 6),
            "min_cleanable_dirty_ratio": p["min_ratio"],
            "records_after": rec_after, "bytes_after": byt_after,
            "saving_percent": round(100.0 * (size - byt_after) / size, 3) if size else 0.0,
            "hottest_keys": hot.get((topic, part), []),
            "segment_details": seg_rows,
        }
        out_parts.append(entry)
        tot["segments"] += len(ss)
        tot["records"] += records
        tot["bytes"] += size
        tot["records_after"] += rec_after
        tot["bytes_after"] += byt_after
    tot["saving_percent"] = round(100.0 * (tot["bytes"] - tot["bytes_after"]) / tot["bytes"], 3) if tot["bytes"] else 0.0
    return {
        "path": str(Path(path).resolve()),
        "log_dir": str(log_dir),
        "now_ms": now,
        "retention_rule": "storage.compaction_rules (the cleaner's own filter_batch)",
        "if_dirty": not force,
        "overrides": dict(overrides or {}),
        "partitions": out_parts,
        "totals": tot,
        "key_frequency": freq,
        "job_seconds": round(elapsed, 3),
    }

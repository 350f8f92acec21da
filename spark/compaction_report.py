"""The driver side of `pylog spark-compaction`: the three Spark jobs run and merged into the
report (see compaction.py for what each job does), and the report as HTML."""
from __future__ import annotations

import time
from pathlib import Path

from pylog.core.errors import DataError
from pylog.storage.compaction_rules import SegmentStat, cleanable_section, should_clean
from pylog.spark.compaction import (
    KEYS_SCHEMA,
    find_partitions,
    list_segments,
    log_start_offsets,
    segment_after,
    segment_keys,
    segment_summary,
    topic_configs,
)


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
    from pylog.spark.ingest import is_connect

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


def _step(progress_factory, label, rec=None, byt=None):
    """A progress bar for one Spark job, or nothing without a factory."""
    if progress_factory is None:
        from contextlib import nullcontext
        return nullcontext()
    return progress_factory(label, rec, byt)


def _segment_list(parts) -> list[dict]:
    """One entry per segment file of the partitions: the unit Spark tasks work on."""
    return [{"topic": topic, "partition": part, "base": base, "path": str(folder / f"{base:020d}.log")}
            for topic, part, folder in parts for base in list_segments(folder)]


def _summaries_by_partition(summaries: list[dict]) -> dict[tuple[str, int], list[dict]]:
    """The segment summaries of each partition, in offset order."""
    by_part: dict[tuple[str, int], list[dict]] = {}
    for s in summaries:
        by_part.setdefault((s["topic"], s["partition"]), []).append(s)
    for ss in by_part.values():
        ss.sort(key=lambda s: s["base"])
    return by_part


def _cleaner_plan(parts, by_part, configs, log_dir: Path, now: int, force: bool) -> dict:
    """The cleaner's view of each partition: dirty section, ratio, whether it would clean."""
    from pylog.core.config import BROKER_CONFIGS
    from pylog.storage.cleaner import read_cleaner_checkpoint

    starts_ckpt = log_start_offsets(log_dir)
    cleaner_ckpt = read_cleaner_checkpoint(log_dir)
    expiration_ms = BROKER_CONFIGS.resolve({})["producer.id.expiration.ms"]
    plan = {}
    for topic, part, _folder in parts:
        ss = by_part.get((topic, part), [])
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
    return plan


def _key_table(spark, segs: list[dict], plan: dict, tasks: int, progress_factory) -> list[list]:
    """Job 2: per-key aggregates of every segment (a few segments per task), merged per key on the driver."""
    from pylog.spark.ingest import progress_accumulators

    acc_records, acc_bytes = progress_accumulators(spark)
    bounds = {k: (v["first_dirty"], v["end"]) for k, v in plan.items()}
    seg_tuples = [(x["topic"], x["partition"], x["base"], x["path"]) for x in segs]

    def by_index(batches):  # the segments travel in the closure; the rows are their indexes
        for batch in batches:
            yield from (seg_tuples[i] for i in batch.column(0).to_pylist())

    # spark.range spreads the indexes evenly over the tasks with no Python stage in front
    # (a DataFrame of Python rows would be converted by one), on Spark Connect too
    seg_keys = spark.range(0, len(segs), 1, tasks).mapInArrow(
        lambda it: segment_keys(by_index(it), bounds, acc_records, acc_bytes), KEYS_SCHEMA)
    # The per-segment aggregates (one row per key and segment, Arrow columns) are
    # merged per key on the driver with Arrow's group-by: cheaper than another
    # Spark shuffle stage at this size. Like the offset map the rewrite needs,
    # the result is as large as the number of distinct keys.
    with _step(progress_factory, "decode records", acc_records, acc_bytes):
        table = seg_keys.toArrow()
    table = table.group_by(["topic", "partition", "key_hash"], use_threads=False).aggregate(
        [("n", "sum"), ("tombstones", "sum"), ("latest", "max"), ("preview", "first"), ("last", "max")])
    table = table.rename_columns([c.rsplit("_", 1)[0] if c.endswith(("_sum", "_max", "_first")) else c
                                  for c in table.column_names])
    # columns as Python lists; the Arrow table is freed on return
    return [table.column(c).to_pylist() for c in ("topic", "partition", "key_hash", "n", "tombstones", "latest",
                                                  "preview", "last")]


def _key_stats(cols: list[list], top_keys: int) -> tuple[dict, dict, dict, dict]:
    """(per-partition key counts, offset map, hottest keys, key-frequency buckets) of the merged keys
    (the columns topic, partition, key_hash, n, tombstones, latest, preview, last)."""
    per_part: dict = {}
    latest: dict = {}
    by_key: dict = {}
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
    return per_part, latest, hot, freq


def _partition_entry(topic: str, part: int, ss: list[dict], p: dict, after: dict, pp: dict | None,
                     hottest: list) -> dict:
    """One partition's row of the report: now, and after the predicted rewrite."""
    sec = p["section"]
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
    return {
        "topic": topic, "partition": part, "segments": len(ss), "records": sum(s["records"] for s in ss),
        "bytes": size, "distinct_keys": pp["keys"] if pp else 0,
        "tombstones": pp["tombstones"] if pp else 0, "keyless_records": pp["keyless"] if pp else 0,
        "compacted_topic": p["compacted"], "would_clean": p["clean"],
        "cleaner_checkpoint": sec.first_dirty, "first_uncleanable_offset": sec.first_uncleanable,
        "clean_bytes": sec.clean_bytes, "dirty_bytes": sec.dirty_bytes, "dirty_ratio": round(sec.dirty_ratio, 6),
        "min_cleanable_dirty_ratio": p["min_ratio"],
        "records_after": rec_after, "bytes_after": byt_after,
        "saving_percent": round(100.0 * (size - byt_after) / size, 3) if size else 0.0,
        "hottest_keys": hottest,
        "segment_details": seg_rows,
    }


def _totals(entries: list[dict]) -> dict:
    tot = {k: sum(e[k] for e in entries) for k in ("segments", "records", "bytes", "records_after", "bytes_after")}
    tot["saving_percent"] = round(100.0 * (tot["bytes"] - tot["bytes_after"]) / tot["bytes"], 3) if tot["bytes"] else 0.0
    return tot


def run_compaction_report(spark, path: str, *, topics: list[str] | None = None, top_keys: int = 5,
                          now_ms: int | None = None, force: bool = True, overrides: dict[str, str] | None = None,
                          progress_factory=None) -> dict:
    """The report. `force` and `overrides` mean what `pylog compact` (force unless
    --if-dirty) and its `--set` mean, so the prediction matches that command."""
    from pylog.spark.ingest import is_connect

    now = int(time.time() * 1000) if now_ms is None else now_ms
    log_dir, parts = find_partitions(path, topics)
    configs = topic_configs(log_dir, {t for t, _, _ in parts}, overrides)
    segs = _segment_list(parts)
    connect = is_connect(spark)
    parallelism = 2 if connect else spark.sparkContext.defaultParallelism
    # every job: a few segments per task, two tasks per core (a task per segment pays Spark's
    # per-task cost, a Python worker round trip, once per segment: most of a small log's time)
    tasks = min(len(segs), 2 * parallelism)
    t0 = time.monotonic()
    if not segs:
        raise DataError(f"no segment files under {path}")

    with _step(progress_factory, "segment summaries"):
        summaries = map_segments(spark, segs, segment_summary, tasks)
    by_part = _summaries_by_partition(summaries)
    plan = _cleaner_plan(parts, by_part, configs, log_dir, now, force)
    per_part, latest, hot, freq = _key_stats(_key_table(spark, segs, plan, tasks, progress_factory), top_keys)
    # the offset map: a broadcast, or through Spark Connect part of the task's closure
    latest_bc = _Held(latest) if connect else spark.sparkContext.broadcast(latest)
    with _step(progress_factory, "predict rewrite"):
        after = {a["seg"]: a for a in map_segments(spark, segs, lambda x: segment_after(x, plan, latest_bc),
                                                   tasks)}
    if not connect:
        latest_bc.unpersist()
    elapsed = time.monotonic() - t0
    out_parts = [_partition_entry(topic, part, by_part.get((topic, part), []), plan[(topic, part)], after,
                                  per_part.get((topic, part)), hot.get((topic, part), []))
                 for topic, part, _folder in parts]
    return {
        "path": str(Path(path).resolve()),
        "log_dir": str(log_dir),
        "now_ms": now,
        "retention_rule": "storage.compaction_rules (the cleaner's own filter_batch)",
        "if_dirty": not force,
        "overrides": dict(overrides or {}),
        "partitions": out_parts,
        "totals": _totals(out_parts),
        "key_frequency": freq,
        "job_seconds": round(elapsed, 3),
    }


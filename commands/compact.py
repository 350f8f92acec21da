"""`pylog compact`: run the log cleaner offline on a log dir or partition folder."""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import click

from pylog.commands.options import assignments_option, json_option
from pylog.core.errors import UsageError
from pylog.storage.layout import user_partition_dir

_SIZE = re.compile(r"^\s*(\d+)\s*([kmgKMG]i?[bB]?|[bB])?\s*$")


def parse_size(text: str) -> int:
    m = _SIZE.match(text)
    if not m:
        raise UsageError(f"--buffer-size expects a byte count such as 134217728, 64M or 1G, got {text!r}")
    n = int(m.group(1))
    unit = (m.group(2) or "").lower()[:1]
    return n * {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[unit]


def _targets(path: Path) -> tuple[Path, str | None]:
    """(log dir, partition folder name or None for every partition)."""
    if not path.is_dir():
        raise UsageError(f"{path} is not a directory (give a log dir or a <topic>-<partition> folder)")
    if user_partition_dir(path.name) and any(p.name.endswith(".log") for p in path.iterdir()):
        return path.parent, path.name
    if user_partition_dir(path.name) and not any(p.is_dir() for p in path.iterdir()):
        return path.parent, path.name
    return path, None


def _decision(lg, checkpoint: int | None) -> dict:
    """Whether the broker's cleaner would clean `lg` now, and why (the --dry-run columns)."""
    from pylog.storage.clean_decision import explain_cleaning
    from pylog.storage.cleaner import log_section, segment_stats

    now = int(time.time() * 1000)
    cfg = lg.config
    section = log_section(lg, checkpoint, now)
    d = explain_cleaning(segment_stats(list(lg.segments)), section, now_ms=now,
                         min_cleanable_dirty_ratio=cfg["min.cleanable.dirty.ratio"],
                         min_compaction_lag_ms=cfg["min.compaction.lag.ms"],
                         first_unstable_offset=lg.producer_state.first_unstable_offset(),
                         compacted=lg.is_compacted, cleanup_policy=",".join(cfg["cleanup.policy"]))
    return {"would_clean_now": d.would_clean, "why": d.why, "why_text": d.reason,
            "dirty_ratio": round(section.dirty_ratio, 4), "clean_bytes": section.clean_bytes,
            "dirty_bytes": section.dirty_bytes, "first_dirty": section.first_dirty,
            "first_uncleanable": section.first_uncleanable, "segments": len(lg.segments),
            "min_cleanable_dirty_ratio": cfg["min.cleanable.dirty.ratio"],
            "min_compaction_lag_ms": cfg["min.compaction.lag.ms"],
            "max_compaction_lag_ms": cfg["max.compaction.lag.ms"]}


def _print_decisions(results: list[dict]) -> None:
    from rich.markup import escape

    from pylog.commands.console import print_table

    rows = [(f"{r['topic']}-{r['partition']}", "[green]yes[/green]" if r["would_clean_now"] else "no",
             f"{r['dirty_ratio']:.3f}", str(r["min_cleanable_dirty_ratio"]), escape(r["why_text"]))
            for r in results if "why" in r]
    print_table([("partition", "left"), ("now", "left"), ("dirty ratio", "right"), ("min ratio", "right"),
                 ("why", "left")], rows, title="would the broker's cleaner clean it now?")


@click.command("compact", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("path", type=click.Path(exists=True, file_okay=False))
@click.option("--dry-run", "-n", is_flag=True,
              help="Report what compaction would remove, and per partition whether the broker's cleaner would "
                   "clean it now and why; write nothing to the segments.")
@assignments_option("--set", "sets",
                    help="Topic config override for this run (repeatable), e.g. --set delete.retention.ms=0 or "
                         "--set cleanup.policy=compact for a topic not configured as compacted.")
@click.option("--buffer-size", default="128M", show_default=True, metavar="BYTES",
              help="Memory for the key map (Kafka's log.cleaner.dedupe.buffer.size); larger logs than it "
                   "can index are cleaned in several passes.")
@click.option("--if-dirty", is_flag=True,
              help="Clean only partitions whose dirty ratio reaches min.cleanable.dirty.ratio (or that are "
                   "overdue by max.compaction.lag.ms), as the broker's cleaner does. By default every "
                   "compacted partition is cleaned.")
@click.option("--no-progress", is_flag=True, help="Never show the progress bar.")
@json_option
def compact(path, dry_run, sets, buffer_size, if_dirty, no_progress, as_json):
    """Compact the partitions of PATH: keep the latest record of every key.

    PATH is a log dir (every partition whose topic has cleanup.policy
    containing `compact`) or one <topic>-<partition> folder. Runs Kafka's log
    cleaner exactly as a broker would, but offline: the broker must not be
    running on the log dir (its .lock says so, and the command refuses).

    \b
    What is kept:
      - the newest record of each key in the cleanable part of the log (all
        segments but the active one, and no segment younger than
        min.compaction.lag.ms); offsets never change, cleaned logs have gaps
      - tombstones (null values) until delete.retention.ms after the cleaning
        that first kept them; with delete.retention.ms=0 they go at once
      - the last batch of every live idempotent producer (empty if need be)
    Segments are rewritten in groups of up to segment.bytes and swapped in
    with crash-safe renames; cleaner-offset-checkpoint is updated.

    \b
    Examples:
      pylog compact /var/lib/pylog/data
      pylog compact /var/lib/pylog/data/users-0 --dry-run
      pylog compact data --set delete.retention.ms=0 --json

    --dry-run also says, per partition, whether the broker's cleaner would
    clean it now and why (`why` in --json): dirty-ratio (the dirty ratio
    against min.cleanable.dirty.ratio), max-compaction-lag (overdue, cleaned
    whatever the ratio), min-compaction-lag (the first dirty segment is too
    young), open-transaction, only-active-segment, nothing-to-clean (all
    below the active segment already cleaned), not-compacted.

    Prints a table of bytes and records before and after per partition, or
    with --json one JSON document with the cleaner statistics. Exit status 0
    on success, 1 on errors (locked log dir, corrupt data), 2 on usage errors.
    """
    from pylog.commands.console import emit_json
    from pylog.core.config import BROKER_CONFIGS
    from pylog.storage.cleaner import Cleaner, update_cleaner_checkpoint, read_cleaner_checkpoint
    from pylog.storage.log_manager import LogManager
    from pylog.storage.offset_map import OffsetMap

    overrides = _topic_overrides(sets)
    buffer = parse_size(buffer_size)
    log_dir, only = _targets(Path(path))
    broker_config = BROKER_CONFIGS.resolve({"log.dirs": str(log_dir), "log.cleaner.enable": "false"})
    lm = LogManager([str(log_dir)], broker_config)
    t0 = time.perf_counter()
    lm.startup()  # takes the log dir's lock: refuses while a broker runs there
    results = []
    try:
        logs = [lg for lg in lm.all_logs() if only is None or lg.dir.name == only]
        if only is not None and not logs:
            raise UsageError(f"{path}: no such partition in {log_dir}")
        for lg in logs:
            info = lm.topics.get(lg.topic)
            if overrides:
                base = dict(info.overrides) if info else {}
                lg.update_config(lm.resolve_config({**base, **overrides}))
        todo = [lg for lg in sorted(logs, key=lambda l: (l.topic, l.partition)) if lg.is_compacted]
        decisions = {}
        if dry_run:
            checkpoints = read_cleaner_checkpoint(log_dir)
            for lg in logs:
                decisions[lg.dir.name] = _decision(lg, checkpoints.get((lg.topic, lg.partition)))
        results += [_not_compacted_row(lg, decisions) for lg in logs if not lg.is_compacted]
        total = sum(s.size for lg in todo for s in lg.segments[:-1]) * 2
        bar, task = _progress_bar(total, not no_progress and not as_json)
        offset_map = None
        try:
            for lg in todo:
                if offset_map is None and not dry_run:
                    offset_map = OffsetMap(buffer, broker_config["log.cleaner.io.buffer.load.factor"])
                if bar is not None:
                    bar.update(task, description=f"{lg.topic}-{lg.partition}")
                cleaner = Cleaner(offset_map if offset_map is not None else (lambda: None),
                                  progress=(lambda n: bar.advance(task, n)) if bar is not None else None)
                cp = read_cleaner_checkpoint(lg.dir.parent).get((lg.topic, lg.partition))
                res = cleaner.clean(lg, cp, dry_run=dry_run, force=not if_dirty)
                if res.cleaned and not dry_run:
                    update_cleaner_checkpoint(lg.dir.parent, lg.topic, lg.partition, res.checkpoint)
                results.append(_cleaned_row(lg, res, decisions))
        finally:
            if bar is not None:
                bar.stop()
    finally:
        lm.shutdown()
    seconds = time.perf_counter() - t0
    done = [r for r in results if r.get("cleaned")]
    totals = {k: sum(r.get(k, 0) for r in done) for k in
              ("bytes_read", "bytes_written", "records_read", "records_written", "records_removed",
               "tombstones_removed")}
    if as_json:
        emit_json({"log_dir": str(log_dir), "dry_run": dry_run, "seconds": round(seconds, 3),
                   "partitions": results, "totals": totals})
        return
    _print_report(results, done, totals, log_dir, dry_run, seconds)


def _topic_overrides(sets) -> dict[str, str]:
    """--set NAME=VALUE pairs, each a topic config with a valid value."""
    from pylog.core.config import TOPIC_CONFIGS, ConfigError
    from pylog.core.properties import parse_assignment

    overrides = dict(parse_assignment(s, "--set") for s in sets)
    for k in overrides:
        if k not in TOPIC_CONFIGS:
            raise UsageError(f"--set {k}: not a topic config")
    try:
        TOPIC_CONFIGS.resolve(overrides)
    except ConfigError as e:
        raise UsageError(f"--set: {e}") from None
    return overrides


def _not_compacted_row(lg, decisions: dict) -> dict:
    return {"topic": lg.topic, "partition": lg.partition, "cleaned": False,
            "reason": f"cleanup.policy={','.join(lg.config['cleanup.policy'])} "
                      f"(use --set cleanup.policy=compact to compact it anyway)",
            **decisions.get(lg.dir.name, {})}


def _cleaned_row(lg, res, decisions: dict) -> dict:
    """One partition's result: the cleaner's statistics, or why it cleaned nothing."""
    row = {"topic": lg.topic, "partition": lg.partition, "cleaned": res.cleaned,
           "dirty_ratio": round(res.section.dirty_ratio, 4),
           "first_dirty": res.section.first_dirty, "first_uncleanable": res.section.first_uncleanable}
    if not res.cleaned:
        row["reason"] = "nothing cleanable" if res.section.dirty_bytes == 0 or \
            res.section.first_uncleanable <= res.section.first_dirty else \
            f"dirty ratio {res.section.dirty_ratio:.3f} below min.cleanable.dirty.ratio " \
            f"{lg.config['min.cleanable.dirty.ratio']}"
    else:
        row.update(res.stats.to_dict())
        row.pop("log", None)
    row.update(decisions.get(lg.dir.name, {}))
    return row


def _progress_bar(total: int, wanted: bool):
    """(bar, task) of a progress bar over `total` bytes on a terminal for long work, else (None, None)."""
    if not (wanted and total > (64 << 20) and sys.stderr.isatty()):
        return None, None
    from rich.progress import BarColumn, Progress, TextColumn, TransferSpeedColumn

    from pylog.commands.console import err

    bar = Progress(TextColumn("compact {task.description}"), BarColumn(), TransferSpeedColumn(), console=err,
                   transient=True)
    bar.start()
    return bar, bar.add_task("", total=total)


def _print_report(results: list[dict], done: list[dict], totals: dict, log_dir, dry_run: bool,
                  seconds: float) -> None:
    """The table of partitions before and after, the dry run's decisions and the summary line."""
    from pylog.commands.console import out, plural, print_table
    from rich.markup import escape

    rows = []
    for r in results:
        name = f"{r['topic']}-{r['partition']}"
        if not r.get("cleaned"):
            rows.append((name, escape(f"skipped: {r['reason']}"), *[""] * 6))
            continue
        rows.append((name, escape(f"[{r['first_dirty']}, {r['end_offset']})"), f"{r['bytes_read']:,}",
                     f"{r['bytes_written']:,}", f"{r['records_read']:,}", f"{r['records_written']:,}",
                     f"{r['tombstones_removed']:,}", f"{r['mb_per_sec']:.1f}"))
    print_table([(c, "left" if c in ("partition", "dirty section") else "right") for c in
                 ("partition", "dirty section", "bytes before", "bytes after", "records before", "records after",
                  "tombstones removed", "MB/s")], rows,
                title=f"pylog compact {log_dir}" + (" (dry run)" if dry_run else ""))
    if dry_run:
        _print_decisions(results)
    saved = totals["bytes_read"] - totals["bytes_written"]
    pct = 100.0 * saved / totals["bytes_read"] if totals["bytes_read"] else 0.0
    removed = f"{plural(totals['records_removed'], 'record')}, {plural(saved, 'byte')} ({pct:.1f}%)"
    if dry_run:
        out.print(f"dry run: would compact {plural(len(done), 'partition')}, removing {removed}; "
                  f"nothing was changed ({seconds:.2f} s)")
    else:
        out.print(f"compacted {plural(len(done), 'partition')} in {seconds:.2f} s: removed {removed}")

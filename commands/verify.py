"""`pylog verify`: check log dirs, partition folders or single files, with a verdict.

Checks (each problem has a `kind` so scripts and tests can match it):
  crc                 a batch whose CRC does not match
  corrupt             a bad length/magic hiding the next batch boundary
  torn-tail           the active segment ends inside a batch
  truncated-segment   a non-active segment ends inside a batch
  offset-order        a batch whose offsets do not increase past the previous one
  segment-base        a segment whose first batch starts below its file name's offset
  segment-overlap     a segment starting at or below the previous segment's last offset
  index               an offset-index entry not pointing at a batch with that last offset,
                      entries out of order, or a missing index for a non-empty segment
  time-index          a time-index entry out of order, not at a batch, or with the wrong timestamp
  txn-index           a .txnindex that does not parse, lists an aborted transaction with no ABORT
                      marker in its segment, misses one, or disagrees on its first offset or
                      last stable offset; a segment with ABORT markers but no .txnindex
  stray-file          a .cleaned or .swap file left by an interrupted cleaning or swap
                      (the storage engine's recovery resolves them); .deleted segments
                      awaiting file.delete.delay.ms are normal and not reported
  snapshot            a producer snapshot that does not parse, lies beyond the log end,
                      or disagrees with replaying the log
  leader-epoch        batch epochs that disagree with leader-epoch-checkpoint
  checkpoint          an offset checkpoint naming an unknown partition or an offset outside the log
  metadata            unreadable partition.metadata / meta.properties / checkpoint files
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import click

from pylog.commands.options import json_option
from pylog.storage.scan import DEFAULT_MAX_MESSAGE_SIZE
from pylog.storage.layout import SEGMENT_FILE, parse_partition_dir, user_partition_dir
from pylog.core.errors import DataError, UsageError
from pylog.storage.checks import (
    CLEAN,
    DAMAGED,
    REPAIRABLE,
    PartitionReport,
    read_index,
    verify_checkpoints,
    verify_partition,
    worst_verdict,
)


# ---------------------------------------------------------------- progress
class _Progress:
    def __init__(self, bar, task):
        self.bar, self.task = bar, task

    def advance(self, n: int) -> None:
        if self.bar is not None:
            self.bar.advance(self.task, n)


def _classify(path: Path) -> str:
    if path.is_file():
        return "file"
    if any(SEGMENT_FILE.match(p.name) for p in path.iterdir()) or parse_partition_dir(path.name) and \
            not any(p.is_dir() for p in path.iterdir()):
        return "partition"
    return "logdir"


def collect(paths) -> list[tuple[str, Path, Path | None]]:
    """[(kind, path, log_dir)] with kind partition|file|checkpoints."""
    out = []
    for raw in paths:
        p = Path(raw)
        kind = _classify(p)
        if kind == "file":
            out.append(("file", p, None))
        elif kind == "partition":
            out.append(("partition", p, None))
        else:
            parts = sorted(d for d in p.iterdir() if d.is_dir() and parse_partition_dir(d.name))
            if not parts and not _has_log_dir_files(p):
                raise DataError(f"{p}: no Kafka log files here (no <topic>-<partition> folders, segments, "
                                "checkpoint files or meta.properties)")
            out.extend(("partition", d, p) for d in parts)
            out.append(("checkpoints", p, p))
    return out


def _has_log_dir_files(p: Path) -> bool:
    from pylog.storage.checkpoint import OFFSET_CHECKPOINT_FILES

    return any((p / n).exists() for n in (*OFFSET_CHECKPOINT_FILES, "meta.properties"))


def _verify_file(p: Path, max_message_size: int) -> PartitionReport:
    from pylog.storage.checkpoint import OFFSET_CHECKPOINT_FILES, read_offset_checkpoint
    from pylog.storage.leader_epoch import LEADER_EPOCH_CHECKPOINT, read_leader_epoch_checkpoint
    from pylog.storage.producer_state import CorruptSnapshotError, read_snapshot

    name = p.name
    if name.endswith(".log") or re.match(r"^\d{20}-\d{10}\.checkpoint$", name):
        return verify_partition(p.parent, max_message_size=max_message_size, only_log=p)
    rep = PartitionReport(str(p))
    try:
        if name.endswith(".snapshot"):
            read_snapshot(p)
        elif name == LEADER_EPOCH_CHECKPOINT:
            read_leader_epoch_checkpoint(p)
        elif name in OFFSET_CHECKPOINT_FILES:
            read_offset_checkpoint(p)
        elif name.endswith(".index") or name.endswith(".timeindex") or name.endswith(".txnindex"):
            if not name.split(".")[0].isdigit():
                raise UsageError(f"{p}: not a Kafka segment file name (expected the base offset in 20 digits, "
                                f"like 00000000000000000000{p.suffix})")
            base = int(name.split(".")[0])
            log = p.with_name(name.split(".")[0] + ".log")
            if log.exists():
                return verify_partition(p.parent, max_message_size=max_message_size, only_log=log)
            # an index whose segment is gone: the records it indexed are lost
            rep.add("segment", p, f"no log segment {log.name} beside it")
            if name.endswith(".txnindex"):
                from pylog.storage.txn_index import TransactionIndex

                TransactionIndex(p, base).read_all()
            else:
                read_index(p, base, 8 if name.endswith(".index") else 12)
        else:
            raise UsageError(f"{p}: not a Kafka log file pylog can verify")
    except (CorruptSnapshotError, DataError) as e:
        if isinstance(e, UsageError):
            raise
        rep.add("metadata", p, str(e))
    return rep


# ---------------------------------------------------------------- rendering
_VERDICT_STYLE = {CLEAN: "green", REPAIRABLE: "yellow", DAMAGED: "red"}


def _quiet_internal(r: PartitionReport) -> bool:
    """An internal topic's partition (__consumer_offsets-17) with no data and no problem."""
    return Path(r.path).name.startswith("__") and not r.batches and not r.problem_count


def _render(reports: list[PartitionReport], seconds: float, all_partitions: bool = False) -> None:
    from pylog.commands.console import out, plural, print_table

    shown = reports if all_partitions else [r for r in reports if not _quiet_internal(r)]
    rows = []
    for r in shown:
        n = r.problem_count
        v = r.verdict
        name = Path(r.path).name if Path(r.path).is_dir() else r.path
        rows.append((name, r.segments, r.batches, r.records, r.bytes, f"[red]{n}[/red]" if n else "[green]0[/green]",
                     f"[{_VERDICT_STYLE[v]}]{v.upper()}[/]"))
    print_table([("partition", "left"), ("segments", "right"), ("batches", "right"), ("records", "right"),
                 ("bytes", "right"), ("problems", "right"), ("verdict", "left")], rows, title="pylog verify")
    if len(shown) < len(reports):
        out.print(f"({plural(len(reports) - len(shown), 'empty internal partition')} not shown; "
                  f"--all-partitions lists them)", style="dim")
    for r in reports:
        for p in r.problems:
            where = f" at position {p.position}" if p.position is not None else ""
            style = "yellow" if p.derived else "red"
            out.print(f"[{style}]{p.kind}[/{style}] {p.file}{where}: {p.message}", markup=True, highlight=False)
    total = sum(r.problem_count for r in reports)
    verdict = worst_verdict(r.verdict for r in reports)
    hit = sum(1 for r in reports if r.problem_count)
    mb = sum(r.bytes for r in reports) / 1e6
    checked = f"({mb:.1f} MB checked in {seconds:.2f} s)"
    if verdict == DAMAGED:
        out.print(f"[bold red]DAMAGED[/bold red]: records unreadable or lost: {plural(total, 'problem')} in {hit} "
                  f"of {plural(len(reports), 'item')} {checked}; `--repair` truncates at the first damage, "
                  f"`--repair --salvage` removes only the unreadable batches")
    elif verdict == REPAIRABLE:
        files = sorted(f for r in reports for f in r.derived_files)
        out.print(f"[bold yellow]REPAIRABLE[/bold yellow]: every record is readable; only derived files are "
                  f"missing or stale, and the broker rebuilds them {checked}:")
        for f in files:
            out.print(f"  {f}", markup=False, highlight=False)
    else:
        out.print(f"[bold green]CLEAN[/bold green]: {plural(len(reports), 'item')}, {mb:.1f} MB checked in "
                  f"{seconds:.2f} s")


def _rebuild_derived(pdir: Path, log_start_offset: int) -> list[str]:
    """Remove a partition's derived files and let the storage engine's recovery rebuild them."""
    from pylog.core.config import TOPIC_CONFIGS
    from pylog.storage.log import Log

    for p in pdir.iterdir():
        if p.suffix in (".index", ".timeindex", ".snapshot") or p.name == "leader-epoch-checkpoint":
            p.unlink()
    log = Log(pdir, TOPIC_CONFIGS.resolve({}), had_clean_shutdown=False, recovery_point=0,
              log_start_offset=log_start_offset)
    try:
        log.take_snapshot()
        return list(log.warnings)
    finally:
        log.close()


def _repair(reports: list[PartitionReport], yes: bool, salvage: bool, max_message_size: int,
            show: bool) -> tuple[list[str], list]:
    """Recover the damaged partitions (salvaging them first when asked); returns the repaired dirs and
    the salvage plans applied."""
    from pylog.commands.console import err, plural
    from pylog.storage.salvage import apply_salvage, plan_salvage

    say = err.print if show else (lambda *a, **k: None)
    todo = [r for r in reports if r.problem_count and Path(r.path).is_dir() and user_partition_dir(Path(r.path).name)]
    if not todo:
        say("nothing to repair")
        return [], []
    plans = {}
    for r in todo:
        if salvage and r.verdict == DAMAGED:
            plan = plan_salvage(Path(r.path), max_message_size=max_message_size)
            plans[r.path] = plan
            say(f"will salvage {r.path}: remove {plan.removed_bytes} unreadable bytes from "
                f"{plural(len(plan.damaged_files), 'segment')}, keep every other batch at its offset, then rebuild indexes, "
                f"leader-epoch cache and producer snapshots")
            for lost in plan.lost:
                say(f"  [bold]lost: {lost.describe()}[/bold] ("
                    + "; ".join(f"{Path(x.file).name} position {x.position}: {x.bytes} bytes, {x.reason}"
                                for x in lost.removed) + ")")
            continue
        say(f"will recover {r.path}: rebuild indexes, leader-epoch cache and producer snapshots from the log")
        if r.first_damage:
            file, pos = r.first_damage
            lost = os.path.getsize(file) - pos
            later = sorted(p for p in Path(r.path).glob("*.log") if p.name > Path(file).name)
            lost += sum(p.stat().st_size for p in later)
            say(f"  [bold]the log is cut at {Path(file).name} position {pos}: {lost} bytes after the first "
                f"damage are dropped[/bold]" + (f" (including {plural(len(later), 'later segment')})" if later else ""))
    if not yes and not click.confirm("Proceed with the repair?", default=False, err=True):
        raise click.exceptions.Abort()
    done = []
    for r in todo:
        pdir = Path(r.path)
        start = r.log_start_offset or 0
        if r.path in plans:
            apply_salvage(plans[r.path])
            bases = sorted(int(m.group(1)) for p in pdir.iterdir() if (m := SEGMENT_FILE.match(p.name)))
            start = max(start, bases[0]) if bases else start
        for w in _rebuild_derived(pdir, start):
            say(f"  {w}")
        done.append(r.path)
    return done, list(plans.values())


@click.command("verify", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--max-message-size", type=click.IntRange(min=64), default=DEFAULT_MAX_MESSAGE_SIZE, show_default=True,
              help="Largest batch size believed; a larger length field is reported as corruption.")
@click.option("--repair", is_flag=True,
              help="Run the storage engine's recovery on damaged partitions (truncate at the first damage, "
                   "rebuild indexes, epoch cache and snapshots), then verify again.")
@click.option("--salvage", is_flag=True,
              help="With --repair: remove only the unreadable batches of damaged partitions, keeping every later "
                   "record at its offset, and report the exact offset ranges lost.")
@click.option("--strict", is_flag=True, help="Exit 1 on REPAIRABLE too (derived files missing or stale).")
@click.option("--yes", "-y", is_flag=True, help="Do not ask before repairing.")
@click.option("--no-progress", is_flag=True, help="Never show the progress bar.")
@click.option("--all-partitions", is_flag=True,
              help="List internal topics' empty partitions too (__consumer_offsets-N...); hidden by default.")
@json_option
def verify(paths, max_message_size, repair, salvage, strict, yes, no_progress, all_partitions, as_json):
    """Check Kafka log dirs, partition folders or single files and give a verdict.

    PATH may be a log dir (every <topic>-<partition> folder in it plus the
    offset checkpoint files and meta.properties), a partition folder, or one
    file (.log, .index, .timeindex, .txnindex, .snapshot,
    leader-epoch-checkpoint, an offset checkpoint).

    \b
    Checks:
      - every batch's CRC and structure; torn tails of active segments
      - offsets increase across batches and segments, with no overlap
      - segment base offsets agree with the file names and first batches
      - every offset/time index entry points at a batch whose offsets and
        timestamp match; time index monotonic
      - each .txnindex lists exactly the aborted transactions whose ABORT
        markers its segment holds, with Kafka's first/last-stable offsets
      - no .cleaned or .swap leftovers of an interrupted cleaning or swap
        (.deleted segments awaiting file.delete.delay.ms are normal)
      - producer snapshots parse and agree with replaying the log
      - batch leader epochs agree with leader-epoch-checkpoint
      - checkpoint files name known partitions with offsets inside the log

    A log dir a running broker holds (its .lock is taken) is read as it
    stands: each log up to the bytes present when it is read, so a batch
    being appended and the zero-filled preallocated tails of the active
    segments' indexes are not damage; the report says the dir is in use.

    \b
    Verdicts (per partition and overall, the worst wins):
      CLEAN       nothing wrong.
      REPAIRABLE  every record is readable; only derived files are missing
                  or stale (offset/time/transaction indexes, producer
                  snapshots, leader-epoch-checkpoint), each named. The broker
                  rebuilds them, so a partition holding only a .log copied
                  from a broker is REPAIRABLE.
      DAMAGED     records are unreadable or lost (CRC, structure, torn or
                  truncated segments, offsets out of order), or other files
                  are wrong (checkpoints, metadata, leftovers).

    Prints a table per partition and the problems found, or with --json one
    JSON document carrying the verdict. Exit status: 0 when CLEAN or
    REPAIRABLE (1 for REPAIRABLE with --strict), 1 when DAMAGED, 2 on usage
    errors.

    --repair recovers the partitions with problems with the storage engine
    (the same recovery a broker runs after a crash), first printing what it
    will do, including how many bytes after the first damage point are
    dropped; it asks for confirmation unless --yes is given.

    --repair --salvage removes only the unreadable batches of DAMAGED
    partitions, in old segments as well as the active one, keeping every
    later record at its offset (the log then has an offset gap, which Kafka
    logs allow), rebuilds the indexes, epoch cache and producer state, and
    reports the exact offset ranges lost (in --json under "salvaged").
    """
    from pylog.commands.console import err, plural

    if salvage and not repair:
        raise UsageError("--salvage goes with --repair")
    t0 = time.perf_counter()
    items = collect(paths)
    total_bytes = sum(f.stat().st_size for kind, p, _ in items if kind == "partition" for f in p.glob("*.log"))
    show_bar = not no_progress and not as_json and total_bytes > (64 << 20) and sys.stderr.isatty()

    from pylog.storage.lock import in_use

    live_dirs: dict[Path, bool] = {}

    def is_live(log_dir: Path) -> bool:
        if log_dir not in live_dirs:
            live_dirs[log_dir] = in_use(log_dir)
        return live_dirs[log_dir]

    def run() -> list[PartitionReport]:
        return _verify_items(items, max_message_size, total_bytes if show_bar else 0, is_live)

    reports = run()
    plans = []
    if repair and any(r.problem_count for r in reports):
        busy = [str(d) for d, v in live_dirs.items() if v]
        if busy:
            raise UsageError(f"cannot repair {', '.join(busy)}: a running broker holds it (stop the broker first)")
        if not as_json:
            _render(reports, time.perf_counter() - t0, all_partitions)
        repaired, plans = _repair(reports, yes, salvage, max_message_size, show=not as_json or not yes)
        t0 = time.perf_counter()
        reports = run()
        if not as_json:
            err.print(f"repaired {plural(len(repaired), 'partition')}; verifying again")
    seconds = time.perf_counter() - t0
    live = sorted(str(d) for d, v in live_dirs.items() if v)
    verdict = worst_verdict(r.verdict for r in reports)
    _print_verdict(reports, verdict, seconds, live, plans if repair else None, as_json, all_partitions)
    if verdict == DAMAGED or (verdict == REPAIRABLE and strict):
        sys.exit(1)  # SystemExit: click's non-standalone mode would swallow ctx.exit(1)


def _verify_items(items, max_message_size: int, bar_bytes: int, is_live) -> list[PartitionReport]:
    """A report per partition, file and log dir with checkpoint problems; a progress bar over
    `bar_bytes` bytes of .log files when not 0."""
    from pylog.commands.console import err

    reports: list[PartitionReport] = []
    by_path: dict[str, PartitionReport] = {}
    if bar_bytes:
        from rich.progress import BarColumn, Progress, TextColumn, TransferSpeedColumn

        bar = Progress(TextColumn("verify"), BarColumn(), TransferSpeedColumn(), console=err, transient=True)
        bar.start()
        progress = _Progress(bar, bar.add_task("verify", total=bar_bytes))
    else:
        bar, progress = None, None
    try:
        for kind, p, log_dir in items:
            if kind == "partition":
                r = verify_partition(p, max_message_size=max_message_size, progress=progress,
                                     live=is_live(log_dir or p.parent))
                by_path[str(p)] = r
            elif kind == "file":
                r = _verify_file(p, max_message_size)
            else:
                r = verify_checkpoints(p, {k: v for k, v in by_path.items() if Path(k).parent == p})
                if not r.problem_count:
                    continue
            reports.append(r)
    finally:
        if bar is not None:
            bar.stop()
    return reports


def _print_verdict(reports: list[PartitionReport], verdict: str, seconds: float, live: list[str], plans,
                   as_json: bool, all_partitions: bool) -> None:
    """The verdict as one JSON document, or as tables and notes; `plans` are the salvage plans
    of a --repair (None without one)."""
    from pylog.commands.console import err

    if as_json:
        total = sum(r.problem_count for r in reports)
        doc = {"verdict": verdict, "problem_count": total, "seconds": round(seconds, 3), "in_use": live,
               "derived_files": sorted(f for r in reports for f in r.derived_files),
               "items": [r.to_json() for r in reports]}
        if plans is not None:
            doc["salvaged"] = [p.to_json() for p in plans]
        sys.stdout.write(json.dumps(doc, separators=(",", ":")) + "\n")
    else:
        for d in live:
            err.print(f"note: {d} is in use by a running broker: its logs were judged up to the bytes present "
                      f"when they were read (batches being appended are not damage)")
        _render(reports, seconds, all_partitions)
        for p in plans or ():
            for lost in p.lost:
                err.print(f"salvaged {p.partition}: lost {lost.describe()}", markup=False, highlight=False)

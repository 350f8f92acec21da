"""`pylog export-to-kafka`: hand a pylog log dir to a freshly formatted Apache Kafka node.

Kafka keeps topics in KRaft metadata, not in the log dir, so copying the
partition folders alone gives a node logs it does not know (it renames them
`-stray`). A formatted node that has never started reads its metadata dir's
bootstrap snapshot (`bootstrap.checkpoint`, or in Kafka 4.4 the metadata log's
snapshot 0-0) when the controller first activates and loads every record in it. This command adds, per topic, the
records Kafka's controller writes itself for CreateTopics (TopicRecord with
pylog's topic id, one PartitionRecord per partition led by this node in the
log dir it is placed in, a ConfigRecord per topic override) and a
ProducerIdsRecord above every producer id in the data, then places the
partition folders (segments, indexes, snapshots, leader-epoch-checkpoint,
partition.metadata) and the offset checkpoints in the node's log dirs. On its
first start Kafka loads the logs under the same topic ids and serves every
record at its original offset.
"""
from __future__ import annotations

import mmap
import re
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import click

from pylog.commands.options import json_option
from pylog.core.errors import DataError, UsageError
from pylog.storage.layout import METADATA_TOPIC, user_partition_dir

_METADATA_TOPIC = METADATA_TOPIC
# files Kafka's LogLoader reads in a partition folder; anything else stays behind
_KAFKA_FILES = re.compile(r"^(\d{20}\.(log|index|timeindex|txnindex|snapshot)|leader-epoch-checkpoint|partition\.metadata)$")
# what Kafka's group coordinator sets when it creates __consumer_offsets itself
_OFFSETS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}
_TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC


@dataclass
class _Partition:
    topic: str
    partition: int
    source: Path
    leader_epoch: int
    end_offset: int
    size: int
    target: Path | None = None
    directory_id: str = ""


@dataclass
class _Topic:
    name: str
    topic_id: object
    overrides: dict
    partitions: list = field(default_factory=list)


def _kafka_dirs(config_path: str) -> tuple[dict, list[Path], Path, int]:
    from pylog.commands.options import load_properties_file

    props = load_properties_file(config_path)
    roles = {r.strip() for r in props.get("process.roles", "").split(",") if r.strip()}
    if "controller" not in roles:
        raise UsageError(f"{config_path}: process.roles={props.get('process.roles', '')!r}: the bootstrap records are "
                         f"read by the controller; give the config of a combined broker,controller node")
    try:
        node_id = int(props["node.id"])
    except (KeyError, ValueError):
        raise UsageError(f"{config_path}: node.id is missing or not an integer") from None
    dirs = props.get("log.dirs") or props.get("log.dir") or "/tmp/kafka-logs"
    log_dirs = [Path(d.strip()) for d in dirs.split(",") if d.strip()]
    metadata_dir = Path(props.get("metadata.log.dir") or log_dirs[0])
    return props, log_dirs, metadata_dir, node_id


def _check_fresh(log_dirs: list[Path], metadata_dir: Path, node_id: int) -> dict[Path, str]:
    """Every Kafka dir formatted for this node and never started; returns log dir -> directory.id."""
    from pylog.storage.meta_properties import read_meta_properties

    ids = {}
    cluster = None
    for d in dict.fromkeys([*log_dirs, metadata_dir]):
        try:
            meta = read_meta_properties(d)
        except FileNotFoundError:
            raise DataError(f"{d}: no meta.properties; format the node first "
                            f"(kafka-storage.sh format -t <cluster id> -c <server.properties>)") from None
        if meta.node_id != node_id:
            raise DataError(f"{d}/meta.properties: node.id {meta.node_id}, but the config says {node_id}")
        if cluster is not None and meta.cluster_id != cluster:
            raise DataError(f"{d}/meta.properties: cluster.id {meta.cluster_id} differs from {cluster}")
        cluster = meta.cluster_id
        if d in log_dirs:
            ids[d] = meta.directory_id
    meta_log = metadata_dir / f"{_METADATA_TOPIC}-0"
    if meta_log.is_dir() and any(p.suffix == ".log" and p.stat().st_size for p in meta_log.iterdir()):
        raise DataError(f"{meta_log}: this node has already started; export-to-kafka needs a freshly formatted "
                        f"node (its bootstrap records are read only while the metadata log is empty)")
    snapshots = sorted(p.name for p in meta_log.iterdir() if p.suffix == ".checkpoint") if meta_log.is_dir() else []
    if snapshots and snapshots != ["00000000000000000000-0000000000.checkpoint"]:
        raise DataError(f"{meta_log}: holds metadata snapshots {', '.join(snapshots)}; export-to-kafka needs a "
                        f"freshly formatted node")
    return ids


def _max_producer_id(pdir: Path) -> int:
    """The highest producer id in a partition's batches and snapshots (-1 when none)."""
    from pylog.core.records.header import HEADER_SIZE, iter_headers
    from pylog.storage.producer_state import read_snapshot

    best = -1
    for f in sorted(pdir.iterdir()):
        if f.suffix == ".log" and f.stat().st_size >= HEADER_SIZE:
            with open(f, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                for _, h in iter_headers(mm, verify_crc=False):
                    best = max(best, h.producer_id)
        elif f.suffix == ".snapshot":
            best = max([best, *(e.producer_id for e in read_snapshot(f))])
    return best


def _collect(sources: list[Path], only: set[str] | None) -> tuple[list[_Topic], int, dict]:
    from pylog.core.config import BROKER_CONFIGS
    from pylog.storage.checkpoint import (
        LOG_START_OFFSET_CHECKPOINT,
        RECOVERY_POINT_CHECKPOINT,
        REPLICATION_OFFSET_CHECKPOINT,
        read_offset_checkpoint_or_empty,
    )
    from pylog.storage.leader_epoch import LeaderEpochFileCache
    from pylog.storage.log_manager import CLEAN_SHUTDOWN_FILE, LogManager
    from pylog.storage.partition_metadata import read_partition_metadata

    registry = LogManager([str(s) for s in sources], BROKER_CONFIGS.resolve({})).read_registry()
    topics: dict[str, _Topic] = {}
    checkpoints = {name: {} for name in (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT,
                                          REPLICATION_OFFSET_CHECKPOINT)}
    max_pid = -1
    for src in sources:
        if not (src / CLEAN_SHUTDOWN_FILE).exists():
            raise DataError(f"{src}: not shut down cleanly; start and stop `pylog broker start --log-dir {src}` "
                            f"(or run `pylog verify --repair {src}`) first")
        for name, entries in checkpoints.items():
            entries.update(read_offset_checkpoint_or_empty(src / name))
        for p in sorted(src.iterdir()):
            tp = user_partition_dir(p.name)
            if not p.is_dir() or tp is None:
                continue
            name, part = tp
            if only is not None and name not in only:
                continue
            entry = registry.get(name, {})
            try:
                topic_id = read_partition_metadata(p)
            except FileNotFoundError:
                if "topic_id" not in entry:
                    raise DataError(f"{p}: no partition.metadata and no topic id in pylog-topics.json") from None
                topic_id = uuid.UUID(entry["topic_id"])
            overrides = dict(entry.get("overrides", {}))
            if name == "__consumer_offsets":
                overrides = {**_OFFSETS_TOPIC_CONFIGS, **overrides}
            t = topics.setdefault(name, _Topic(name, topic_id, overrides))
            if t.topic_id != topic_id:
                raise DataError(f"{p}: topic id differs from the other partitions of {name}")
            epoch = LeaderEpochFileCache.load(p, fsync=False).latest_epoch
            size = sum(f.stat().st_size for f in p.iterdir() if f.suffix == ".log")
            end = checkpoints[RECOVERY_POINT_CHECKPOINT].get((name, part), 0)
            t.partitions.append(_Partition(name, part, p, max(epoch or 0, 0), end, size))
            max_pid = max(max_pid, _max_producer_id(p))
    for t in topics.values():
        t.partitions.sort(key=lambda x: x.partition)
        have = [x.partition for x in t.partitions]
        if have != list(range(len(have))):
            raise DataError(f"topic {t.name}: partition folders {have} are not 0..{len(have) - 1}")
    if only:
        missing = sorted(only - set(topics))
        if missing:
            raise UsageError(f"--topic {missing[0]}: no such topic in {', '.join(map(str, sources))}")
    return sorted(topics.values(), key=lambda t: t.name), max_pid, checkpoints


def _bootstrap_records(boot, topics: list[_Topic], node_id: int, max_pid: int) -> None:
    from pylog.storage.meta_properties import uuid_from_base64

    elr = boot.features().get("eligible.leader.replicas.version", 0) >= 1
    version = 2 if elr else 1  # v1 carries directories (metadata.version 3.7-IV2 and later)
    for t in topics:
        boot.add("TOPIC_RECORD", 0, {"name": t.name, "topic_id": t.topic_id})
        for p in t.partitions:
            boot.add("PARTITION_RECORD", version, {
                "partition_id": p.partition, "topic_id": t.topic_id, "replicas": [node_id], "isr": [node_id],
                "removing_replicas": [], "adding_replicas": [], "leader": node_id, "leader_recovery_state": 0,
                "leader_epoch": p.leader_epoch, "partition_epoch": 0,
                "directories": [uuid_from_base64(p.directory_id)],
                "eligible_leader_replicas": None, "last_known_elr": None})
        for k, v in sorted(t.overrides.items()):
            boot.add("CONFIG_RECORD", 0, {"resource_type": _TOPIC_RESOURCE, "resource_name": t.name,
                                          "name": k, "value": str(v)})
    if max_pid >= 0:
        # Kafka's controller hands out producer ids from here on: none collides with pylog's
        boot.add("PRODUCER_IDS_RECORD", 0, {"broker_id": node_id, "broker_epoch": -1,
                                            "next_producer_id": max_pid + 1})


def _place(p: _Partition, move: bool) -> None:
    p.target.mkdir(parents=True)
    for f in sorted(p.source.iterdir()):
        if f.is_file() and _KAFKA_FILES.match(f.name):
            (shutil.move if move else shutil.copy2)(str(f), str(p.target / f.name))
    if move:
        shutil.rmtree(p.source)


@click.command("export-to-kafka", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--kafka-config", "-c", required=True, type=click.Path(exists=True, dir_okay=False),
              help="The Kafka node's server.properties (node.id, process.roles, log.dirs, metadata.log.dir).")
@click.option("--topic", "-t", "topics", multiple=True, metavar="TOPIC",
              help="Export only this topic (repeatable); default every topic, __consumer_offsets included.")
@click.option("--move", is_flag=True,
              help="Move the files instead of copying them (same file system: instant; the pylog dir loses them).")
@click.option("--dry-run", "-n", is_flag=True, help="Check everything and print the plan; write nothing.")
@json_option
def export_to_kafka(sources, kafka_config, topics, move, dry_run, as_json):
    """Hand the topics of pylog log dir(s) SOURCES to a new Apache Kafka node.

    The node must be a combined broker,controller KRaft node (the common
    single-node setup) that has been formatted and never started:

    \b
      kafka-storage.sh format -t "$(kafka-storage.sh random-uuid)" -c server.properties
      pylog export-to-kafka ./pylog-data -c server.properties
      kafka-server-start.sh server.properties

    Every topic keeps its topic id, partitions, config overrides and records
    at their offsets (leader epochs, producer state and transaction indexes
    included); committed consumer-group offsets in __consumer_offsets move
    with it. The command adds the topics' KRaft metadata records to the
    node's bootstrap snapshot, copies (or --move's) the partition folders
    into its log dirs and writes the offset checkpoints there.

    The pylog log dirs must be shut down cleanly and not in use; pylog's own
    files (pylog-topics.json, pylog-producer-ids, .lock) stay behind.
    Exit status 0 on success, 1 when a dir is unusable, 2 on usage errors.
    """
    from pylog.commands.console import emit_json, out, plural
    from pylog.storage.checkpoint import write_offset_checkpoint
    from pylog.storage.kraft_bootstrap import BOOTSTRAP_CHECKPOINT, BOOTSTRAP_SNAPSHOT, read_bootstrap_checkpoint
    from pylog.storage.lock import DirLock

    t0 = time.perf_counter()
    _, log_dirs, metadata_dir, node_id = _kafka_dirs(kafka_config)
    src_dirs = [Path(s).resolve() for s in sources]
    overlap = set(src_dirs) & {d.resolve() for d in [*log_dirs, metadata_dir]}
    if overlap:
        raise UsageError(f"{overlap.pop()} is both a pylog source and a Kafka dir; export into new Kafka dirs")
    locks = [DirLock(s) for s in src_dirs]
    try:
        for lk in locks:
            lk.acquire()  # refuses while a pylog broker runs on the dir
        dir_ids = _check_fresh(log_dirs, metadata_dir, node_id)
        try:
            boot = read_bootstrap_checkpoint(metadata_dir)
        except FileNotFoundError:
            raise DataError(f"{metadata_dir}: no {BOOTSTRAP_CHECKPOINT} and no {BOOTSTRAP_SNAPSHOT}; "
                            f"format the node with kafka-storage.sh") from None
        if "TOPIC_RECORD" in boot.types():
            raise DataError(f"{boot.path} already holds topics (exported once already?)")
        exported, max_pid, checkpoints = _collect(src_dirs, set(topics) if topics else None)
        parts = [p for t in exported for p in t.partitions]
        for i, p in enumerate(parts):
            d = log_dirs[i % len(log_dirs)]
            p.target, p.directory_id = d / f"{p.topic}-{p.partition}", dir_ids[d]
            if p.target.exists():
                raise DataError(f"{p.target} already exists")
        _bootstrap_records(boot, exported, node_id, max_pid)
        if not dry_run:
            for p in parts:
                _place(p, move)
            for d in log_dirs:
                mine = {(p.topic, p.partition) for p in parts if p.target.parent == d}
                for name, entries in checkpoints.items():
                    write_offset_checkpoint(d / name, {k: v for k, v in entries.items() if k in mine})
            # the controller reads the metadata dir's copy; Kafka 4.3's format wrote the same file into each dir
            boot.write()
            for d in log_dirs:
                if boot.path.name == BOOTSTRAP_CHECKPOINT and (d / BOOTSTRAP_CHECKPOINT).exists():
                    boot.write(d / BOOTSTRAP_CHECKPOINT)
    finally:
        for lk in locks:
            lk.release()
    seconds = time.perf_counter() - t0
    summary = {
        "kafka_config": str(kafka_config), "node_id": node_id, "dry_run": dry_run, "moved": move and not dry_run,
        "metadata_dir": str(metadata_dir), "next_producer_id": max_pid + 1, "seconds": round(seconds, 3),
        "topics": [{"name": t.name, "topic_id": _b64(t.topic_id), "configs": t.overrides,
                    "partitions": [{"partition": p.partition, "log_end_offset": p.end_offset, "bytes": p.size,
                                    "leader_epoch": p.leader_epoch, "source": str(p.source),
                                    "target": str(p.target)} for p in t.partitions]} for t in exported],
    }
    if as_json:
        emit_json(summary)
        return
    verb = "would export" if dry_run else "exported"
    for t in exported:
        out.print(f"{t.name} (topic id {_b64(t.topic_id)}, {plural(len(t.partitions), 'partition')}"
                  + (", " + ", ".join(f"{k}={v}" for k, v in sorted(t.overrides.items())) if t.overrides else "") + ")")
        for p in t.partitions:
            out.print(f"  {p.partition}: offsets up to {p.end_offset}, {p.size:,} bytes -> {p.target}")
    out.print(f"{verb} {plural(len(exported), 'topic')}, {plural(len(parts), 'partition')} in {seconds:.2f} s; "
              f"bootstrap records in {metadata_dir / BOOTSTRAP_CHECKPOINT}"
              + ("" if dry_run else "; start the Kafka node to serve them"))


def _b64(topic_id) -> str:
    from pylog.storage.meta_properties import uuid_to_base64

    return uuid_to_base64(topic_id)

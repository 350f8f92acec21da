"""All partitions of a broker across its log dirs, and the periodic work on them.

Per log dir: a `.lock` (flock) against a second process, `meta.properties`,
the four offset checkpoints, the clean-shutdown marker, and `pylog-topics.json`
(topic ids, partition counts and config overrides: Kafka keeps those in KRaft
metadata, which a single pylog node does not have).
"""
from __future__ import annotations

import json
import logging
import shutil
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from pylog.core.config import TOPIC_CONFIGS, ConfigError, topic_defaults_from_broker
from pylog.core.errors import (
    DataError,
    InvalidConfigError,
    InvalidPartitionsError,
    KafkaStorageError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from pylog.storage.checkpoint import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
    atomic_write,
)
from pylog.storage import capacity
from pylog.storage.lock import DirLock
from pylog.storage.recovery_report import RecoveryReport, recovery_summary
from pylog.storage.layout import DELETE_DIR_SUFFIX, partition_dir_name, partition_dirs, user_partition_dir
from pylog.storage.log import Log
from pylog.storage.meta_properties import ensure_meta_properties, random_kafka_uuid
from pylog.storage.partition_metadata import read_partition_metadata, write_partition_metadata
from pylog.storage.topic_info import MAX_TOPIC_NAME, TopicInfo, validate_topic_name  # noqa: F401 - re-exported

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
TOPICS_FILE = "pylog-topics.json"


def clean_shutdown_marker(broker_epoch: int) -> str:
    """The content of `.kafka_cleanshutdown`: Kafka's CleanShutdownFileHandler JSON.
    Its presence is what marks a clean shutdown; Kafka reads the epoch for KIP-966."""
    return json.dumps({"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":"))


class LogManager:
    """Every partition log of the broker's log dirs: startup (locks, recovery after an unclean shutdown),
    topic creation and deletion, configs, retention, checkpoints and a clean shutdown that writes Kafka's
    .kafka_cleanshutdown."""
    def __init__(self, log_dirs: list[str], broker_config, *, clock: Callable[[], float] = time.time):
        if not log_dirs:
            raise DataError("no log dirs configured")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.broker_config = broker_config
        self._clock = clock
        self.lock = threading.RLock()
        self.topics: dict[str, TopicInfo] = {}
        self.logs: dict[tuple[str, int], Log] = {}
        self._locks: list[DirLock] = []
        self._executor: ThreadPoolExecutor | None = None
        self.started = False
        self._shut = False
        self.meta = {}
        # log dirs taken offline after an I/O failure, and their partitions (Kafka's offline replicas)
        self.offline_dirs: dict[Path, str] = {}
        self.offline_logs: dict[tuple[str, int], Path] = {}
        # written into .kafka_cleanshutdown as Kafka does (-1: no controller-assigned epoch)
        self.broker_epoch = -1

    # ---- helpers ----
    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _topic_defaults(self) -> dict:
        return topic_defaults_from_broker(self.broker_config)

    def resolve_config(self, overrides: dict[str, str]):
        try:
            return TOPIC_CONFIGS.resolve(overrides, base=self._topic_defaults())
        except ConfigError as e:
            raise InvalidConfigError(str(e)) from None

    def _background(self, fn: Callable[[], None]) -> None:
        if self._executor is None:
            fn()
            return

        def run():
            try:
                fn()
            except Exception:  # a flush failing in the background must not vanish silently
                log.exception("background flush failed")
        self._executor.submit(run)

    def _node_id(self) -> int:
        cfg = self.broker_config
        # broker.id is the legacy alias: it counts only when set and node.id is not
        if "broker.id" in getattr(cfg, "overridden", ()) and "node.id" not in getattr(cfg, "overridden", ()):
            return cfg["broker.id"]
        return cfg.get("node.id", 1)

    # ---- startup / shutdown ----
    def startup(self, *, start_cleaner: bool = True) -> "RecoveryReport":
        """Lock the log dirs, load (and recover) every partition; start the cleaner unless
        start_cleaner=False (the broker starts it itself, in its own start-up order)."""
        t0 = time.monotonic()
        warnings: list[str] = []
        loaded = recovered = 0
        cut: list[int] = []  # bytes dropped per partition whose recovery cut something
        with self.lock:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pylog-flush")
            cluster_id = self.broker_config.get("cluster.id")
            for d in self.log_dirs:
                d.mkdir(parents=True, exist_ok=True)
                lk = DirLock(d)
                try:
                    lk.acquire()
                except DataError:
                    self._release_locks()
                    raise
                self._locks.append(lk)
                meta = ensure_meta_properties(d, self._node_id(), cluster_id)
                cluster_id = cluster_id or meta.cluster_id
                self.meta[d] = meta
            capacity.raise_soft_limit()
            total = sum(len(partition_dirs(d)) for d in self.log_dirs if d.is_dir())
            capacity.check_start(total, self.log_dirs)
            registry = self.read_registry()
            for name, entry in registry.items():
                overrides = dict(entry.get("overrides", {}))
                self.topics[name] = TopicInfo(name, uuid.UUID(entry["topic_id"]), int(entry["partitions"]),
                                              self.resolve_config(overrides), overrides)
            with capacity.opening(total, self.log_dirs):  # out of descriptors part way: one line
                for d in self.log_dirs:
                    clean = (d / CLEAN_SHUTDOWN_FILE).exists()
                    rp = OffsetCheckpointFile(d / RECOVERY_POINT_CHECKPOINT)
                    ls = OffsetCheckpointFile(d / LOG_START_OFFSET_CHECKPOINT)
                    try:
                        recovery_points = rp.read()
                    except DataError as e:
                        warnings.append(f"{e}; recovering every partition of {d}")
                        recovery_points, clean = {}, False
                    try:
                        start_offsets = ls.read()
                    except DataError as e:
                        warnings.append(f"{e}; log start offsets of {d} taken from the segments")
                        start_offsets = {}
                    for p in partition_dirs(d):
                        if p.name.endswith(DELETE_DIR_SUFFIX):
                            # a deletion that did not finish: Kafka removes these folders too
                            shutil.rmtree(p, ignore_errors=True)
                            continue
                        # `-stray`/`-future` folders and KRaft's metadata log are Kafka's:
                        # never loaded as topics, never written
                        tp = user_partition_dir(p.name)
                        if tp is None:
                            continue
                        topic, part = tp
                        info = self.topics.get(topic)
                        try:
                            topic_id = read_partition_metadata(p)
                        except (FileNotFoundError, DataError):
                            topic_id = info.topic_id if info else None
                        if info is None:
                            # data without a registry entry: adopt it rather than hide it
                            info = TopicInfo(topic, topic_id or random_kafka_uuid(), 0, self.resolve_config({}), {})
                            self.topics[topic] = info
                            warnings.append(f"topic {topic} found in {d} without a registry entry; adopted")
                        info.num_partitions = max(info.num_partitions, part + 1)
                        lg = Log(p, info.config, topic=topic, partition=part, topic_id=info.topic_id,
                                 log_start_offset=start_offsets.get((topic, part), 0),
                                 recovery_point=recovery_points.get((topic, part), 0),
                                 had_clean_shutdown=clean,
                                 producer_id_expiration_ms=self.broker_config.get("producer.id.expiration.ms", 86400000),
                                 clock=self._clock, background=self._background)
                        if topic_id is None:
                            write_partition_metadata(p, info.topic_id)
                        self.logs[(topic, part)] = lg
                        loaded += 1
                        recovered += lg.recovered
                        warnings.extend(w for w in lg.warnings if w not in lg.recovery_notes)
                        if lg.recovery_notes:
                            cut.append(lg.recovery_dropped)
                    (d / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)
            # partitions in the registry with no folder (e.g. lost dir): recreate them empty
            for info in self.topics.values():
                for part in range(info.num_partitions):
                    if (info.name, part) not in self.logs:
                        self._create_log(info, part)
            self._write_registry()
            self.started = True
            self._shut = False
            if start_cleaner:
                self.start_cleaner()
        if recovered:
            warnings.append(recovery_summary(recovered, cut, time.monotonic() - t0))
        for w in warnings:
            log.warning(w)
        return RecoveryReport(len(self.topics), loaded, recovered, time.monotonic() - t0, warnings)

    def start_cleaner(self) -> None:
        """The log cleaner's background threads (log.cleaner.enable / .threads / .backoff.ms)."""
        self.cleaner = None
        cfg = self.broker_config
        if cfg.get("log.cleaner.enable", False) and cfg.get("log.cleaner.threads", 1) > 0:
            from pylog.storage.cleaner_manager import CleanerManager

            self.cleaner = CleanerManager(self.all_logs, cfg, clock=self._clock)
            self.cleaner.startup()

    def stop_cleaner(self) -> None:
        """Stop the cleaner threads (a cleaning in progress is cancelled); idempotent."""
        cleaner = getattr(self, "cleaner", None)
        if cleaner is not None:
            cleaner.shutdown()  # outside self.lock: a cleaning in progress may need all_logs()
            self.cleaner = None

    def shutdown(self) -> None:
        """Stop the cleaner, flush and snapshot every log, write the checkpoints and .kafka_cleanshutdown,
        release the locks. Idempotent."""
        self.stop_cleaner()
        with self.lock:
            if self._shut or not self.started:
                return
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None
            # Kafka closes the logs with num.recovery.threads.per.data.dir threads per dir: their fsyncs overlap
            threads = self.broker_config.get("num.recovery.threads.per.data.dir", 2) * max(1, len(self.log_dirs))
            logs = list(self.logs.values())
            with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="pylog-shutdown") as pool:
                list(pool.map(lambda lg: (lg.flush(), lg.take_snapshot()), logs))
                self.write_checkpoints()
                list(pool.map(lambda lg: lg.close(), logs))
            marker = clean_shutdown_marker(self.broker_epoch)
            for d in self.log_dirs:
                atomic_write(d / CLEAN_SHUTDOWN_FILE, marker)
            self._release_locks()
            self._shut = True
            self.started = False

    def take_dir_offline(self, log_dir, reason: str) -> list[tuple[str, int]]:
        """Kafka's handleLogDirFailure: stop using `log_dir` after an I/O error. Its logs are closed
        without a flush (the data may already be lost from the page cache), leave every periodic job
        and the shutdown, and their partitions are listed in offline_logs. Returns them."""
        d = Path(log_dir)
        with self.lock:
            if d in self.offline_dirs or d not in self.log_dirs:
                return []
            self.offline_dirs[d] = reason
            self.log_dirs = [x for x in self.log_dirs if x != d]
            gone = [key for key, lg in self.logs.items() if lg.dir.parent == d]
            for key in gone:
                lg = self.logs.pop(key)
                self.offline_logs[key] = d
                try:
                    with lg.lock:
                        for seg in lg.segments:
                            seg.close_handlers()
                        lg.closed = True
                except (OSError, ValueError):
                    pass
            for lk in [lk for lk in self._locks if lk.dir == d]:
                try:
                    lk.release()
                except OSError:
                    pass
                self._locks.remove(lk)
        return gone

    def abandon(self) -> None:
        """Release the locks with no flush, checkpoint or clean-shutdown marker (a broker that must
        stop after an I/O failure: the next start recovers every log)."""
        with self.lock:
            self._release_locks()
            self.started = False

    def _release_locks(self) -> None:
        for lk in self._locks:
            lk.release()
        self._locks = []

    # ---- registry ----
    def read_registry(self) -> dict:
        best: dict | None = None
        for d in self.log_dirs:
            p = d / TOPICS_FILE
            if not p.exists():
                continue
            try:
                data = json.loads(p.read_text())
            except ValueError as e:
                raise DataError(f"{p}: unreadable topic registry: {e}") from None
            if best is None or data.get("generation", 0) > best.get("generation", 0):
                best = data
        return (best or {}).get("topics", {})

    def _write_registry(self) -> None:
        self._generation = getattr(self, "_generation", 0) + 1
        data = {
            "version": 1,
            "generation": self._generation,
            "topics": {
                t.name: {"topic_id": str(t.topic_id), "partitions": t.num_partitions, "overrides": t.overrides}
                for t in sorted(self.topics.values(), key=lambda t: t.name)
            },
        }
        text = json.dumps(data, indent=1, sort_keys=True)
        for d in self.log_dirs:
            atomic_write(d / TOPICS_FILE, text)

    # ---- topics ----
    def _pick_dir(self) -> Path:
        if len(self.log_dirs) == 1:
            return self.log_dirs[0]
        counts = {d: 0 for d in self.log_dirs}
        for lg in self.logs.values():
            parent = lg.dir.parent
            if parent in counts:
                counts[parent] += 1
        return min(self.log_dirs, key=lambda d: (counts[d], self.log_dirs.index(d)))

    def _create_logs(self, info: TopicInfo, parts: range) -> None:
        """Create the partition logs of `parts`, or none of them: on a failure those made are removed."""
        capacity.check_room(len(parts), info.name)
        made = []
        try:
            for part in parts:
                made.append(self._create_log(info, part))
        except OSError as e:
            for lg in made:
                self.logs.pop((info.name, lg.partition), None)
                lg.close()
                shutil.rmtree(lg.dir, ignore_errors=True)
            raise KafkaStorageError(f"creating partitions of topic '{info.name}' failed, none was created: {e}") from e

    def _create_log(self, info: TopicInfo, part: int) -> Log:
        d = self._pick_dir()
        pdir = d / partition_dir_name(info.name, part)
        try:
            pdir.mkdir()
            new = True  # an empty dir: the log starts with nothing to load
        except FileExistsError:
            new = False
        write_partition_metadata(pdir, info.topic_id, fsync=False, new_dir=new)  # made durable by the log's first flush
        lg = Log(pdir, info.config, topic=info.name, partition=part, topic_id=info.topic_id,
                 producer_id_expiration_ms=self.broker_config.get("producer.id.expiration.ms", 86400000),
                 clock=self._clock, background=self._background, new=new)
        self.logs[(info.name, part)] = lg
        return lg

    def create_topic(self, name: str, num_partitions: int, configs: dict[str, str] | None = None,
                     topic_id: uuid.UUID | None = None) -> TopicInfo:
        """Create a topic with its partition logs; raises TopicAlreadyExistsError, InvalidPartitionsError,
        InvalidConfigError."""
        validate_topic_name(name)
        with self.lock:
            if name in self.topics:
                raise TopicAlreadyExistsError(f"topic '{name}' already exists")
            if num_partitions < 1:
                raise InvalidPartitionsError(f"number of partitions must be at least 1, got {num_partitions}")
            overrides = {k: str(v) for k, v in (configs or {}).items()}
            config = self.resolve_config(overrides)
            info = TopicInfo(name, topic_id or random_kafka_uuid(), num_partitions, config, overrides)
            self._create_logs(info, range(num_partitions))
            self.topics[name] = info
            self._write_registry()
            return info

    def delete_topic(self, name: str) -> None:
        """Delete a topic: each partition folder is renamed `-delete` first (as Kafka does) and then
        removed."""
        with self.lock:
            info = self.topics.pop(name, None)
            if info is None:
                raise UnknownTopicOrPartitionError(f"topic '{name}' does not exist")
            for part in range(info.num_partitions):
                lg = self.logs.pop((name, part), None)
                if lg is not None:
                    # Kafka renames to <dir>.<id>-delete first so a crash cannot resurrect it
                    target = lg.dir.with_name(f"{lg.dir.name}.{uuid.uuid4().hex}-delete")
                    with lg.lock:
                        lg.close()
                        lg.dir.rename(target)
                        lg.dir = target
                    shutil.rmtree(target, ignore_errors=True)
            self._write_registry()
            self.write_checkpoints()

    def create_partitions(self, name: str, new_total: int) -> TopicInfo:
        """Grow a topic to new_total partitions."""
        with self.lock:
            info = self.topics.get(name)
            if info is None:
                raise UnknownTopicOrPartitionError(f"topic '{name}' does not exist")
            if new_total <= info.num_partitions:
                raise InvalidPartitionsError(
                    f"topic currently has {info.num_partitions} partitions, {new_total} would not be an increase")
            self._create_logs(info, range(info.num_partitions, new_total))
            info.num_partitions = new_total
            self._write_registry()
            return info

    def alter_topic_config(self, name: str, configs: dict[str, str | None]) -> TopicInfo:
        """Set (or with None remove) topic config overrides and apply them to the topic's logs."""
        with self.lock:
            info = self.topics.get(name)
            if info is None:
                raise UnknownTopicOrPartitionError(f"topic '{name}' does not exist")
            overrides = dict(info.overrides)
            for k, v in configs.items():
                if k not in TOPIC_CONFIGS:
                    raise InvalidConfigError(f"unknown topic config {k!r}")
                if v is None:
                    overrides.pop(k, None)
                else:
                    overrides[k] = str(v)
            info.config = self.resolve_config(overrides)
            info.overrides = overrides
            for part in range(info.num_partitions):
                lg = self.logs.get((name, part))
                if lg is not None:
                    lg.update_config(info.config)
            self._write_registry()
            return info

    def refresh_topic_defaults(self) -> None:
        """The broker configs that set topic defaults changed (dynamic broker configs): every
        topic's config is resolved again; its own overrides still win."""
        with self.lock:
            for name, info in self.topics.items():
                info.config = self.resolve_config(info.overrides)
                for part in range(info.num_partitions):
                    lg = self.logs.get((name, part))
                    if lg is not None:
                        lg.update_config(info.config)

    def get_log(self, topic: str, partition: int) -> Log | None:
        """The log of a partition, or None."""
        return self.logs.get((topic, partition))

    def all_logs(self) -> list[Log]:
        """A snapshot of every partition log."""
        with self.lock:
            return list(self.logs.values())

    # ---- periodic work ----
    def run_retention(self, now_ms: int | None = None) -> int:
        """Retention on every log; returns the number of segments deleted."""
        n = 0
        for lg in self.all_logs():
            n += lg.run_retention(now_ms)
        return n

    def flush_dirty(self, now_ms: int | None = None) -> int:
        """flush.ms on every log; returns how many logs were flushed."""
        now = self._now_ms() if now_ms is None else now_ms
        return sum(lg.flush_if_due(now) for lg in self.all_logs())

    def delete_expired_files(self, now_ms: int | None = None) -> int:
        """Remove `.deleted` segments whose file.delete.delay.ms has passed."""
        return sum(lg.delete_expired_files(now_ms) for lg in self.all_logs())

    def write_checkpoints(self) -> None:
        """Write the recovery-point, log-start-offset and replication-offset checkpoints of every log dir."""
        with self.lock:
            for d in self.log_dirs:
                logs = [lg for lg in self.logs.values() if lg.dir.parent == d]
                OffsetCheckpointFile(d / RECOVERY_POINT_CHECKPOINT).write(
                    {(lg.topic, lg.partition): lg.recovery_point for lg in logs})
                OffsetCheckpointFile(d / LOG_START_OFFSET_CHECKPOINT).write(
                    {(lg.topic, lg.partition): lg.log_start_offset for lg in logs})
                OffsetCheckpointFile(d / REPLICATION_OFFSET_CHECKPOINT).write(
                    {(lg.topic, lg.partition): lg.high_watermark for lg in logs})
                cleaner = OffsetCheckpointFile(d / CLEANER_OFFSET_CHECKPOINT)
                try:
                    current = cleaner.read()
                except DataError:
                    current = {}
                # the cleaner owns its offsets; only entries of deleted partitions are dropped
                keep = {k: v for k, v in current.items() if k in self.logs}
                if keep != current or not cleaner.path.exists():
                    cleaner.write(keep)

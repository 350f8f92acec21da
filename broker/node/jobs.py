"""The broker's periodic storage jobs: what its scheduler runs, and how often."""
from __future__ import annotations

import time

DELETE_FILES_EVERY_MS = 10000  # Kafka's file.delete.delay.ms check: deleted segments go this often
FLUSH_CHECK_MAX_MS = 1000


def periodic_jobs(cfg, logs, dir_check=None) -> list:
    """[(name, every seconds, function)] for the scheduler: retention, checkpoints, deleted files,
    producer expiration, flushes, and `dir_check` ((every seconds, function): the log dirs' health)."""
    # flush_dirty honours each topic's flush.ms; a topic may get one later
    # through AlterConfigs, so check at least every second
    flush_every = min(cfg["log.flush.scheduler.interval.ms"], FLUSH_CHECK_MAX_MS)
    jobs = [
        ("retention", cfg["log.retention.check.interval.ms"], logs.run_retention),
        ("checkpoints", cfg["log.flush.offset.checkpoint.interval.ms"] or 60000, logs.write_checkpoints),
        ("delete-files", DELETE_FILES_EVERY_MS, logs.delete_expired_files),
        ("producer-expiration", cfg["producer.id.expiration.check.interval.ms"], lambda: expire_producers(logs)),
        ("flush", flush_every, logs.flush_dirty),
    ]
    if dir_check is not None:
        jobs.append(("log-dir-check", dir_check[0] * 1000, dir_check[1]))
    return [(name, every_ms / 1000.0, fn) for name, every_ms, fn in jobs]


def expire_producers(logs) -> None:
    """Kafka's broker forgets producers idle for producer.id.expiration.ms; their next write is
    then accepted at any sequence (KIP-360)."""
    now = int(time.time() * 1000)
    for lg in logs.all_logs():
        lg.producer_state.remove_expired(now)

"""Dead-letter topics of share groups (KIP-1191), as Kafka 4.4 writes them at share.version 2.

A share group with `errors.deadletterqueue.topic.name` set gets one record on that topic for
each record it archives because a consumer rejected it or because its delivery count reached
`share.delivery.count.limit`. The record carries Kafka's context headers (__dlq.errors.topic,
.partition, .offset, .group, .delivery.count, .message), the broker's time as its CreateTime,
and, with `errors.deadletterqueue.copy.record.enable`, the original key and value. It goes to
partition (source partition mod the DLQ topic's partitions). The topic must carry
`errors.deadletterqueue.group.enable=true`, start with the broker's
`errors.deadletterqueue.topic.name.prefix` and not with `__`; a missing one is created only
with `errors.deadletterqueue.auto.create.topics.enable`. When the write cannot be done the
records are archived all the same, as on Kafka, and the reason is logged.
"""
from __future__ import annotations

import logging

from pylog.broker.groups.store import now_ms
from pylog.core.records import BatchBuilder
from pylog.core.records.batch import RecordBatch
from pylog.core.records.header import iter_headers

log = logging.getLogger("pylog.broker.share")

_READ_BYTES = 1 << 20


class DeadLetterError(Exception):
    """The group's dead-letter topic cannot take records (Kafka's message)."""


class DeadLetters:
    """Writes the dead letters share-partitions collected (SharePartition.dead)."""

    def __init__(self, coordinator):
        self.sc = coordinator
        self.partitions = coordinator.partitions
        self.written = 0
        self.failed = 0

    def drain(self, parts) -> None:
        """Write (or drop, when the group has no dead-letter topic) every dead letter of `parts`."""
        for sp in parts:
            if not sp.dead:
                continue
            dead, sp.dead = sp.dead, []
            if not self.sc.configs.value(sp.group_id, "errors.deadletterqueue.topic.name"):
                continue
            try:
                self._write(sp, dead)
            except Exception as e:  # noqa: BLE001 - archived regardless, as Kafka does
                self.failed += len(dead)
                log.warning("share group %s: %d records archived without a dead letter: %s", sp.group_id,
                            len(dead), e)

    def topic(self, gid: str) -> str:
        """The group's dead-letter topic, created when allowed; raises DeadLetterError."""
        name = self.sc.configs.value(gid, "errors.deadletterqueue.topic.name")
        cfg = self.partitions.config
        prefix = cfg["errors.deadletterqueue.topic.name.prefix"]
        if name.startswith("__"):
            raise DeadLetterError(f"Configured DLQ topic name in share group: {gid} cannot start with __, "
                                  f"topic: {name}.")
        if prefix and not name.startswith(prefix):
            raise DeadLetterError(f"Configured DLQ topic name does not comply with the DLQ topic prefix in share "
                                  f"group: {gid}, topic: {name}, prefix: {prefix}.")
        logs = self.partitions.logs
        info = logs.topics.get(name)
        if info is None:
            if not cfg["errors.deadletterqueue.auto.create.topics.enable"]:
                raise DeadLetterError(f"DLQ topic does not exist and auto create is disabled on cluster for share "
                                      f"group: {gid}, topic: {name}.")
            logs.create_topic(name, cfg["num.partitions"], {"errors.deadletterqueue.group.enable": "true",
                                                            "message.timestamp.type": "CreateTime"})
            log.info("created dead-letter topic %s for share group %s", name, gid)
            return name
        if not _enabled(info):
            raise DeadLetterError(f"DLQ is not enabled on configured DLQ topic for share group: {gid}, topic: {name}.")
        return name

    def _write(self, sp, dead: list) -> None:
        name = self.topic(sp.group_id)
        n = self.partitions.logs.topics[name].num_partitions
        p = sp.partition % n
        plog = self.partitions.logs.get_log(name, p)
        if plog is None:
            raise DeadLetterError(f"DLQ topic partition leader node for share group {sp.group_id} with DLQ topic "
                                  f"{name} and partition {p} could not be found.")
        copy = str(self.sc.configs.value(sp.group_id, "errors.deadletterqueue.copy.record.enable")).lower() == "true"
        originals = self._originals(sp, [off for off, _, _ in dead]) if copy else {}
        now = now_ms()
        b = BatchBuilder()
        for off, count, why in dead:
            key, value = originals.get(off, (None, None))
            b.append(now, key, value, (
                ("__dlq.errors.topic", sp.topic.encode()), ("__dlq.errors.partition", str(sp.partition).encode()),
                ("__dlq.errors.offset", str(off).encode()), ("__dlq.errors.group", sp.group_id.encode()),
                ("__dlq.errors.delivery.count", str(count).encode()), ("__dlq.errors.message", why.encode())))
        plog.append_as_leader(bytearray(b.build()), self.partitions.leader_epoch(plog), now_ms=now)
        self.written += len(dead)
        self.partitions.wake(name, p)

    def _originals(self, sp, offsets: list) -> dict:
        """{offset: (key, value)} of the records at `offsets` still in the source log."""
        plog = self.partitions.logs.get_log(sp.topic, sp.partition)
        out: dict = {}
        if plog is None:
            return out
        want = set(offsets)
        offset, last = min(offsets), max(offsets)
        while offset <= last:
            sl = plog.read(offset, _READ_BYTES)
            if not sl.length:
                break
            data = memoryview(sl.read_bytes())
            moved = offset
            for pos, h in iter_headers(data, verify_crc=False):
                if not h.is_control:
                    for r in RecordBatch(data, pos).records():
                        if r.offset in want:
                            out[r.offset] = (None if r.key is None else bytes(r.key),
                                             None if r.value is None else bytes(r.value))
                moved = h.last_offset + 1
            if moved == offset:
                break
            offset = moved
        return out


def _enabled(info) -> bool:
    cfg = info.config
    v = cfg.get("errors.deadletterqueue.group.enable", False) if isinstance(cfg, dict) else \
        getattr(cfg, "errors.deadletterqueue.group.enable", False)
    return v is True or str(v).lower() == "true"

"""The registry's store: pylog's own Kafka client on the `_schemas` topic.

One reader thread consumes the topic's single partition from the start and
applies every record to a RegistryState (a Condition tells writers how far it
got). A write produces with acks=all and waits until the reader has applied its
own offset, so what a registry answers after a write is what the log says, the
same on every registry reading the topic. The topic is created compacted with
one partition when it is missing, as Confluent's registry does.
"""
from __future__ import annotations

import logging
import threading
import time

from pylog.registry.records import noop_key
from pylog.registry.state import RegistryState

log = logging.getLogger("pylog.schema_registry")

DEFAULT_TOPIC = "_schemas"


class StoreError(Exception):
    """The store could not be read or written (the registry answers 50001/50002)."""

    def __init__(self, message: str, timeout: bool = False):
        super().__init__(message)
        self.timeout = timeout


class KafkaStore:
    def __init__(self, client_props: dict, topic: str = DEFAULT_TOPIC, timeout_s: float = 30.0,
                 replication_factor: int = -1, state=None):
        self.props = dict(client_props)
        self.topic = topic
        self.timeout_s = timeout_s
        self.replication_factor = replication_factor
        self.state = RegistryState() if state is None else state  # anything with apply() and `applied`
        self.cond = threading.Condition()
        self._producer = None
        self._consumer = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.failure: str | None = None

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Create the topic if needed, read it to its end, then keep following it."""
        from pylog.core.client import Consumer, Producer, TopicPartition

        self._ensure_topic()
        self._producer = Producer({**self.props, "acks": "all", "linger.ms": "0",
                                   "enable.idempotence": "true", "max.block.ms": str(int(self.timeout_s * 1000))})
        self._consumer = Consumer({**self.props, "auto.offset.reset": "earliest", "enable.auto.commit": "false",
                                   "fetch.max.wait.ms": "100"})
        self._consumer.assign([TopicPartition(self.topic, 0)])
        self._consumer.seek_to_beginning()
        end = self._consumer.end_offsets([TopicPartition(self.topic, 0)])[TopicPartition(self.topic, 0)]
        self._thread = threading.Thread(target=self._follow, name="pylog-schema-store", daemon=True)
        self._thread.start()
        self.wait_applied(end - 1)

    def _ensure_topic(self) -> None:
        from pylog.core.client import Admin
        from pylog.core.errors import TopicAlreadyExistsError

        with Admin(self.props) as admin:
            try:
                admin.describe_topic(self.topic)
                return
            except Exception:  # noqa: BLE001 - missing: create it below
                pass
            try:
                admin.create_topic(self.topic, partitions=1, replication_factor=self.replication_factor,
                                   configs={"cleanup.policy": "compact"})
            except TopicAlreadyExistsError:
                pass
            deadline = time.monotonic() + self.timeout_s
            while True:
                try:
                    admin.describe_topic(self.topic)
                    return
                except Exception:  # noqa: BLE001 - metadata not there yet
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        for c in (self._producer, self._consumer):
            if c is not None:
                try:
                    c.close()
                except Exception as e:  # noqa: BLE001 - closing anyway
                    log.debug("closing the store's client: %s", e)

    # ---------------------------------------------------------------- reading
    def _follow(self) -> None:
        while not self._stop.is_set():
            try:
                got = self._consumer.poll(200)
            except Exception as e:  # noqa: BLE001 - the cluster went away: keep trying
                log.warning("reading %s: %s", self.topic, e)
                self.failure = str(e)
                self._stop.wait(0.5)
                continue
            self.failure = None
            if not got:
                continue
            with self.cond:
                for records in got.values():
                    for r in records:
                        self.state.apply(r.offset, r.key, r.value)
                self.cond.notify_all()

    def wait_applied(self, offset: int, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (self.timeout_s if timeout is None else timeout)
        with self.cond:
            while self.state.applied < offset:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise StoreError(f"the registry's store ({self.topic}) did not catch up to offset {offset}",
                                     timeout=True)
                self.cond.wait(min(left, 0.5))

    def sync(self) -> None:
        """Read up to a NOOP written now: every write that came before is then applied."""
        self.write(noop_key(), None)

    # ---------------------------------------------------------------- writing
    def write(self, key: bytes, value: bytes | None) -> int:
        """Produce one record and wait until it is applied; returns its offset."""
        try:
            md = self._producer.send(self.topic, value, key=key, partition=0).get(self.timeout_s)
        except Exception as e:  # noqa: BLE001 - any client failure is the store's error
            raise StoreError(f"could not write to {self.topic}: {e}",
                             timeout="timed out" in str(e).lower() or "timeout" in type(e).__name__.lower()) from None
        self.wait_applied(md.offset)
        return md.offset

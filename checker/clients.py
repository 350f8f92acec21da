"""What every workload shares: client properties, unique values, and the worker thread that
runs one client as one history process at a time (a client that fails is replaced by a new
one under a new process name, so each process's reads are one consumer's reads)."""
from __future__ import annotations

import itertools
import logging
import threading
import time

from pylog.checker.history import FAIL, INFO, OK, HistoryWriter, key_of

log = logging.getLogger("pylog.checker")

PRODUCER = {"acks": "all", "enable.idempotence": "true", "linger.ms": "2", "request.timeout.ms": "5000",
            "delivery.timeout.ms": "15000", "max.block.ms": "10000", "retry.backoff.ms": "100"}
CONSUMER = {"auto.offset.reset": "earliest", "enable.auto.commit": "false", "isolation.level": "read_committed",
            "request.timeout.ms": "5000", "max.poll.records": "200", "session.timeout.ms": "10000",
            "heartbeat.interval.ms": "1000", "default.api.timeout.ms": "10000"}
WAIT = 15.0  # seconds an operation may take before it is given up as indeterminate


class Values:
    """Unique integers for a run, from many threads."""

    def __init__(self):
        self._next = itertools.count(1)

    def take(self, n: int = 1) -> list[int]:
        return [next(self._next) for _ in range(n)]


def props(base: dict, bootstrap: str, extra: dict, **more) -> dict:
    """A client's properties: its workload's, then the -X properties its kind of client knows
    (a producer property given for the run does not reach the consumers), then `more`."""
    from pylog.core.config import CONSUMER_CONFIGS, PRODUCER_CONFIGS
    known = PRODUCER_CONFIGS if base is PRODUCER else CONSUMER_CONFIGS
    out = dict(base)
    out.update({k: v for k, v in extra.items() if k in known})
    out["bootstrap.servers"] = bootstrap
    out.update({k: str(v) for k, v in more.items()})
    return out


def value_of(raw) -> int | None:
    try:
        return int(raw)
    except (TypeError, ValueError):
        return None


def polled(records: dict) -> dict:
    """A consumer poll's {TopicPartition: [Record]} as {KEY: [[offset, value]]}."""
    return {key_of(tp.topic, tp.partition): [[r.offset, value_of(r.value)] for r in recs]
            for tp, recs in records.items() if recs}


class Worker(threading.Thread):
    """One workload client in a thread. Subclasses define `open()`, `step()` and `close()`; an
    exception from `step()` closes the client and opens a new one as a new process."""

    role = "client"
    reads = False  # a reader keeps going while the run drains

    def __init__(self, run, n: int):
        super().__init__(name=f"check-{self.role}-{n}", daemon=True)
        self.run_ = run
        self.history: HistoryWriter = run.history
        self.n, self.generation = n, 0
        self.stop_event = threading.Event()
        self.idle_since = time.monotonic()
        self.failures = 0
        self.reasons: list[str] = []  # the first few client failures, for the results

    @property
    def process(self) -> str:
        return f"{self.role}-{self.n}.{self.generation}"

    def run(self) -> None:
        client_open = False
        while not self.stop_event.is_set():
            try:
                if not client_open:
                    self.open()
                    client_open = True
                self.step()
            except Exception as e:  # noqa: BLE001 - any client failure: a new client, a new process
                self.failures += 1
                if len(self.reasons) < 5:
                    self.reasons.append(f"{self.process}: {type(e).__name__}: {' '.join(str(e).split())[:200]}")
                log.info("%s: %s: %s", self.process, type(e).__name__, e)
                self.abandon()
                client_open = False
                self.generation += 1
                self.stop_event.wait(0.5)
        if client_open:
            self.abandon()

    def abandon(self) -> None:
        try:
            self.close()
        except Exception as e:  # noqa: BLE001 - a broken client may fail to close; it is dropped
            log.info("%s: close: %s", self.process, e)

    def open(self) -> None:
        raise NotImplementedError

    def step(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def saw(self, n: int) -> None:
        if n:
            self.idle_since = time.monotonic()

    def subscribe(self, consumer, topic: str, group: str) -> None:
        """Subscribe `consumer` to `topic`; every assignment, revocation and loss of its group's
        partitions goes into the history as a "rebalance" event."""
        from pylog.core.client.membership import attach_group

        def rebalanced(assigned: bool):
            def note(partitions):
                keys = [key_of(tp.topic, tp.partition) for tp in partitions]
                self.history.event(self.process, "rebalance", {"group": group, "assigned": keys if assigned else [],
                                                               "revoked": [] if assigned else keys})
            return note
        attach_group(consumer, on_assign=rebalanced(True), on_revoke=rebalanced(False), on_lost=rebalanced(False))
        consumer.subscribe([topic])


def send_values(history, process, producer, topic, partition, values, txn=False):
    """Send `values` to one partition and wait: the send micro-operations with their offsets, and
    whether every one was acknowledged."""
    key = key_of(topic, partition)
    futures = [producer.send(topic, str(v).encode(), partition=partition) for v in values]
    mops, ok = [], True
    for v, fut in zip(values, futures):
        try:
            offset = fut.get(WAIT).offset
        except Exception:  # noqa: BLE001 - not acknowledged: may or may not be in the log
            offset, ok = None, False
        mops.append(["send", key, v, offset])
    return mops, ok


def invoke_sends(topic, partition, values) -> list:
    key = key_of(topic, partition)
    return [["send", key, v, None] for v in values]


__all__ = ["CONSUMER", "FAIL", "INFO", "OK", "PRODUCER", "Values", "Worker", "invoke_sends", "polled", "props",
           "send_values", "value_of"]

"""The queue and txn workloads: Jepsen's list-append over partitions, and consume-transform-produce.

queue: plain (idempotent) sends of 1-3 unique values to one partition, transactional sends
(one in ten aborted on purpose), and read_committed consumers that assign themselves every
partition and now and then seek back to the beginning.
txn: a plain producer feeds an input topic; group members read it and, per input partition
and poll, send one output value per input value (its negation, so a record processed twice
shows as a duplicate) and commit their input offsets in the same transaction (one in twenty
aborted on purpose, after which the member seeks back); a consumer reads the output.
Each transaction writes one partition: Kafka orders partitions independently, so two
transactions writing the same two partitions may interleave differently in each, which
Elle would name G0 though Kafka never promised otherwise.
"""
from __future__ import annotations

import random

from pylog.checker.clients import (CONSUMER, FAIL, INFO, OK, PRODUCER, Worker, invoke_sends, polled, props,
                                   send_values)
from pylog.checker.history import key_of


class Writer(Worker):
    """Plain sends of 1-3 values to a random partition of `topic`."""
    role = "writer"

    def __init__(self, run, n, topic, partitions, role=None):
        super().__init__(run, n)
        self.role = role or self.role
        self.topic, self.partitions = topic, partitions
        self.producer = None
        self.rng = random.Random(n)

    def open(self):
        from pylog.core.client import Producer
        self.producer = Producer(props(PRODUCER, self.run_.bootstrap, self.run_.client_props))

    def step(self):
        values = self.run_.values.take(self.rng.randint(1, 3))
        p = self.rng.randrange(self.partitions)
        self.history.invoke(self.process, "send", invoke_sends(self.topic, p, values))
        mops, ok = send_values(self.history, self.process, self.producer, self.topic, p, values)
        self.history.complete(self.process, OK if ok else INFO, mops)
        self.run_.pace()
        if not ok:
            raise RuntimeError("a send was not acknowledged")

    def close(self):
        if self.producer is not None:
            self.producer.close(5)


class TxnWriter(Writer):
    """Transactions of 1-3 values to one partition; one in ten aborted on purpose."""
    role = "txn-writer"

    def open(self):
        from pylog.core.client import Producer
        tid = f"{self.run_.prefix}-{self.role}-{self.n}"
        self.producer = Producer(props(PRODUCER, self.run_.bootstrap, self.run_.client_props,
                                       **{"transactional.id": tid, "transaction.timeout.ms": 20000}))
        self.producer.init_transactions(15)

    def step(self):
        values = self.run_.values.take(self.rng.randint(1, 3))
        p = self.rng.randrange(self.partitions)
        self.history.invoke(self.process, "txn", invoke_sends(self.topic, p, values))
        mops = invoke_sends(self.topic, p, values)
        try:
            self.producer.begin_transaction()
            mops, ok = send_values(self.history, self.process, self.producer, self.topic, p, values, txn=True)
            if not ok:
                raise RuntimeError("a transactional send was not acknowledged")
            if self.rng.random() < 0.1:
                self.producer.abort_transaction(15)
                self.history.complete(self.process, FAIL, mops)
            else:
                at = self.history.now()
                self.producer.commit_transaction(15)
                self.history.complete(self.process, OK, mops, commit_at=at)
        except Exception:
            self.history.complete(self.process, INFO, mops)
            raise
        self.run_.pace()


class Reader(Worker):
    """A read_committed consumer of every partition of `topic` (assigned, no group)."""
    role = "reader"
    reads = True

    def __init__(self, run, n, topic, partitions, role=None):
        super().__init__(run, n)
        self.role = role or self.role
        self.topic, self.partitions = topic, partitions
        self.consumer = None
        self.rng = random.Random(100 + n)

    def open(self):
        from pylog.core.client import Consumer
        self.consumer = Consumer(props(CONSUMER, self.run_.bootstrap, self.run_.client_props))
        self.assign()

    def assign(self):
        keys = [key_of(self.topic, p) for p in range(self.partitions)]
        self.history.invoke(self.process, "assign", keys)
        self.consumer.assign([(self.topic, p) for p in range(self.partitions)])
        self.consumer.seek_to_beginning()
        self.history.complete(self.process, OK, keys)

    def step(self):
        if self.rng.random() < 0.01 and not self.run_.draining:
            self.assign()
        self.history.invoke(self.process, "poll", [["poll"]])
        try:
            got = polled(self.consumer.poll(300))
        except Exception:
            self.history.complete(self.process, FAIL)
            raise
        self.history.complete(self.process, OK, [["poll", got]])
        self.saw(len(got))

    def close(self):
        if self.consumer is not None:
            self.consumer.close()


class Transformer(Worker):
    """Consume-transform-produce in transactions with the consumer's offsets (exactly once)."""
    role = "transformer"
    reads = True

    def __init__(self, run, n, source, target, partitions, group):
        super().__init__(run, n)
        self.source, self.target, self.partitions, self.group = source, target, partitions, group
        self.consumer = self.producer = None
        self.rng = random.Random(200 + n)

    def open(self):
        from pylog.core.client import Consumer, Producer
        tid = f"{self.run_.prefix}-{self.role}-{self.n}"
        self.producer = Producer(props(PRODUCER, self.run_.bootstrap, self.run_.client_props,
                                       **{"transactional.id": tid, "transaction.timeout.ms": 20000}))
        self.producer.init_transactions(15)
        self.consumer = Consumer(props(CONSUMER, self.run_.bootstrap, self.run_.client_props,
                                       **{"group.id": self.group}))
        self.subscribe(self.consumer, self.source, self.group)

    def step(self):
        for key, pairs in polled(self.consumer.poll(300)).items():
            self.saw(len(pairs))
            self.transform(key, pairs)

    def transform(self, key, pairs):
        _topic, partition = key.rsplit("/", 1)
        out_p = int(partition) % self.partitions
        outs = [-v for _o, v in pairs]
        mops = [["poll", {key: pairs}], *invoke_sends(self.target, out_p, outs)]
        self.history.invoke(self.process, "txn", mops)
        offsets = {key: pairs[-1][0] + 1}
        try:
            self.producer.begin_transaction()
            sends, ok = send_values(self.history, self.process, self.producer, self.target, out_p, outs, txn=True)
            mops = [mops[0], *sends]
            if not ok:
                raise RuntimeError("a transactional send was not acknowledged")
            self.producer.send_offsets_to_transaction({(self.source, int(partition)): offsets[key]},
                                                      self.consumer.group_metadata(), 15)
            if self.rng.random() < 0.05:
                self.producer.abort_transaction(15)
                self.history.complete(self.process, FAIL, mops, group=self.group, offsets=offsets)
                self.history.invoke(self.process, "assign", [key])
                self.consumer.seek((self.source, int(partition)), pairs[0][0])
                self.history.complete(self.process, OK, [key], seek=pairs[0][0])
                return
            at = self.history.now()
            self.producer.commit_transaction(15)
            self.history.complete(self.process, OK, mops, commit_at=at, group=self.group, offsets=offsets)
        except Exception:
            self.history.complete(self.process, INFO, mops, group=self.group, offsets=offsets)
            raise

    def close(self):
        for c in (self.consumer, self.producer):
            if c is not None:
                c.close()

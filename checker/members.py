"""The groups and share workloads.

groups: members of one consumer group, half with the classic protocol and half with the
consumer protocol (KIP-848), subscribe to a topic a plain producer feeds, poll, and commit what
they read; now and then a member leaves (closes) or crashes (is dropped before committing its
last poll) and a new member joins in its place.
share: members of one share group (KIP-932) poll, accept nine records in ten and release the
tenth, and acknowledge; the producer starts once every member has polled, so the share
partitions start at the first record.
"""
from __future__ import annotations

import random

from pylog.checker.clients import CONSUMER, INFO, OK, Worker, polled, props, value_of
from pylog.checker.history import key_of


class Member(Worker):
    role = "member"
    reads = True

    def __init__(self, run, n, topic, group):
        super().__init__(run, n)
        self.topic, self.group = topic, group
        self.consumer = None
        self.rng = random.Random(300 + n)

    def open(self):
        from pylog.core.client import Consumer
        protocol = "consumer" if self.n % 2 == 0 else "classic"
        self.consumer = Consumer(props(CONSUMER, self.run_.bootstrap, self.run_.client_props,
                                       **{"group.id": self.group, "group.protocol": protocol}))
        self.subscribe(self.consumer, self.topic, self.group)

    def step(self):
        self.history.invoke(self.process, "poll", [["poll"]])
        try:
            got = polled(self.consumer.poll(300))
        except Exception:
            self.history.complete(self.process, "fail")
            raise
        self.history.complete(self.process, OK, [["poll", got]])
        self.saw(len(got))
        churn = not self.run_.draining and self.rng.random() < 0.01
        if churn and self.rng.random() < 0.5:
            self.replace()  # crashed: its last poll never committed
            return
        if got:
            self.commit(got)
        if churn:
            self.replace()  # left the group after committing

    def commit(self, got):
        offsets = {key: pairs[-1][0] + 1 for key, pairs in got.items()}
        value = {"group": self.group, "offsets": offsets}
        self.history.invoke(self.process, "commit", value)
        try:
            self.consumer.commit({_tp(key): (o, -1, "") for key, o in offsets.items()})
        except Exception:  # noqa: BLE001 - a commit refused or timed out may still have been written
            self.history.complete(self.process, INFO, value)
            return
        self.history.complete(self.process, OK, value)

    def replace(self):
        self.abandon()
        self.generation += 1
        self.open()

    def close(self):
        if self.consumer is not None:
            self.consumer.close()


def _tp(key):
    from pylog.core.client import TopicPartition
    topic, _, p = key.rpartition("/")
    return TopicPartition(topic, int(p))


class ShareMember(Worker):
    role = "sharer"
    reads = True

    def __init__(self, run, n, topic, group):
        super().__init__(run, n)
        self.topic, self.group = topic, group
        self.consumer = None
        self.rng = random.Random(400 + n)
        self.polls = 0

    def open(self):
        from pylog.core.client.share_consumer import ShareConsumer
        self.consumer = ShareConsumer(props(CONSUMER, self.run_.bootstrap, self.run_.client_props,
                                            **{"group.id": self.group, "share.acknowledgement.mode": "explicit"}))
        self.consumer.subscribe([self.topic])

    def step(self):
        from pylog.core.client.share_consumer import ACCEPT, RELEASE
        self.history.invoke(self.process, "share-poll", {"group": self.group})
        try:
            recs = self.consumer.poll(0.3)
        except Exception:
            self.history.complete(self.process, "fail")
            raise
        got: dict = {}
        for r in recs:
            got.setdefault(key_of(r.topic, r.partition), []).append([r.offset, value_of(r.value), r.delivery_count])
        self.history.complete(self.process, OK, {"group": self.group, "records": got})
        self.polls += 1
        self.saw(len(recs))
        if not recs:
            self.stop_event.wait(0.1)  # an empty share fetch may answer at once
            return
        acks = {"accept": {}, "release": {}}
        for r in recs:
            how = "release" if self.rng.random() < 0.1 and not self.run_.draining else "accept"
            acks[how].setdefault(key_of(r.topic, r.partition), []).append(r.offset)
            self.consumer.acknowledge(r, RELEASE if how == "release" else ACCEPT)
        value = {"group": self.group, **acks}
        self.history.invoke(self.process, "share-ack", value)
        try:
            errors = self.consumer.commit_sync(15)
        except Exception:
            self.history.complete(self.process, INFO, value)
            raise
        failed = sorted(key_of(tp.topic, tp.partition) for tp, e in errors.items() if e is not None)
        self.history.complete(self.process, OK, dict(value, failed=failed))

    def close(self):
        if self.consumer is not None:
            self.consumer.close()

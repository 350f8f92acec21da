"""Share group members driven with raw ShareGroupHeartbeat requests (and ShareGroupDescribe), the
same way on pylog and on Apache Kafka: for tests of epochs and membership."""
from __future__ import annotations

import time
import uuid

from support.broker_fixtures import call

NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS = 16, 14


def connect(bootstrap: str):
    import socket  # noqa: PLC0415

    host, port = bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=30)


class Member:
    """One share group member: heartbeats with its epoch, remembers how many partitions it holds."""

    def __init__(self, s, group, topics):
        self.s, self.group, self.topics = s, group, topics
        self.id, self.epoch, self.parts = uuid.uuid4().hex, 0, None

    def heartbeat(self, leave=False):
        body = {"group_id": self.group, "member_id": self.id, "member_epoch": -1 if leave else self.epoch,
                "rack_id": None, "subscribed_topic_names": self.topics if self.epoch == 0 else None}
        deadline = time.monotonic() + 60
        while True:
            r = call(self.s, 76, 1, body)
            if r["error_code"] not in (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) or time.monotonic() > deadline:
                break
            # Kafka creates __consumer_offsets on the first FindCoordinator
            call(self.s, 10, 4, {"key_type": 0, "coordinator_keys": [self.group]})
            time.sleep(0.5)
        assert r["error_code"] == 0, r
        self.epoch = r["member_epoch"]
        if r["assignment"] is not None:
            self.parts = sum(len(t["partitions"]) for t in r["assignment"]["topic_partitions"])
        return r

    def until(self, parts, wait=60.0):
        """Heartbeat until the member holds `parts` partitions and its epoch is the group's target."""
        deadline = time.monotonic() + wait
        while True:
            self.heartbeat()
            d = describe(self.s, self.group)
            if self.parts == parts and d[1] == self.epoch or time.monotonic() > deadline:
                return d
            time.sleep(0.3)


def two_sharing(s, group: str, topics: list) -> tuple:
    """Members a and b of `group` on `topics` (two partitions), a joined first: past the rebalance
    that leaves each with one partition. (a, b, a's answer with its one partition)."""
    a, b = Member(s, group, topics), Member(s, group, topics)
    a.heartbeat()
    a.until(2)
    b.heartbeat()
    b.until(1)
    return a, b, a.until(1)


def describe(s, group, wait: float = 60.0):
    """(state, group epoch, assignment epoch, sorted member epochs); waits out a loading coordinator."""
    deadline = time.monotonic() + wait
    while True:
        g = call(s, 77, 1, {"group_ids": [group], "include_authorized_operations": False})["groups"][0]
        if g["error_code"] not in (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    return g["group_state"], g["group_epoch"], g["assignment_epoch"], sorted(m["member_epoch"] for m in g["members"])

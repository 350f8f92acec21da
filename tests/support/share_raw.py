"""Share-partition requests sent raw (ShareGroupHeartbeat, ShareFetch, ShareAcknowledge,
DescribeShareGroupOffsets), the same bytes to pylog and to Apache Kafka 4.4: for tests that compare
the record state machine answer by answer.

`setup` makes a topic whose records are in batches of known sizes and a share group reading it from
the earliest offset with the given group configs; `Session` is one member with its share session on
one connection; answers are reduced to what both brokers must agree on (error codes, acquired
ranges with delivery counts), never the record bytes' framing.
"""
from __future__ import annotations

import socket
import time
import uuid

from confluent_kafka import Producer

from support import share_scenarios as sc
from support.broker_fixtures import build_batch, call

ACCEPT_TYPES = {"gap": 0, "accept": 1, "release": 2, "reject": 3, "renew": 4}
RETRY = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=60)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def topic_id(s, topic: str):
    deadline = time.monotonic() + 60
    while True:
        md = call(s, 3, 12, {"topics": [{"name": topic, "topic_id": None}], "allow_auto_topic_creation": False,
                             "include_topic_authorized_operations": False})["topics"][0]
        if md["error_code"] == 0 and md["partitions"] and all(p["leader_id"] >= 0 for p in md["partitions"]):
            return md["topic_id"]
        assert time.monotonic() < deadline, md
        time.sleep(0.1)


def produce_batches(s, topic: str, sizes, partition: int = 0) -> None:
    """One Produce per batch size: batches of exactly those record counts, in order."""
    for n in sizes:
        recs = [(None, b"r%d" % i, None) for i in range(n)]
        deadline = time.monotonic() + 60
        while True:
            r = call(s, 0, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": bytes(build_batch(recs))}]}]})
            code = r["responses"][0]["partition_responses"][0]["error_code"]
            if code == 0:
                break
            assert time.monotonic() < deadline, r
            time.sleep(0.1)


def produce_aborted(bootstrap: str, topic: str, n: int, commit_after: int = 0) -> None:
    """`n` records in a transaction that aborts, then `commit_after` records in one that commits."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": sc.name("txn"), "linger.ms": 0})
    p.init_transactions(60)
    p.begin_transaction()
    for i in range(n):
        p.produce(topic, value=b"a%d" % i, partition=0)
    p.flush(60)
    p.abort_transaction(60)
    if commit_after:
        p.begin_transaction()
        for i in range(commit_after):
            p.produce(topic, value=b"c%d" % i, partition=0)
        p.commit_transaction(60)


def wait_stable(s, topic: str, partition: int = 0, wait: float = 60.0) -> None:
    """Until the last stable offset reaches the high watermark (the transaction markers written)."""
    deadline = time.monotonic() + wait

    def latest(isolation: int) -> int:
        r = call(s, 2, 7, {"replica_id": -1, "isolation_level": isolation, "topics": [
            {"name": topic, "partitions": [{"partition_index": partition, "current_leader_epoch": -1,
                                            "timestamp": -1}]}]})
        return r["topics"][0]["partitions"][0]["offset"]
    while latest(1) < latest(0):
        assert time.monotonic() < deadline, "the last stable offset did not reach the high watermark"
        time.sleep(0.05)


def setup(bootstrap: str, sizes=(10,), partitions: int = 1, topic: str | None = None, group: str | None = None,
          **configs) -> tuple[str, str]:
    """A topic with batches of `sizes` records in partition 0, and a share group reading from the
    earliest offset with `configs` (underscores for dots: share_record_lock_duration_ms=1000)."""
    topic, group = topic or sc.name("sp"), group or sc.name("sp-g")
    sc.create_topic(bootstrap, topic, partitions)
    sc.set_group_configs(bootstrap, group, share_auto_offset_reset="earliest", **configs)
    s = connect(bootstrap)
    try:
        topic_id(s, topic)
        produce_batches(s, topic, sizes)
    finally:
        s.close()
    return topic, group


def ack_batches(acks) -> list:
    """[(first, last, type name or [type names])] -> acknowledgement batches."""
    out = []
    for first, last, kind in acks:
        kinds = [kind] if isinstance(kind, str) else list(kind)
        out.append({"first_offset": first, "last_offset": last, "acknowledge_types": [ACCEPT_TYPES[k] for k in kinds]})
    return out


def parts_of(answer: dict) -> dict:
    """{partition: (error, ack error, [(first, last, delivery count)])} of a ShareFetch answer."""
    out = {}
    for t in answer["responses"]:
        for p in t["partitions"]:
            out[p["partition_index"]] = (p["error_code"], p.get("acknowledge_error_code", 0), [
                (r["first_offset"], r["last_offset"], r["delivery_count"]) for r in p.get("acquired_records", [])])
    return out


class Session:
    """One share group member (raw heartbeats) and its share session on one connection."""

    def __init__(self, bootstrap: str, group: str, topic: str, partitions: int = 1):
        self.bootstrap, self.group, self.topic, self.partitions = bootstrap, group, topic, partitions
        self.s = connect(bootstrap)
        self.tid = topic_id(self.s, topic)
        self.member = uuid.uuid4().hex[:22]
        self.epoch = 0  # member epoch
        self.session_epoch = 0

    # ---- membership ----------------------------------------------------------------
    def heartbeat(self, leave: bool = False) -> dict:
        body = {"group_id": self.group, "member_id": self.member, "member_epoch": -1 if leave else self.epoch,
                "rack_id": None, "subscribed_topic_names": [self.topic] if self.epoch == 0 else None}
        deadline = time.monotonic() + 60
        while True:
            r = call(self.s, 76, 1, body)
            if r["error_code"] not in RETRY or time.monotonic() > deadline:
                break
            call(self.s, 10, 4, {"key_type": 0, "coordinator_keys": [self.group]})
            time.sleep(0.2)
        assert r["error_code"] == 0, r
        self.epoch = r["member_epoch"]
        return r

    def join(self, parts: int | None = None, wait: float = 60.0) -> "Session":
        """Heartbeat until the member is assigned `parts` partitions (all of the topic's by default)."""
        want = self.partitions if parts is None else parts
        deadline = time.monotonic() + wait
        while True:
            r = self.heartbeat()
            a = r["assignment"]
            if a is not None and sum(len(t["partitions"]) for t in a["topic_partitions"]) == want:
                return self
            assert time.monotonic() < deadline, r
            time.sleep(0.1)

    def leave(self) -> dict:
        return self.heartbeat(leave=True)

    # ---- share session --------------------------------------------------------------------
    def fetch(self, acks=None, partition: int = 0, max_records: int = 500, max_bytes: int = 1 << 20,
              max_wait_ms: int = 0, min_bytes: int = 1, batch_size: int | None = None, epoch: int | None = None,
              renew: bool = False, version: int = 2, mode: int = 0, raw_acks: list | None = None,
              want: int = 0, wait: float = 0.0) -> dict:
        """One ShareFetch carrying `acks` for `partition` (the session's epoch unless given); with
        `want`, repeats (without acknowledgements) up to `wait` s until that many records came."""
        e = self.session_epoch if epoch is None else epoch
        batches = raw_acks if raw_acks is not None else ack_batches(acks or [])
        body = {"group_id": self.group, "member_id": self.member, "share_session_epoch": e,
                "max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": max_bytes,
                "max_records": max_records, "batch_size": batch_size if batch_size is not None else max_records,
                "topics": [{"topic_id": self.tid, "partitions": [
                    {"partition_index": p, "acknowledgement_batches": batches if p == partition else []}
                    for p in range(self.partitions)]}],
                "forgotten_topics_data": []}
        if version >= 2:
            body["is_renew_ack"] = renew
            body["share_acquire_mode"] = mode
        r = call(self.s, 78, version, body)
        if r["error_code"] == 0 and epoch is None:
            self.session_epoch = 1 if e == -1 else e + 1
        if want:
            got = _count(r)
            deadline = time.monotonic() + wait
            while got < want and time.monotonic() < deadline:
                more = self.fetch(max_records=max_records, max_bytes=max_bytes, batch_size=batch_size, version=version,
                                  mode=mode, max_wait_ms=200)
                _merge(r, more)
                got = _count(r)
        return r

    def acknowledge(self, acks=None, partition: int = 0, epoch: int | None = None, renew: bool = False,
                    version: int = 2, raw_acks: list | None = None) -> dict:
        e = self.session_epoch if epoch is None else epoch
        batches = raw_acks if raw_acks is not None else ack_batches(acks or [])
        body = {"group_id": self.group, "member_id": self.member, "share_session_epoch": e,
                "topics": [{"topic_id": self.tid, "partitions": [
                    {"partition_index": partition, "acknowledgement_batches": batches}]}]}
        if version >= 2:
            body["is_renew_ack"] = renew
        r = call(self.s, 79, version, body)
        if r["error_code"] == 0 and epoch is None and e != -1:
            self.session_epoch = e + 1
        return r

    def close_session(self, acks=None) -> dict:
        """ShareAcknowledge at the final epoch (-1): acknowledgements applied, the session closed."""
        r = self.acknowledge(acks, epoch=-1)
        self.session_epoch = 0
        return r

    def close(self) -> None:
        self.s.close()


def _count(answer: dict) -> int:
    return sum(la - f + 1 for _, _, rs in parts_of(answer).values() for f, la, _ in rs)


def _merge(into: dict, more: dict) -> None:
    for t in more["responses"]:
        for p in t["partitions"]:
            if not p.get("acquired_records"):
                continue
            for t0 in into["responses"]:
                for p0 in t0["partitions"]:
                    if p0["partition_index"] == p["partition_index"]:
                        p0["acquired_records"] = list(p0["acquired_records"]) + list(p["acquired_records"])
                        break
                else:
                    continue
                break
            else:
                into["responses"].append({"topic_id": t["topic_id"], "partitions": [p]})


def describe_offsets(bootstrap: str, group: str, topic: str) -> list:
    """DescribeShareGroupOffsets v1: [(partition, start offset, lag, error)] of the group on `topic`."""
    s = connect(bootstrap)
    try:
        deadline = time.monotonic() + 60
        while True:
            r = call(s, 90, 1, {"groups": [{"group_id": group, "topics": [{"topic_name": topic, "partitions": [0]}]}]})
            g = r["groups"][0]
            if g["error_code"] not in RETRY or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        return [(p["partition_index"], p["start_offset"], p.get("lag"), p["error_code"])
                for t in g["topics"] for p in t["partitions"]]
    finally:
        s.close()


def summary(answer: dict) -> tuple:
    """(error, {partition: (error, ack error, acquired ranges)}) of a ShareFetch or ShareAcknowledge answer."""
    return answer["error_code"], parts_of(answer)

"""Cluster metadata and the pool of broker connections.

`NetworkClient` owns one `BrokerConnection` per node (opened lazily, with
exponential reconnect backoff), bootstraps from `bootstrap.servers`, and keeps a
`ClusterMetadata` snapshot fresh: at least every `metadata.max.age.ms`, and on
demand after NOT_LEADER / UNKNOWN_TOPIC errors.
"""
from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
from dataclasses import dataclass, field

from pylog.core.client.connection import BrokerConnection
from pylog.core.client.errors import ConnectionFailedError, KafkaTimeoutError, NoBrokersAvailableError
from pylog.core.errors import ErrorCode, UsageError, error_for_code

log = logging.getLogger(__name__)

ZERO_UUID = uuid.UUID(int=0)

# a topic being created: its metadata may still answer these for a moment
_NOT_YET = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE}


@dataclass
class PartitionInfo:
    """One partition as Metadata reports it: leader, leader epoch, replicas, ISR, offline replicas."""

    partition: int
    leader: int
    leader_epoch: int = -1
    replicas: list = field(default_factory=list)
    isr: list = field(default_factory=list)
    offline: list = field(default_factory=list)
    error_code: int = 0


@dataclass
class TopicInfo:
    """One topic as Metadata reports it, with its partitions by number."""

    name: str
    error_code: int = 0
    topic_id: uuid.UUID = ZERO_UUID
    internal: bool = False
    partitions: dict = field(default_factory=dict)  # partition -> PartitionInfo


@dataclass
class BrokerInfo:
    """A broker's id and the address it advertises."""

    node_id: int
    host: str
    port: int
    rack: str | None = None


class ClusterMetadata:
    """An immutable-by-convention snapshot; replaced wholesale on refresh."""

    def __init__(self, brokers=None, topics=None, controller_id=-1, cluster_id=None):
        self.brokers: dict[int, BrokerInfo] = brokers or {}
        self.topics: dict[str, TopicInfo] = topics or {}
        self.controller_id = controller_id
        self.cluster_id = cluster_id
        self.updated = time.monotonic()
        # name -> sorted partition list, the producer's hot lookup
        self.partition_counts = {
            n: len(t.partitions) for n, t in self.topics.items() if t.error_code == ErrorCode.NONE and t.partitions
        }

    def leader_for(self, topic: str, partition: int) -> int:
        """The leader's node id for a partition, or -1 when unknown."""
        t = self.topics.get(topic)
        if t is None:
            return -1
        p = t.partitions.get(partition)
        return -1 if p is None else p.leader

    def partition_info(self, topic: str, partition: int) -> PartitionInfo | None:
        """The PartitionInfo of a partition, or None when unknown."""
        t = self.topics.get(topic)
        return None if t is None else t.partitions.get(partition)


def parse_bootstrap(servers) -> list[tuple[str, int]]:
    """`host:port[,host:port...]` (or a list of them) as (host, port) pairs; IPv6 in brackets."""
    if isinstance(servers, str):
        servers = servers.split(",")
    out = []
    for s in servers:
        s = s.strip()
        if not s:
            continue
        host, sep, port = s.rpartition(":")
        if not sep or not port.isdigit():
            raise UsageError(f"invalid bootstrap server {s!r}: expected HOST:PORT")
        out.append((host.strip("[]") or "127.0.0.1", int(port)))
    if not out:
        raise UsageError("no bootstrap servers given")
    return out


class NetworkClient:
    """Connections + metadata. All methods run on the event loop."""

    def __init__(self, config: dict):
        self.config = config
        self.bootstrap = parse_bootstrap(config["bootstrap.servers"])
        self.client_id = config.get("client.id") or "pylog"
        from pylog.core.security.client import from_config

        self.security = from_config(config)  # TLS context and SASL credentials, None for PLAINTEXT
        self.request_timeout_ms = config["request.timeout.ms"]
        self.metadata = ClusterMetadata()
        self._conns: dict[int, BrokerConnection] = {}
        self.connecting: dict[int, asyncio.Future] = {}
        self._backoff: dict[int, tuple[float, float]] = {}  # node -> (next attempt time, current backoff s)
        self._bootstrap_conn: BrokerConnection | None = None
        self._topics: set[str] = set()  # topics we want metadata for
        self._md_lock: asyncio.Lock | None = None
        self._md_event: asyncio.Event | None = None
        self.allow_auto_create = True
        self.closed = False

    # ---------------------------------------------------------------- connections
    def _new_conn(self, host, port, node_id) -> BrokerConnection:
        return BrokerConnection(
            host, port, client_id=self.client_id, node_id=node_id,
            request_timeout_ms=self.request_timeout_ms,
            connect_timeout_ms=self.config.get("socket.connection.setup.timeout.ms", 10000),
            security=self.security,
        )

    def is_ready(self, node_id: int) -> bool:
        """Whether a connection to `node_id` is open now."""
        c = self._conns.get(node_id)
        return c is not None and c.connected

    def connection_if_ready(self, node_id: int) -> BrokerConnection | None:
        """The open connection to `node_id`, or None (never connects)."""
        c = self._conns.get(node_id)
        return c if c is not None and c.connected else None

    def backoff_remaining(self, node_id: int) -> float:
        """Seconds until `node_id` may be tried again after a failed connect."""
        nb = self._backoff.get(node_id)
        if nb is None:
            return 0.0
        return max(0.0, nb[0] - time.monotonic())

    async def connection(self, node_id: int) -> BrokerConnection:
        """The connection to `node_id`, connecting (once, shared by concurrent callers) if needed."""
        c = self._conns.get(node_id)
        if c is not None and c.connected:
            return c
        pending = self.connecting.get(node_id)
        if pending is not None:
            return await asyncio.shield(pending)
        fut = asyncio.get_running_loop().create_future()
        self.connecting[node_id] = fut
        try:
            wait = self.backoff_remaining(node_id)
            if wait:
                await asyncio.sleep(wait)
            b = self.metadata.brokers.get(node_id)
            if b is None:
                raise ConnectionFailedError(f"node {node_id} is not in the cluster metadata")
            conn = self._new_conn(b.host, b.port, node_id)
            try:
                await conn.connect()
            except BaseException:
                self.note_failure(node_id)
                raise
            self._backoff.pop(node_id, None)
            self._conns[node_id] = conn
            fut.set_result(conn)
            return conn
        except BaseException as e:
            if not fut.done():
                fut.set_exception(e)
                fut.exception()  # mark retrieved
            raise
        finally:
            self.connecting.pop(node_id, None)

    def note_failure(self, node_id):
        base = self.config["reconnect.backoff.ms"] / 1000.0
        cap = self.config["reconnect.backoff.max.ms"] / 1000.0
        prev = self._backoff.get(node_id, (0, 0))[1]
        cur = min(cap, prev * 2 if prev else base)
        cur *= random.uniform(0.8, 1.2)
        self._backoff[node_id] = (time.monotonic() + cur, cur)

    async def any_connection(self) -> BrokerConnection:
        """A live connection to some broker (for metadata): known nodes first, then bootstrap."""
        for nid, c in list(self._conns.items()):
            if c.connected:
                return c
        if self._bootstrap_conn is not None and self._bootstrap_conn.connected:
            return self._bootstrap_conn
        errors = []
        for nid in list(self.metadata.brokers):
            if self.backoff_remaining(nid):
                continue
            try:
                return await self.connection(nid)
            except Exception as e:
                errors.append(str(e))
        hosts = list(self.bootstrap)
        random.shuffle(hosts)
        for host, port in hosts:
            conn = self._new_conn(host, port, -1)
            try:
                await conn.connect()
                self._bootstrap_conn = conn
                return conn
            except Exception as e:
                errors.append(str(e))
        servers = ",".join(f"{h}:{p}" for h, p in self.bootstrap)
        raise NoBrokersAvailableError(
            f"no broker reachable (bootstrap.servers={servers}): {errors[-1] if errors else 'no brokers'}")

    async def request(self, node_id: int, api: str, body: dict, **kw) -> dict:
        """Send one request to `node_id` and return the decoded response body."""
        conn = await self.connection(node_id)
        try:
            return await conn.request(api, body, **kw)
        except ConnectionFailedError:
            self.note_failure(node_id)
            raise

    async def request_any(self, api: str, body: dict, **kw) -> dict:
        """Send one request to any reachable broker."""
        conn = await self.any_connection()
        return await conn.request(api, body, **kw)

    async def request_controller(self, api: str, body: dict, **kw) -> dict:
        """Send one request to the controller (admin requests), or any broker if none is known."""
        if self.metadata.controller_id < 0 or self.metadata.controller_id not in self.metadata.brokers:
            await self.refresh_metadata()
        cid = self.metadata.controller_id
        if cid in self.metadata.brokers:
            return await self.request(cid, api, body, **kw)
        return await self.request_any(api, body, **kw)

    # ---------------------------------------------------------------- metadata
    def add_topics(self, topics) -> bool:
        """Track these topics in metadata refreshes; True if any is new."""
        new = set(topics) - self._topics
        self._topics |= new
        return bool(new)

    async def refresh_metadata(self, topics=None, *, all_topics: bool = False,
                               allow_auto_create: bool | None = None) -> ClusterMetadata:
        """Fetch Metadata for the tracked (or given, or all) topics and replace the snapshot."""
        if self._md_lock is None:
            self._md_lock = asyncio.Lock()
        async with self._md_lock:
            conn = await self.any_connection()
            if topics is not None:
                self.add_topics(topics)
            want = None if all_topics else [{"name": t} for t in sorted(self._topics)]
            version = conn.version("Metadata")
            body = {
                "topics": want,
                "allow_auto_topic_creation": self.allow_auto_create if allow_auto_create is None else allow_auto_create,
            }
            if version == 0 and want is None:
                body["topics"] = []
            try:
                resp = await conn.request("Metadata", body)
            except ConnectionFailedError:
                if conn.node_id >= 0:
                    self.note_failure(conn.node_id)
                raise
            self.metadata = self._parse_metadata(resp, merge=not all_topics and topics is not None)
            return self.metadata

    def _parse_metadata(self, resp: dict, merge: bool = False) -> ClusterMetadata:
        brokers = {}
        for b in resp.get("brokers", []):
            brokers[b["node_id"]] = BrokerInfo(b["node_id"], b["host"], b["port"], b.get("rack"))
        topics = {}
        for t in resp.get("topics", []):
            ti = TopicInfo(t.get("name"), t.get("error_code", 0), t.get("topic_id") or ZERO_UUID,
                           bool(t.get("is_internal", False)))
            for p in t.get("partitions", []) or []:
                pi = PartitionInfo(p["partition_index"], p.get("leader_id", -1), p.get("leader_epoch", -1),
                                   list(p.get("replica_nodes", []) or []), list(p.get("isr_nodes", []) or []),
                                   list(p.get("offline_replicas", []) or []), p.get("error_code", 0))
                ti.partitions[pi.partition] = pi
            if ti.name is not None:
                topics[ti.name] = ti
        # drop connections to nodes that left
        for nid in list(self._conns):
            if nid not in brokers:
                c = self._conns.pop(nid)
                asyncio.get_running_loop().create_task(c.close())
        return ClusterMetadata(brokers, topics, resp.get("controller_id", -1), resp.get("cluster_id"))

    def metadata_age(self) -> float:
        """Seconds since the last metadata refresh."""
        return time.monotonic() - self.metadata.updated

    async def wait_for_topic(self, topic: str, timeout_s: float) -> TopicInfo:
        """Metadata for `topic` with partitions, refreshing with backoff until timeout_s
        (the producer's max.block.ms wait for unknown topics)."""
        deadline = time.monotonic() + timeout_s
        self.add_topics([topic])
        backoff = self.config["retry.backoff.ms"] / 1000.0
        last_error = None
        while True:
            t = self.metadata.topics.get(topic)
            if t is not None and t.error_code == ErrorCode.NONE and t.partitions:
                return t
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                await asyncio.wait_for(self.refresh_metadata(), max(0.001, remaining))
            except asyncio.TimeoutError:
                break
            except (NoBrokersAvailableError, ConnectionFailedError, KafkaTimeoutError) as e:
                last_error = e
            t = self.metadata.topics.get(topic)
            if t is not None and t.error_code == ErrorCode.NONE and t.partitions:
                return t
            if t is not None and t.error_code and t.error_code not in _NOT_YET:
                raise error_for_code(t.error_code, f"topic {topic}: {error_for_code(t.error_code)}")
            await asyncio.sleep(min(backoff, max(0.0, deadline - time.monotonic())))
            backoff = min(backoff * 2, self.config["retry.backoff.max.ms"] / 1000.0)
        msg = f"Topic {topic} not present in metadata after {int(timeout_s * 1000)} ms."
        if last_error is not None:
            msg += f" ({last_error})"
        raise KafkaTimeoutError(msg)

    async def close(self):
        """Close every connection."""
        self.closed = True
        for c in list(self._conns.values()):
            await c.close()
        self._conns.clear()
        if self._bootstrap_conn is not None:
            await self._bootstrap_conn.close()

"""Transaction administration: what kafka-transactions.sh asks of the cluster.

ListTransactions (every broker: each is the coordinator of some transactional
ids), DescribeTransactions (the id's coordinator), DescribeProducers (the
partition's leader) and the abort of a hanging transaction: WriteTxnMarkers
with an ABORT marker, sent to the partition's leader with the producer id, epoch
and coordinator epoch DescribeProducers reports (Kafka's Admin.abortTransaction).

Finding hanging transactions combines them as kafka-transactions.sh does: an
open transaction on a partition whose producer has written nothing for longer
than the largest transaction timeout is hanging unless its coordinator still
lists that partition in the producer's transaction (and so will write its marker).
"""
from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

from pylog.core.client.admin import AdminBase
from pylog.core.client.admin import raise_for as _check
from pylog.core.client.transactions import TXN_KEY
from pylog.core.errors import ErrorCode, KafkaError, UsageError

# partitions per DescribeProducers request, as kafka-transactions.sh batches them
DESCRIBE_BATCH = 500


@dataclass
class TransactionListing:
    transactional_id: str
    coordinator: int
    producer_id: int
    state: str


@dataclass
class TransactionDescription:
    coordinator: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    timeout_ms: int
    start_time_ms: int  # -1: no transaction in progress
    partitions: list = field(default_factory=list)  # "topic-partition" strings


@dataclass
class ProducerState:
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    last_sequence: int
    last_timestamp: int
    current_txn_start_offset: int  # -1: no open transaction on the partition


@dataclass
class OpenTransaction:
    """An open transaction of one producer on one partition (a find-hanging row)."""

    topic: str
    partition: int
    producer: ProducerState


class TransactionAdmin(AdminBase):
    """Synchronous facade for `pylog transactions`."""

    _thread_name = "pylog-txn-admin"

    def list_transactions(self, states=(), producer_ids=(), duration_ms: int = -1) -> list[TransactionListing]:
        """Every transaction every coordinator knows, sorted by transactional id."""
        async def go():
            out = []
            md = await self.client.refresh_metadata([])
            for node in sorted(md.brokers):
                resp = await self.client.request(node, "ListTransactions", {
                    "state_filters": list(states), "producer_id_filters": list(producer_ids),
                    "duration_filter": duration_ms})
                _check(resp.get("error_code", 0), f"ListTransactions on broker {node}")
                for t in resp.get("transaction_states") or []:
                    out.append(TransactionListing(t["transactional_id"], node, t["producer_id"],
                                                  t["transaction_state"]))
            return sorted(out, key=lambda t: t.transactional_id)
        return self._run(go())

    def describe_transaction(self, transactional_id: str) -> TransactionDescription:
        """The coordinator's state of one transactional id (TRANSACTIONAL_ID_NOT_FOUND raises)."""
        return self._run(self._describe_transaction(transactional_id))

    def describe_producers(self, topic: str, partition: int, broker: int | None = None) -> list[ProducerState]:
        """The producers with state on a partition (on its leader, or on `broker`)."""
        async def go():
            node = broker if broker is not None else await self._leader(topic, partition)
            return (await self._describe_producers(node, [(topic, partition)]))[(topic, partition)]
        return self._run(go())

    def find_hanging(self, topic: str | None = None, partition: int | None = None, broker: int | None = None,
                     max_timeout_ms: int = 15 * 60_000) -> list[OpenTransaction]:
        """Hanging transactions on one partition, a topic's partitions, or every partition
        `broker` holds a replica of (kafka-transactions.sh find-hanging)."""
        async def go():
            by_node = defaultdict(list)
            for t, p, leader in await self._partitions(topic, partition, broker):
                by_node[broker if broker is not None else leader].append((t, p))
            now = int(time.time() * 1000)
            candidates = []
            for node, tps in sorted(by_node.items()):
                for i in range(0, len(tps), DESCRIBE_BATCH):
                    for (t, p), states in (await self._describe_producers(node, tps[i:i + DESCRIBE_BATCH])).items():
                        candidates += [OpenTransaction(t, p, s) for s in states if s.current_txn_start_offset >= 0
                                       and now - s.last_timestamp > max_timeout_ms]
            if not candidates:
                return []
            pids = sorted({c.producer.producer_id for c in candidates})
            tids = {}
            for node in sorted(self.client.metadata.brokers):
                resp = await self.client.request(node, "ListTransactions", {
                    "state_filters": [], "producer_id_filters": pids, "duration_filter": -1})
                _check(resp.get("error_code", 0), f"Failed to list transactions for {len(pids)} producers")
                tids.update({t["producer_id"]: t["transactional_id"] for t in resp.get("transaction_states") or []
                             if t["producer_id"] in pids})
            still_open = {}  # transactional id -> partitions its coordinator will still mark
            for tid in sorted(set(tids.values())):
                try:
                    still_open[tid] = set((await self._describe_transaction(tid)).partitions)
                except KafkaError as e:
                    if e.code != ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
                        raise
            return [c for c in candidates
                    if f"{c.topic}-{c.partition}" not in still_open.get(tids.get(c.producer.producer_id), ())]
        return self._run(go())

    def abort_transaction(self, topic: str, partition: int, producer_id: int, producer_epoch: int,
                          coordinator_epoch: int) -> None:
        """Write an ABORT marker for `producer_id` to the partition (Admin.abortTransaction)."""
        async def go():
            node = await self._leader(topic, partition)
            resp = await self.client.request(node, "WriteTxnMarkers", {"markers": [{
                "producer_id": producer_id, "producer_epoch": producer_epoch, "transaction_result": False,
                "topics": [{"name": topic, "partition_indexes": [partition]}],
                "coordinator_epoch": max(0, coordinator_epoch), "transaction_version": 0}]})
            for m in resp.get("markers") or []:
                for t in m.get("topics") or []:
                    for p in t.get("partitions") or []:
                        _check(p.get("error_code", 0), f"WriteTxnMarkers {topic}-{partition}")
        return self._run(go())

    # ---------------------------------------------------------------- requests and lookups (loop thread)
    async def _describe_transaction(self, transactional_id: str) -> TransactionDescription:
        node = await self._coordinator(transactional_id)
        resp = await self.client.request(node, "DescribeTransactions", {"transactional_ids": [transactional_id]})
        t = (resp.get("transaction_states") or [{}])[0]
        _check(t.get("error_code", 0), f"DescribeTransactions {transactional_id}")
        parts = [f"{tp['topic']}-{p}" for tp in t.get("topics") or [] for p in tp.get("partitions") or []]
        return TransactionDescription(node, t["transactional_id"], t["producer_id"], t["producer_epoch"],
                                      t["transaction_state"], t["transaction_timeout_ms"],
                                      t["transaction_start_time_ms"], parts)

    async def _describe_producers(self, node: int, tps: list) -> dict:
        """DescribeProducers for (topic, partition)s on one broker: {(topic, partition): [ProducerState]}."""
        topics = defaultdict(list)
        for t, p in tps:
            topics[t].append(p)
        resp = await self.client.request(node, "DescribeProducers", {
            "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]})
        out = {}
        for t in resp.get("topics") or []:
            for p in t.get("partitions") or []:
                tp = (t["name"], p["partition_index"])
                _check(p.get("error_code", 0), f"DescribeProducers {tp[0]}-{tp[1]}", p.get("error_message"))
                out[tp] = [ProducerState(a["producer_id"], a["producer_epoch"], a["coordinator_epoch"],
                                         a["last_sequence"], a["last_timestamp"], a["current_txn_start_offset"])
                           for a in p.get("active_producers") or []]
        missing = [f"{t}-{p}" for t, p in tps if (t, p) not in out]
        if missing:
            raise UsageError(f"DescribeProducers: no answer for {', '.join(missing)}")
        return out

    async def _partitions(self, topic: str | None, partition: int | None, broker: int | None) -> list:
        """(topic, partition, leader) to search: one partition, one topic's, or every non-internal
        topic's partitions with a replica on `broker`."""
        md = await self.client.refresh_metadata([topic]) if topic else await self.client.refresh_metadata(
            all_topics=True)
        names = [topic] if topic else sorted(n for n, t in md.topics.items() if not t.internal)
        out = []
        for name in names:
            t = md.topics.get(name)
            if t is None or t.error_code:
                _check(t.error_code if t is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name}")
            for p, info in sorted(t.partitions.items()):
                if partition is not None and p != partition:
                    continue
                if partition is None and broker is not None and broker not in info.replicas:
                    continue
                out.append((name, p, info.leader))
        if partition is not None and not out:
            _check(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition}")
        return out

    async def _coordinator(self, transactional_id: str) -> int:
        resp = await self.client.request_any("FindCoordinator", {
            "key": transactional_id, "key_type": TXN_KEY, "coordinator_keys": [transactional_id]})
        e = (resp.get("coordinators") or [resp])[0]
        _check(e.get("error_code", 0), f"FindCoordinator for transactional id {transactional_id}")
        if e["node_id"] not in self.client.metadata.brokers:
            await self.client.refresh_metadata()
        return e["node_id"]

    async def _leader(self, topic: str, partition: int) -> int:
        md = await self.client.refresh_metadata([topic])
        t = md.topics.get(topic)
        if t is None or t.error_code:
            _check(t.error_code if t is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic}")
        p = t.partitions.get(partition)
        if p is None or p.leader < 0:
            _check(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if p is None else ErrorCode.LEADER_NOT_AVAILABLE,
                   f"{topic}-{partition}")
        return p.leader

"""Transaction administration: what kafka-transactions.sh asks of the cluster.

ListTransactions (every broker: each is the coordinator of some transactional
ids), DescribeTransactions (the id's coordinator), DescribeProducers (the
partition's leader) and the abort of a hanging transaction: WriteTxnMarkers
with an ABORT marker, sent to the partition's leader with the producer id, epoch
and coordinator epoch DescribeProducers reports (Kafka's Admin.abortTransaction).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pylog.core.client.admin import AdminBase
from pylog.core.client.admin import _raise as _check
from pylog.core.client.transactions import TXN_KEY
from pylog.core.errors import ErrorCode, UsageError


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
        async def go():
            node = await self._coordinator(transactional_id)
            resp = await self.client.request(node, "DescribeTransactions", {"transactional_ids": [transactional_id]})
            t = (resp.get("transaction_states") or [{}])[0]
            _check(t.get("error_code", 0), f"DescribeTransactions {transactional_id}")
            parts = [f"{tp['topic']}-{p}" for tp in t.get("topics") or [] for p in tp.get("partitions") or []]
            return TransactionDescription(node, t["transactional_id"], t["producer_id"], t["producer_epoch"],
                                          t["transaction_state"], t["transaction_timeout_ms"],
                                          t["transaction_start_time_ms"], parts)
        return self._run(go())

    def describe_producers(self, topic: str, partition: int, broker: int | None = None) -> list[ProducerState]:
        """The producers with state on a partition (on its leader, or on `broker`)."""
        async def go():
            node = broker if broker is not None else await self._leader(topic, partition)
            resp = await self.client.request(node, "DescribeProducers", {
                "topics": [{"name": topic, "partition_indexes": [partition]}]})
            for t in resp.get("topics") or []:
                for p in t.get("partitions") or []:
                    if p["partition_index"] != partition:
                        continue
                    _check(p.get("error_code", 0), f"DescribeProducers {topic}-{partition}", p.get("error_message"))
                    return [ProducerState(a["producer_id"], a["producer_epoch"], a["coordinator_epoch"],
                                          a["last_sequence"], a["last_timestamp"], a["current_txn_start_offset"])
                            for a in p.get("active_producers") or []]
            raise UsageError(f"DescribeProducers: no answer for {topic}-{partition}")
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

    # ---------------------------------------------------------------- lookups (loop thread)
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

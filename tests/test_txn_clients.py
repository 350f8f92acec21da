"""aiokafka and kafkajs transactions (commit, abort, offsets sent to a group) and their
read_committed consumers, against the brokers of test_client_transactions.PEERS (Apache Kafka,
the reference; pylog's broker)."""
from __future__ import annotations

import asyncio

import pytest

from support.js import run_js
from support.txn_clients import PEERS, new_topic, read_all, values


class _Peer:
    def __init__(self, bootstrap):
        self.bootstrap = bootstrap

    def stderr(self) -> str:
        return ""


@pytest.fixture(params=PEERS)
def peer(request):
    if request.param == "kafka":
        return _Peer(request.getfixturevalue("kafka_node").bootstrap)
    return request.getfixturevalue("broker")


def test_aiokafka_transactions(peer):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition as ATP

    topic = new_topic(peer.bootstrap, 1)
    group = f"g-{topic}"

    async def go():
        p = AIOKafkaProducer(bootstrap_servers=peer.bootstrap, transactional_id=f"aio-{topic}",
                             enable_idempotence=True)
        await p.start()
        try:
            async with p.transaction():
                for i in range(20):
                    await p.send(topic, f"commit-{i}".encode())
            await p.begin_transaction()
            for i in range(20):
                await p.send(topic, f"abort-{i}".encode())
            await p.send_offsets_to_transaction({ATP(topic, 0): 13}, group)
            await p.abort_transaction()
            async with p.transaction():
                await p.send_offsets_to_transaction({ATP(topic, 0): 11}, group)
        finally:
            await p.stop()
        c = AIOKafkaConsumer(topic, bootstrap_servers=peer.bootstrap, isolation_level="read_committed",
                             auto_offset_reset="earliest", enable_auto_commit=False)
        await c.start()
        try:
            got = []
            end = (await c.end_offsets([ATP(topic, 0)]))[ATP(topic, 0)]
            while await c.position(ATP(topic, 0)) < end:
                for recs in (await c.getmany(timeout_ms=500)).values():
                    got += [r.value for r in recs]
        finally:
            await c.stop()
        g = AIOKafkaConsumer(bootstrap_servers=peer.bootstrap, group_id=group, enable_auto_commit=False)
        await g.start()
        try:
            committed = await g.committed(ATP(topic, 0))
        finally:
            await g.stop()
        return got, committed

    got, committed = asyncio.run(go())
    assert got == [f"commit-{i}".encode() for i in range(20)]
    assert committed == 11
    assert values(read_all(peer.bootstrap, topic, 1, "read_uncommitted")) == sorted(
        [f"commit-{i}".encode() for i in range(20)] + [f"abort-{i}".encode() for i in range(20)])


def test_kafkajs_transactions(peer):
    topic = f"js-txn-{new_topic(peer.bootstrap, 1)}"
    res = run_js("txn.js", peer, {"topic": topic, "group": f"g-{topic}", "count": 15})
    assert res["committed"] == [f"commit-{i}" for i in range(15)]
    assert sorted(res["everything"]) == sorted([f"commit-{i}" for i in range(15)] + [f"abort-{i}" for i in range(15)])
    assert res["groupOffset"] == "5"

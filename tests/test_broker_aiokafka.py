"""aiokafka 0.14 (asyncio, its own protocol implementation) against `pylog broker start`."""
from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka import codec as aiocodec
from aiokafka.admin import AIOKafkaAdminClient, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from support.broker_fixtures import stored_batches
from support.client_fixtures import groups_describe


# Kafka's codec ids (batch attributes bits 0-2) and whether aiokafka can use each here.
CODECS = {"none": (0, lambda: True), "gzip": (1, aiocodec.has_gzip), "snappy": (2, aiocodec.has_snappy),
          "lz4": (3, aiocodec.has_lz4), "zstd": (4, aiocodec.has_zstd)}


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def admin_client(broker) -> AIOKafkaAdminClient:
    a = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
    await a.start()
    return a


async def create(broker, topic, partitions, configs=None):
    a = await admin_client(broker)
    try:
        resp = await a.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs or {})])
        assert [(t[0], t[1]) for t in resp.topic_errors] == [(topic, 0)]
    finally:
        await a.close()


async def read_all(broker, tp: TopicPartition, start: int, end: int):
    c = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    await c.start()
    try:
        c.assign([tp])
        c.seek(tp, start)
        out = []
        while len(out) < end - start:
            out.append(await c.getone())
        return out
    finally:
        await c.stop()


@pytest.mark.parametrize("codec", list(CODECS))
def test_idempotent_producer_acks_all_every_codec(broker, codec):
    codec_id, available = CODECS[codec]
    if not available():
        pytest.fail(f"aiokafka cannot use {codec} here: install its codec library (cramjam, via the test extra)")
    topic, n = f"aio-codec-{codec}", 200

    async def go():
        await create(broker, topic, 2)
        p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=True,
                             compression_type=None if codec == "none" else codec, linger_ms=5)
        await p.start()
        try:
            metas = []
            for start in range(0, n, 50):  # four rounds: several batches per partition
                futs = [await p.send(topic, f"v{i}".encode() * 20, key=f"k{i}".encode(), partition=i % 2,
                                     headers=[("i", str(i).encode()), ("codec", codec.encode())])
                        for i in range(start, start + 50)]
                metas += await asyncio.gather(*futs)
        finally:
            await p.stop()
        back = {part: await read_all(broker, TopicPartition(topic, part), 0, n // 2) for part in (0, 1)}
        return metas, back

    metas, back = run(go())
    for part in (0, 1):
        assert sorted(m.offset for m in metas if m.partition == part) == list(range(n // 2))
        recs = back[part]
        assert [r.offset for r in recs] == list(range(n // 2))
        assert [r.key for r in recs] == [f"k{i}".encode() for i in range(part, n, 2)]
        assert [r.value for r in recs] == [f"v{i}".encode() * 20 for i in range(part, n, 2)]
        assert [list(r.headers) for r in recs] == [[("i", str(i).encode()), ("codec", codec.encode())]
                                                  for i in range(part, n, 2)]
        # Stored as aiokafka sent them (compression.type=producer): its codec, one
        # producer id, sequences that follow the offsets.
        batches = stored_batches(broker, topic, part)
        assert len(batches) >= 4 and {h.codec for h in batches} == {codec_id}
        assert len({h.producer_id for h in batches}) == 1 and batches[0].producer_id >= 0
        assert [h.base_sequence for h in batches] == [h.base_offset for h in batches]


def test_consumer_manual_assignment_seek_and_offsets(broker):
    topic, n = "aio-assign", 50
    tp = TopicPartition(topic, 0)
    base = int(time.time() * 1000) - 100_000

    async def go():
        await create(broker, topic, 1)
        p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks=1)
        await p.start()
        for i in range(n):
            await p.send(topic, f"m{i}".encode(), partition=0, timestamp_ms=base + i * 1000)
        await p.flush()

        # a long max wait: only waking on append can answer the fetch at the end before it
        c = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False, fetch_max_wait_ms=30000,
                             request_timeout_ms=90000, auto_offset_reset="earliest")
        await c.start()
        try:
            c.assign([tp])
            c.seek(tp, 20)
            got = [await c.getone() for _ in range(n - 20)]
            r = {"seek20": [(m.offset, m.value, m.timestamp) for m in got], "pos": await c.position(tp),
                 "hw": c.highwater(tp), "lso": c.last_stable_offset(tp)}
            await c.seek_to_beginning(tp)
            r["first"] = (await c.getone()).offset
            r["begin"] = await c.beginning_offsets([tp])
            r["end"] = await c.end_offsets([tp])
            r["times"] = await c.offsets_for_times({tp: base + 10_500})
            r["times_past"] = await c.offsets_for_times({tp: base + 10_000_000})

            # A long poll at the end wakes when a record arrives.
            await c.seek_to_end(tp)
            r["end_pos"] = await c.position(tp)
            waiter = asyncio.ensure_future(c.getone())
            await asyncio.sleep(0.3)
            t0 = time.monotonic()
            await p.send_and_wait(topic, b"late", partition=0)
            late = await waiter
            r["late"] = (late.offset, late.value, time.monotonic() - t0)

            a = await admin_client(broker)
            try:
                r["deleted"] = await a.delete_records({tp: RecordsToDelete(10)})
            finally:
                await a.close()
            r["begin_after_delete"] = await c.beginning_offsets([tp])
            c.seek(tp, 5)  # below the log start now: OFFSET_OUT_OF_RANGE, reset to earliest
            r["after_reset"] = (await c.getone()).offset
        finally:
            await c.stop()
            await p.stop()
        return r

    r = run(go())
    assert r["seek20"] == [(i, f"m{i}".encode(), base + i * 1000) for i in range(20, n)]
    assert (r["pos"], r["hw"], r["lso"]) == (n, n, n)
    assert r["first"] == 0
    assert r["begin"] == {tp: 0} and r["end"] == {tp: n}
    assert (r["times"][tp].offset, r["times"][tp].timestamp) == (11, base + 11_000)
    assert r["times_past"] == {tp: None}
    assert r["end_pos"] == n
    assert r["late"][:2] == (n, b"late") and r["late"][2] < 15, "the long poll did not wake on append"
    assert r["deleted"] == {tp: 10}
    assert r["begin_after_delete"] == {tp: 10}
    assert r["after_reset"] == 10


def test_consumer_group_two_members(broker):
    topic, group, parts, per = "aio-group", "aio-group-g", 4, 10

    async def produce(tag):
        p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        await p.start()
        try:
            for i in range(parts * per):
                await p.send(topic, f"{tag}-{i}".encode(), partition=i % parts)
            await p.flush()
        finally:
            await p.stop()

    async def go():
        await create(broker, topic, parts)
        await produce("before")
        cs = [AIOKafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group,
                               auto_offset_reset="earliest", enable_auto_commit=False,
                               session_timeout_ms=10000, heartbeat_interval_ms=500) for _ in range(2)]
        for c in cs:
            await c.start()
        got: list[list] = [[], []]

        async def poll_until(cond, timeout):
            deadline = time.monotonic() + timeout
            while not cond():
                assert time.monotonic() < deadline, f"timed out: {[c.assignment() for c in cs]}, {len(got[0])}, " \
                                                    f"{len(got[1])}"
                for i, c in enumerate(cs):
                    for _, ms in (await c.getmany(timeout_ms=100)).items():
                        got[i].extend((m.partition, m.offset, m.value.decode()) for m in ms)

        def settled():
            a = [c.assignment() for c in cs]
            return all(a) and sum(map(len, a)) == parts and {v for _, _, v in got[0] + got[1]} >= \
                {f"before-{i}" for i in range(parts * per)}

        try:
            await poll_until(settled, 30)
            owned = [sorted(tp.partition for tp in c.assignment()) for c in cs]
            await produce("after")
            await poll_until(lambda: sum(v.startswith("after-") for _, _, v in got[0] + got[1]) >= parts * per, 15)
            for c in cs:
                await c.commit()
            desc = await asyncio.to_thread(groups_describe, broker.bootstrap, group)
            return owned, got, desc
        finally:
            for c in cs:
                await c.stop()

    owned, got, desc = run(go())
    assert all(owned) and not set(owned[0]) & set(owned[1]) and set(owned[0]) | set(owned[1]) == set(range(parts))
    after = [(i, p, o) for i in (0, 1) for p, o, v in got[i] if v.startswith("after-")]
    assert len(after) == parts * per and len({(p, o) for _, p, o in after}) == parts * per
    assert all(p in owned[i] for i, p, _ in after)

    # `pylog groups describe` sees the live group, its two members and their
    # partitions, and the committed offsets at the end of every partition.
    assert (desc["state"], desc["protocol_type"]) == ("Stable", "consumer")
    members = {m["member_id"]: sorted(a["partition"] for a in m["assignment"] if a["topic"] == topic)
               for m in desc["members"]}
    assert len(members) == 2 and sorted(members.values()) == sorted(owned)
    offs = {o["partition"]: o for o in desc["offsets"] if o["topic"] == topic}
    assert sorted(offs) == list(range(parts))
    for part, o in offs.items():
        assert (o["current_offset"], o["log_end_offset"], o["lag"]) == (2 * per, 2 * per, 0)
        assert part in members[o["consumer_id"]]


def test_admin_client_topics_and_configs(broker):
    topic = "aio-admin"

    async def go():
        a = await admin_client(broker)
        try:
            r = {"create": await a.create_topics([NewTopic(topic, 3, 1, topic_configs={"retention.ms": "3600000"})])}
            r["again"] = await a.create_topics([NewTopic(topic, 1, 1)])
            r["bad"] = await a.create_topics([NewTopic("bad/name", 1, 1)])
            r["listed"] = await a.list_topics()
            r["meta"] = await a.describe_topics([topic])
            r["cfg"] = await a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
            r["broker_cfg"] = await a.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")])
            r["alter"] = await a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                               {"retention.ms": "7200000"})])
            r["cfg2"] = await a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
            r["cluster"] = await a.describe_cluster()
            r["delete"] = await a.delete_topics([topic])
            r["listed_after"] = await a.list_topics()
            return r
        finally:
            await a.close()

    r = run(go())
    assert [(t[0], t[1]) for t in r["create"].topic_errors] == [(topic, 0)]
    assert [(t[0], t[1]) for t in r["again"].topic_errors] == [(topic, 36)]  # TOPIC_ALREADY_EXISTS
    assert [(t[0], t[1]) for t in r["bad"].topic_errors] == [("bad/name", 17)]  # INVALID_TOPIC_EXCEPTION
    assert topic in r["listed"] and topic not in r["listed_after"]
    (meta,) = r["meta"]
    assert (meta["topic"], meta["error_code"]) == (topic, 0)
    assert sorted((p["partition"], p["leader"], p["replicas"], p["isr"]) for p in meta["partitions"]) == \
        [(p, 1, [1], [1]) for p in range(3)]

    def entries(resp):
        ((err, _msg, _type, name, cfg),) = [tuple(x)[:5] for x in resp[0].resources]
        assert err == 0
        return name, {e[0]: e[1] for e in cfg}

    name, cfg = entries(r["cfg"])
    assert name == topic and cfg["retention.ms"] == "3600000" and cfg["cleanup.policy"] == "delete"
    name, cfg = entries(r["broker_cfg"])
    assert name == "1" and cfg["node.id"] == "1"
    assert [tuple(x)[:2] for x in r["alter"][0].resources] == [(0, None)]
    assert entries(r["cfg2"])[1]["retention.ms"] == "7200000"
    assert r["cluster"]["controller_id"] == 1
    assert [(b["node_id"], b["host"], b["port"]) for b in r["cluster"]["brokers"]] == \
        [(1, broker.host, broker.port)]
    assert [(t[0], t[1]) for t in r["delete"].topic_error_codes] == [(topic, 0)]

"""pylog.testing: the embedded broker and its pytest plugin, driven by real Kafka clients."""
from __future__ import annotations

import asyncio
import textwrap

import pytest

from pylog.core.errors import PylogError
from pylog.testing import EmbeddedBroker

pytest_plugins = ["pytester"]


def test_confluent_kafka_round_trip(pylog_broker):
    from confluent_kafka import Consumer, Producer

    pylog_broker.create_topic("emb-ck", partitions=2)
    p = Producer(pylog_broker.client_config())
    for i in range(10):
        p.produce("emb-ck", f"v{i}".encode(), key=f"k{i}".encode())
    assert p.flush(30) == 0
    c = Consumer(pylog_broker.client_config(**{"group.id": "emb-ck", "auto.offset.reset": "earliest"}))
    c.subscribe(["emb-ck"])
    got = []
    import time
    deadline = time.monotonic() + 60
    while len(got) < 10 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    assert sorted(got) == sorted(f"v{i}".encode() for i in range(10))
    # the helper sees the same records
    assert sorted(r.value for r in pylog_broker.consume("emb-ck")) == sorted(got)


def test_kafka_python_round_trip(pylog_broker):
    from kafka import KafkaConsumer, KafkaProducer

    pylog_broker.create_topic("emb-kp")
    p = KafkaProducer(bootstrap_servers=pylog_broker.bootstrap)
    for i in range(5):
        p.send("emb-kp", f"v{i}".encode()).get(30)
    p.close()
    c = KafkaConsumer("emb-kp", bootstrap_servers=pylog_broker.bootstrap, auto_offset_reset="earliest",
                      consumer_timeout_ms=30000)
    got = []
    for m in c:  # the five records, then stop (the iterator would wait out consumer_timeout_ms)
        got.append(m.value)
        if len(got) == 5:
            break
    assert got == [f"v{i}".encode() for i in range(5)]
    c.close()


def test_aiokafka_round_trip(pylog_broker):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    pylog_broker.create_topic("emb-aio")

    async def go():
        p = AIOKafkaProducer(bootstrap_servers=pylog_broker.bootstrap)
        await p.start()
        try:
            for i in range(5):
                await p.send_and_wait("emb-aio", f"v{i}".encode())
        finally:
            await p.stop()
        c = AIOKafkaConsumer("emb-aio", bootstrap_servers=pylog_broker.bootstrap, auto_offset_reset="earliest")
        await c.start()
        try:
            got = []
            while len(got) < 5:
                batch = await asyncio.wait_for(c.getmany(timeout_ms=500), 30)
                for records in batch.values():
                    got += [r.value for r in records]
            return got
        finally:
            await c.stop()

    assert asyncio.run(go()) == [f"v{i}".encode() for i in range(5)]


def test_pylog_clients_and_helpers(pylog_broker_function):
    b = pylog_broker_function
    b.create_topic("emb-py", partitions=3, config={"cleanup.policy": "compact"})
    md = b.produce("emb-py", [("a", "1"), ("b", "2"), ("a", "3")])
    assert [m.partition for m in md][0] == md[2].partition  # same key, same partition
    got = b.consume("emb-py")
    assert sorted((r.key, r.value) for r in got) == [(b"a", b"1"), (b"a", b"3"), (b"b", b"2")]


def test_settings_apply_and_data_survives_a_restart(tmp_path):
    with EmbeddedBroker(tmp_path / "data", settings={"num.partitions": 5}) as b:
        b.produce("auto-created", [b"x"])  # auto-created with the broker's num.partitions
        from pylog.core.client import Admin
        with Admin(b.client_config()) as a:
            assert len(a.describe_topic("auto-created").partitions) == 5
    # a given log dir is kept: a second broker on it serves the same record
    with EmbeddedBroker(tmp_path / "data") as b2:
        assert [r.value for r in b2.consume("auto-created")] == [b"x"]
    assert (tmp_path / "data" / ".kafka_cleanshutdown").exists()


def test_temporary_log_dir_is_removed_and_double_start_refused():
    b = EmbeddedBroker().start()
    d = b.log_dir
    assert d.exists()
    with pytest.raises(PylogError, match="already started"):
        b.start()
    b.stop()
    assert not d.exists()


def test_port_in_use_is_one_clear_error(pylog_broker):
    with pytest.raises(PylogError, match="could not start"):
        EmbeddedBroker(port=int(pylog_broker.bootstrap.rsplit(":", 1)[1])).start()


def test_unknown_setting_is_refused():
    with pytest.raises(PylogError, match="unknown broker property"):
        EmbeddedBroker(settings={"no.such.property": "1"}).start()


def test_pytest_plugin_fixtures_in_another_project(pytester):
    pytester.makeini(textwrap.dedent("""
        [pytest]
        pylog_broker_settings =
            auto.create.topics.enable=true
    """))
    pytester.makepyfile(textwrap.dedent("""
        import pytest
        from confluent_kafka import Producer
        from pylog.core.client import Admin

        def test_session_broker(pylog_broker):
            p = Producer({"bootstrap.servers": pylog_broker.bootstrap})
            p.produce("plugin-topic", b"hello")
            assert p.flush(30) == 0
            assert [r.value for r in pylog_broker.consume("plugin-topic")] == [b"hello"]

        def test_same_session_broker(pylog_broker):
            assert [r.value for r in pylog_broker.consume("plugin-topic")] == [b"hello"]

        @pytest.mark.pylog_broker(settings={"num.partitions": "4"})
        def test_function_broker_is_fresh(pylog_broker_function, pylog_broker):
            assert pylog_broker_function.bootstrap != pylog_broker.bootstrap
            pylog_broker_function.produce("other", [b"x"])
            with Admin(pylog_broker_function.client_config()) as a:
                assert "plugin-topic" not in a.list_topics()
                assert len(a.describe_topic("other").partitions) == 4

        def test_command_line_setting(pylog_broker_function):
            with Admin(pylog_broker_function.client_config()) as a:
                a.create_topic("cli-set")
                assert len(a.describe_topic("cli-set").partitions) == 1
            pylog_broker_function.produce("cli-set", [b"y"])
    """))
    result = pytester.runpytest_subprocess("--pylog-broker-set", "log.segment.bytes=1048576", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    bad = pytester.runpytest_subprocess("--pylog-broker-set", "nonsense", "-p", "no:cacheprovider")
    assert bad.ret != 0
    assert "expected KEY=VALUE" in bad.stdout.str() + bad.stderr.str()

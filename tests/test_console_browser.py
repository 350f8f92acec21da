"""The web console in a real browser (headless Chromium) against `pylog broker start --console`:
every page over a broker holding data of each kind (JSON and Avro topics, a consumer group, a
share group with records in flight, an open transaction, an ACL, a SCRAM user, a quota, two
versions of a registry subject, log dirs), the registry decode, a record produced from the
page appearing, a group's lag falling as it consumes, and a write refused by a read-only
console. The screenshots README shows are written here."""
from __future__ import annotations

import json
import time

import pytest

from pylog.console.service import ConsoleService
from pylog.core.client import Consumer, Producer, TopicPartition
from pylog.core.client.membership import attach_group
from pylog.core.client.group_admin import GroupAdmin
from pylog.core.client.quota_admin import QuotaAdmin
from pylog.core.client.schema_registry import RegistryClient, Serializer
from pylog.core.client.security_admin import SecurityAdmin
from pylog.core.client.share_consumer import ShareConsumer
from pylog.core.security.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from support.broker_fixtures import BrokerProcess
from support.browser import Browser
from support.registry import registry_url_of
from support.cli import pylog

AVRO_V1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "int"},
                                                        {"name": "item", "type": "string"}]}
AVRO_V2 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "int"},
                                                        {"name": "item", "type": "string"},
                                                        {"name": "qty", "type": "int", "default": 1}]}


def console_url_of(broker) -> str:
    for line in broker.stdout_lines:
        if line.strip().startswith("console:"):
            return line.split(":", 1)[1].strip().split(" ")[0]
    raise AssertionError(f"no console line in {broker.stdout_lines}")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A broker with its registry and console (writes allowed), and data of every kind."""
    b = BrokerProcess(tmp_path_factory.mktemp("console") / "data", "--schema-registry", "127.0.0.1:0",
                      "--console", "127.0.0.1:0", "--console-allow-writes",
                      "--set", "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                      "--set", "super.users=User:ANONYMOUS",
                      "--set", "group.share.min.record.lock.duration.ms=1000",
                      "--set", "group.share.record.lock.duration.ms=600000").start(timeout=120)
    props = {"bootstrap.servers": b.bootstrap}
    held = []
    try:
        _fill(b, props, held)
        yield {"broker": b, "props": props, "console": console_url_of(b), "registry": registry_url_of(b)}
    finally:
        for c in held:
            c.close()
        b.stop_clean()


def _fill(b, props, held) -> None:
    for name, n in (("orders", 3), ("avro-orders", 1), ("shared", 1)):
        r = pylog("topics", "create", name, "-p", n, "-b", b.bootstrap)
        assert r.returncode == 0, r.stderr
    with Producer(props) as p:
        for i in range(300):
            p.send("orders", json.dumps({"n": i, "item": f"item-{i}"}), key=f"k{i % 10}", partition=i % 3,
                   headers=[("source", "test")])
        p.flush(30)
    reg = RegistryClient(registry_url_of(b))
    reg.register("avro-orders-value", json.dumps(AVRO_V1))
    reg.register("avro-orders-value", json.dumps(AVRO_V2))
    ser = Serializer(reg, "avro", "avro-orders-value")
    with Producer(props) as p:
        for i in range(5):
            p.send("avro-orders", ser.encode({"id": i, "item": f"widget-{i}", "qty": i + 1}))
        p.flush(30)
    # a group that read a third of orders, and a share group holding records it has not acknowledged
    with GroupAdmin(props) as ga:
        ga.alter_offsets("billing", {TopicPartition("orders", p): 33 for p in range(3)})
    sc = ShareConsumer({**props, "group.id": "jobs", "share.acknowledgement.mode": "explicit", "max.poll.records": "10"})
    held.append(sc)
    sc.subscribe(["shared"])
    sc.poll(1.0)  # joined: its share-partition starts at the end (share.auto.offset.reset=latest)
    deadline = time.monotonic() + 60
    got = []
    with Producer(props) as p:
        while not got and time.monotonic() < deadline:
            for i in range(40):
                p.send("shared", f"job-{i}")
            p.flush(30)
            got = sc.poll(2.0)
    assert got, "the share consumer got no records"
    # an open transaction, an ACL, a SCRAM user and a quota
    tx = Producer({**props, "transactional.id": "invoices-tx"})
    held.append(tx)
    tx.init_transactions()
    tx.begin_transaction()
    tx.send("orders", b"pending", partition=0)
    tx.flush(30)
    with SecurityAdmin(props) as sec:
        sec.create_acls([AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*",
                                    AclOperation.READ, AclPermissionType.ALLOW)])
        sec.upsert_user("alice", "SCRAM-SHA-256", "alice-secret")
    with QuotaAdmin(props) as q:
        q.alter([("user", "alice")], {"producer_byte_rate": 1048576.0}, [])


@pytest.fixture(scope="module")
def browser(env):
    br = Browser()
    br.base = env["console"]
    yield br
    br.close()


def test_cluster_page_shows_the_broker_and_its_metrics_over_time(env, browser):
    browser.open("", "overview")
    assert env["broker"].bootstrap.split(":")[1] in browser.text("#brokers")
    # the broker's metrics are sampled every few seconds: the charts draw once two samples exist
    browser.wait(lambda: (browser.open("", "overview") or True) and len(browser.driver.find_elements(
        "css selector", ".uplot")) >= 3, 60, "three metrics charts")
    assert "read-only" not in browser.text("#mode")
    browser.screenshot("cluster")


def test_topics_and_a_topic(env, browser):
    def counted():  # the topics page answers from the console's last snapshot (one per sample interval)
        browser.open("topics", "topics")
        rows = {r[0].split()[0]: r for r in browser.rows("topics")}
        return rows.get("orders", [None] * 4)[3] == "301"  # 300 records and the open transaction's
    browser.wait(counted, 60, "orders with its 301 records")
    rows = {r[0].split()[0]: r for r in browser.rows("topics")}
    assert rows["orders"][1] == "3"
    browser.screenshot("topics")
    browser.open("topic/orders", "topic")
    parts = browser.rows("partitions")
    assert [p[0] for p in parts] == ["0", "1", "2"]
    assert sum(int(p[5].replace(",", "")) for p in parts) == 301
    configs = {r[0]: r for r in browser.rows("configs")}
    assert "cleanup.policy" in configs and "retention.ms" in configs
    browser.screenshot("topic")


def test_topic_create_alter_delete_from_the_page(env, browser):
    browser.open("topics", "topics")
    browser.fill("create", {"name": "made-in-browser", "partitions": "2"})
    browser.submit("create")
    browser.wait(lambda: any(r[0].startswith("made-in-browser") for r in browser.rows("topics")), 30, "new topic")
    browser.open("topic/made-in-browser", "topic")
    browser.fill("alter", {"key": "retention.ms", "value": "3600000"})
    browser.submit("alter")
    browser.wait(lambda: {r[0]: r[1] for r in browser.rows("configs")}.get("retention.ms") == "3600000", 30,
                 "altered retention.ms")
    browser.driver.execute_script("window.confirm = () => true")
    browser.driver.find_element("id", "delete").click()
    browser.wait_ready("topics")
    browser.wait(lambda: not any(r[0].startswith("made-in-browser") for r in browser.rows("topics")), 30,
                 "topic gone")


def test_message_browser_pages_filters_and_headers(env, browser):
    browser.open("messages/orders?partition=1&start=offset&offset=10&limit=5&format=json", "messages")
    rows = browser.rows("records")
    assert [r[0] for r in rows] == ["10", "11", "12", "13", "14"]
    assert json.loads(rows[0][3].rsplit(" ", 1)[0])["n"] == 31  # partition 1 holds n = 1, 4, 7, ...
    assert rows[0][4] == "source=test"
    browser.screenshot("messages")
    browser.open("messages/orders?partition=2&start=beginning&key=k5&limit=50", "messages")
    keys = {r[2] for r in browser.rows("records")}
    assert keys == {"k5"}
    browser.open("messages/orders?partition=0&start=beginning&search=item-42%22&limit=50", "messages")
    assert [r[0] for r in browser.rows("records")] == ["14"]
    browser.open("messages/orders?partition=0&start=end&limit=3&format=hex", "messages")
    assert all(set(r[3].split(" ")[0]) <= set("0123456789abcdef") for r in browser.rows("records"))


def test_registry_decode(env, browser):
    browser.open("messages/avro-orders?partition=0&start=beginning&format=auto", "messages")
    rows = browser.rows("records")
    assert len(rows) == 5
    value, how = rows[2][3].rsplit(" ", 1)
    assert how == "registry" and json.loads(value) == {"id": 2, "item": "widget-2", "qty": 3}
    browser.screenshot("messages-registry")


def test_a_record_produced_from_the_page_appears(env, browser):
    browser.open("messages/orders?partition=1&start=end&limit=5", "messages")
    browser.fill("produce", {"partition": "1", "key": "from-browser", "value": '{"hello": "console"}',
                             "headers": "origin=chromium"})
    browser.submit("produce")
    browser.wait(lambda: any(r[2] == "from-browser" and "console" in r[3] and r[4] == "origin=chromium"
                             for r in browser.rows("records")), 30, "the produced record")


def test_groups_and_a_group_lag_falling_as_it_consumes(env, browser):
    browser.open("groups", "groups")
    kinds = {r[0]: r[1] for r in browser.rows("groups")}
    assert kinds["billing"] in ("classic", "consumer") and kinds["jobs"] == "share"
    browser.screenshot("groups")
    browser.open("group/billing", "group")
    before = int(browser.text("#total-lag").replace(",", ""))
    assert before >= 300 - 99
    lags = browser.rows("lag")
    assert [r[2] for r in lags] == ["33", "33", "33"]
    with Consumer({**env["props"], "group.id": "billing", "enable.auto.commit": "false",
                   "max.poll.records": "20"}) as c:
        attach_group(c)
        c.subscribe(["orders"])
        seen = 0
        deadline = time.monotonic() + 60
        while seen < 150 and time.monotonic() < deadline:
            got = sum(len(v) for v in c.poll(1000).values())
            if got:
                seen += got
                c.commit()
    # the page refreshes itself: the lag it shows falls, and the chart has a point per refresh
    browser.wait(lambda: int(browser.text("#total-lag").replace(",", "") or before) < before, 60, "lag falling")
    browser.wait(lambda: browser.driver.execute_script(
        "return document.querySelectorAll('#c-lag .uplot').length") == 1, 30, "the lag chart")
    browser.screenshot("group")


def test_share_group_shows_records_in_flight(env, browser):
    browser.open("share/jobs", "share")
    rows = browser.rows("in-flight")
    assert rows, browser.text("#page")
    acquired = [r for r in rows if r[3] == "Acquired"]
    assert acquired and all(r[4] and r[5] == "1" and r[6] for r in acquired)
    assert browser.rows("members")
    browser.screenshot("share-group")


def test_transactions_security_pages(env, browser):
    browser.open("transactions", "transactions")
    tx = {r[0]: r for r in browser.rows("transactions")}
    assert tx["invoices-tx"][1] == "Ongoing" and "orders-0" in tx["invoices-tx"][6]
    browser.screenshot("transactions")
    browser.open("transactions?hanging=0", "transactions")  # none hang: the coordinator still has it
    assert browser.rows("hanging") == []
    browser.open("security", "security")
    assert any("User:alice" in r[2] and r[4] == "READ" for r in browser.rows("acls"))
    assert any(r[0] == "alice" and "SCRAM-SHA-256" in r[1] for r in browser.rows("users"))
    assert any("user=alice" in r[0] and "producer_byte_rate=1048576" in r[1] for r in browser.rows("quotas"))
    browser.screenshot("security")


def test_registry_subjects_diff_and_compatibility(env, browser):
    browser.open("registry", "registry")
    subjects = {r[0]: r for r in browser.rows("subjects")}
    assert subjects["avro-orders-value"][1] == "1, 2"
    browser.open("subject/avro-orders-value", "subject")
    assert '"qty"' in browser.text("#right") and '"qty"' not in browser.text("#left")
    assert any(line.startswith("+") and "qty" in line for line in browser.text("#diff").splitlines())
    browser.screenshot("subject")
    bad = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}
    browser.fill("check", {"schema": json.dumps(bad)})
    browser.submit("check")
    browser.wait(lambda: browser.driver.find_element("id", "verdict").get_attribute("data-compatible") == "false",
                 30, "an incompatible verdict")


def test_log_dir_segments_batches_and_verdicts(env, browser):
    browser.open("logdir?verify=1", "logdir")
    parts = {r[0]: r for r in browser.rows("partitions")}
    assert parts["orders-0"][4] == "clean"
    browser.screenshot("logdir")
    browser.open("logdir-part/orders-1", "logdir-part")
    segs = browser.rows("segments")
    assert segs[0][0] == "00000000000000000000.log"
    browser.open("logdir-seg/orders-1/00000000000000000000.log", "logdir-seg")
    batches = browser.rows("batches")
    assert batches and batches[0][0] == "0" and all(b[-1] == "true" for b in batches)
    assert sum(int(b[2]) for b in batches) >= 100
    browser.screenshot("segment")


def test_offset_reset_from_the_page(env, browser):
    browser.open("group/billing", "group")
    browser.fill("reset", {"to": "earliest"})
    browser.submit("reset")
    browser.wait(lambda: [r[2] for r in browser.rows("lag")] == ["0", "0", "0"], 30, "offsets at the start")


def test_a_read_only_console_refuses_writes(env, browser):
    ro = ConsoleService(env["props"], "127.0.0.1", 0)
    ro.start()
    try:
        browser.base = ro.url
        browser.open("topics", "topics")
        assert "read-only" in browser.text("#mode")
        assert not browser.driver.find_elements("id", "create")
        browser.open("messages/orders?partition=0", "messages")
        assert not browser.driver.find_elements("id", "produce")
        ans = browser.fetch("POST", "/api/topics/orders/messages", {"value": "sneaky"})
        assert ans["status"] == 403 and "read-only" in ans["body"]["error"]
        ans = browser.fetch("DELETE", "/api/topics/orders")
        assert ans["status"] == 403
        ans = browser.fetch("POST", "/api/groups/billing/reset", {"to": "latest"})
        assert ans["status"] == 403
    finally:
        browser.base = env["console"]
        browser.driver.get(env["console"])
        ro.stop()
    with Consumer({**env["props"], "enable.auto.commit": "false"}) as c:
        assert c.end_offsets([("orders", 0)])[("orders", 0)] >= 101  # the topic is still there


def test_basic_auth_when_users_are_given(env):
    import base64
    import urllib.error
    import urllib.request

    guarded = ConsoleService(env["props"], "127.0.0.1", 0, users={"ops": "s3cret"})
    guarded.start()
    try:
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(guarded.url + "/api/topics", timeout=30)
        assert e.value.code == 401 and "Basic" in e.value.headers["WWW-Authenticate"]
        req = urllib.request.Request(guarded.url + "/api/topics",
                                     headers={"Authorization": "Basic " + base64.b64encode(b"ops:s3cret").decode()})
        with urllib.request.urlopen(req, timeout=30) as r:
            assert "orders" in {t["name"] for t in json.load(r)["topics"]}
    finally:
        guarded.stop()


def test_abort_a_transaction_from_the_api(env, browser):
    """Kafka's Admin.abortTransaction: an ABORT marker for the producer on one partition."""
    from pylog.core.client.txn_admin import TransactionAdmin

    browser.open("transactions", "transactions")
    with TransactionAdmin(env["props"]) as ta:
        [open_on_0] = [s for s in ta.describe_producers("orders", 0) if s.current_txn_start_offset >= 0]
        ans = browser.fetch("POST", "/api/transactions/abort", {
            "topic": "orders", "partition": 0, "producer_id": open_on_0.producer_id,
            "producer_epoch": open_on_0.producer_epoch, "coordinator_epoch": open_on_0.coordinator_epoch})
        assert ans["status"] == 200, ans
        assert not [s for s in ta.describe_producers("orders", 0) if s.current_txn_start_offset >= 0]

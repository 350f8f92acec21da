"""The registry's store: two registries on one `_schemas` never hand out one id for two
schemas; ids acknowledged before a kill -9 of the broker are served with the same schema
after its restart; `_schemas` holds Confluent's key and value JSON and is compacted."""
from __future__ import annotations

import json
import threading
import time
import uuid

from support.broker_fixtures import BrokerProcess
from pylog.registry.service import SchemaRegistryService
from pylog.testing import EmbeddedBroker
from support.registry import free_port, registry_url_of, rest


def _schema(tag: str, n: int) -> str:
    return json.dumps({"type": "record", "name": f"R{tag}{n}", "fields": [{"name": "a", "type": "int"}]})


def test_two_registries_one_topic_never_share_an_id(tmp_path):
    with EmbeddedBroker(tmp_path / "b") as broker:
        regs = [SchemaRegistryService({"bootstrap.servers": broker.bootstrap}, ["http://127.0.0.1:0"]).start()
                for _ in range(2)]
        try:
            urls = [r.url for r in regs]
            assert rest(f"{urls[0]}/config", "PUT", {"compatibility": "NONE"})[0] == 200
            acked: list[tuple[int, str, str]] = []  # (id, subject, schema)
            lock = threading.Lock()
            errors = []

            def worker(w: int):
                try:
                    for n in range(15):
                        url = urls[(w + n) % 2]
                        # half the writes race on shared subjects, half on their own
                        subject = f"shared-{n % 3}" if n % 2 else f"own-{w}-{n}"
                        schema = _schema(f"w{w}", n)
                        st, body, _ = rest(f"{url}/subjects/{subject}/versions", "POST", {"schema": schema})
                        assert st == 200, body
                        with lock:
                            acked.append((body["id"], subject, schema))
                except BaseException as e:  # noqa: BLE001 - reported below
                    errors.append(e)

            threads = [threading.Thread(target=worker, args=(w,)) for w in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)
            assert not errors, errors
            by_id: dict[int, str] = {}
            for sid, _, schema in acked:
                assert by_id.setdefault(sid, schema) == schema, f"id {sid} handed out for two schemas"
            assert len(by_id) == len(acked) == 90
            deadline = time.monotonic() + 60
            for r in regs:  # both registries serve every id and version the same
                for sid, subject, schema in acked:
                    while True:
                        st, body, _ = rest(f"{r.url}/schemas/ids/{sid}")
                        if st == 200 or time.monotonic() > deadline:
                            break
                        time.sleep(0.1)
                    assert st == 200 and json.loads(body["schema"]) == json.loads(schema)
                    found = rest(f"{r.url}/subjects/{subject}", "POST", {"schema": schema})[1]
                    assert found["id"] == sid
            for subject in ("shared-0", "shared-1", "shared-2"):
                a = rest(f"{urls[0]}/subjects/{subject}/versions")[1]
                b = rest(f"{urls[1]}/subjects/{subject}/versions")[1]
                assert a == b == list(range(1, len(a) + 1))
        finally:
            for r in regs:
                r.stop()
        # the topic holds Confluent's records, one partition, compacted
        records = broker.consume("_schemas")
        keys = [json.loads(r.key) for r in records]
        assert {k["keytype"] for k in keys} >= {"SCHEMA", "CONFIG"}
        assert all(set(k) == {"keytype", "subject", "version", "magic"} for k in keys if k["keytype"] == "SCHEMA")
        from pylog.core.client import Admin

        with Admin(broker.client_config()) as admin:
            assert len(admin.describe_topic("_schemas").partitions) == 1
            configs = {c["name"]: c["value"] for c in admin.describe_configs("_schemas")}
            assert configs["cleanup.policy"] == "compact"


def test_ids_survive_kill9_of_the_broker(tmp_path):
    port = free_port()
    b = BrokerProcess(tmp_path / "data", "--schema-registry", f"127.0.0.1:{port}").start(timeout=60)
    url = registry_url_of(b)
    acked: list[tuple[int, str, str]] = []
    stop = threading.Event()

    def register():
        n = 0
        while not stop.is_set() and n < 2000:
            subject, schema = f"k-{n % 7}", _schema("k", n)
            try:
                st, body, _ = rest(f"{url}/config/{subject}", "PUT", {"compatibility": "NONE"}) if n < 7 else \
                    rest(f"{url}/subjects/{subject}/versions", "POST", {"schema": schema})
            except OSError:
                return
            if st == 200 and "id" in (body or {}):
                acked.append((body["id"], subject, schema))
            elif st != 200:
                return
            n += 1

    t = threading.Thread(target=register)
    t.start()
    deadline = time.monotonic() + 120
    while len(acked) < 40 and time.monotonic() < deadline:
        time.sleep(0.05)
    b.kill9()
    stop.set()
    t.join(60)
    assert len(acked) >= 40
    b.restart()
    try:
        url = registry_url_of(b)
        for sid, subject, schema in acked:
            st, body, _ = rest(f"{url}/schemas/ids/{sid}")
            assert st == 200 and json.loads(body["schema"]) == json.loads(schema), (sid, body)
            assert rest(f"{url}/subjects/{subject}", "POST", {"schema": schema})[1]["id"] == sid
        # and it goes on handing out new ids after the highest
        st, body, _ = rest(f"{url}/subjects/after-{uuid.uuid4().hex[:6]}/versions", "POST",
                           {"schema": _schema("after", 0)})
        assert st == 200 and body["id"] > max(a[0] for a in acked)
    finally:
        b.stop_clean()

"""Helpers for the schema-registry tests: a free port, the registry URL a `pylog broker start
--schema-registry` printed, a small REST caller, protoc-generated message classes and a
confluent-kafka produce/consume round trip."""
from __future__ import annotations

import json
import socket
import sys
import urllib.error
import urllib.request
from pathlib import Path

CT = "application/vnd.schemaregistry.v1+json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def registry_url_of(broker) -> str:
    for line in broker.stdout_lines:
        if line.strip().startswith("schema registry:"):
            return line.split(":", 1)[1].strip().split(",")[0]
    raise AssertionError(f"no schema registry line in {broker.stdout_lines}")


def rest(url: str, method: str = "GET", body=None, raw: bytes | None = None, headers: dict | None = None):
    """(status, parsed JSON body, content type) of one request."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": CT, **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            text = resp.read()
            return resp.status, (json.loads(text) if text else None), resp.headers.get("Content-Type")
    except urllib.error.HTTPError as e:
        text = e.read()
        try:
            return e.code, json.loads(text), e.headers.get("Content-Type")
        except ValueError:
            return e.code, text.decode(errors="replace"), e.headers.get("Content-Type")


def protoc_module(tmp: Path, files: dict[str, str], main: str):
    """Generate Python classes for .proto `files` with grpcio-tools' protoc and import `main`'s module."""
    from grpc_tools import protoc
    import importlib.resources

    src = tmp / "proto_src"
    out = tmp / "proto_out"
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    out.mkdir(exist_ok=True)
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    rc = protoc.main(["protoc", f"-I{src}", f"-I{include}", f"--python_out={out}", *files])
    assert rc == 0, "protoc failed"
    sys.path.insert(0, str(out))
    try:
        return importlib.import_module(main[:-len(".proto")].replace("/", ".") + "_pb2")
    finally:
        sys.path.remove(str(out))


def roundtrip(broker, topic, ser, deser, values):
    """Produce `values` with confluent-kafka through `ser`, consume them back through `deser`:
    [(raw bytes, decoded value)]."""
    import uuid

    from confluent_kafka import Consumer, Producer
    from confluent_kafka.serialization import MessageField, SerializationContext

    p = Producer({"bootstrap.servers": broker.bootstrap})
    for v in values:
        p.produce(topic, value=ser(v, SerializationContext(topic, MessageField.VALUE)))
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-" + uuid.uuid4().hex[:8], "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    import time

    deadline = time.monotonic() + 60
    while len(got) < len(values) and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        got.append((m.value(), deser(m.value(), SerializationContext(topic, MessageField.VALUE))))
    c.close()
    return got

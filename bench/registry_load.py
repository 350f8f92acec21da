"""The load side of `python -m bench registry`, run as its own processes so the clients never share
the registry's interpreter: keep-alive HTTP/1.1 clients on raw sockets (asyncio, one request in
flight per connection), or confluent-kafka's SchemaRegistryClient on threads with its caches cleared
before every call.

    python -m bench.registry_load URL KIND N CLIENTS OFFSET  ->  prints {"seconds": S, "done": N}
KIND: ids | versions | register | ck-ids | ck-versions | ck-register
"""
from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from urllib.parse import urlsplit

SUBJECTS = 50


def schema_text(i: int) -> str:
    return json.dumps({"type": "record", "name": f"Order{i}", "namespace": "bench",
                       "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}]})


def _request(kind: str, i: int) -> tuple[str, str, bytes]:
    if kind == "ids":
        return "GET", f"/schemas/ids/{1 + i % 400}", b""
    if kind == "versions":
        return "GET", f"/subjects/bench-{i % SUBJECTS}/versions/{1 + (i // SUBJECTS) % 8}", b""
    body = json.dumps({"schema": schema_text(i)}).encode()
    return "POST", f"/subjects/bench-{i % SUBJECTS}/versions", body


async def _client(host, port, kind, items, errors):
    reader, writer = await asyncio.open_connection(host, port)
    for i in items:
        method, path, body = _request(kind, i)
        head = (f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/vnd.schemaregistry.v1+json"
                f"\r\nContent-Length: {len(body)}\r\n\r\n").encode()
        writer.write(head + body)
        got = await reader.readuntil(b"\r\n\r\n")
        n = 0
        for line in got.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                n = int(line[15:])
        await reader.readexactly(n)
        if not got.startswith(b"HTTP/1.1 200"):
            errors.append(got.split(b"\r\n", 1)[0])
    writer.close()


async def _raw(url, kind, n, clients, offset):
    u = urlsplit(url)
    errors: list = []
    t0 = time.perf_counter()
    await asyncio.gather(*[_client(u.hostname, u.port, kind, range(offset + k, offset + n, clients), errors)
                           for k in range(clients)])
    return time.perf_counter() - t0, errors


def _ck(url, kind, n, clients, offset):
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    errors: list = []

    def worker(k):
        sr = SchemaRegistryClient({"url": url})
        for i in range(offset + k, offset + n, clients):
            sr.clear_caches()
            try:
                if kind == "ck-ids":
                    sr.get_schema(1 + i % 400)
                elif kind == "ck-versions":
                    sr.get_version(f"bench-{i % SUBJECTS}", 1 + (i // SUBJECTS) % 8)
                else:
                    sr.register_schema(f"bench-{i % SUBJECTS}", Schema(schema_text(i), "AVRO"))
            except Exception as e:  # noqa: BLE001 - counted
                errors.append(str(e))

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.perf_counter() - t0, errors


def main(argv: list[str]) -> int:
    url, kind, n, clients, offset = argv[0], argv[1], int(argv[2]), int(argv[3]), int(argv[4])
    if kind.startswith("ck-"):
        took, errors = _ck(url, kind, n, clients, offset)
    else:
        took, errors = asyncio.run(_raw(url, kind, n, clients, offset))
    print(json.dumps({"seconds": took, "done": n, "errors": [str(e) for e in errors[:3]],
                      "error_count": len(errors)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

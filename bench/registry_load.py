"""The load side of `python -m bench registry`, run as its own processes so the clients never share
the registry's interpreter: keep-alive HTTP/1.1 clients on raw sockets (asyncio protocols on
uvloop, one request in flight per connection, every answer read whole and checked: its JSON parsed
and found right, or byte for byte the answer already found right to the same lookup), or
confluent-kafka's SchemaRegistryClient on threads with its caches cleared before every call.

    python -m bench.registry_load URL KIND N CLIENTS OFFSET  ->  prints {"seconds": S, "done": N}
KIND: root | ids | versions | register | ck-ids | ck-versions | ck-register
"""
from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from urllib.parse import urlsplit

SUBJECTS = 50
ACCEPT = "application/vnd.schemaregistry.v1+json"
KINDS = ("root", "ids", "versions", "register", "ck-ids", "ck-versions", "ck-register")


def schema_text(i: int) -> str:
    return json.dumps({"type": "record", "name": f"Order{i}", "namespace": "bench",
                       "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}]})


def _request(kind: str, i: int) -> tuple[str, str, bytes]:
    if kind == "root":
        return "GET", "/", b""
    if kind == "ids":
        return "GET", f"/schemas/ids/{1 + i % 400}", b""
    if kind == "versions":
        return "GET", f"/subjects/bench-{i % SUBJECTS}/versions/{1 + (i // SUBJECTS) % 8}", b""
    body = json.dumps({"schema": schema_text(i)}).encode()
    return "POST", f"/subjects/bench-{i % SUBJECTS}/versions", body


def _check(kind: str, body: bytes) -> str | None:
    """What is wrong with a 200 answer's body (None: it is the answer asked for)."""
    try:
        got = json.loads(body)
    except ValueError:
        return f"not JSON: {body[:80]!r}"
    if kind == "root":
        ok = got == {}
    elif kind == "register":
        ok = isinstance(got.get("id"), int) and got.get("guid")
    elif kind == "ids":
        ok = isinstance(got.get("schema"), str) and got.get("guid")
    else:
        ok = isinstance(got.get("id"), int) and got.get("subject", "").startswith("bench-")
    return None if ok else f"unexpected answer {body[:80]!r}"


class _Client(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection with one request in flight: the next request goes out when
    the whole answer (status line, headers, Content-Length bytes of body) is in and checked."""

    def __init__(self, kind: str, requests: list[bytes], errors: list, done: asyncio.Future, checked: dict):
        self.kind, self.requests, self.errors, self.done = kind, requests, errors, done
        self.checked = checked  # request -> its answer's body, once parsed and found right
        self.next = 0
        self.buf = b""
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport
        self._send()

    def _send(self):
        if self.next == len(self.requests):
            self.transport.close()
            self.done.set_result(None)
            return
        self.transport.write(self.requests[self.next])
        self.next += 1

    def data_received(self, data: bytes):
        buf = self.buf + data
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            self.buf = buf
            return
        head = buf[:end].lower()
        at = head.find(b"\r\ncontent-length:")
        size = 0
        if at >= 0:
            stop = head.find(b"\r\n", at + 17)
            size = int(head[at + 17:stop if stop > 0 else end])
        total = end + 4 + size
        if len(buf) < total:
            self.buf = buf
            return
        if len(buf) > total:
            self.errors.append(f"bytes after the answer: {buf[total:total + 40]!r}")
        self.buf = b""
        if not buf.startswith(b"HTTP/1.1 200 "):
            self.errors.append(buf[:buf.find(b"\r\n")].decode(errors="replace"))
        else:
            body = buf[end + 4:total]
            request = self.requests[self.next - 1]
            if self.checked.get(request) != body:  # a lookup answers the same bytes every time
                wrong = _check(self.kind, body)
                if wrong:
                    self.errors.append(wrong)
                elif self.kind != "register":
                    self.checked[request] = body
        self._send()

    def connection_lost(self, exc):
        if not self.done.done():
            self.errors.append(f"connection closed after {self.next} requests: {exc}")
            self.done.set_result(None)


async def _raw(url, kind, n, clients, offset):
    u = urlsplit(url)
    loop = asyncio.get_running_loop()
    errors: list = []
    requests = []
    for k in range(clients):
        mine = []
        for i in range(offset + k, offset + n, clients):
            method, path, body = _request(kind, i)
            mine.append(f"{method} {path} HTTP/1.1\r\nHost: {u.netloc}\r\nAccept: {ACCEPT}\r\n"
                        f"Content-Type: {ACCEPT}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        requests.append(mine)
    done = [loop.create_future() for _ in range(clients)]
    checked: dict = {}
    t0 = time.perf_counter()
    for k in range(clients):
        await loop.create_connection(lambda k=k: _Client(kind, requests[k], errors, done[k], checked),
                                     u.hostname, u.port)
    await asyncio.gather(*done)
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


def _run(coro):
    """The coroutine on uvloop's loop when installed (the clients' own CPU, on the registry's cores)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


def main(argv: list[str]) -> int:
    url, kind, n, clients, offset = argv[0], argv[1], int(argv[2]), int(argv[3]), int(argv[4])
    if kind not in KINDS:
        raise SystemExit(f"unknown kind {kind!r}: one of {', '.join(KINDS)}")
    if kind.startswith("ck-"):
        took, errors = _ck(url, kind, n, clients, offset)
    else:
        took, errors = _run(_raw(url, kind, n, clients, offset))
    print(json.dumps({"seconds": took, "done": n, "errors": [str(e) for e in errors[:3]],
                      "error_count": len(errors)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""pylog.web, the one HTTP stack: declared routes, HTTP/1.1 keep-alive, the body and header limits,
TLS from Kafka's ssl.* names, a graceful stop, and the threaded server for synchronous callers."""
from __future__ import annotations

import asyncio
import http.client
import socket
import ssl
import threading
import time

import pytest

from pylog.web import Limits, Routes, ThreadedWebServer, WebServer, json_response, run_blocking, \
    tls_server_context
from support.security_fixtures import pki  # noqa: F401 - the session's test CA and certificates


def _routes(release: threading.Event | None = None, started: threading.Event | None = None) -> Routes:
    routes = Routes()

    @routes.get("/echo/{name}")
    async def echo(request):
        return json_response({"name": request.match_info["name"], "q": dict(request.query)})

    @routes.post("/len")
    async def length(request):
        return json_response({"len": len(await request.read())})

    @routes.get("/slow")
    async def slow(request):
        started.set()
        await run_blocking(release.wait, 30)
        return json_response({"slow": True})

    return routes


@pytest.fixture
def server():
    srv = ThreadedWebServer(_routes(), "127.0.0.1", 0, limits=Limits(max_body=1000, max_headers=20))
    srv.start()
    yield srv
    srv.stop()


def test_keep_alive_serves_many_requests_on_one_connection(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.connect()
    sock = conn.sock
    for i in range(50):
        conn.request("GET", f"/echo/x{i}?a={i}")
        resp = conn.getresponse()
        assert resp.status == 200 and resp.getheader("Connection", "keep-alive").lower() != "close"
        assert resp.read() == f'{{"name": "x{i}", "q": {{"a": "{i}"}}}}'.encode()
    assert conn.sock is sock  # never reconnected
    conn.request("HEAD", "/echo/h")
    resp = conn.getresponse()
    assert resp.status == 200 and resp.read() == b""
    conn.request("DELETE", "/echo/h")
    assert conn.getresponse().status == 405
    conn.close()


def test_unknown_path_is_404_and_server_keeps_serving(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", "/nope")
    r = conn.getresponse()
    assert r.status == 404
    r.read()
    conn.request("GET", "/echo/after")
    assert conn.getresponse().status == 200


def test_body_over_the_limit_is_refused_before_it_is_read(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("POST", "/len", body=b"x" * 1000)
    r = conn.getresponse()
    assert r.status == 200 and r.read() == b'{"len": 1000}'
    conn.putrequest("POST", "/len")
    conn.putheader("Content-Length", str(50 * 1024 * 1024))
    conn.endheaders()  # the body never comes: the answer must not wait for it
    r = conn.getresponse()
    assert r.status == 413 and r.getheader("Connection", "").lower() == "close"
    conn.close()


def test_too_many_headers_is_400(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        head = "".join(f"X-H{i}: v\r\n" for i in range(40))
        s.sendall(f"GET /echo/a HTTP/1.1\r\nHost: x\r\n{head}\r\n".encode())
        got = b""
        while b"\r\n" not in got:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
        assert got.split(b" ")[1] == b"400", got[:100]  # the parser refuses it before routing
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", "/echo/ok", headers={f"X-H{i}": "v" for i in range(15)})
    assert conn.getresponse().status == 200


def test_port_in_use_raises_on_start(server):
    other = ThreadedWebServer(_routes(), "127.0.0.1", server.port)
    with pytest.raises(OSError):
        other.start()


def test_tls_from_kafka_ssl_settings(pki):  # noqa: F811
    ctx = tls_server_context({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server_keystore)})
    srv = ThreadedWebServer(_routes(), "127.0.0.1", 0, ssl_context=ctx)
    srv.start()
    try:
        assert srv.url.startswith("https://127.0.0.1:")
        client = ssl.create_default_context(cafile=str(pki.ca))
        conn = http.client.HTTPSConnection("127.0.0.1", srv.port, timeout=10, context=client)
        for _ in range(3):
            conn.request("GET", "/echo/tls")
            r = conn.getresponse()
            assert r.status == 200 and b'"tls"' in r.read()
        conn.close()
        with pytest.raises(ssl.SSLError):
            other = ssl.create_default_context(cafile=str(pki.other_ca))
            http.client.HTTPSConnection("127.0.0.1", srv.port, timeout=10, context=other).request("GET", "/echo/x")
    finally:
        srv.stop()


def test_stop_lets_a_request_in_flight_finish_and_refuses_new_connections():
    release, started = threading.Event(), threading.Event()
    srv = ThreadedWebServer(_routes(release, started), "127.0.0.1", 0)
    port = srv.start()
    got = {}

    def call():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/slow")
        r = conn.getresponse()
        got["answer"] = (r.status, r.read())

    t = threading.Thread(target=call)
    t.start()
    assert started.wait(20)
    stopper = threading.Thread(target=srv.stop)
    stopper.start()
    deadline = time.monotonic() + 20
    while _accepts(port) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _accepts(port)  # no new connections while the old request finishes
    release.set()
    t.join(30)
    stopper.join(30)
    assert got["answer"] == (200, b'{"slow": true}')


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_server_on_a_running_loop():
    async def main():
        srv = WebServer(_routes(), "127.0.0.1", 0)
        port = await srv.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for i in range(3):
            writer.write(f"GET /echo/{i} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            n = int([h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")][0].split(b":")[1])
            assert head.startswith(b"HTTP/1.1 200") and str(i).encode() in await reader.readexactly(n)
        writer.close()
        await srv.stop()
        return port

    port = asyncio.run(main())
    assert not _accepts(port)

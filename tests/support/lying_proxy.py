"""A test double for the cluster checker: a TCP proxy in front of a pylog broker that misbehaves
on purpose by serving aborted transactions to read_committed consumers.

It forwards every Kafka request frame as it is, except Fetch requests, whose isolation_level
it turns from READ_COMMITTED (1) to READ_UNCOMMITTED (0): the broker then answers with every
record, aborted transactions included, and without the aborted-transaction list a consumer
would filter them with. The broker is started with advertised.listeners naming the proxy, so
clients reach the broker only through it.
"""
from __future__ import annotations

import socket
import struct
import threading

FETCH = 1
FLEXIBLE_FETCH = 12  # Fetch v12+ has the flexible header (tagged fields after client_id)


def isolation_at(frame: bytes) -> int | None:
    """Where a Fetch request's isolation_level byte is in `frame` (the bytes after the size)."""
    api_key, version = struct.unpack_from(">hh", frame, 0)
    if api_key != FETCH or version < 4:
        return None
    (client_len,) = struct.unpack_from(">h", frame, 8)
    at = 10 + max(client_len, 0)
    if version >= FLEXIBLE_FETCH:
        at += 1  # no tagged fields in the header: a zero count
    # replica_id (to v14), max_wait_ms, min_bytes, max_bytes, then isolation_level
    return at + (16 if version < 15 else 12)


class LyingProxy:
    def __init__(self, upstream_port: int = 0):
        self.upstream_port = upstream_port
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.port = self.server.getsockname()[1]
        self.rewritten = 0
        self.closed = False
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                client.close()
                continue
            self.sockets += [client, upstream]
            threading.Thread(target=self.requests, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self.pipe, args=(upstream, client), daemon=True).start()

    def requests(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                head = _exact(src, 4)
                frame = bytearray(_exact(src, struct.unpack(">i", head)[0]))
                at = isolation_at(bytes(frame[:64]))
                if at is not None and frame[at] == 1:
                    frame[at] = 0
                    self.rewritten += 1
                dst.sendall(head + bytes(frame))
        except OSError:
            pass
        finally:
            _close(src, dst)

    @staticmethod
    def pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            _close(src, dst)

    def close(self) -> None:
        self.closed = True
        self.server.close()
        for s in self.sockets:
            _close(s)


def _exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise OSError("closed")
        buf += chunk
    return buf


def _close(*socks) -> None:
    for s in socks:
        try:
            s.close()
        except OSError:
            pass

"""The socket layer: accept, split size-prefixed frames, write responses in order
(the connection itself is in connection.py).

One asyncio loop, no transports: each connection is a non-blocking socket
driven by `loop.add_reader`/`add_writer`, because a fetch response is encoded
bytes followed by file ranges sent with `os.sendfile` straight from the segment
file, and asyncio's transports cannot interleave their own write buffer with
sendfile on the same socket (and `loop.sendfile` moves the file's offset, which
the segment's fd must keep).

Ordering: a client pipelines up to 5 requests and expects the responses in
request order. Every request that gets a response reserves a slot in the
connection's `_slots` queue when it is read; handlers that finish later (long
polls) fill their slot when done, and only the filled head of the queue moves to
the output queue.

TLS (SSL and SASL_SSL listeners): the socket is wrapped by `ssl` after accept
and handshakes without blocking the loop; `sendfile` cannot carry TLS records,
so file ranges are read with `os.pread` and written through the TLS socket in
chunks, and decrypted bytes already buffered inside the TLS layer are drained
without waiting for the socket to become readable again.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from typing import Callable

from pylog.broker.net.connection import Connection, FrameError  # noqa: F401 - re-exported

log = logging.getLogger("pylog.broker")

_IDLE_SWEEP_MAX_S = 30.0


class Server:
    """Listening socket plus the set of live connections."""

    def __init__(self, loop: asyncio.AbstractEventLoop, dispatch: Callable[[Connection, bytearray], None],
                 max_request_bytes: int, send_buffer: int = -1, recv_buffer: int = -1, listener=None,
                 limits=None, stats=None, name: str = "PLAINTEXT"):
        self.listener = listener  # None: a PLAINTEXT listener with no security state
        self.limits = limits  # conn_limits.ConnectionLimits shared by the listeners, or None
        self.stats = stats  # metrics.BrokerStats, or None
        self.name = name  # the listener's name, for metrics
        self._accept_paused = False
        self._sweeper: asyncio.TimerHandle | None = None
        if limits is not None:
            limits.servers.append(self)
        self.loop = loop
        # where each request frame goes (connections call it): the dispatcher's start-gate entry
        # until the broker has every handler in place, then its dispatch itself
        self.dispatch = dispatch
        self.max_request_bytes = max_request_bytes
        self.send_buffer = send_buffer
        self.recv_buffer = recv_buffer
        self.connections: set[Connection] = set()
        self.lsock: socket.socket | None = None
        self.port = 0

    def listen(self, host: str, port: int) -> int:
        """Bind and accept clients on host:port; returns the bound port (port 0 picks one)."""
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, _, _, _, addr = infos[0]
        s = socket.socket(family, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(addr)
        s.listen(512)
        s.setblocking(False)
        self.lsock = s
        self.port = s.getsockname()[1]
        self.loop.add_reader(s.fileno(), self._on_accept)
        if self.limits is not None and self.limits.idle_ms > 0:
            self._sweep_every = min(max(self.limits.idle_ms / 10000.0, 0.05), _IDLE_SWEEP_MAX_S)
            self._sweeper = self.loop.call_later(self._sweep_every, self._sweep_idle)
        return self.port

    def _sweep_idle(self) -> None:
        """connections.max.idle.ms: close connections with nothing owed and no traffic for that long."""
        limit = self.limits.idle_ms / 1000.0
        now = self.loop.time()
        for c in list(self.connections):
            if now - c.last_active > limit and c.idle and not c.paused:
                log.debug("closing connection from %s: idle for more than %d ms", c.peer, self.limits.idle_ms)
                if self.stats is not None:
                    self.stats.idle_closed += 1
                c.close(None)
        if self.lsock is not None:
            self._sweeper = self.loop.call_later(self._sweep_every, self._sweep_idle)

    def resume_accepting(self) -> None:
        """A connection slot freed (max.connections): accept again."""
        if self._accept_paused and self.lsock is not None:
            self._accept_paused = False
            self.loop.add_reader(self.lsock.fileno(), self._on_accept)
            self._on_accept()

    def _on_accept(self) -> None:
        limits = self.limits
        for _ in range(64):
            if limits is not None and limits.full():
                # max.connections: leave new clients in the backlog until one closes
                if not self._accept_paused and self.lsock is not None:
                    self._accept_paused = True
                    self.loop.remove_reader(self.lsock.fileno())
                return
            try:
                sock, addr = self.lsock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                # EMFILE and friends: keep serving the connections we have
                log.warning("accept failed: %s", e.strerror or e)
                return
            host = addr[0] if isinstance(addr, tuple) else str(addr)
            if limits is not None:
                refused = limits.admit(host)
                if refused is not None:
                    log.info("rejected connection from %s: %s (max.connections.per.ip)", host, refused)
                    if self.stats is not None:
                        self.stats.rejected[self.name] = self.stats.rejected.get(self.name, 0) + 1
                    sock.close()
                    continue
            if self.stats is not None:
                self.stats.accepted[self.name] = self.stats.accepted.get(self.name, 0) + 1
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.send_buffer > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer)
            if self.recv_buffer > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.recv_buffer)
            peer = f"{addr[0]}:{addr[1]}" if isinstance(addr, tuple) else str(addr)
            ctx = getattr(self.listener, "ssl_context", None)
            if ctx is not None:
                try:
                    sock = ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
                except (ssl.SSLError, OSError) as e:
                    log.warning("TLS setup for %s failed: %s", peer, e)
                    sock.close()
                    if limits is not None:
                        limits.release(host)
                    continue
            conn = Connection(self, sock, peer)
            conn.counted, conn.limit_host = limits is not None, host
            if self.listener is not None and not conn.tls:
                self.listener.on_accept(conn)
            self.connections.add(conn)
            conn.start()

    def stop_accepting(self) -> None:
        """Close the listening socket; live connections stay."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        if self.lsock is not None:
            if not self._accept_paused:
                self.loop.remove_reader(self.lsock.fileno())
            self.lsock.close()
            self.lsock = None

    async def drain(self, timeout: float) -> None:
        """Answer what is in flight, then close every connection."""
        for c in list(self.connections):
            c.drain()
        deadline = self.loop.time() + timeout
        while self.connections and self.loop.time() < deadline:
            await asyncio.sleep(0.01)
        for c in list(self.connections):
            c.close(None)

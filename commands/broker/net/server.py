"""The socket layer: accept, split size-prefixed frames, write responses in order.

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
import errno
import logging
import os
import socket
import ssl
import struct
from collections import deque
from typing import Callable

log = logging.getLogger("pylog.broker")

_SIZE = struct.Struct(">i")
_PEER_GONE = (errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED)  # the client went away: not an error
_RECV_CHUNK = 64 * 1024  # per connection; larger frames get their own exact-size buffer
# stop reading a connection while this many responses (queued.max.requests) or bytes are queued on it
_MAX_SLOTS = 500
_MAX_QUEUED_BYTES = 8 * 1024 * 1024
_IDLE_SWEEP_MAX_S = 30.0
_IOV_MAX = 512
_TLS_CHUNK = 256 * 1024  # file bytes read per write on a TLS connection
_TLS_READS_PER_WAKEUP = 128  # TLS records read before other connections get a turn
# librdkafka leaves Nagle on: the tail of a large request waits for our ACK,
# which delayed ACK can hold back ~40 ms. Re-arming quick ACK after each read
# (Linux resets it) answers at once; elsewhere the option does not exist.
_QUICKACK = getattr(socket, "TCP_QUICKACK", None)


class FrameError(Exception):
    """A frame the connection cannot continue after (size out of range)."""


class _Slot:
    __slots__ = ("parts", "ready")

    def __init__(self):
        self.parts = None
        self.ready = False


class _FileRange:
    """The unsent rest of a file slice: its own dup of the segment fd, position, length.

    The dup keeps the segment's inode readable (and the fd number ours) even if
    retention or a topic deletion closes the segment before a slow client has
    read the response.
    """

    __slots__ = ("fd", "pos", "left")

    def __init__(self, fd: int, pos: int, left: int):
        self.fd, self.pos, self.left = os.dup(fd), pos, left

    def release(self) -> None:
        """Close our dup of the segment fd."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class Connection:
    """One client socket: frames in, ordered responses out."""

    def __init__(self, server: "Server", sock: socket.socket, peer: str):
        self.server = server
        self.loop = server.loop
        self.sock = sock
        self.fd = sock.fileno()
        self.peer = peer
        self.closed = False
        self._buf = bytearray(_RECV_CHUNK)
        self._view = memoryview(self._buf)
        self._have = 0  # bytes of _buf holding unparsed input
        self._big: bytearray | None = None  # a large frame being filled in place
        self._big_have = 0
        self._slots: deque[_Slot] = deque()
        self._out: deque = deque()  # bytes-like or _FileRange, in send order
        self._out_bytes = 0
        self._writing = False
        self._batching = False  # while splitting one read into frames: flush once at the end
        self._reading = False
        self._paused = False
        self._muted: asyncio.TimerHandle | None = None  # quota throttling: reads resume when it fires
        self.tasks: set[asyncio.Future] = set()
        self.draining = False  # shutdown: no new requests are read
        self.listener = server.listener  # the listener's runtime (broker.security.ListenerRuntime) or None
        self.tls = isinstance(sock, ssl.SSLSocket)
        self.handshaking = self.tls
        self.principal = "User:ANONYMOUS"
        self.host = peer.rpartition(":")[0].strip("[]") if ":" in peer else peer
        self.sasl = None  # the connection's SASL session on SASL listeners
        self.counted = False  # holds a place in the connection limits, under limit_host
        self.limit_host = self.host
        self.last_active = self.loop.time()  # connections.max.idle.ms
        limits = server.limits
        self._max_slots = limits.max_slots if limits is not None else _MAX_SLOTS
        self._max_bytes = _MAX_QUEUED_BYTES
        self._pooled = 0  # bytes of queued.max.request.bytes held by the large frame being read
        self._pool_waiting = False  # reads stopped until the request memory pool has room

    # ---- reading -------------------------------------------------------
    def start(self) -> None:
        """Start (or resume) reading requests; a TLS connection handshakes first."""
        if self.handshaking:
            return self._handshake()
        self._reading = True
        self.loop.add_reader(self.fd, self._on_readable)
        if self.tls and self.sock.pending():  # records decrypted before reading stopped
            self.loop.call_soon(self._on_readable)

    def _handshake(self) -> None:
        self.loop.remove_reader(self.fd)
        self.loop.remove_writer(self.fd)
        try:
            self.sock.do_handshake()
        except ssl.SSLWantReadError:
            self.loop.add_reader(self.fd, self._handshake)
            return
        except ssl.SSLWantWriteError:
            self.loop.add_writer(self.fd, self._handshake)
            return
        except (ssl.SSLError, OSError) as e:
            return self.close(f"TLS handshake failed: {getattr(e, 'reason', None) or e}")
        self.handshaking = False
        if self.listener is not None:
            try:
                self.listener.on_tls_established(self)
            except Exception as e:  # noqa: BLE001 - a certificate we cannot map: this client only
                return self.close(f"TLS client authentication failed: {e}")
        if not self.closed and not self.draining:
            self.start()

    def _stop_reading(self) -> None:
        if self._reading:
            self._reading = False
            self.loop.remove_reader(self.fd)

    def _on_readable(self) -> None:
        if _QUICKACK is not None:
            try:
                self.sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
            except OSError:
                pass
        if not self.tls:
            self._read_once()
            return
        # a TLS read returns one record (16 KiB at most): keep reading while the
        # socket has bytes, so a 1 MiB produce is not 64 trips through the loop
        for _ in range(_TLS_READS_PER_WAKEUP):
            if not self._read_once() or not self._reading:
                return
        if self.sock.pending() and self._reading and not self.closed:
            # decrypted bytes inside the TLS layer never make the socket readable again
            self.loop.call_soon(self._on_readable)

    def _read_once(self) -> bool:
        """One recv into the frame buffers; True when bytes were read and the connection lives."""
        try:
            if self._big is not None:
                n = self.sock.recv_into(memoryview(self._big)[self._big_have:])
                if n == 0:
                    self.close(None)
                    return False
                self._big_have += n
                self.last_active = self.loop.time()
                if self._big_have == len(self._big):
                    frame, self._big = self._big, None
                    self.server.dispatch(self, frame)
                    self._release_pool()
                    if not self.closed:
                        self._check_pause()
                return not self.closed
            n = self.sock.recv_into(self._view[self._have:])
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return False
        except (ssl.SSLEOFError, ssl.SSLZeroReturnError):
            self.close(None)  # the client closed its TLS session: a normal disconnect
            return False
        except ssl.SSLError as e:
            self.close(f"TLS error: {e.reason or e}")
            return False
        except OSError as e:
            # a client that resets instead of closing (librdkafka often does) is leaving, not failing
            self.close(None if e.errno in _PEER_GONE else f"read failed: {e.strerror or e}")
            return False
        if n == 0:
            self.close(None)
            return False
        self.last_active = self.loop.time()
        self._have += n
        try:
            self._split_frames()
        except FrameError as e:
            self.close(str(e))
        return not self.closed

    def _split_frames(self) -> None:
        # responses to the requests of one read go out in one sendmsg
        self._batching = True
        try:
            self._split_frames_inner()
        finally:
            self._batching = False
        if self._out and not self._writing and not self.closed:
            self._flush()

    def _split_frames_inner(self) -> None:
        buf, view = self._buf, self._view
        pos, end = 0, self._have
        max_size = self.server.max_request_bytes
        while end - pos >= 4 and not self.closed and not self.draining:
            (size,) = _SIZE.unpack_from(buf, pos)
            if size < 0 or size > max_size:
                raise FrameError(f"request size {size} is outside 0..{max_size} (socket.request.max.bytes)")
            if end - pos - 4 >= size:
                frame = bytearray(view[pos + 4 : pos + 4 + size])
                pos += 4 + size
                self.server.dispatch(self, frame)
                continue
            if size + 4 > len(buf):
                # larger than the receive buffer: give it its own buffer and
                # let the socket fill it directly, once the request memory pool
                # (queued.max.request.bytes) has room for it
                limits = self.server.limits
                if limits is not None and not limits.take(size):
                    self._pool_waiting = True
                    self._stop_reading()
                    limits.pool_waiters.append(self)
                    break
                self._pooled = size if limits is not None else 0
                big = bytearray(size)
                have = end - pos - 4
                big[:have] = view[pos + 4 : end]
                self._big, self._big_have = big, have
                pos = end
            break
        rest = end - pos
        if rest and pos:
            buf[:rest] = bytes(view[pos:end])  # a copy: the regions may overlap
        self._have = rest
        if not self.closed:
            self._check_pause()

    def _check_pause(self) -> None:
        busy = len(self._slots) >= self._max_slots or self._out_bytes >= self._max_bytes
        if busy and self._reading:
            self._paused = True
            self._stop_reading()
        elif not busy and self._paused and not self.draining and not self.closed:
            self._paused = False
            if not self._muted and not self._pool_waiting:
                self.start()

    def _release_pool(self) -> None:
        if self._pooled:
            n, self._pooled = self._pooled, 0
            self.server.limits.give(n)

    def pool_retry(self) -> None:
        """The request memory pool freed some room: read the frame that waited for it."""
        if self.closed or not self._pool_waiting:
            return
        self._pool_waiting = False
        try:
            self._split_frames()
        except FrameError as e:
            return self.close(str(e))
        if not self._pool_waiting and not self._paused and not self._muted and not self.closed \
                and not self.draining:
            self.start()

    def mute_for(self, seconds: float) -> None:
        """A client over its quota: read nothing from it for `seconds` (KIP-219); answers still go out."""
        if self.closed or seconds <= 0:
            return
        if self._muted:
            self._muted.cancel()
        self._stop_reading()
        self._muted = self.loop.call_later(seconds, self._unmute)

    def _unmute(self) -> None:
        self._muted = None
        if not self.closed and not self.draining and not self._paused and not self.handshaking \
                and not self._pool_waiting:
            self.start()

    # ---- responses -----------------------------------------------------
    def reserve(self) -> _Slot:
        """A place in the response order for a request just read."""
        slot = _Slot()
        self._slots.append(slot)
        return slot

    def fill(self, slot: _Slot, parts: list) -> None:
        """`parts`: bytes-likes and objects with fd/position/length (file slices)."""
        if self.closed:
            return
        slot.parts = parts
        slot.ready = True
        slots = self._slots
        moved = False
        while slots and slots[0].ready:
            for p in slots.popleft().parts:
                if isinstance(p, (bytes, bytearray, memoryview)):
                    if len(p):
                        self._out.append(p)
                        self._out_bytes += len(p)
                elif p.length:
                    try:
                        self._out.append(_FileRange(p.fd, p.position, p.length))
                    except OSError as e:
                        return self.close(f"cannot send a fetch response: {e.strerror or e}")
            moved = True
        if moved and not self._writing and not self._batching:
            self._flush()

    def _flush(self) -> None:
        out = self._out
        sock = self.sock
        try:
            while out:
                head = out[0]
                if isinstance(head, _FileRange) and self.tls:
                    # no sendfile through TLS: copy the next chunk into the queue
                    data = os.pread(head.fd, min(head.left, _TLS_CHUNK), head.pos)
                    if not data:
                        return self.close("segment file shrank while sending a fetch response")
                    head.pos += len(data)
                    head.left -= len(data)
                    if head.left == 0:
                        out.popleft().release()
                    out.appendleft(data)
                    self._out_bytes += len(data)
                    continue
                if isinstance(head, _FileRange):
                    n = os.sendfile(self.fd, head.fd, head.pos, head.left)
                    if n == 0:
                        # the file is shorter than the slice said: the segment
                        # went away under us; the stream is now unusable
                        return self.close("segment file shrank while sending a fetch response")
                    head.pos += n
                    head.left -= n
                    if head.left == 0:
                        out.popleft().release()
                    continue
                bufs = []
                for item in out:
                    if isinstance(item, _FileRange) or len(bufs) >= _IOV_MAX:
                        break
                    bufs.append(item)
                if self.tls:
                    # an SSL socket has no sendmsg: join small pieces into one TLS write
                    if len(bufs) > 1:
                        joined = b"".join(bufs[:64])
                        n = sock.send(joined)
                    else:
                        n = sock.send(bufs[0])
                else:
                    n = sock.sendmsg(bufs) if len(bufs) > 1 else sock.send(bufs[0])
                self._out_bytes -= n
                while n:
                    first = out[0]
                    ln = len(first)
                    if n >= ln:
                        out.popleft()
                        n -= ln
                    else:
                        out[0] = memoryview(first)[n:]
                        n = 0
        except (BlockingIOError, InterruptedError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
            if not self._writing:
                self._writing = True
                self.loop.add_writer(self.fd, self._on_writable)
            return
        except ssl.SSLError as e:
            return self.close(f"TLS write failed: {e.reason or e}")
        except OSError as e:
            if e.errno in _PEER_GONE:
                return self.close(None)
            return self.close(f"write failed: {e.strerror or e}")
        self.last_active = self.loop.time()
        if self._writing:
            self._writing = False
            self.loop.remove_writer(self.fd)
        if self._paused:
            self._check_pause()
        if self.draining and not self._slots:
            self.close(None)

    def _on_writable(self) -> None:
        self._flush()

    @property
    def paused(self) -> bool:
        """Reading is paused: too many responses or response bytes are owed (queued.max.requests)."""
        return self._paused

    @property
    def idle(self) -> bool:
        """No answer owed and nothing left to write."""
        return not self._slots and not self._out

    # ---- lifecycle -----------------------------------------------------
    def drain(self) -> None:
        """Shutdown: read nothing more; close once every answer is written."""
        self.draining = True
        self._stop_reading()
        if self.idle:
            self.close(None)

    def close(self, reason: str | None) -> None:
        """Close the socket (logging `reason` when given) and cancel the connection's pending work."""
        if self.closed:
            return
        self.closed = True
        if self._muted:
            self._muted.cancel()
            self._muted = None
        if reason:
            log.warning("closing connection from %s: %s", self.peer, reason)
        else:
            log.debug("connection from %s closed", self.peer)
        self._stop_reading()
        if self._writing or self.handshaking:
            self._writing = False
            self.loop.remove_writer(self.fd)
            self.loop.remove_reader(self.fd)
        for t in list(self.tasks):
            t.cancel()
        self._slots.clear()
        for item in self._out:
            if isinstance(item, _FileRange):
                item.release()
        self._out.clear()
        if self.tls and not self.handshaking:
            # end the TLS session as Kafka does: our close_notify (answering the client's, or first);
            # the socket is non-blocking, so this never waits for the client's
            try:
                self.sock.unwrap()
            except (ssl.SSLError, OSError, ValueError):
                pass
        try:
            self.sock.close()
        except OSError:
            pass
        self.server.connections.discard(self)
        self._release_pool()
        if self.counted:
            self.counted = False
            self.server.limits.release(self.limit_host)


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
        self._dispatch = dispatch
        self.max_request_bytes = max_request_bytes
        self.send_buffer = send_buffer
        self.recv_buffer = recv_buffer
        self.connections: set[Connection] = set()
        self.lsock: socket.socket | None = None
        self.port = 0

    def dispatch(self, conn: Connection, frame: bytearray) -> None:
        """Hand one request frame to the broker."""
        self._dispatch(conn, frame)

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

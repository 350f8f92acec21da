"""One client connection of the broker's socket layer (see server.py): reading size-prefixed frames,
back-pressure, TLS, and writing the responses in request order with sendfile for file ranges."""
from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import ssl
import struct
import threading
from collections import deque
from typing import Any, Callable, Protocol

log = logging.getLogger("pylog.broker")

_SIZE = struct.Struct(">i")
_PEER_GONE = (errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED)  # the client went away: not an error
_RECV_CHUNK = 64 * 1024  # one receive buffer per event-loop thread; larger frames get their own
# stop reading a connection while this many responses (queued.max.requests) or bytes are queued on it
_MAX_SLOTS = 500
_MAX_QUEUED_BYTES = 8 * 1024 * 1024
_IOV_MAX = 512
_TLS_CHUNK = 256 * 1024  # file bytes read per write on a TLS connection
_TLS_READS_PER_WAKEUP = 128  # TLS records read before other connections get a turn
# librdkafka leaves Nagle on: the tail of a large request waits for our ACK,
# which delayed ACK can hold back ~40 ms. Re-arming quick ACK after each read
# (Linux resets it) answers at once; elsewhere the option does not exist.
_QUICKACK = getattr(socket, "TCP_QUICKACK", None)


class _RecvBuffer(threading.local):
    """One event-loop thread's receive buffer, shared by its connections: whole frames are copied
    out of it, a partial frame's bytes stay with their connection, an idle one holds no buffer."""

    def __init__(self):
        self.view = memoryview(bytearray(_RECV_CHUNK))
        self.busy = False  # a read under way on this thread (reads run only from loop callbacks)

    def take(self) -> memoryview:
        if self.busy:  # never expected; a private buffer keeps the other read's bytes intact
            return memoryview(bytearray(_RECV_CHUNK))
        self.busy = True
        return self.view

    def give(self, view: memoryview) -> None:
        if view is self.view:
            self.busy = False


_RECV = _RecvBuffer()


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


class ConnectionOwner(Protocol):
    """What a connection needs of the server that accepted it (server.Server)."""

    loop: asyncio.AbstractEventLoop
    listener: Any  # the listener's runtime (net.sasl.ListenerRuntime) or None
    limits: Any  # net.conn_limits.ConnectionLimits or None
    max_request_bytes: int
    connections: set
    dispatch: Callable[[Connection, bytearray], None]  # where each request frame goes


class Connection:
    """One client socket: frames in, ordered responses out."""

    def __init__(self, server: ConnectionOwner, sock: socket.socket, peer: str):
        self.server = server
        self.loop = server.loop
        self.sock = sock
        self.fd = sock.fileno()
        self.peer = peer
        self.closed = False
        self._rest = b""  # unparsed input kept between reads: the start of a frame, usually none
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
        if self._big is not None:
            return self._read_big()
        view = _RECV.take()
        try:
            have = len(self._rest)
            if have:
                view[:have] = self._rest
            n = self._recv(view[have:])
            if not n:
                return False
            self.last_active = self.loop.time()
            self._split_frames(view, have + n)
            return not self.closed
        finally:
            _RECV.give(view)

    def _read_big(self) -> bool:
        """A large frame is read straight into its own buffer."""
        n = self._recv(memoryview(self._big)[self._big_have:])
        if not n:
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

    def _recv(self, into: memoryview) -> int:
        """Bytes read into `into`; 0 when nothing came (the connection is closed if the peer left)."""
        try:
            n = self.sock.recv_into(into)
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return 0
        except (ssl.SSLEOFError, ssl.SSLZeroReturnError):
            self.close(None)  # the client closed its TLS session: a normal disconnect
            return 0
        except ssl.SSLError as e:
            self.close(f"TLS error: {e.reason or e}")
            return 0
        except OSError as e:
            # a client that resets instead of closing (librdkafka often does) is leaving, not failing
            self.close(None if e.errno in _PEER_GONE else f"read failed: {e.strerror or e}")
            return 0
        if n == 0:
            self.close(None)
        return n

    def _split_frames(self, view: memoryview, end: int) -> None:
        """Dispatch the whole frames in view[:end] (the kept bytes, then what was read); keep the
        rest. Responses to the requests of one read go out in one sendmsg."""
        self._batching = True
        try:
            self._split_frames_inner(view, end)
        except FrameError as e:
            self.close(str(e))
        finally:
            self._batching = False
        if self._out and not self._writing and not self.closed:
            self._flush()

    def _split_frames_inner(self, view: memoryview, end: int) -> None:
        pos = 0
        max_size = self.server.max_request_bytes
        while end - pos >= 4 and not self.closed and not self.draining:
            (size,) = _SIZE.unpack_from(view, pos)
            if size < 0 or size > max_size:
                raise FrameError(f"request size {size} is outside 0..{max_size} (socket.request.max.bytes)")
            if end - pos - 4 >= size:
                frame = bytearray(view[pos + 4 : pos + 4 + size])
                pos += 4 + size
                self.server.dispatch(self, frame)
                continue
            if size + 4 > len(view):
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
        self._rest = bytes(view[pos:end]) if end > pos else b""
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
        view = _RECV.take()
        try:
            view[:len(self._rest)] = self._rest
            self._split_frames(view, len(self._rest))
        finally:
            _RECV.give(view)
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
        for hook in getattr(self, "close_hooks", ()):  # e.g. share sessions end with their connection
            hook()
        self._release_pool()
        if self.counted:
            self.counted = False
            self.server.limits.release(self.limit_host)

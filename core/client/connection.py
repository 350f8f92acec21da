"""One asyncio connection to one broker.

Size-prefixed framing, pipelined requests matched to responses by
correlation id (Kafka answers in request order on a connection), ApiVersions
negotiation on connect (each API is then spoken at the highest version both
sides support, capped by CLIENT_MAX_VERSIONS), and request timeouts: a request
that times out closes the connection, as in the Java client, since every
request pipelined behind it is then suspect.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import os
import ssl
import struct

from pylog.core import about, protocol
from pylog.core.client.errors import ConnectionFailedError, KafkaTimeoutError
from pylog.core.errors import ErrorCode, UnsupportedVersionError, error_for_code

log = logging.getLogger(__name__)

_I32 = struct.Struct(">i")
_READ_LIMIT = 1 << 22  # StreamReader limit: see connect()

# Versions the client code knows how to fill and read. Fetch stops at 12 and
# Produce at 12 because later versions address topics by id only.
CLIENT_MAX_VERSIONS = {
    "Produce": 11,
    "Fetch": 12,
    "ListOffsets": 8,
    "Metadata": 12,
    "ApiVersions": 3,
    "CreateTopics": 7,
    "DeleteTopics": 5,
    "InitProducerId": 4,
    "OffsetForLeaderEpoch": 4,
    "DescribeConfigs": 4,
    "AlterConfigs": 2,
    "IncrementalAlterConfigs": 1,
    "CreatePartitions": 3,
    "FindCoordinator": 4,
    "OffsetCommit": 8,
    "OffsetFetch": 8,
    # transaction.version 1's client: partitions and offsets added explicitly, names not ids
    "AddPartitionsToTxn": 3,
    "AddOffsetsToTxn": 3,
    "EndTxn": 4,
    "TxnOffsetCommit": 4,
}


class BrokerConnection:
    """A pipelined connection. `request()` is a coroutine returning the decoded body dict."""

    def __init__(self, host: str, port: int, *, client_id: str = "pylog", node_id: int = -1,
                 request_timeout_ms: int = 30000, connect_timeout_ms: int = 10000, security=None):
        self.security = security  # core.security.client.ClientSecurity or None (PLAINTEXT)
        self.host = host
        self.port = port
        self.node_id = node_id
        self.client_id = client_id
        self.request_timeout = request_timeout_ms / 1000.0
        self.connect_timeout = connect_timeout_ms / 1000.0
        self.versions: dict[int, int] = {}  # api_key -> negotiated version
        self.broker_ranges: dict[int, tuple[int, int]] = {}
        self._reader = None
        self._writer = None
        self._fd = -1  # the plaintext socket's descriptor, for gathering writes (-1: TLS)
        self._pending: collections.deque = collections.deque()
        self._corr = 0
        self._read_task = None
        self.closed = False
        self.error: BaseException | None = None
        # KIP-219: a response's throttle_time_ms holds back this connection's next requests
        self.throttled_until = 0.0  # loop time
        self.throttle_ms_max = 0  # the longest throttle time a response asked for
        self._gate = asyncio.Lock()
        self._gate_waiters = 0

    def __repr__(self):
        return f"<BrokerConnection node={self.node_id} {self.host}:{self.port}>"

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self.closed

    async def connect(self) -> None:
        try:
            self._reader, self._writer = await asyncio.wait_for(
                # a StreamReader pauses the socket above 2 x limit bytes buffered; fetch
                # responses run to megabytes, and the default 64 KiB limit paused and
                # resumed reading every 128 KiB of them
                asyncio.open_connection(self.host, self.port, limit=_READ_LIMIT, **self._tls_args()),
                self.connect_timeout)
        except asyncio.TimeoutError:
            raise ConnectionFailedError(f"connection to {self.host}:{self.port} timed out") from None
        except ssl.SSLError as e:
            raise ConnectionFailedError(f"TLS handshake with {self.host}:{self.port} failed: {e.reason or e}") from None
        except OSError as e:
            raise ConnectionFailedError(
                f"cannot connect to {self.host}:{self.port}: {e.strerror or e}") from None
        sock = self._writer.get_extra_info("socket")
        if sock is not None:
            import socket
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
            if not self._tls_args():
                self._fd = sock.fileno()
        self._read_task = asyncio.get_running_loop().create_task(self._read_loop())
        await self._negotiate()
        if self.security is not None and self.security.sasl:
            await self._authenticate()

    def _tls_args(self) -> dict:
        ctx = self.security.ssl_context if self.security is not None else None
        return {"ssl": ctx, "server_hostname": self.host} if ctx is not None else {}

    async def _authenticate(self) -> None:
        """SaslHandshake v1 then SaslAuthenticate rounds (KIP-152), as the Java client does."""
        from pylog.core.security import plain, scram

        sec = self.security
        r = await self._send(protocol.API_KEYS["SaslHandshake"], 1, {"mechanism": sec.mechanism})
        if r.get("error_code"):
            self._fail(ConnectionFailedError("SASL handshake refused"))
            raise error_for_code(r["error_code"], f"SASL mechanism {sec.mechanism} refused by {self.host}:{self.port}"
                                 f" (it offers {', '.join(r.get('mechanisms') or []) or 'none'})")
        key = protocol.API_KEYS["SaslAuthenticate"]
        version = min(2, self.broker_ranges.get(key, (0, 2))[1])

        async def round_trip(token: bytes) -> bytes:
            resp = await self._send(key, version, {"auth_bytes": token})
            if resp.get("error_code"):
                msg = resp.get("error_message") or "SASL authentication failed"
                self._fail(ConnectionFailedError(msg))
                raise error_for_code(resp["error_code"], msg)
            return resp.get("auth_bytes") or b""

        if sec.mechanism == "PLAIN":
            await round_trip(plain.client_message(sec.username, sec.password))
            return
        client = scram.ScramClient(scram.MECHANISMS[sec.mechanism], sec.username, sec.password)
        server_first = await round_trip(client.first())
        try:
            final = client.final(server_first)
            client.verify(await round_trip(final))
        except scram.ScramError as e:
            self._fail(ConnectionFailedError(str(e)))
            raise error_for_code(58, str(e)) from None

    async def _negotiate(self) -> None:
        key = protocol.API_KEYS["ApiVersions"]
        ours = protocol.SCHEMAS[key]
        version = min(ours.max_version, CLIENT_MAX_VERSIONS["ApiVersions"])
        body = {"client_software_name": "pylog", "client_software_version": about.version()}
        try:
            resp = await self._send(key, version, body)
        except Exception:
            resp = None
        if resp is None or resp.get("error_code") == ErrorCode.UNSUPPORTED_VERSION or not resp.get("api_keys"):
            # the broker does not speak our version: v0 is understood by everyone
            if self.closed:
                raise self.error or ConnectionFailedError(f"connection to {self.host}:{self.port} closed")
            resp = await self._send(key, 0, {})
        if resp.get("error_code"):
            raise error_for_code(resp["error_code"], "ApiVersions failed")
        for ent in resp["api_keys"]:
            k = ent["api_key"]
            self.broker_ranges[k] = (ent["min_version"], ent["max_version"])
            schema = protocol.SCHEMAS.get(k)
            if schema is None:
                continue
            hi = min(schema.max_version, ent["max_version"],
                     CLIENT_MAX_VERSIONS.get(schema.name, schema.max_version))
            lo = max(schema.min_version, ent["min_version"])
            if hi >= lo:
                self.versions[k] = hi

    def version(self, api_name: str) -> int:
        key = protocol.API_KEYS[api_name]
        v = self.versions.get(key)
        if v is None:
            raise UnsupportedVersionError(
                f"broker {self.host}:{self.port} supports no version of {api_name} this client speaks")
        return v

    def supports(self, api_name: str) -> bool:
        return protocol.API_KEYS[api_name] in self.versions

    async def request(self, api_name: str, body: dict, *, version: int | None = None,
                      expect_response: bool = True, timeout: float | None = None) -> dict | None:
        key = protocol.API_KEYS[api_name]
        if version is None:
            version = self.version(api_name)
        return await self._send(key, version, body, expect_response, timeout)

    async def _send(self, key, version, body, expect_response=True, timeout=None):
        if self._gate_waiters or self.throttled_until > asyncio.get_running_loop().time():
            await self._wait_throttle()
        if self.closed:
            raise self.error or ConnectionFailedError(f"connection to {self.host}:{self.port} is closed")
        self._corr = (self._corr + 1) & 0x7FFFFFFF
        corr = self._corr
        pieces = protocol.encode_request_parts(key, version, corr, self.client_id, body)
        fut = None
        if expect_response:
            fut = asyncio.get_running_loop().create_future()
            self._pending.append((corr, key, version, fut))
        transport = self._writer.transport
        if len(pieces) == 1:
            transport.write(pieces[0])
        else:
            self._write_pieces(transport, pieces)
        if transport.get_write_buffer_size() > 1 << 20:
            try:
                await self._writer.drain()
            except (ConnectionError, OSError) as e:
                self._fail(ConnectionFailedError(f"connection to {self.host}:{self.port} lost: {e}"))
        if fut is None:
            return None
        t = self.request_timeout if timeout is None else timeout
        try:
            return await asyncio.wait_for(asyncio.shield(fut), t)
        except asyncio.TimeoutError:
            self._fail(KafkaTimeoutError(
                f"request {protocol.API_NAMES.get(key, key)} to node {self.node_id} ({self.host}:{self.port}) "
                f"timed out after {int(t * 1000)} ms"))
            raise self.error from None

    def _write_pieces(self, transport, pieces) -> None:
        """A frame in pieces (the request around its record sets) in one gathering write
        when nothing waits in the transport before it: the producer's batches go from their
        buffers to the socket, never joined into a frame. What the socket does not take now
        is queued joined (a copy), so no piece is referenced after this returns."""
        sent = 0
        if self._fd >= 0 and not transport.get_write_buffer_size() and not transport.is_closing():
            try:
                sent = os.writev(self._fd, pieces)
            except OSError:  # a full socket, or one the transport's write below reports on
                sent = 0
        rest = []
        for p in pieces:
            n = len(p)
            if sent >= n:
                sent -= n
                continue
            rest.append(memoryview(p)[sent:] if sent else p)
            sent = 0
        if rest:
            transport.write(b"".join(rest))

    async def _read_loop(self):
        reader = self._reader
        try:
            while True:
                head = await reader.readexactly(4)
                (size,) = _I32.unpack(head)
                frame = await reader.readexactly(size)
                if not self._pending:
                    raise ConnectionFailedError(f"unexpected response from {self.host}:{self.port}")
                corr, key, version, fut = self._pending.popleft()
                (got,) = _I32.unpack_from(frame, 0)
                if got != corr:
                    raise ConnectionFailedError(
                        f"correlation id mismatch from {self.host}:{self.port}: expected {corr}, got {got}")
                if fut.done():
                    continue
                try:
                    _, body = protocol.decode_response(key, version, frame)
                except Exception as e:  # a body we cannot read: fail that request only
                    fut.set_exception(e)
                    continue
                throttle = body.get("throttle_time_ms") if type(body) is dict else None
                if throttle:
                    self._throttled(throttle)
                fut.set_result(body)
        except asyncio.CancelledError:
            self._fail(ConnectionFailedError(f"connection to {self.host}:{self.port} closed"))
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            self._fail(ConnectionFailedError(
                f"connection to node {self.node_id} ({self.host}:{self.port}) lost"))
        except Exception as e:
            self._fail(e if isinstance(e, ConnectionFailedError) else ConnectionFailedError(str(e)))

    async def _wait_throttle(self) -> None:
        """Wait out the throttle time, in a FIFO queue: requests leave in the order they came
        (an idempotent producer's batches must reach the broker in sequence order)."""
        self._gate_waiters += 1
        try:
            async with self._gate:
                wait = self.throttled_until - asyncio.get_running_loop().time()
                if wait > 0:
                    await asyncio.sleep(wait)
        finally:
            self._gate_waiters -= 1

    def _throttled(self, ms: int) -> None:
        self.throttle_ms_max = max(self.throttle_ms_max, ms)
        until = asyncio.get_running_loop().time() + ms / 1000.0
        if until > self.throttled_until:
            self.throttled_until = until
            log.debug("node %s throttled this client for %d ms", self.node_id, ms)

    def _fail(self, exc: BaseException):
        if self.closed:
            return
        self.closed = True
        self.error = exc
        while self._pending:
            _, _, _, fut = self._pending.popleft()
            if not fut.done():
                fut.set_exception(exc)
                # a request that timed out is awaited by no one (its waiter left through
                # asyncio.shield); its caller already has the error, so nothing is logged at GC
                fut.exception()
        if self._writer is not None:
            try:
                self._writer.close()
            except Exception:
                pass
        task = self._read_task
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def close(self):
        self._fail(ConnectionFailedError(f"connection to {self.host}:{self.port} closed"))
        if self._writer is not None:
            try:
                await asyncio.wait_for(self._writer.wait_closed(), 1.0)
            except Exception:
                pass

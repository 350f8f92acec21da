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
            self.serve(client, upstream)

    def serve(self, client: socket.socket, upstream: socket.socket) -> None:
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


PRODUCE = 0
LAST_OFFSET_DELTA = 23  # in a v2 record batch header: baseOffset(8) batchLength(4) epoch(4) magic(1) crc(4) attributes(2)


def record_count(records) -> int:
    """Records in a record set of v2 batches (each batch's lastOffsetDelta + 1)."""
    data, pos, n = bytes(records or b""), 0, 0
    while pos + 61 <= len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        (delta,) = struct.unpack_from(">i", data, pos + LAST_OFFSET_DELTA)
        n += delta + 1
        pos += 12 + length
    return n


class DroppingProxy(LyingProxy):
    """A proxy that acknowledges some produce requests itself and never forwards them: the
    producer is told its records are at the partition's next offsets, which the broker then gives
    to the next records sent. Only non-transactional requests, every `every`-th, at most `limit`,
    and only for partitions whose next offset it has learnt from the broker's answers. Its own
    answers go back in request order."""

    def __init__(self, every: int = 15, limit: int = 3):
        super().__init__()
        self.every, self.limit = every, limit
        self.produces = self.dropped = 0
        self.next_offset: dict[tuple, int] = {}
        self.lock = threading.Lock()

    def serve(self, client: socket.socket, upstream: socket.socket) -> None:
        queue: list = []  # the connection's requests in order: (api_key, version, counts, made-up answer)
        threading.Thread(target=self.requests, args=(client, upstream, queue), daemon=True).start()
        threading.Thread(target=self.answers, args=(upstream, client, queue), daemon=True).start()

    def requests(self, src: socket.socket, dst: socket.socket, queue: list) -> None:
        from pylog.core.protocol.codec import decode_request, encode_response

        try:
            while True:
                head = _exact(src, 4)
                frame = _exact(src, struct.unpack(">i", head)[0])
                api_key, version = struct.unpack_from(">hh", frame, 0)
                if api_key != PRODUCE:
                    with self.lock:
                        queue.append((api_key, version, None, None))
                    dst.sendall(head + frame)
                    continue
                req = decode_request(frame)
                counts = {(t["name"] or t["topic_id"], p["index"]): record_count(p["records"])
                          for t in req.body["topic_data"] for p in t["partition_data"]}
                with self.lock:
                    self.produces += 1
                    drop = (req.body["transactional_id"] is None and self.dropped < self.limit
                            and self.produces % self.every == 0 and all(tp in self.next_offset for tp in counts)
                            and not any(e[0] == PRODUCE for e in queue))
                    if not drop:
                        queue.append((api_key, version, counts, None))
                        dst.sendall(head + frame)
                        continue
                    self.dropped += 1
                    body = {"responses": [{"name": t["name"], "topic_id": t["topic_id"], "partition_responses": [
                        {"index": p["index"], "error_code": 0,
                         "base_offset": self.next_offset[(t["name"] or t["topic_id"], p["index"])],
                         "log_append_time_ms": -1, "log_start_offset": 0, "record_errors": [], "error_message": None}
                        for p in t["partition_data"]]} for t in req.body["topic_data"]], "throttle_time_ms": 0}
                    answer = encode_response(PRODUCE, version, req.correlation_id, body)
                    if queue:
                        queue.append((api_key, version, None, answer))
                    else:
                        src.sendall(answer)
        except OSError:
            pass
        finally:
            _close(src, dst)

    def answers(self, src: socket.socket, dst: socket.socket, queue: list) -> None:
        from pylog.core.protocol.codec import decode_response

        try:
            while True:
                head = _exact(src, 4)
                frame = _exact(src, struct.unpack(">i", head)[0])
                with self.lock:
                    api_key, version, counts, _ = queue.pop(0)
                    if api_key == PRODUCE:
                        _, body = decode_response(PRODUCE, version, frame)
                        for t in body["responses"]:
                            for p in t["partition_responses"]:
                                tp = (t["name"] or t["topic_id"], p["index"])
                                if p["error_code"] == 0 and tp in counts:
                                    self.next_offset[tp] = p["base_offset"] + counts[tp]
                    dst.sendall(head + frame)
                    while queue and queue[0][3] is not None:
                        dst.sendall(queue.pop(0)[3])
        except OSError:
            pass
        finally:
            _close(src, dst)

"""The metrics listener (`metrics.listener=http://HOST:PORT`): /metrics, /health, /ready.

A small HTTP/1.1 server on the broker's event loop (one request per
connection, then close): scraping reads the broker's state on the same loop
that changes it, so no lock is needed and no thread can see half an update.

- /metrics: Prometheus text format (prometheus-client renders it) of
  metrics.collect().
- /health: liveness; 200 while the broker serves, 503 once it is stopping.
- /ready: 200 when the log dirs are loaded, every listener accepts and at
  least one log dir is online; 503 with the reasons otherwise.
- /faults: the fault rules (GET, POST, DELETE; see request_faults.http), only
  with faults.enable=true; 403 otherwise.
Both health answers carry the JSON that `pylog broker status` prints.
"""
from __future__ import annotations

import asyncio
import json
import logging
import time
from urllib.parse import urlsplit

from pylog.broker.ops.metrics import collect, log_dir_states
from pylog.core.errors import UsageError
from pylog.broker.api.context import NodeView


log = logging.getLogger("pylog.broker")

_MAX_HEAD = 8192
_READ_TIMEOUT_S = 10.0


def parse_metrics_listener(value: str) -> tuple[str, int]:
    """`http://HOST:PORT` -> (host, port); a usage error naming the property otherwise."""
    u = urlsplit(value)
    try:
        port = u.port
    except ValueError:
        port = None
    if u.scheme != "http" or not u.hostname or port is None or u.path not in ("", "/"):
        raise UsageError(f"metrics.listener={value!r}: expected http://HOST:PORT")
    return u.hostname, port


def status_snapshot(broker: NodeView) -> dict:
    """What /health, /ready and `pylog broker status` report."""
    dirs = log_dir_states(broker)
    listeners = []
    for spec, server in zip(broker.settings.listeners, broker.servers):
        listeners.append({"name": spec.name, "host": spec.host, "port": spec.port,
                          "up": server.lsock is not None, "connections": len(server.connections)})
    reasons = []
    if broker.logs is None or not broker.logs.started:
        reasons.append("log dirs not loaded")
    if not listeners or not all(x["up"] for x in listeners):
        reasons.append("listeners not accepting")
    if dirs and not any(d["online"] for d in dirs):
        reasons.append("every log dir is offline")
    if broker.stopping:
        reasons.append("shutting down")
    gc = broker.group_coordinator
    logs = broker.logs.all_logs() if broker.logs is not None else []
    return {
        "node_id": broker.node_id,
        "cluster_id": broker.cluster_id,
        "uptime_s": round(time.time() - broker.stats.started, 1),
        "live": not broker.stopping,
        "ready": not reasons,
        "reasons": reasons,
        "listeners": listeners,
        "log_dirs": dirs,
        "topics": len(broker.logs.topics) if broker.logs is not None else 0,
        "partitions": len(logs),
        "groups": len(gc.all_groups()) if gc is not None else 0,
        "totals": broker.stats.totals(),
    }


class _Collector:
    def __init__(self, broker: NodeView):
        self.broker = broker

    def collect(self):
        return collect(self.broker)


class MetricsListener:
    """The HTTP listener; start() binds (the port in `port` when 0 was asked), stop() closes."""

    def __init__(self, broker: NodeView, url: str):
        self.broker = broker
        self.host, self.port = parse_metrics_listener(url)
        self._server: asyncio.base_events.Server | None = None
        self._registry = None

    async def start(self) -> int:
        """Bind and serve; returns the bound port."""
        from prometheus_client import CollectorRegistry

        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(_Collector(self.broker))
        self._server = await asyncio.start_server(self._serve, self.host, self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        """Stop accepting; requests in progress finish on their own."""
        if self._server is not None:
            self._server.close()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _READ_TIMEOUT_S)
            line = head.split(b"\r\n", 1)[0].decode("latin-1").split()
            if len(line) != 3 or not line[2].startswith("HTTP/"):
                status, ctype, body = 400, "text/plain", b"bad request\n"
            elif urlsplit(line[1]).path.rstrip("/").split("/")[:2] == ["", "faults"]:
                status, ctype, body = await self._faults(line[0], urlsplit(line[1]).path, head, reader)
            elif line[0] not in ("GET", "HEAD"):
                status, ctype, body = 405, "text/plain", b"only GET\n"
            else:
                status, ctype, body = self._answer(urlsplit(line[1]).path)
                if line[0] == "HEAD":
                    body = b""
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, ConnectionError):
            writer.close()
            return
        except Exception as e:  # noqa: BLE001 - a bug in a collector: this scrape fails, the broker stays
            log.error("metrics listener failed to answer", exc_info=e)
            status, ctype, body = 500, "text/plain", f"error: {e}\n".encode()
        reason = {200: "OK", 201: "Created", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
                  405: "Method Not Allowed", 413: "Payload Too Large", 500: "Internal Server Error",
                  503: "Service Unavailable"}[status]
        writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                     f"Connection: close\r\n\r\n".encode() + body)
        try:
            await writer.drain()
        except ConnectionError:
            pass
        writer.close()

    async def _faults(self, method: str, path: str, head: bytes, reader) -> tuple[int, str, bytes]:
        """/faults: the fault rules (request_faults.http), 403 unless faults.enable=true."""
        from pylog.broker.ops.request_faults.http import answer

        length = 0
        for h in head.split(b"\r\n")[1:]:
            name, _, value = h.partition(b":")
            if name.strip().lower() == b"content-length":
                try:
                    length = int(value.strip() or 0)
                except ValueError:
                    return 400, "text/plain", b"bad Content-Length\n"
        if length < 0 or length > _MAX_HEAD * 8:
            return 413, "text/plain", b"rule too large\n"
        body = await asyncio.wait_for(reader.readexactly(length), _READ_TIMEOUT_S) if length else b""
        return answer(self.broker.faults, method, path, body)

    def _answer(self, path: str) -> tuple[int, str, bytes]:
        if path == "/metrics":
            from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

            return 200, CONTENT_TYPE_LATEST, generate_latest(self._registry)
        if path in ("/health", "/ready"):
            snap = status_snapshot(self.broker)
            ok = snap["live"] if path == "/health" else snap["ready"]
            return (200 if ok else 503), "application/json", (json.dumps(snap) + "\n").encode()
        return 404, "text/plain", b"not found: try /metrics, /health or /ready\n"

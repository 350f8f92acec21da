"""The metrics listener (`metrics.listener=http://HOST:PORT`): /metrics, /health, /ready.

Served by pylog.web (HTTP/1.1, keep-alive) on the broker's event loop:
scraping reads the broker's state on the same loop
that changes it, so no lock is needed and no thread can see half an update.

- /metrics: Prometheus text format (prometheus-client renders it) of
  metrics.collect().
- /health: liveness; 200 while the broker serves, 503 once it is stopping.
- /ready: 200 when the log dirs are loaded, every listener accepts and at
  least one log dir is online; 503 with the reasons otherwise.
- /share-groups/GROUP: each share-partition's in-flight records (state, holder, delivery
  count, lock expiry) as JSON, read-only (broker/ops/share_view.py).
- /faults: the fault rules (GET, POST, DELETE; see request_faults.http), only
  with faults.enable=true; 403 otherwise.
Both health answers carry the JSON that `pylog broker status` prints.
"""
from __future__ import annotations

import json
import logging
import time
from urllib.parse import urlsplit

from pylog.broker.ops.metrics import MetricsView, collect, log_dir_states
from pylog.core.errors import UsageError


log = logging.getLogger("pylog.broker")

_MAX_BODY = 64 * 1024  # a fault rule is a small JSON object


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


def status_snapshot(node: MetricsView) -> dict:
    """What /health, /ready and `pylog broker status` report."""
    dirs = log_dir_states(node)
    listeners = []
    for spec, server in zip(node.settings.listeners, node.servers):
        listeners.append({"name": spec.name, "host": spec.host, "port": spec.port,
                          "up": server.lsock is not None, "connections": len(server.connections)})
    reasons = []
    if node.logs is None or not node.logs.started:
        reasons.append("log dirs not loaded")
    if not listeners or not all(x["up"] for x in listeners):
        reasons.append("listeners not accepting")
    if dirs and not any(d["online"] for d in dirs):
        reasons.append("every log dir is offline")
    stopping = node.state.stopping
    if stopping:
        reasons.append("shutting down")
    gc = node.group_coordinator
    logs = node.logs.all_logs() if node.logs is not None else []
    return {
        "node_id": node.node_id,
        "cluster_id": node.cluster_id,
        "uptime_s": round(time.time() - node.stats.started, 1),
        "live": not stopping,
        "ready": not reasons,
        "reasons": reasons,
        "listeners": listeners,
        "log_dirs": dirs,
        "topics": len(node.logs.topics) if node.logs is not None else 0,
        "partitions": len(logs),
        "groups": len(gc.all_groups()) if gc is not None else 0,
        "totals": node.stats.totals(),
    }


class _Collector:
    def __init__(self, node: MetricsView):
        self.node = node

    def collect(self):
        return collect(self.node)


class MetricsListener:
    """The HTTP listener (pylog.web) on the broker's loop; start() binds (the port in `port` when 0
    was asked), stop() stops accepting and lets requests in flight finish."""

    def __init__(self, node: MetricsView, url: str):
        self.node = node
        self.host, self.port = parse_metrics_listener(url)
        self._server = None
        self._registry = None

    def routes(self):
        from pylog.web import Routes

        routes = Routes()
        routes.add("GET", "/metrics", self._metrics)
        routes.add("GET", "/health", self._health)
        routes.add("GET", "/ready", self._health)
        routes.add("GET", "/share-groups/{group}", self._share_group)
        for path in ("/faults", "/faults/", "/faults/{rule}"):
            routes.add("*", path, self._faults)
        return routes

    async def start(self) -> int:
        """Bind and serve; returns the bound port."""
        from prometheus_client import CollectorRegistry

        from pylog.web import Limits, WebServer, middleware

        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(_Collector(self.node))
        self._server = WebServer(self.routes(), self.host, self.port, limits=Limits(max_body=_MAX_BODY),
                                 middlewares=[middleware(_plain_errors)], name="pylog-metrics")
        self.port = await self._server.start()
        return self.port

    async def stop(self) -> None:
        """Stop accepting; requests in progress finish (up to a few seconds)."""
        if self._server is not None:
            server, self._server = self._server, None
            await server.stop()

    async def _metrics(self, request):
        from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

        from pylog.web import Response

        return Response(body=generate_latest(self._registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _health(self, request):
        from pylog.web import Response

        snap = status_snapshot(self.node)
        ok = snap["live"] if request.path == "/health" else snap["ready"]
        return Response(status=200 if ok else 503, body=(json.dumps(snap) + "\n").encode(),
                        content_type="application/json")

    async def _share_group(self, request):
        """Each share-partition's in-flight records of a group, read-only (ops/share_view.py)."""
        from pylog.broker.ops.share_view import share_partitions
        from pylog.web import json_response

        group = request.match_info["group"]
        return json_response({"group_id": group, "share_partitions": share_partitions(self.node.share_coordinator, group)})

    async def _faults(self, request):
        """/faults: the fault rules (request_faults.http), 403 unless faults.enable=true."""
        from pylog.broker.ops.request_faults.http import answer
        from pylog.web import Response

        body = await request.read() if request.body_exists else b""
        status, ctype, out = answer(self.node.faults, request.method, request.path, body)
        return Response(status=status, body=out, headers={"Content-Type": ctype})


async def _plain_errors(request, handler):  # an aiohttp middleware (marked where the server is made)
    """The router's 404 and 405 as short text; a bug in a collector fails its request, not the broker."""
    from pylog.web import HTTPException, text_response

    try:
        return await handler(request)
    except HTTPException as e:
        if e.status == 404:
            return text_response(404, "not found: try /metrics, /health, /ready or /share-groups/GROUP\n")
        if e.status == 405:
            return text_response(405, "only GET\n")
        raise
    except Exception as e:  # noqa: BLE001 - a bug in a collector: this scrape fails, the broker stays
        log.error("metrics listener failed to answer %s %s", request.method, request.path, exc_info=e)
        return text_response(500, f"error: {e}\n")

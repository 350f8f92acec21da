"""Dispatch: one request frame from a connection to its handler and its answer back.

The layer between the servers (net/) and the API handlers (api/): it decodes the frame,
checks the SASL state, builds the request context, resolves topic ids to names, asks the
authorizer, runs the handler (or a fault rule around it), merges back what authorization
took out, applies client quotas, counts the request and encodes the answer, which keeps the
request's place in the connection's order.

The Broker builds one `Dispatcher` from the parts it uses (the routes: each API's handler
and the narrow view of the node its family is given; the authorizer, fault engine, quota
manager, counters, start gate, topic-id resolution and ApiVersions ranges), never from the
Broker itself. Until the whole handler table is in place, the servers call `gated`, which
holds the requests for what is still loading (node/start_gate.py); `open` replays them and
from then on the servers call `dispatch` directly.
"""
from __future__ import annotations

import asyncio
import logging
from time import perf_counter
from typing import TYPE_CHECKING, Any, Callable, Iterable

from pylog.broker.api import topic_ids
from pylog.broker.api.context import RequestContext, code_of
from pylog.broker.api.handlers import Handler
from pylog.broker.api.quotas import throttle
from pylog.broker.net.connection import Connection
from pylog.broker.net.sasl import raw_token
from pylog.broker.node.start_gate import StartGate
from pylog.core import protocol
from pylog.core.errors import ErrorCode
from pylog.core.protocol.apis.meta import API_VERSIONS
from pylog.core.protocol.errors import InvalidRequestError, UnknownApiKeyError, UnsupportedVersionError

if TYPE_CHECKING:
    from pylog.broker.ops.quotas import QuotaManager
    from pylog.broker.ops.request_faults import FaultEngine
    from pylog.broker.security.authorizer import Authorizer

log = logging.getLogger("pylog.broker")

_NEVER = 1 << 15  # past every version: an API that never names topics by id only
_FIRST_ID_VERSION = topic_ids.FIRST_ID_VERSION


class Dispatcher:
    """Runs each request frame through the request rules to its handler (see the module's doc).

    `routes` maps an api key to (its handler, the object the handler is called with: its
    family's view of the node); `topics` is what topic-id resolution reads (topic_by_id and
    logs.topics: common.partition_logs.PartitionLogs)."""

    def __init__(self, *, gate: StartGate, faults: FaultEngine, stats: Any, topics: Any,
                 authorizer: Authorizer | None, quotas: QuotaManager | None, api_keys: list[dict]):
        self.routes: dict[int, tuple[Handler, Any]] = {}
        self.gate = gate
        self.faults = faults
        self.stats = stats  # ops.metrics.BrokerStats (a node-wide view above this layer)
        self.topics = topics
        self.authorizer = authorizer
        self.quotas = quotas  # what throttle() reads
        self.api_keys = api_keys  # ApiVersions' ranges, for the KIP-511 fallback

    def add(self, handlers: Iterable[Handler], node_for: Callable[[Handler], Any]) -> None:
        """Serve these handlers, each called with `node_for(handler)`."""
        self.routes.update((h.key, (h, node_for(h))) for h in handlers)

    # ---- the start gate ------------------------------------------------------------------
    def gated(self, conn: Connection, frame: bytearray) -> None:
        """The servers' entry while the rest of the handler table loads."""
        sasl = conn.sasl
        if (sasl is None or not sasl.raw) and self.gate.hold(conn, frame):
            return
        self.dispatch(conn, frame)

    def open(self) -> None:
        """Every handler is in place: the held requests run, each connection's in order."""
        self.gate.open(self.dispatch)

    # ---- one request -----------------------------------------------------------------------
    def dispatch(self, conn: Connection, frame: bytearray) -> None:
        """Decode one request frame, authenticate and authorize it, run its handler; the
        answer keeps the request's place."""
        started = perf_counter()
        sasl = conn.sasl
        if sasl is not None and sasl.raw:  # a raw token after a v0 SaslHandshake
            return raw_token(conn, frame)
        try:
            req = protocol.decode_request(frame, strict=False)
        except UnsupportedVersionError as e:
            return self._unsupported(conn, e)
        except UnknownApiKeyError as e:
            return conn.close(f"unknown api key {getattr(e, 'api_key', '?')} ({e})")
        except InvalidRequestError as e:
            hdr = getattr(e, "header", None)
            what = f"{protocol.API_NAMES.get(hdr.api_key, hdr.api_key)} v{hdr.api_version}" if hdr else "request"
            log.debug("malformed frame from %s: %s", conn.peer, bytes(frame[:256]).hex())
            return conn.close(f"malformed {what}: {e}")
        except Exception as e:  # noqa: BLE001 - a codec bug on garbage input: drop only this client
            return conn.close(f"undecodable request: {e.__class__.__name__}: {e}")
        route = self.routes.get(req.api_key)
        if route is None:
            return conn.close(f"api {protocol.API_NAMES.get(req.api_key, req.api_key)} is not served by this broker")
        handler, node = route
        if sasl is not None and (why := sasl.gate(req.api_key)) is not None:
            # Kafka: any other request before authentication, or after the session expired, ends it
            return conn.close(f"unexpected {handler.schema.name} request {why}")
        ctx = object.__new__(RequestContext)  # filled in place: no __init__ call per request
        ctx.api_key, ctx.api_version, ctx.correlation_id, ctx.client_id, ctx.conn = \
            req.api_key, req.api_version, req.correlation_id, req.client_id, conn
        # the decoder checked the version against the schema, which is what we advertise;
        # authorization runs here, before the handler: it refuses the request or takes
        # out what the principal may not touch (their error entries are merged back)
        body, denied = req.body, None
        # topics named by id (Produce 13, OffsetCommit 10, ...): names for the rules and handlers
        complete = None
        if req.api_version >= _FIRST_ID_VERSION.get(req.api_key, _NEVER):
            body, complete = topic_ids.resolve(self.topics, ctx.api_key, ctx.api_version, body)
        authorizer = self.authorizer
        if authorizer is not None:
            try:
                body, denied = authorizer.check(ctx, handler, body)
            except Exception as e:  # noqa: BLE001 - a bug in a rule: this request fails, the broker stays
                return conn.fill(conn.reserve(), self._encode(conn, ctx, self._handler_error(handler, ctx, body, e)))
            if body is None:
                if complete is not None:
                    denied = complete(denied)
                self.stats.request_done(ctx.api_key, ctx.api_version, started, denied)
                return conn.fill(conn.reserve(), self._encode(conn, ctx, denied))
        try:
            rules = self.faults.table.get(req.api_key)
            result = handler.handle(node, ctx, body) if rules is None else \
                self.faults.run(rules, node, handler, ctx, body)
        except Exception as e:  # noqa: BLE001
            result = self._handler_error(handler, ctx, body, e)
        if denied is not None and result is not None:
            if isinstance(result, dict):
                result = authorizer.merge(ctx, result, denied)
            else:
                result = self._merge_later(result, ctx, denied)
        if complete is not None and result is not None:
            result = complete(result) if isinstance(result, dict) else self._complete_later(result, complete)
        if self.quotas is not None and self.quotas.active:
            result = throttle(self, ctx, len(frame), started, result)
        if result is None or isinstance(result, dict):
            self.stats.request_done(ctx.api_key, ctx.api_version, started, result)
            if result is not None:
                conn.fill(conn.reserve(), self._encode(conn, ctx, result))
            return
        self._answer_later(conn, handler, ctx, req.body, result, started)

    def _answer_later(self, conn: Connection, handler: Handler, ctx: RequestContext, body: dict, result,
                      started: float) -> None:
        """An awaitable answer (long poll, rebalance) keeps its place in the connection's order."""
        slot = conn.reserve()
        task = asyncio.ensure_future(result)
        conn.tasks.add(task)

        def done(t: asyncio.Future) -> None:
            conn.tasks.discard(t)
            if t.cancelled() or conn.closed:
                return
            exc = t.exception()
            res = self._handler_error(handler, ctx, body, exc) if exc else t.result()
            self.stats.request_done(ctx.api_key, ctx.api_version, started, res)
            conn.fill(slot, [] if res is None else self._encode(conn, ctx, res))

        task.add_done_callback(done)

    async def _merge_later(self, awaitable, ctx: RequestContext, denied):
        res = await awaitable
        return None if res is None else self.authorizer.merge(ctx, res, denied)

    @staticmethod
    async def _complete_later(awaitable, complete):
        res = await awaitable
        return None if res is None else complete(res)

    def respond_and_close(self, ctx: RequestContext, body: dict, reason: str) -> None:
        """Answer this request, then close the connection once the answer is written."""
        conn = ctx.conn
        conn.fill(conn.reserve(), self._encode(conn, ctx, body))
        log.info("closing connection from %s: %s", conn.peer, reason)
        conn.drain()

    @staticmethod
    def _handler_error(handler: Handler, ctx: RequestContext, body: dict, exc: BaseException) -> dict:
        code, msg = code_of(exc)
        if code == ErrorCode.UNKNOWN_SERVER_ERROR:
            log.error("%s v%d from %s failed", handler.schema.name, ctx.api_version, ctx.conn.peer, exc_info=exc)
        return handler.error(body, ctx.api_version, code, msg)

    @staticmethod
    def _encode(conn: Connection, ctx: RequestContext, body: dict) -> list:
        """The response as parts: bytes, and file slices the server sends with sendfile
        (a fetch's record sets; any other response is one bytes part)."""
        try:
            _, parts = protocol.encode_response_parts(ctx.api_key, ctx.api_version, ctx.correlation_id, body)
            return parts
        except Exception as e:  # noqa: BLE001 - a response we cannot encode is a bug; drop the client
            log.error("cannot encode %s v%d response", protocol.API_NAMES.get(ctx.api_key), ctx.api_version,
                      exc_info=e)
            conn.close(f"internal error encoding the response: {e}")
            return []

    def _unsupported(self, conn: Connection, e: UnsupportedVersionError) -> None:
        hdr = getattr(e, "header", None)
        if hdr is None:
            return conn.close(f"unsupported request: {e}")
        if hdr.api_key == API_VERSIONS.key:
            return self._api_versions_fallback(conn, hdr.correlation_id)
        name = protocol.API_NAMES.get(hdr.api_key, hdr.api_key)
        conn.close(f"{name} v{hdr.api_version} is not supported (client should have checked ApiVersions)")

    def _api_versions_fallback(self, conn: Connection, correlation_id: int) -> None:
        """KIP-511: a too-new ApiVersions gets a v0 answer with our ranges so the client can retry."""
        body = {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": self.api_keys}
        conn.fill(conn.reserve(), [protocol.encode_response(API_VERSIONS.key, 0, correlation_id, body)])

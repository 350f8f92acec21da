"""The broker: storage, the API table, request dispatch, timers, shutdown."""
from __future__ import annotations

import asyncio
import importlib
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from pylog.commands.broker.apis import Api, RequestContext, code_of
from pylog.commands.broker.producer_ids import ProducerIdManager
from pylog.commands.broker.server import Connection, Server
from pylog.commands.broker.settings import BrokerSettings
from pylog.core import protocol
from pylog.core.protocol.errors import InvalidRequestError, UnknownApiKeyError, UnsupportedVersionError

log = logging.getLogger("pylog.broker")

API_VERSIONS_KEY = 18
UNSUPPORTED_VERSION = 35
HANDLER_MODULES = (
    "pylog.commands.broker.apis_meta",
    "pylog.commands.broker.apis_produce",
    "pylog.commands.broker.apis_fetch",
    "pylog.commands.broker.apis_admin",
    "pylog.commands.broker.apis_configs",
    "pylog.commands.broker.group_coordinator",
)


class Broker:
    def __init__(self, settings: BrokerSettings):
        self.settings = settings
        self.config = settings.config
        self.node_id = settings.node_id
        self.loop: asyncio.AbstractEventLoop | None = None
        self.logs = None  # storage.LogManager
        self.server: Server | None = None
        self.apis: dict[int, Api] = {}
        self.advertised: list[tuple[int, int, int]] = []
        self.producer_ids: ProducerIdManager | None = None
        self.cluster_id = ""
        self.recovery = None
        self._ids: dict[uuid.UUID, str] = {}
        self._waiters: dict[tuple[str, int], set[asyncio.Future]] = {}
        self._all_waiters: set[asyncio.Future] = set()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pylog-log-timers")
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._stop_event: asyncio.Event | None = None
        self._busy: set[str] = set()
        self._stopping = False
        self.started_at = time.time()

    # ---- start-up --------------------------------------------------------
    def open_storage(self):
        from pylog.storage import LogManager

        self.logs = LogManager(list(self.settings.log_dirs), self.config)
        self.recovery = self.logs.startup()
        metas = list(getattr(self.logs, "meta", {}).values())
        self.cluster_id = metas[0].cluster_id if metas else ""
        self.producer_ids = ProducerIdManager(self.settings.log_dirs[0])
        return self.recovery

    def register_apis(self) -> None:
        table: dict[int, Api] = {}
        for name in HANDLER_MODULES:
            for api in importlib.import_module(name).apis(self):
                table[api.key] = api
        # advertise the intersection of what the codec knows and the handler serves
        self.apis = {}
        self.advertised = []
        for key, api in sorted(table.items()):
            schema = protocol.SCHEMAS.get(key)
            if schema is None:
                continue
            lo = max(api.min_version, schema.min_version)
            hi = min(api.max_version, schema.max_version)
            if lo > hi:
                continue
            api.min_version, api.max_version = lo, hi
            self.apis[key] = api
            self.advertised.append((key, lo, hi))

    async def serve(self, ready_callback=None) -> None:
        self.loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        if self._stopping:  # a signal arrived while starting
            self._stop_event.set()
        self.register_apis()
        cfg = self.config
        self.server = Server(
            self.loop, self.dispatch, cfg["socket.request.max.bytes"],
            cfg["socket.send.buffer.bytes"] if "socket.send.buffer.bytes" in cfg.overridden else -1,
            cfg["socket.receive.buffer.bytes"] if "socket.receive.buffer.bytes" in cfg.overridden else -1,
        )
        port = self.server.listen(self.settings.host, self.settings.port)
        if self.settings.advertised_port is None:
            self.settings.advertised_port = port
        self._start_timers()
        if ready_callback:
            ready_callback(port)
        await self._stop_event.wait()
        await self._shutdown()

    def request_stop(self) -> None:
        if not self._stopping:
            self._stopping = True
            if self._stop_event is not None:
                self._stop_event.set()

    async def _shutdown(self) -> None:
        log.info("shutting down")
        for t in self._timers.values():
            t.cancel()
        self.server.stop_accepting()
        # long polls answer now with what they have
        for fut in list(self._all_waiters):
            if not fut.done():
                fut.set_result(None)
        await self.server.drain(timeout=10.0)
        self._executor.shutdown(wait=True)
        self.logs.shutdown()

    # ---- periodic storage work -------------------------------------------
    def _start_timers(self) -> None:
        cfg = self.config
        jobs = [
            ("retention", cfg["log.retention.check.interval.ms"], lambda: self.logs.run_retention()),
            ("checkpoints", cfg["log.flush.offset.checkpoint.interval.ms"] or 60000,
             lambda: self.logs.write_checkpoints()),
            ("delete-files", 10000, lambda: self.logs.delete_expired_files()),
            ("producer-expiration", cfg["producer.id.expiration.check.interval.ms"], self._expire_producers),
        ]
        # flush_dirty honours each topic's flush.ms; a topic may get one later
        # through AlterConfigs, so check at least every second
        flush_every = min(cfg["log.flush.scheduler.interval.ms"], 1000)
        jobs.append(("flush", flush_every, lambda: self.logs.flush_dirty()))
        for name, every_ms, fn in jobs:
            self._schedule(name, every_ms / 1000.0, fn)

    def _expire_producers(self) -> None:
        # Kafka's broker forgets producers idle for producer.id.expiration.ms; their next
        # write is then accepted at any sequence (KIP-360)
        now = int(time.time() * 1000)
        for lg in self.logs.all_logs():
            lg.producer_state.remove_expired(now)

    def _schedule(self, name: str, every: float, fn) -> None:
        def fire():
            if self._stopping:
                return
            if name not in self._busy:
                self._busy.add(name)
                fut = self.loop.run_in_executor(self._executor, self._run_job, name, fn)
                fut.add_done_callback(lambda _f: self._busy.discard(name))
            self._timers[name] = self.loop.call_later(every, fire)

        self._timers[name] = self.loop.call_later(every, fire)

    @staticmethod
    def _run_job(name: str, fn) -> None:
        try:
            fn()
        except Exception:  # noqa: BLE001 - a failed timer must not stop the broker
            log.exception("periodic %s failed", name)

    # ---- fetch long polls ------------------------------------------------
    def new_waiter(self, keys) -> asyncio.Future:
        fut = self.loop.create_future()
        for k in keys:
            self._waiters.setdefault(k, set()).add(fut)
        self._all_waiters.add(fut)
        return fut

    def drop_waiter(self, fut: asyncio.Future, keys) -> None:
        for k in keys:
            s = self._waiters.get(k)
            if s is not None:
                s.discard(fut)
                if not s:
                    del self._waiters[k]
        self._all_waiters.discard(fut)

    def wake(self, topic: str, partition: int) -> None:
        waiters = self._waiters.get((topic, partition))
        if waiters:
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    def wake_topic(self, topic: str) -> None:
        for (t, p) in list(self._waiters):
            if t == topic:
                self.wake(t, p)

    @property
    def stopping(self) -> bool:
        return self._stopping

    # ---- topics ----------------------------------------------------------
    def topic_by_id(self, topic_id: uuid.UUID):
        """Topic ids arrive in every Fetch v13+: a cached map, checked on use and rebuilt on a miss."""
        topics = self.logs.topics
        name = self._ids.get(topic_id)
        if name is not None:
            info = topics.get(name)
            if info is not None and info.topic_id == topic_id:
                return info
        self._ids = {info.topic_id: n for n, info in topics.items()}
        name = self._ids.get(topic_id)
        return topics.get(name) if name is not None else None

    # ---- dispatch --------------------------------------------------------
    def dispatch(self, conn: Connection, frame: bytearray) -> None:
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
        api = self.apis.get(req.api_key)
        if api is None:
            return conn.close(f"api {protocol.API_NAMES.get(req.api_key, req.api_key)} is not served by this broker")
        ctx = RequestContext(req.api_key, req.api_version, req.correlation_id, req.client_id, conn, len(frame))
        if not api.min_version <= req.api_version <= api.max_version:
            if req.api_key == API_VERSIONS_KEY:
                return self._api_versions_fallback(conn, req.correlation_id)
            body = api.error(req.body, req.api_version, UNSUPPORTED_VERSION, "unsupported version")
            return self._respond_now(conn, ctx, body)
        try:
            result = api.handler(ctx, req.body)
        except Exception as e:  # noqa: BLE001
            result = self._handler_error(api, ctx, req.body, e)
        if result is None:
            return
        if isinstance(result, dict):
            return self._respond_now(conn, ctx, result)
        # an awaitable: keep the response's place in the connection's order
        slot = conn.reserve()
        task = asyncio.ensure_future(result)
        conn.tasks.add(task)

        def done(t: asyncio.Future, slot=slot, ctx=ctx, body=req.body):
            conn.tasks.discard(t)
            if t.cancelled() or conn.closed:
                return
            exc = t.exception()
            res = self._handler_error(api, ctx, body, exc) if exc else t.result()
            if res is None:
                conn.fill(slot, [])
                return
            conn.fill(slot, self._encode(conn, ctx, res))

        task.add_done_callback(done)

    def _handler_error(self, api: Api, ctx: RequestContext, body: dict, exc: BaseException) -> dict:
        code, msg = code_of(exc)
        if code == -1:
            log.error("%s v%d from %s failed", protocol.API_NAMES.get(ctx.api_key), ctx.api_version,
                      ctx.conn.peer, exc_info=exc)
        return api.error(body, ctx.api_version, code, msg)

    def _respond_now(self, conn: Connection, ctx: RequestContext, body: dict) -> None:
        conn.fill(conn.reserve(), self._encode(conn, ctx, body))

    def _encode(self, conn: Connection, ctx: RequestContext, body: dict) -> list:
        try:
            if ctx.api_key == 1:  # Fetch: record bytes go out with sendfile
                _, parts = protocol.encode_response_parts(ctx.api_key, ctx.api_version, ctx.correlation_id, body)
                return parts
            return [protocol.encode_response(ctx.api_key, ctx.api_version, ctx.correlation_id, body)]
        except Exception as e:  # noqa: BLE001 - a response we cannot encode is a bug; drop the client
            log.error("cannot encode %s v%d response", protocol.API_NAMES.get(ctx.api_key), ctx.api_version,
                      exc_info=e)
            conn.close(f"internal error encoding the response: {e}")
            return []

    def _unsupported(self, conn: Connection, e: UnsupportedVersionError) -> None:
        hdr = getattr(e, "header", None)
        if hdr is None:
            return conn.close(f"unsupported request: {e}")
        if hdr.api_key == API_VERSIONS_KEY:
            return self._api_versions_fallback(conn, hdr.correlation_id)
        name = protocol.API_NAMES.get(hdr.api_key, hdr.api_key)
        conn.close(f"{name} v{hdr.api_version} is not supported (client should have checked ApiVersions)")

    def _api_versions_fallback(self, conn: Connection, correlation_id: int) -> None:
        """KIP-511: a too-new ApiVersions gets a v0 answer with our ranges so the client can retry."""
        body = {
            "error_code": UNSUPPORTED_VERSION,
            "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in self.advertised],
        }
        conn.fill(conn.reserve(), [protocol.encode_response(API_VERSIONS_KEY, 0, correlation_id, body)])

    def leader_epoch(self, log_) -> int:
        """Single node: the leader epoch never changes once the partition has data."""
        e = getattr(log_, "latest_epoch", None)
        return e if e is not None and e > 0 else 0


def check_leader_epoch(requested: int | None, current: int) -> int:
    """Error code for a client's current_leader_epoch (KIP-320)."""
    if requested is None or requested < 0 or requested == current:
        return 0
    return 75 if requested > current else 74  # UNKNOWN_LEADER_EPOCH / FENCED_LEADER_EPOCH

"""The server behind pylog.web (see the package docstring for the API).

aiohttp parses HTTP/1.1 (its C parser when built), keeps connections alive
between requests and enforces the header limits before a handler runs; this
module adds declared routes, one set of limits for every listener, TLS from
Kafka's `ssl.*` names, a graceful stop, and a thread of its own for callers
that have no event loop.

Requests go through aiohttp's low-level server (web.Server) and its router
(web.UrlDispatcher), without a web.Application: the application's per-request
work (sub-application bookkeeping, its own middleware, signals) cost about a
quarter of a small answer's CPU, and no listener here uses it. Each route's
handler is chained inside the middlewares once, when the routes are declared.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import threading
from dataclasses import dataclass

from aiohttp import web

log = logging.getLogger("pylog.web")

METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS")


@dataclass(frozen=True)
class Limits:
    """What one request may carry, and how long an idle keep-alive connection stays open."""

    max_body: int = 16 * 1024 * 1024  # bytes; more answers 413
    max_headers: int = 100  # header lines; more answers 400
    max_line: int = 8190  # bytes in the request line or one header; more answers 400
    keepalive_s: float = 75.0  # an idle connection closes after this
    shutdown_s: float = 5.0  # stop() waits this long for requests in flight


class Routes:
    """Declared routing: (method, path pattern, handler) entries, added in order."""

    def __init__(self):
        self.entries: list[tuple[str, str, object]] = []

    def add(self, method: str, path: str, handler) -> None:
        method = method.upper()
        if method not in METHODS and method != "*":
            raise ValueError(f"unknown HTTP method {method!r}")
        self.entries.append((method, path, handler))

    def route(self, method: str, path: str):
        def deco(handler):
            self.add(method, path, handler)
            return handler
        return deco

    def get(self, path: str):
        return self.route("GET", path)

    def post(self, path: str):
        return self.route("POST", path)

    def put(self, path: str):
        return self.route("PUT", path)

    def delete(self, path: str):
        return self.route("DELETE", path)

    def dispatcher(self, limits: "Limits", middlewares=()) -> "Dispatcher":
        return Dispatcher(self, limits, middlewares)


class WebRequest(web.BaseRequest):
    """aiohttp's request with the route's `match_info` (the path's placeholders, a dict)."""

    __slots__ = ("match_info",)
    ATTRS = web.BaseRequest.ATTRS | frozenset(["match_info"])


class Dispatcher:
    """Routes each request of aiohttp's low-level server: aiohttp's router (UrlDispatcher) resolves the
    declared route, then the route's handler runs inside the middlewares, chained once per route.
    An unknown path or method runs the router's 404/405 inside the same middlewares. A body over
    the limit answers 413 and closes the connection (the body was never read)."""

    def __init__(self, routes: Routes, limits: "Limits", middlewares=()):
        self.router = web.UrlDispatcher()
        self.limits = limits
        self.middlewares = tuple(middlewares)
        self.chains: dict = {}
        self.resolved: dict = {}  # (method, raw path) -> (the placeholders' values, the declared route)
        for method, path, handler in routes.entries:
            if method == "GET":
                self.router.add_get(path, handler, allow_head=True)
            else:
                self.router.add_route(method, path, handler)
        for route in self.router.routes():
            self.chains[route] = (self.chain(route.handler), self.chain(route.handler, refuse=True))

    def chain(self, handler, refuse: bool = False):
        """handler inside the middlewares, outermost first; with `refuse`, a declared body over the limit
        is refused innermost, once the middlewares (authentication) have let the request by."""
        h = functools.partial(_refuse_large, handler=handler, limits=self.limits) if refuse else handler
        for mw in reversed(self.middlewares):
            h = functools.partial(mw, handler=h)
        return h

    def request_factory(self, loop):
        max_body = self.limits.max_body

        def make(message, payload, protocol, writer, task) -> WebRequest:
            return WebRequest(message, payload, protocol, writer, task, loop, client_max_size=max_body)
        return make

    MAX_RESOLVED = 4096

    async def resolve(self, request: WebRequest, key: tuple):
        """The router's match for this method and path, kept by `key` (method, raw path) when it is a
        declared route: the router's answer depends on nothing else. Its 404s and 405s are not kept."""
        match = await self.router.resolve(request)
        if match.route in self.chains:
            if len(self.resolved) >= self.MAX_RESOLVED:
                self.resolved.clear()
            self.resolved[key] = (dict(match), match.route)
        return match

    async def __call__(self, request: WebRequest):
        key = (request.method, request.raw_path.partition("?")[0])
        kept = self.resolved.get(key)  # a match of its own for each request, from the kept one
        match = web.UrlMappingMatchInfo(*kept) if kept is not None else await self.resolve(request, key)
        request.match_info = match
        if request.headers.get("Expect"):
            resp = await match.expect_handler(request)
            await request.writer.drain()
            if resp is not None:
                return resp
        n = request.content_length
        refuse = n is not None and n > self.limits.max_body
        chains = self.chains.get(match.route)
        run = chains[refuse] if chains is not None else self.chain(match.handler, refuse)  # else: 404, 405
        try:
            resp = await run(request)
        except web.HTTPRequestEntityTooLarge:
            resp = text_response(413, f"request body over the limit of {self.limits.max_body} bytes\n")
        if resp.status == 413:
            resp.force_close()  # the body was never read: the connection cannot carry another request
        return resp


async def _refuse_large(request, handler, limits: Limits):
    """A declared Content-Length over the limit answers 413 before any handler reads the body."""
    n = request.content_length
    raise web.HTTPRequestEntityTooLarge(max_size=limits.max_body, actual_size=n)


def text_response(status: int, text: str, content_type: str = "text/plain") -> web.Response:
    return web.Response(status=status, body=text.encode(), content_type=content_type, charset="utf-8")


async def run_blocking(fn, *args, **kwargs):
    """fn(*args, **kwargs) on the loop's worker threads; the loop serves other requests meanwhile."""
    return await asyncio.get_running_loop().run_in_executor(None, functools.partial(fn, *args, **kwargs))


def tls_server_context(props: dict):
    """A server SSLContext from Kafka's `ssl.*` names (lists joined with commas)."""
    from pylog.core.security import tls

    flat = {k: (",".join(v) if isinstance(v, list) else v) for k, v in dict(props).items()
            if k.startswith("ssl.") and v is not None}
    return tls.server_context(flat)


class WebServer:
    """One listener on the running event loop: start() binds and returns the port, stop() drains."""

    def __init__(self, routes: Routes, host: str, port: int, ssl_context=None, limits: Limits = Limits(),
                 middlewares=(), name: str = "pylog-web"):
        self.routes = routes
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self.limits = limits
        self.middlewares = tuple(middlewares)
        self.name = name
        self.runner: web.ServerRunner | None = None

    @property
    def scheme(self) -> str:
        return "https" if self.ssl_context is not None else "http"

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    async def start(self) -> int:
        lim = self.limits
        dispatch = self.routes.dispatcher(lim, self.middlewares)
        server = web.Server(dispatch, request_factory=dispatch.request_factory(asyncio.get_running_loop()),
                            access_log=None, logger=log, keepalive_timeout=lim.keepalive_s,
                            max_headers=lim.max_headers, max_line_size=lim.max_line, max_field_size=lim.max_line)
        runner = web.ServerRunner(server, handle_signals=False, shutdown_timeout=lim.shutdown_s)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, ssl_context=self.ssl_context, reuse_address=True,
                           backlog=256)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self.runner = runner
        self.port = runner.addresses[0][1]
        log.debug("%s serving on %s", self.name, self.url)
        return self.port

    async def stop(self) -> None:
        """Stop accepting, let requests in flight finish (up to Limits.shutdown_s), close connections."""
        runner, self.runner = self.runner, None
        if runner is not None:
            await runner.cleanup()


def new_loop() -> asyncio.AbstractEventLoop:
    """An event loop for a server thread: uvloop's when installed (about half the CPU per request
    of asyncio's own loop), asyncio's otherwise; 32 worker threads for run_blocking."""
    from concurrent.futures import ThreadPoolExecutor

    try:
        import uvloop
    except ImportError:
        loop = asyncio.new_event_loop()
    else:
        loop = uvloop.new_event_loop()
    # run_blocking's workers: enough that many slow store writes wait side by side
    loop.set_default_executor(ThreadPoolExecutor(32, thread_name_prefix="pylog-web-worker"))
    return loop


class ThreadedWebServer:
    """A WebServer on a thread and event loop of its own, for synchronous callers."""

    def __init__(self, routes: Routes, host: str, port: int, ssl_context=None, limits: Limits = Limits(),
                 middlewares=(), name: str = "pylog-web"):
        self.server = WebServer(routes, host, port, ssl_context, limits, middlewares, name)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def url(self) -> str:
        return self.server.url

    def start(self, timeout: float = 30.0) -> int:
        """Bind and serve on the thread; raises what binding raised (a port in use)."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def run():
            loop = new_loop()
            self.loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.server.start())
            except BaseException as e:  # noqa: BLE001 - handed to the caller of start()
                failure.append(e)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
                loop.close()

        self.thread = threading.Thread(target=run, name=f"{self.server.name}-{self.server.port}", daemon=True)
        self.thread.start()
        if not ready.wait(timeout):
            raise TimeoutError(f"{self.server.name} did not start within {timeout}s")
        if failure:
            self.thread.join()
            self.thread = None
            raise failure[0]
        return self.server.port

    def call(self, coro, timeout: float | None = None):
        """Run a coroutine on the server's loop from another thread and return its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        thread, self.thread = self.thread, None
        if thread is None:
            return
        try:
            self.call(self.server.stop(), self.server.limits.shutdown_s + 10)
        except Exception as e:  # noqa: BLE001 - stopping anyway
            log.debug("%s stop: %s", self.server.name, e)
        self.loop.call_soon_threadsafe(self.loop.stop)
        thread.join(30)

"""The console's routes on pylog.web, the project's one HTTP stack: served from a thread and
event loop of its own (the broker's loop stays the broker's), each handler given the console."""
from __future__ import annotations

from pylog.web import Limits, Routes, ThreadedWebServer, middleware, text_response

MAX_BODY = 4 * 1024 * 1024  # a produced record or a schema to check


def _bound(handler, console):
    async def handle(request):
        return await handler(console, request)
    return handle


def basic_auth(users: dict):
    """HTTP basic auth over every route, with the schema registry's users (user: password)."""
    from pylog.registry.routes import basic_auth_ok

    @middleware
    async def check(request, handler):
        if basic_auth_ok(request.headers.get("Authorization"), users) is None:
            resp = text_response(401, "unauthorized\n")
            resp.headers["WWW-Authenticate"] = 'Basic realm="pylog-console"'
            return resp
        return await handler(request)
    return check


def console_server(routes, console, host: str, port: int, ssl_context=None, users: dict | None = None
                   ) -> ThreadedWebServer:
    """A ThreadedWebServer answering `routes` ([(method, path, handler(console, request))]); with
    `users`, only to those who give one's name and password."""
    declared = Routes()
    for method, path, handler in routes:
        declared.add(method, path, _bound(handler, console))
    return ThreadedWebServer(declared, host, port, ssl_context=ssl_context, limits=Limits(max_body=MAX_BODY),
                             middlewares=[basic_auth(users)] if users else (), name="pylog-console")

"""The console's routes on pylog.web, the project's one HTTP stack: served from a thread and
event loop of its own (the broker's loop stays the broker's), each handler given the console."""
from __future__ import annotations

from pylog.web import Limits, Routes, ThreadedWebServer

MAX_BODY = 4 * 1024 * 1024  # a produced record or a schema to check


def _bound(handler, console):
    async def handle(request):
        return await handler(console, request)
    return handle


def console_server(routes, console, host: str, port: int, ssl_context=None) -> ThreadedWebServer:
    """A ThreadedWebServer answering `routes` ([(method, path, handler(console, request))])."""
    declared = Routes()
    for method, path, handler in routes:
        declared.add(method, path, _bound(handler, console))
    return ThreadedWebServer(declared, host, port, ssl_context=ssl_context, limits=Limits(max_body=MAX_BODY),
                             name="pylog-console")

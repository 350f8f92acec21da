"""pylog.web: the one HTTP stack behind every HTTP endpoint pylog serves (aiohttp underneath).

The schema registry, the broker's metrics/health/admin/faults listener and the web
console all declare their routes here and run them on one server type, so
keep-alive, limits, TLS and shutdown behave the same everywhere.

    from pylog.web import Routes, Limits, WebServer, ThreadedWebServer, json_response

    routes = Routes()

    @routes.get("/things/{name}")              # aiohttp's placeholders: {name}, {tail:.*}
    async def thing(request):
        return json_response({"name": request.match_info["name"]})

    server = WebServer(routes, "127.0.0.1", 0)  # port 0: a free one
    port = await server.start()                 # serves on the running loop (the broker's)
    await server.stop()                         # graceful: stop accepting, let requests in flight finish

    threaded = ThreadedWebServer(routes, "127.0.0.1", 0)   # for synchronous callers:
    port = threaded.start()                                # its own thread and event loop
    threaded.stop()

- `Routes`: declared routing; `get` (also answers HEAD), `post`, `put`, `delete`,
  `route(method, path)` as decorators or `add(method, path, handler)`. Handlers are
  aiohttp handlers: `async def h(request) -> Response`.
- `Limits(max_body, max_headers, max_line, keepalive_s)`: a body over max_body answers
  413, more than max_headers header lines or a line over max_line answers 400 (the
  parser refuses the request before any handler runs); idle keep-alive connections
  close after keepalive_s.
- `WebServer(routes, host, port, ssl_context=None, limits=Limits(), middlewares=(), name=...)`:
  HTTP/1.1 with keep-alive; `ssl_context` makes it https. `url` is the bound address.
- `tls_server_context(props)`: a server SSLContext from Kafka's `ssl.*` property names
  (pylog.core.security.tls), raising tls.TlsConfigError on bad settings.
- `run_blocking(fn, *args)`: await a blocking call (a store write) on a worker thread,
  so the loop keeps answering other requests meanwhile.
- `middlewares`: `@middleware async def mw(request, handler)` functions, outermost first
  (authentication, error bodies in the caller's format).
- `json_response`, `text_response`, `Request`, `Response`, `HTTPException`, `middleware`
  come from aiohttp unchanged.
"""
from __future__ import annotations

from aiohttp.web import HTTPException, Request, Response, json_response, middleware

from pylog.web.server import Limits, Routes, ThreadedWebServer, WebServer, run_blocking, text_response, \
    tls_server_context

__all__ = ["HTTPException", "Limits", "Request", "Response", "Routes", "ThreadedWebServer", "WebServer",
           "json_response", "middleware", "run_blocking", "text_response", "tls_server_context"]

"""The registry's HTTP listeners (http:// and https://) on pylog.web, each on a thread of its own.

Routes are declared in routes.ROUTES. A request is authenticated (HTTP basic when
users are configured), routed, and answered in Confluent's content type. Answers
read from memory run on the listener's loop; answers that write to the store run on
worker threads, so slow writes never hold up reads. Every error is a JSON body with
Confluent's `error_code`; a bug in a route answers 500 with code 50001 and is
logged, and the listener keeps serving.
"""
from __future__ import annotations

import json
import logging
from urllib.parse import urlsplit

from aiohttp import web
from multidict import MultiDict, MultiDictProxy

from pylog.core.errors import UsageError
from pylog.registry import errors as E
from pylog.registry.routes import ROUTES, basic_auth_ok
from pylog.registry.store import StoreError
from pylog.web import Limits, Routes, ThreadedWebServer, run_blocking

log = logging.getLogger("pylog.schema_registry")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
MAX_BODY = 16 * 1024 * 1024
LIMITS = Limits(max_body=MAX_BODY, max_headers=100)


def parse_listener(value: str) -> tuple[str, str, int]:
    """`http://HOST:PORT` or `https://HOST:PORT` -> (scheme, host, port)."""
    u = urlsplit(value.strip())
    try:
        port = u.port
    except ValueError:
        port = None
    if u.scheme not in ("http", "https") or not u.hostname or port is None or u.path not in ("", "/"):
        raise UsageError(f"schema registry listener {value!r}: expected http://HOST:PORT or https://HOST:PORT")
    return u.scheme, u.hostname, port


def answer(status: int, obj, headers=None) -> web.Response:
    body = json.dumps(obj).encode() if obj is not None else b""
    return web.Response(status=status, body=body, headers={"Content-Type": CONTENT_TYPE, **(headers or {})})


async def _json_body(request: web.Request):
    if not request.body_exists:
        return None
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise E.RestError(413, 413, f"Request body is over the limit of {MAX_BODY} bytes") from None
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise E.RestError(400, 400, f"Unrecognized JSON: {e}") from None


class AnswerCache:
    """GET answers read from memory, kept as ready bytes per raw path (query included) while the
    store's state has applied no record since: any record applied (a registration, a delete, a
    config) makes every kept answer stale at once."""

    MAX = 10000

    def __init__(self, state):
        self.state = state
        self.stamp = -1
        self.answers: dict[str, tuple[int, bytes]] = {}

    def get(self, key: str):
        if self.stamp != self.state.changes:
            return None
        return self.answers.get(key)

    def put(self, key: str, stamp: int, answer: tuple[int, bytes]) -> None:
        """Keep an answer computed when the state's change count was `stamp`."""
        if stamp != self.stamp:
            self.answers.clear()
            self.stamp = stamp
        if len(self.answers) >= self.MAX:
            self.answers.clear()
        self.answers[key] = answer


_NO_QUERY = MultiDictProxy(MultiDict())


def _handler(registry, fn, blocking: bool, cache: AnswerCache | None = None):
    async def handle(request: web.Request) -> web.Response:
        key = request.raw_path
        if cache is not None:
            hit = cache.get(key)
            if hit is not None:
                return _encoded(*hit)
            stamp = registry.state.changes
        body = await _json_body(request) if request.body_exists else None
        m = request.match_info
        q = request.query if "?" in key else _NO_QUERY  # .get() as a dict; .getall() for repeated keys
        if blocking:
            status, obj = await run_blocking(fn, registry, m, q, body)
        else:
            status, obj = fn(registry, m, q, body)
        encoded = json.dumps(obj).encode() if obj is not None else b""
        if cache is not None and status == 200:
            cache.put(key, stamp, (status, encoded))
        return _encoded(status, encoded)
    return handle


def _encoded(status: int, body: bytes) -> web.Response:
    return web.Response(status=status, body=body, content_type=CONTENT_TYPE)


def _middlewares(users: dict | None):
    @web.middleware
    async def errors(request, handler):
        try:
            if users is not None and basic_auth_ok(request.headers.get("Authorization"), users) is None:
                resp = answer(401, {"error_code": E.UNAUTHORIZED, "message": "Unauthorized"},
                              {"WWW-Authenticate": 'Basic realm="pylog-schema-registry"'})
                resp.force_close()  # the body is not read: the connection closes after the answer
                return resp
            return await handler(request)
        except E.RestError as e:
            return answer(e.status, e.body())
        except StoreError as e:
            code = E.OPERATION_TIMEOUT if e.timeout else E.STORE_ERROR
            return answer(500, {"error_code": code, "message": f"Error in the backend data store: {e}"})
        except web.HTTPException as e:  # the router's 404 and 405, the body limit's 413
            return answer(e.status, {"error_code": e.status, "message": f"HTTP {e.status} {e.reason}"})
        except Exception as e:  # noqa: BLE001 - a bug in a route: this request fails, the registry stays
            log.error("schema registry failed to answer %s %s", request.method, request.path, exc_info=e)
            return answer(500, {"error_code": E.STORE_ERROR, "message": f"Internal error: {type(e).__name__}"})
    return [errors]


def registry_routes(registry) -> Routes:
    routes = Routes()
    from pylog.registry import dek

    cache = AnswerCache(registry.state)  # answers from `_schemas` alone (not the DEK registry's)
    for method, path, fn, blocking in ROUTES:
        routes.add(method, path, _handler(registry, fn, blocking, cache if method == "GET" and not blocking else None))
    for method, path, fn, blocking in dek.ROUTES if registry.dek is not None else []:
        routes.add(method, path, _handler(registry, fn, blocking))
    return routes


class HttpListener:
    """One listener: start() binds (port 0 picks a free one) and serves on a thread."""

    def __init__(self, registry, url: str, ssl_context=None, users: dict | None = None):
        self.scheme, self.host, self.port = parse_listener(url)
        if self.scheme == "https" and ssl_context is None:
            raise UsageError(f"schema registry listener {url}: https needs the TLS settings "
                             f"(ssl.keystore.location / ssl.key.location and ssl.certificate.location)")
        self.registry = registry
        self.ssl_context = ssl_context if self.scheme == "https" else None
        self.users = users
        self._server: ThreadedWebServer | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def start(self) -> int:
        srv = ThreadedWebServer(registry_routes(self.registry), self.host, self.port, self.ssl_context, LIMITS,
                                _middlewares(self.users), name="pylog-schema-registry")
        self.port = srv.start()
        self._server = srv
        return self.port

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

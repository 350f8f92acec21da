"""The registry's HTTP listeners (http:// and https://), on threads of their own.

A request is parsed, authenticated (HTTP basic when users are configured),
routed, and answered in Confluent's content type. Every error is a JSON body
with Confluent's `error_code`; a bug in a route answers 500 with code 50001 and
is logged, and the listener keeps serving.
"""
from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, unquote, urlsplit

from pylog.registry import errors as E
from pylog.registry.routes import basic_auth_ok, route
from pylog.registry.store import StoreError
from pylog.core.errors import UsageError

log = logging.getLogger("pylog.schema_registry")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
MAX_BODY = 16 * 1024 * 1024


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


class _Handler(BaseHTTPRequestHandler):
    server_version = "pylog-schema-registry"
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # requests are not logged line by line
        log.debug("%s " + fmt, self.address_string(), *args)

    def _answer(self, status: int, obj, extra_headers=()) -> None:
        body = json.dumps(obj).encode() if obj is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra_headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _handle(self):
        reg = self.server.registry
        try:
            users = self.server.users
            if users is not None and basic_auth_ok(self.headers.get("Authorization"), users) is None:
                # the body is not read: the connection closes after the answer
                self.close_connection = True
                self._answer(401, {"error_code": E.UNAUTHORIZED, "message": "Unauthorized"},
                             [("WWW-Authenticate", 'Basic realm="pylog-schema-registry"')])
                return
            body = self._read_body()
            u = urlsplit(self.path)
            parts = [unquote(p) for p in u.path.split("/") if p]
            q = dict(parse_qsl(u.query, keep_blank_values=True))
            status, obj = route(reg, self.command, parts, q, body)
            self._answer(status, obj)
        except E.RestError as e:
            self._answer(e.status, e.body())
        except StoreError as e:
            code = E.OPERATION_TIMEOUT if e.timeout else E.STORE_ERROR
            self._answer(500, {"error_code": code, "message": f"Error in the backend data store: {e}"})
        except (ConnectionError, TimeoutError):
            self.close_connection = True
        except Exception as e:  # noqa: BLE001 - a bug in a route: this request fails, the registry stays
            log.error("schema registry failed to answer %s %s", self.command, self.path, exc_info=e)
            self._answer(500, {"error_code": E.STORE_ERROR, "message": f"Internal error: {type(e).__name__}"})

    def _read_body(self):
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self.close_connection = True
            raise E.RestError(411, 411, "Length Required: chunked bodies are not accepted")
        if not length:
            return None
        try:
            n = int(length)
        except ValueError:
            self.close_connection = True
            raise E.RestError(400, 400, "Bad Content-Length") from None
        if n < 0 or n > MAX_BODY:
            self.close_connection = True
            raise E.RestError(413, 413, f"Request body of {n} bytes is over the limit of {MAX_BODY}")
        raw = self.rfile.read(n)
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except (ValueError, UnicodeDecodeError) as e:
            raise E.RestError(400, 400, f"Unrecognized JSON: {e}") from None

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        log.debug("schema registry connection from %s failed", client_address, exc_info=True)


class HttpListener:
    """One listener: start() binds (port 0 picks a free one) and serves on a thread."""

    def __init__(self, registry, url: str, ssl_context=None, users: dict | None = None):
        self.scheme, self.host, self.port = parse_listener(url)
        if self.scheme == "https" and ssl_context is None:
            raise UsageError(f"schema registry listener {url}: https needs the TLS settings "
                             f"(ssl.keystore.location / ssl.key.location and ssl.certificate.location)")
        self.registry = registry
        self.ssl_context = ssl_context
        self.users = users
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def start(self) -> int:
        srv = _Server((self.host, self.port), _Handler)
        srv.registry = self.registry
        srv.users = self.users
        if self.scheme == "https":
            srv.socket = self.ssl_context.wrap_socket(srv.socket, server_side=True)
        self._server = srv
        self.port = srv.server_address[1]
        self._thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.2},
                                        name=f"pylog-schema-registry-{self.port}", daemon=True)
        self._thread.start()
        return self.port

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

"""The console's routes: the page and its static files, and the JSON API the page reads.

Each API handler runs its blocking client calls on a worker thread, so one slow answer
never holds the others; errors answer {"error": "..."} with Kafka's message (403 for a
write refused by a read-only console, 400 for bad input, 502 when the cluster failed)."""
from __future__ import annotations

import functools
import json
from importlib import resources

from pylog.web import Request, Response, json_response, run_blocking, text_response

from pylog.console.cluster import ReadOnlyError
from pylog.core.errors import KafkaError, PylogError, UsageError

STATIC_TYPES = {".js": "application/javascript", ".css": "text/css", ".html": "text/html", ".LICENSE": "text/plain"}


def static_file(name: str) -> bytes:
    return resources.files("pylog.console").joinpath("static", name).read_bytes()


def _error(e: Exception) -> Response:
    status = 403 if isinstance(e, ReadOnlyError) else 400 if isinstance(e, (UsageError, ValueError)) else 502
    return json_response({"error": str(e) or type(e).__name__}, status=status)


def api(fn):
    """An API handler: fn(console, request, body) runs on a worker thread; its value is the JSON answer."""
    @functools.wraps(fn)
    async def handler(console, request: Request) -> Response:
        body = {}
        if request.can_read_body:
            try:
                body = json.loads(await request.read() or b"{}")
            except ValueError:
                return json_response({"error": "the request body is not JSON"}, status=400)
        try:
            out = await run_blocking(fn, console, request, body)
        except (PylogError, KafkaError, ValueError) as e:
            return _error(e)
        return json_response(out, dumps=functools.partial(json.dumps, default=str))
    return handler


def _q(request, name, default=None):
    v = request.query.get(name, default)
    return None if v == "" else v


def _int(v):
    return None if v in (None, "") else int(v)


async def index(console, request: Request) -> Response:
    return Response(body=static_file("index.html"), content_type="text/html")


async def static(console, request: Request) -> Response:
    name = request.match_info["name"]
    suffix = "." + name.rsplit(".", 1)[-1]
    if "/" in name or suffix not in STATIC_TYPES:
        return text_response(404, f"no static file {name}\n")
    try:
        body = static_file(name)
    except FileNotFoundError:
        return text_response(404, f"no static file {name}\n")
    return Response(body=body, content_type=STATIC_TYPES[suffix], headers={"Cache-Control": "max-age=3600"})


@api
def overview(c, request, body):
    return {**c.cluster.overview(), "features": c.features(), "broker": c.broker_view()}


@api
def topics(c, request, body):
    return {"topics": c.cluster.topics(internal=_q(request, "internal", "true") == "true")}


@api
def topic(c, request, body):
    return c.cluster.topic(request.match_info["name"])


@api
def create_topic(c, request, body):
    return c.cluster.create_topic(str(body.get("name") or ""), int(body.get("partitions") or 1),
                                  int(body.get("replication_factor") or 1), dict(body.get("configs") or {}))


@api
def alter_topic(c, request, body):
    return c.cluster.alter_topic(request.match_info["name"], dict(body.get("set") or {}), list(body.get("delete") or []))


@api
def delete_topic(c, request, body):
    return c.cluster.delete_topic(request.match_info["name"])


@api
def messages(c, request, body):
    return c.messages.page(request.match_info["name"], int(_q(request, "partition", "0")), _q(request, "start", "end"),
                           _int(_q(request, "offset")), _int(_q(request, "timestamp")), int(_q(request, "limit", "50")),
                           _q(request, "key"), _q(request, "search"), _q(request, "format", "auto"))


@api
def produce(c, request, body):
    part = body.get("partition")
    return c.messages.produce(request.match_info["name"], body.get("value"), body.get("key") or None,
                              None if part in (None, "") else int(part), body.get("headers") or [])


@api
def groups(c, request, body):
    return {"groups": c.groups.list()}


@api
def group(c, request, body):
    return c.groups.describe(request.match_info["id"])


@api
def reset_group(c, request, body):
    return c.groups.reset(request.match_info["id"], str(body.get("to") or ""), body.get("topic") or None,
                          _int(body.get("value")))


@api
def share_group(c, request, body):
    return c.groups.share(request.match_info["id"])


@api
def transactions(c, request, body):
    minutes = _q(request, "hanging_minutes")
    return c.security.transactions(None if minutes is None else float(minutes))


@api
def abort(c, request, body):
    return c.security.abort(body["topic"], body["partition"], body["producer_id"], body["producer_epoch"],
                            body.get("coordinator_epoch", -1))


@api
def security(c, request, body):
    return c.security.security()


@api
def subjects(c, request, body):
    return {"subjects": c.registry.subjects()}


@api
def subject(c, request, body):
    return c.registry.subject(request.match_info["subject"], _q(request, "left"), _q(request, "right"))


@api
def check_schema(c, request, body):
    return c.registry.check(request.match_info["subject"], str(body.get("schema") or ""),
                            body.get("schemaType") or "AVRO", str(body.get("version") or "latest"))


@api
def logdirs(c, request, body):
    return c.need_log_dirs().partitions(int(_q(request, "start", "0")), int(_q(request, "limit", "500")),
                                        _q(request, "match"))


@api
def segments(c, request, body):
    return c.need_log_dirs().segments(request.match_info["name"])


@api
def batches(c, request, body):
    return c.need_log_dirs().batches(request.match_info["name"], request.match_info["segment"],
                                     int(_q(request, "position", "0")))


@api
def verify(c, request, body):
    return {"reports": c.need_log_dirs().verify(_q(request, "name"))}


ROUTES = [
    ("GET", "/", index),
    ("GET", "/static/{name}", static),
    ("GET", "/api/overview", overview),
    ("GET", "/api/topics", topics),
    ("POST", "/api/topics", create_topic),
    ("GET", "/api/topics/{name}", topic),
    ("POST", "/api/topics/{name}/configs", alter_topic),
    ("DELETE", "/api/topics/{name}", delete_topic),
    ("GET", "/api/topics/{name}/messages", messages),
    ("POST", "/api/topics/{name}/messages", produce),
    ("GET", "/api/groups", groups),
    ("GET", "/api/groups/{id}", group),
    ("POST", "/api/groups/{id}/reset", reset_group),
    ("GET", "/api/share-groups/{id}", share_group),
    ("GET", "/api/transactions", transactions),
    ("POST", "/api/transactions/abort", abort),
    ("GET", "/api/security", security),
    ("GET", "/api/registry/subjects", subjects),
    ("GET", "/api/registry/subjects/{subject}", subject),
    ("POST", "/api/registry/subjects/{subject}/check", check_schema),
    ("GET", "/api/logdirs", logdirs),
    ("GET", "/api/logdirs/verify", verify),
    ("GET", "/api/logdirs/{name}", segments),
    ("GET", "/api/logdirs/{name}/{segment}", batches),
]

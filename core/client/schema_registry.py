"""A schema-registry client (Confluent's REST API) and the serialisers built on it.

    reg = RegistryClient("http://127.0.0.1:8081")          # basic auth: user:pass@ in the URL or auth=
    ser = Serializer(reg, "avro", subject="orders-value", schema_text=open("o.avsc").read())
    data = ser.encode({"id": 1})                            # magic byte, schema id, Avro binary
    Deserializer(reg).decode(data)                          # -> {"id": 1}

The commands (produce, consume, dump-segment, schemas) and the Spark jobs use
these; the registry server does not. Values go through pylog.core.schemas'
codecs, so the bytes are those confluent-kafka's serialisers write.
"""
from __future__ import annotations

import base64
import json
import threading
import urllib.error
import urllib.request
from urllib.parse import quote, urlsplit, urlunsplit

from pylog.core.errors import DataError, UsageError
from pylog.core.schemas.codecs import SchemaError, ValueMismatch, parse
from pylog.core.schemas.wire import WireFormatError, frame, unframe

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
FORMATS = {"avro": "AVRO", "json-schema": "JSON", "protobuf": "PROTOBUF"}


class RegistryError(DataError):
    """An error answer from the registry (`status`, Confluent's `code`), or no answer."""

    def __init__(self, message: str, status: int = 0, code: int = 0):
        super().__init__(message)
        self.status = status
        self.code = code


class RegistryClient:
    def __init__(self, url: str, auth: str | None = None, timeout: float = 30.0, ssl_context=None):
        u = urlsplit(url.rstrip("/"))
        if u.scheme not in ("http", "https") or not u.hostname:
            raise UsageError(f"schema registry URL {url!r}: expected http://HOST:PORT or https://HOST:PORT")
        if u.username is not None:
            auth = auth or f"{u.username}:{u.password or ''}"
            netloc = u.hostname + (f":{u.port}" if u.port else "")
            u = u._replace(netloc=netloc)
        self.url = urlunsplit(u)
        self.auth = auth
        self.timeout = timeout
        self.ssl_context = ssl_context
        self._by_id: dict[int, object] = {}
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- HTTP
    def request(self, method: str, path: str, body=None, query: dict | None = None):
        url = self.url + path
        if query:
            url += "?" + "&".join(f"{k}={quote(str(v))}" for k, v in query.items())
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE})
        if self.auth:
            req.add_header("Authorization", "Basic " + base64.b64encode(self.auth.encode()).decode())
        try:
            with urllib.request.urlopen(req, timeout=self.timeout, context=self.ssl_context) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                err = json.loads(raw)
                msg, code = err.get("message", ""), int(err.get("error_code", e.code))
            except (ValueError, AttributeError, TypeError):
                msg, code = raw.decode("utf-8", "replace").strip() or e.reason, e.code
            raise RegistryError(f"schema registry {self.url}: {msg} (HTTP {e.code}, error {code})",
                                e.code, code) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise RegistryError(f"no schema registry at {self.url}: {getattr(reason, 'strerror', None) or reason}") \
                from None
        return json.loads(raw) if raw.strip() else None

    # ---------------------------------------------------------------- API
    def register(self, subject: str, schema: str, schema_type: str = "AVRO", references=None,
                 normalize: bool = False) -> int:
        body = {"schema": schema}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        if references:
            body["references"] = references
        return self.request("POST", f"/subjects/{quote(subject, safe='')}/versions", body,
                            {"normalize": "true"} if normalize else None)["id"]

    def version(self, subject: str, version="latest") -> dict:
        return self.request("GET", f"/subjects/{quote(subject, safe='')}/versions/{version}")

    def schema(self, schema_id: int) -> dict:
        return self.request("GET", f"/schemas/ids/{schema_id}")

    def resolve_refs(self, refs, seen=None) -> list:
        """[(name, type, text)] of references, transitive ones first (for core.schemas.parse)."""
        out = []
        seen = set() if seen is None else seen
        for r in refs or []:
            if r["name"] in seen:
                continue
            seen.add(r["name"])
            v = self.version(r["subject"], r.get("version", "latest"))
            out += self.resolve_refs(v.get("references"), seen)
            out.append((r["name"], v.get("schemaType", "AVRO"), v["schema"]))
        return out

    def parsed(self, schema_type: str, text: str, refs=None):
        try:
            return parse(schema_type, text, self.resolve_refs(refs))
        except SchemaError as e:
            raise DataError(str(e)) from None

    def parsed_by_id(self, schema_id: int):
        with self._lock:
            p = self._by_id.get(schema_id)
        if p is None:
            s = self.schema(schema_id)
            p = self.parsed(s.get("schemaType", "AVRO"), s["schema"], s.get("references"))
            with self._lock:
                self._by_id[schema_id] = p
        return p


def install_proto_compiler() -> None:
    """.proto source in schema files (protoc's Python module, when installed)."""
    from pylog.core.schemas.protoc import install

    install()


class Serializer:
    """JSON values -> the registry's wire format, with a schema from a file (registered
    under `subject`, as confluent-kafka's serialisers auto-register) or a subject's latest."""

    def __init__(self, client: RegistryClient, fmt: str, subject: str, schema_text: str | None = None,
                 message: str | None = None, references=None):
        self.client = client
        self.schema_type = FORMATS[fmt]
        self.message = message
        if self.schema_type == "PROTOBUF":
            install_proto_compiler()
        if schema_text is not None:
            self.parsed = client.parsed(self.schema_type, schema_text, references)
            self.schema_id = client.register(subject, schema_text, self.schema_type, references)
            self.spec = {"type": self.schema_type, "text": schema_text, "refs": client.resolve_refs(references)}
        else:
            v = client.version(subject, "latest")
            if v.get("schemaType", "AVRO") != self.schema_type:
                raise UsageError(f"subject {subject!r} holds a {v.get('schemaType', 'AVRO')} schema, "
                                 f"not {self.schema_type}")
            self.schema_id = v["id"]
            self.parsed = client.parsed(self.schema_type, v["schema"], v.get("references"))
            self.spec = {"type": self.schema_type, "text": v["schema"], "refs": client.resolve_refs(v.get("references"))}
        # what a process without the registry needs to encode the same way (Spark executors)
        self.spec.update(id=self.schema_id, message=message)

    def encode(self, value) -> bytes:
        """Framed bytes; ValueMismatch names what does not match."""
        if self.schema_type == "PROTOBUF":
            return frame(self.schema_id, self.parsed.encode(value, self.message))
        return frame(self.schema_id, self.parsed.encode(value))


def encoder_from_spec(spec: dict):
    """A function JSON-text bytes -> framed bytes from Serializer.spec, with no registry round trip."""
    import json as _json

    from pylog.core.schemas.protoc import install

    install()
    parsed = parse(spec["type"], spec["text"], [tuple(r) for r in spec["refs"]])
    schema_id, message = spec["id"], spec.get("message")

    def encode(raw):
        if raw is None:
            return None
        value = _json.loads(bytes(raw))
        if spec["type"] == "PROTOBUF":
            return frame(schema_id, parsed.encode(value, message))
        return frame(schema_id, parsed.encode(value))
    return encode


class Deserializer:
    """The registry's wire format -> JSON-ready values, schemas fetched by id once."""

    def __init__(self, client: RegistryClient):
        self.client = client
        install_proto_compiler()

    def decode(self, data):
        from pylog.core.schemas.codecs import to_json_value

        schema_id, payload = unframe(data)
        return to_json_value(self.client.parsed_by_id(schema_id).decode(payload))


def is_framed(data) -> bool:
    return data is not None and len(data) >= 5 and data[0] == 0


__all__ = ["RegistryClient", "RegistryError", "Serializer", "Deserializer", "ValueMismatch", "WireFormatError",
           "FORMATS", "is_framed"]

"""The registry's REST API as Confluent documents it: every endpoint's answer, status and
error code; bad input never gets a traceback or a 500."""
from __future__ import annotations

import http.client
import json
import uuid
from urllib.parse import urlsplit

import pytest

from pylog.testing import EmbeddedBroker
from support.registry import CT, rest

A1 = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
A2 = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"},
                                                            {"name": "b", "type": "string", "default": ""}]})
A_BAD = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}]})


@pytest.fixture(scope="module")
def url():
    with EmbeddedBroker(schema_registry=True) as b:
        yield b.schema_registry_url


def _s():
    return f"s-{uuid.uuid4().hex[:10]}"


def ok(resp, status=200):
    assert resp[0] == status, resp
    assert resp[2].startswith(CT)
    return resp[1]


def err(resp, status, code):
    assert (resp[0], resp[1]["error_code"]) == (status, code), resp
    assert isinstance(resp[1]["message"], str) and resp[1]["message"]
    assert resp[2].startswith(CT)


def test_root_types_contexts(url):
    assert ok(rest(url + "/")) == {}
    assert set(ok(rest(url + "/schemas/types"))) == {"AVRO", "JSON", "PROTOBUF"}
    assert ok(rest(url + "/contexts")) == ["."]


def test_register_lookup_and_read(url):
    s = _s()
    sid = ok(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A1}))["id"]
    assert ok(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A1}))["id"] == sid  # same schema: same id
    # another subject, same schema: same id (ids are per schema)
    s2 = _s()
    assert ok(rest(f"{url}/subjects/{s2}/versions", "POST", {"schema": A1}))["id"] == sid
    got = ok(rest(f"{url}/subjects/{s}", "POST", {"schema": A1}))
    assert (got["subject"], got["version"], got["id"]) == (s, 1, sid) and "schemaType" not in got
    assert json.loads(got["schema"]) == json.loads(A1)
    assert json.loads(ok(rest(f"{url}/schemas/ids/{sid}"))["schema"]) == json.loads(A1)
    assert ok(rest(f"{url}/schemas/ids/{sid}/schema")) == json.loads(A1)
    assert set(ok(rest(f"{url}/schemas/ids/{sid}/subjects"))) >= {s, s2}
    assert {"subject": s, "version": 1} in ok(rest(f"{url}/schemas/ids/{sid}/versions"))
    for v in ("1", "latest", "-1"):
        got = ok(rest(f"{url}/subjects/{s}/versions/{v}"))
        assert (got["version"], got["id"]) == (1, sid)
    assert ok(rest(f"{url}/subjects/{s}/versions/latest/schema")) == json.loads(A1)
    assert ok(rest(f"{url}/subjects/{s}/versions")) == [1]
    assert s in ok(rest(f"{url}/subjects"))
    assert ok(rest(f"{url}/subjects?subjectPrefix={s}")) == [s]
    listed = ok(rest(f"{url}/schemas?subjectPrefix={s}"))
    assert [(x["subject"], x["version"], x["id"]) for x in listed] == [(s, 1, sid)]
    v2 = ok(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A2}))["id"]
    assert ok(rest(f"{url}/subjects/{s}/versions")) == [1, 2]
    assert [x["version"] for x in ok(rest(f"{url}/schemas?subjectPrefix={s}&latestOnly=true"))] == [2]
    assert ok(rest(f"{url}/subjects/{s}/versions?offset=1&limit=1")) == [2]
    assert ok(rest(f"{url}/subjects/{s}/versions/2"))["id"] == v2


def test_not_found_errors(url):
    s = _s()
    err(rest(f"{url}/subjects/{s}/versions"), 404, 40401)
    err(rest(f"{url}/subjects/{s}/versions/1"), 404, 40401)
    err(rest(f"{url}/subjects/{s}", "POST", {"schema": A1}), 404, 40401)
    err(rest(f"{url}/schemas/ids/987654"), 404, 40403)
    err(rest(f"{url}/schemas/ids/notanumber"), 404, 40403)
    ok(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A1}))
    err(rest(f"{url}/subjects/{s}/versions/7"), 404, 40402)
    err(rest(f"{url}/subjects/{s}", "POST", {"schema": A2}), 404, 40403)
    err(rest(f"{url}/nope"), 404, 404)
    err(rest(f"{url}/subjects/{s}/nope"), 404, 404)
    err(rest(f"{url}/config/{s}"), 404, 40408)
    assert ok(rest(f"{url}/config/{s}?defaultToGlobal=true")) == {"compatibilityLevel": "BACKWARD"}
    err(rest(f"{url}/mode/{s}"), 404, 40409)
    assert ok(rest(f"{url}/mode/{s}?defaultToGlobal=true")) == {"mode": "READWRITE"}


@pytest.mark.parametrize("version", ["0", "-2", "abc", "2147483648", "1.5"])
def test_invalid_versions(url, version):
    s = _s()
    ok(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A1}))
    err(rest(f"{url}/subjects/{s}/versions/{version}"), 422, 42202)
    err(rest(f"{url}/subjects/{s}/versions/{version}", "DELETE"), 422, 42202)


@pytest.mark.parametrize("body", [
    {"schema": "{not json"},
    {"schema": json.dumps({"type": "record", "name": "R"})},  # no fields
    {"schema": json.dumps({"type": "nosuchtype"})},
    {"schema": json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "Missing"}]})},
    {"schema": json.dumps({"type": "enum", "name": "E", "symbols": ["A", "A"]})},
    {"schema": json.dumps({"type": "fixed", "name": "F"})},
    {"schema": "[]", "schemaType": "JSON"},
    {"schema": json.dumps({"type": 12}), "schemaType": "JSON"},
    {"schema": "syntax = \"proto3\"; message M { int32 a = 1 }", "schemaType": "PROTOBUF"},
    {"schema": "not a proto at all", "schemaType": "PROTOBUF"},
    {"schema": A1, "schemaType": "XML"},
    {"schema": 42},
    {"nothing": True},
    {"schema": A1, "references": [{"name": "x", "subject": "no-such-subject", "version": 1}]},
    {"schema": A1, "references": "nope"},
])
def test_invalid_schemas(url, body):
    err(rest(f"{url}/subjects/{_s()}/versions", "POST", body), 422, 42201)


def test_bad_bodies(url):
    s = _s()
    err(rest(f"{url}/subjects/{s}/versions", "POST", raw=b"{this is not json"), 400, 400)
    err(rest(f"{url}/subjects/{s}/versions", "POST", raw=b"\xff\xfe"), 400, 400)
    err(rest(f"{url}/subjects/{s}/versions", "POST", raw=b""), 422, 42201)
    err(rest(f"{url}/config", "PUT", {"compatibility": "SIDEWAYS"}), 422, 42203)
    err(rest(f"{url}/config", "PUT", ["x"]), 422, 42203)
    err(rest(f"{url}/mode", "PUT", {"mode": "SOMETIMES"}), 422, 42204)
    err(rest(f"{url}/subjects", "DELETE"), 405, 405)
    # the body-size limit: refused before reading it
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.putrequest("POST", f"/subjects/{s}/versions")
    conn.putheader("Content-Type", CT)
    conn.putheader("Content-Length", str(64 * 1024 * 1024))
    conn.endheaders()
    resp = conn.getresponse()
    assert resp.status == 413 and json.loads(resp.read())["error_code"] == 413
    conn.close()


def test_compatibility_endpoints(url):
    s = _s()
    ok(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A1}))
    assert ok(rest(f"{url}/compatibility/subjects/{s}/versions/latest", "POST", {"schema": A2})) == \
        {"is_compatible": True}
    got = ok(rest(f"{url}/compatibility/subjects/{s}/versions/1?verbose=true", "POST", {"schema": A_BAD}))
    assert got["is_compatible"] is False and any("TYPE_MISMATCH" in m for m in got["messages"])
    assert ok(rest(f"{url}/compatibility/subjects/{s}/versions", "POST", {"schema": A2}))["is_compatible"]
    err(rest(f"{url}/compatibility/subjects/{s}/versions/9", "POST", {"schema": A2}), 404, 40402)
    err(rest(f"{url}/compatibility/subjects/{_s()}/versions/latest", "POST", {"schema": A2}), 404, 40401)
    err(rest(f"{url}/compatibility/subjects/{s}/versions/latest", "POST", {"schema": "{"}), 422, 42201)
    r = rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A_BAD})
    err(r, 409, 409)
    assert "TYPE_MISMATCH" in r[1]["message"]


def test_config_and_mode(url):
    s = _s()
    assert ok(rest(f"{url}/config")) == {"compatibilityLevel": "BACKWARD"}
    assert ok(rest(f"{url}/config/{s}", "PUT", {"compatibility": "none"})) == {"compatibility": "NONE"}
    assert ok(rest(f"{url}/config/{s}")) == {"compatibilityLevel": "NONE"}
    ok(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A1}))
    ok(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A_BAD}))  # NONE: anything goes
    assert ok(rest(f"{url}/config/{s}", "DELETE")) == {"compatibilityLevel": "NONE"}
    err(rest(f"{url}/config/{s}"), 404, 40408)
    assert ok(rest(f"{url}/mode/{s}", "PUT", {"mode": "READONLY"})) == {"mode": "READONLY"}
    err(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A2}), 422, 42205)
    err(rest(f"{url}/subjects/{s}", "DELETE"), 422, 42205)
    assert ok(rest(f"{url}/subjects/{s}/versions/1"))["version"] == 1  # reads still served
    assert ok(rest(f"{url}/mode/{s}", "DELETE")) == {"mode": "READONLY"}
    assert ok(rest(f"{url}/mode/{s}?defaultToGlobal=true")) == {"mode": "READWRITE"}
    err(rest(f"{url}/mode", "PUT", {"mode": "IMPORT"}), 422, 42205)  # subjects exist


def test_import_mode(url):
    s = _s()
    assert ok(rest(f"{url}/mode/{s}", "PUT", {"mode": "IMPORT"})) == {"mode": "IMPORT"}
    assert ok(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A1, "id": 50000, "version": 3}))["id"] == 50000
    assert ok(rest(f"{url}/subjects/{s}/versions/3"))["id"] == 50000
    err(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A2, "id": 50000, "version": 4}), 422, 42207)
    err(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A2}), 422, 42201)
    ok(rest(f"{url}/mode/{s}", "DELETE"))


def test_deletes(url):
    s = _s()
    ok(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A1}))
    ok(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A2}))
    err(rest(f"{url}/subjects/{s}/versions/1?permanent=true", "DELETE"), 404, 40407)
    assert ok(rest(f"{url}/subjects/{s}/versions/1", "DELETE")) == 1
    # soft-deleting it again: Confluent's 40406 ("was soft deleted. Set permanent=true ...")
    st, body, _ = rest(f"{url}/subjects/{s}/versions/1", "DELETE")
    assert (st, body["error_code"]) == (404, 40406) and "permanent=true" in body["message"], body
    assert ok(rest(f"{url}/subjects/{s}/versions/1?deleted=true"))["version"] == 1
    assert ok(rest(f"{url}/subjects/{s}/versions?deleted=true")) == [1, 2]
    assert ok(rest(f"{url}/subjects/{s}/versions?deletedOnly=true")) == [1]
    assert ok(rest(f"{url}/subjects/{s}/versions/1?permanent=true", "DELETE")) == 1
    assert ok(rest(f"{url}/subjects/{s}/versions?deleted=true")) == [2]
    err(rest(f"{url}/subjects/{s}?permanent=true", "DELETE"), 404, 40405)
    assert ok(rest(f"{url}/subjects/{s}", "DELETE")) == [2]
    err(rest(f"{url}/subjects/{s}", "DELETE"), 404, 40404)
    assert s not in ok(rest(f"{url}/subjects"))
    assert s in ok(rest(f"{url}/subjects?deleted=true"))
    assert s in ok(rest(f"{url}/subjects?deletedOnly=true"))
    err(rest(f"{url}/subjects/{s}/versions/latest"), 404, 40402)
    assert ok(rest(f"{url}/subjects/{s}?permanent=true", "DELETE")) == [2]
    err(rest(f"{url}/subjects/{s}/versions?deleted=true"), 404, 40401)
    err(rest(f"{url}/subjects/{s}", "DELETE"), 404, 40401)
    # a soft-deleted subject takes new versions after the old numbers
    s = _s()
    ok(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A1}))
    ok(rest(f"{url}/subjects/{s}", "DELETE"))
    ok(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A2}))
    assert ok(rest(f"{url}/subjects/{s}/versions")) == [2]


def test_references_and_referencedby(url):
    base = _s()
    ok(rest(f"{url}/subjects/{base}/versions", "POST",
            {"schema": json.dumps({"type": "record", "name": "Addr", "namespace": "x",
                                   "fields": [{"name": "c", "type": "string"}]})}))
    s = _s()
    refs = [{"name": "x.Addr", "subject": base, "version": 1}]
    body = {"schema": json.dumps({"type": "record", "name": "P", "namespace": "x",
                                  "fields": [{"name": "a", "type": "x.Addr"}]}), "references": refs}
    sid = ok(rest(f"{url}/subjects/{s}/versions", "POST", body))["id"]
    assert ok(rest(f"{url}/subjects/{base}/versions/1/referencedby")) == [sid]
    assert ok(rest(f"{url}/schemas/ids/{sid}"))["references"] == refs
    assert ok(rest(f"{url}/subjects/{s}", "POST", body))["id"] == sid
    err(rest(f"{url}/subjects/{base}/versions/1", "DELETE"), 422, 42206)
    err(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": body["schema"]}), 422, 42201)  # unresolved name
    # JSON Schema reference by URL name
    js = _s()
    ok(rest(f"{url}/subjects/{js}/versions", "POST",
            {"schemaType": "JSON", "schema": json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}})}))
    ok(rest(f"{url}/subjects/{_s()}/versions", "POST",
            {"schemaType": "JSON", "schema": json.dumps({"type": "object", "properties": {"m": {"$ref": "m.json"}}}),
             "references": [{"name": "m.json", "subject": js, "version": 1}]}))


def test_protobuf_text_and_serialized(url):
    s = _s()
    text = 'syntax = "proto3";\npackage p;\nmessage M { int32 a = 1; repeated string b = 2; }\n'
    sid = ok(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": text, "schemaType": "PROTOBUF"}))["id"]
    got = ok(rest(f"{url}/schemas/ids/{sid}"))
    assert got["schemaType"] == "PROTOBUF" and got["schema"] == text
    ser = ok(rest(f"{url}/schemas/ids/{sid}?format=serialized"))["schema"]
    from google.protobuf import descriptor_pb2
    import base64

    fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(ser))
    assert fdp.package == "p" and fdp.message_type[0].name == "M"
    # the serialized form registers as the same schema
    assert ok(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": ser, "schemaType": "PROTOBUF"}))["id"] == sid
    err(rest(f"{url}/subjects/{s}/versions", "POST",
             {"schema": text.replace("int32 a", "string a"), "schemaType": "PROTOBUF"}), 409, 409)


@pytest.mark.parametrize("path,method", [
    ("/subjects/x/versions", "POST"), ("/subjects/x", "POST"), ("/compatibility/subjects/x/versions", "POST"),
    ("/compatibility/subjects/x/versions/latest", "POST"), ("/config", "PUT"), ("/config/x", "PUT"),
    ("/mode", "PUT"), ("/mode/x", "PUT"),
])
def test_odd_bodies_never_500(url, path, method):
    bodies = [b"null", b"1", b'"s"', b"[]", b"{}", b'{"schema": null}', b'{"schema": {}}', b'{"schema": []}',
              b'{"schema": "\\u0000"}', b'{"schema": "{}", "schemaType": null}', b'{"schema": "1", "schemaType": 5}',
              b'{"schema": "\\"int\\"", "references": [{}]}', b'{"schema": "\\"int\\"", "references": [1]}',
              b'{"schema": "\\"int\\"", "references": [{"name": "a", "subject": "b", "version": "x"}]}',
              b'{"compatibility": 5}', b'{"mode": null}', b'{"schema": "' + b"[" * 5000 + b'"}',
              json.dumps({"schema": json.dumps({"type": "record", "name": "R", "fields": [
                  {"name": "a", "type": {"type": "array", "items": "R"}}]})}).encode()]
    for raw in bodies:
        st, body, ctype = rest(url + path, method, raw=raw)
        assert st < 500, (raw, st, body)
        assert isinstance(body, dict) or isinstance(body, list) or st == 200


def test_protobuf_registered_serialized_is_served_as_source(url, tmp_path):
    """A descriptor registered in base64 (as confluent-kafka sends it) is served as .proto source
    that compiles back to the same schema: registering the source finds the same id."""
    import base64

    from support.registry import protoc_module

    proto = ('syntax = "proto3";\npackage shop.v1;\nimport "google/protobuf/timestamp.proto";\n'
             'message Order {\n  int64 id = 1;\n  map<string, int32> counts = 2;\n'
             '  oneof pay { string card = 3; bool cash = 4; }\n  Status status = 5;\n'
             '  message Line { string sku = 1; repeated double prices = 2; }\n  repeated Line lines = 6;\n'
             '  google.protobuf.Timestamp at = 7;\n  optional string note = 8;\n  reserved 9, 10;\n}\n'
             'enum Status { NEW = 0; PAID = 1; }\n')
    mod = protoc_module(tmp_path, {"shop/v1/order.proto": proto}, "shop/v1/order.proto")
    b64 = base64.b64encode(mod.DESCRIPTOR.serialized_pb).decode()
    s = _s()
    sid = ok(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": b64, "schemaType": "PROTOBUF"}))["id"]
    text = ok(rest(f"{url}/schemas/ids/{sid}"))["schema"]
    assert "message Order {" in text and "map<string, int32> counts = 2;" in text and "oneof pay {" in text
    assert ok(rest(f"{url}/schemas/ids/{sid}?format=serialized"))["schema"]
    s2 = _s()
    assert ok(rest(f"{url}/subjects/{s2}/versions", "POST", {"schema": text, "schemaType": "PROTOBUF"}))["id"] == sid


def test_concurrent_registrations_under_many_subjects_get_one_id_per_schema(url):
    """Registrations under different subjects wait for the store side by side: each new schema
    still gets an id of its own, every id answers its schema, and each subject's versions run 1..n."""
    import threading

    tag = _s()
    for k in range(4):
        ok(rest(f"{url}/config/{tag}-{k}", "PUT", {"compatibility": "NONE"}))
    got, errors = {}, []

    def worker(w):
        try:
            for n in range(6):
                schema = json.dumps({"type": "record", "name": f"C{w}x{n}", "fields": [{"name": "a", "type": "int"}]})
                st, body, _ = rest(f"{url}/subjects/{tag}-{w % 4}/versions", "POST", {"schema": schema})
                assert st == 200, body
                got[schema] = body["id"]
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(w,)) for w in range(12)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not errors, errors
    assert len(set(got.values())) == len(got) == 72
    for schema, sid in got.items():
        assert json.loads(ok(rest(f"{url}/schemas/ids/{sid}"))["schema"]) == json.loads(schema)
    for k in range(4):
        assert ok(rest(f"{url}/subjects/{tag}-{k}/versions")) == list(range(1, 19))


def test_contexts_lists_the_contexts_subject_names_use(url):
    ctx = "." + _s()
    schema = json.dumps({"type": "record", "name": "InCtx", "fields": [{"name": "a", "type": "int"}]})
    sid = ok(rest(f"{url}/subjects/:{ctx}:orders-value/versions", "POST", {"schema": schema}))["id"]
    contexts = ok(rest(f"{url}/contexts"))
    assert contexts[0] == "." and ctx in contexts
    assert ok(rest(f"{url}/subjects/:{ctx}:orders-value/versions/1"))["id"] == sid
    assert ok(rest(f"{url}/contexts?limit=1")) == ["."]


def test_answers_read_again_follow_every_write(url):
    """GET answers are kept as ready bytes between writes: the same GET asked again, on one keep-alive
    connection, answers what the last write made it, and an error answer is never kept."""
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)

    def get(path):
        conn.request("GET", path, headers={"Accept": CT})
        r = conn.getresponse()
        return r.status, json.loads(r.read())

    s = _s()
    assert get(f"/subjects/{s}/versions")[0] == 404
    sid = ok(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A1}))["id"]
    for _ in range(3):
        assert get(f"/subjects/{s}/versions") == (200, [1])
        assert get(f"/schemas/ids/{sid}")[0] == 200
    ok(rest(f"{url}/subjects/{s}/versions", "POST", {"schema": A2}))
    assert get(f"/subjects/{s}/versions") == (200, [1, 2])
    assert get(f"/subjects/{s}/versions/latest")[1]["version"] == 2
    ok(rest(f"{url}/config/{s}", "PUT", {"compatibility": "FULL"}))
    assert get(f"/config/{s}") == (200, {"compatibilityLevel": "FULL"})
    ok(rest(f"{url}/subjects/{s}", "DELETE"))
    assert get(f"/subjects/{s}/versions")[0] == 404
    assert get(f"/subjects/{s}/versions?deleted=true") == (200, [1, 2])
    ok(rest(f"{url}/subjects/{s}?permanent=true", "DELETE"))
    assert get(f"/subjects/{s}/versions?deleted=true")[0] == 404
    conn.request("HEAD", f"/subjects/{s}/versions?deleted=true")
    r = conn.getresponse()
    assert r.status == 404 and r.read() == b""
    conn.close()

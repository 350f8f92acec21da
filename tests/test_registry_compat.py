"""Compatibility verdicts against the hand-written table tests/fixtures/registry/compat_cases.txt
(the Avro specification's resolution rules and Confluent's documented JSON Schema and Protobuf
rules), checked by the checkers directly and, for a sample, through the REST API."""
from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

from pylog.registry.compat import check
from pylog.core.schemas.codecs import parse
from pylog.core.schemas.protoc import install

install()

TABLE = Path(__file__).resolve().parent / "fixtures" / "registry" / "compat_cases.txt"
LEVELS = {"B": "BACKWARD", "F": "FORWARD", "BT": "BACKWARD_TRANSITIVE", "FT": "FORWARD_TRANSITIVE"}


def _cases():
    out = []
    for n, line in enumerate(TABLE.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        t, old, new, verdicts, why = [c.strip() for c in line.split(" | ")]
        if old.startswith("chain "):
            olds = json.loads(old[len("chain "):])
        else:
            olds = [json.loads(old)]
        new = json.loads(new)
        v = dict(re.findall(r"\b(BT|FT|B|F)([+-])", verdicts))
        expect = {LEVELS[k]: s == "+" for k, s in v.items()}
        if "BACKWARD" in expect and "FORWARD" in expect:
            expect["FULL"] = expect["BACKWARD"] and expect["FORWARD"]
        if "BACKWARD_TRANSITIVE" in expect and "FORWARD_TRANSITIVE" in expect:
            expect["FULL_TRANSITIVE"] = expect["BACKWARD_TRANSITIVE"] and expect["FORWARD_TRANSITIVE"]
        expect["NONE"] = True
        for level, ok in expect.items():
            out.append(pytest.param(t, olds, new, level, ok, id=f"L{n}-{t}-{level}-{why[:40]}"))
    return out


CASES = _cases()


def _text(t, s):
    return s if isinstance(s, str) and t == "PROTOBUF" else json.dumps(s)


def test_table_is_big_enough():
    assert len({c.values[0] for c in CASES}) == 3
    assert len([c for c in CASES if c.values[3] != "NONE"]) >= 150


@pytest.mark.parametrize("schema_type,olds,new,level,compatible", CASES)
def test_verdict(schema_type, olds, new, level, compatible):
    old_parsed = [parse(schema_type, _text(schema_type, o)) for o in olds]
    new_parsed = parse(schema_type, _text(schema_type, new))
    problems = check(level, new_parsed, old_parsed)
    assert (not problems) == compatible, problems


@pytest.fixture(scope="module")
def registry():
    from pylog.testing import EmbeddedBroker

    with EmbeddedBroker(schema_registry=True) as b:
        yield b.schema_registry_url


def test_verdicts_through_rest(registry):
    """Every 5th case through POST /compatibility with the subject's level set by PUT /config."""
    from support.registry import rest

    for c in CASES[::5]:
        schema_type, olds, new, level, compatible = c.values
        subject = f"c-{uuid.uuid4().hex[:8]}"
        assert rest(f"{registry}/config/{subject}", "PUT", {"compatibility": "NONE"})[0] == 200
        for o in olds:
            st, body, _ = rest(f"{registry}/subjects/{subject}/versions", "POST",
                               {"schema": _text(schema_type, o), "schemaType": schema_type})
            assert st == 200, body
        rest(f"{registry}/config/{subject}", "PUT", {"compatibility": level})
        st, body, _ = rest(f"{registry}/compatibility/subjects/{subject}/versions?verbose=true", "POST",
                           {"schema": _text(schema_type, new), "schemaType": schema_type})
        assert st == 200 and body["is_compatible"] == compatible, (c.id, body)
        if not compatible:
            assert body["messages"]

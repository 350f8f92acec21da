"""`sasl.jaas.config` values, read as Kafka's JaasConfig reads them.

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_alice="alice-secret";

A login module class, a control flag (required, requisite, sufficient,
optional), `key=value` options (value quoted or a bare word) and a closing
semicolon. Kafka accepts exactly one module per property; `//` and `/* */`
comments are skipped.
"""
from __future__ import annotations

from dataclasses import dataclass, field

FLAGS = ("required", "requisite", "sufficient", "optional")
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


class JaasError(ValueError):
    pass


@dataclass
class LoginModule:
    name: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)


def _tokens(text: str):
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise JaasError("unterminated comment")
            i = j + 2
        elif c in "=;":
            yield c
            i += 1
        elif c in "\"'":
            j = i + 1
            out = []
            while j < n and text[j] != c:
                if text[j] == "\\" and j + 1 < n:
                    j += 1
                out.append(text[j])
                j += 1
            if j >= n:
                raise JaasError("unterminated quoted value")
            yield ("str", "".join(out))
            i = j + 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in "=;\"'":
                j += 1
            yield ("word", text[i:j])
            i = j


def parse(text: str) -> LoginModule:
    """The single login module of a `sasl.jaas.config` value."""
    toks = list(_tokens(text))
    modules = []
    i = 0
    while i < len(toks):
        if not isinstance(toks[i], tuple) or toks[i][0] != "word":
            raise JaasError(f"expected a login module class name in {text[:60]!r}")
        name = toks[i][1]
        if i + 1 >= len(toks) or not isinstance(toks[i + 1], tuple) or toks[i + 1][1].lower() not in FLAGS:
            raise JaasError(f"login module {name}: control flag must be one of {', '.join(FLAGS)}")
        mod = LoginModule(name, toks[i + 1][1].lower())
        i += 2
        while i < len(toks) and toks[i] != ";":
            key = toks[i]
            if (not isinstance(key, tuple) or i + 2 >= len(toks) or toks[i + 1] != "="
                    or not isinstance(toks[i + 2], tuple)):
                raise JaasError(f"login module {name}: expected key=value options")
            mod.options[key[1]] = toks[i + 2][1]
            i += 3
        if i >= len(toks):
            raise JaasError(f"login module {name}: missing ';' at the end")
        i += 1
        modules.append(mod)
    if len(modules) != 1:
        raise JaasError(f"JAAS config property contains {len(modules)} login modules, should be 1 module")
    return modules[0]


def quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'

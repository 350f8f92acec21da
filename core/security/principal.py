"""Principals: `User:<name>` from SASL, and from a TLS client certificate.

A certificate's subject is written as Java's X500Principal.getName() writes
it (RFC 2253: most specific attribute first, `CN=...,OU=...,O=...,C=...`),
then `ssl.principal.mapping.rules` turn it into a name the way Kafka's
SslPrincipalMapper does: rules separated by commas, each `DEFAULT` or
`RULE:pattern/replacement/` with an optional `L` or `U` flag; the first rule
whose pattern matches the whole DN wins; no match fails the authentication.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

USER_TYPE = "User"
ANONYMOUS = "User:ANONYMOUS"

# OpenSSL's attribute names (Python's ssl.getpeercert) -> RFC 2253 keywords Java prints
_KEYWORDS = {
    "commonName": "CN", "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
    "organizationName": "O", "organizationalUnitName": "OU", "streetAddress": "STREET",
    "domainComponent": "DC", "userId": "UID",
}
# attributes Java has no keyword for are printed as OID=#<DER hex>
_OIDS = {"emailAddress": ("1.2.840.113549.1.9.1", 0x16)}


class PrincipalError(ValueError):
    pass


def _escape(value: str) -> str:
    out = []
    for i, c in enumerate(value):
        if c in ',+"\\<>;' or (c == "#" and i == 0) or (c == " " and i in (0, len(value) - 1)):
            out.append("\\" + c)
        else:
            out.append(c)
    return "".join(out)


def _der_hex(tag: int, value: str) -> str:
    raw = value.encode("utf-8")
    if len(raw) < 128:
        length = bytes([len(raw)])
    else:
        n = len(raw).to_bytes((len(raw).bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(n)]) + n
    return "#" + (bytes([tag]) + length + raw).hex()


def rfc2253(subject) -> str:
    """Java's X500Principal.getName() for a subject as `ssl.SSLSocket.getpeercert()` gives it."""
    rdns = []
    for rdn in reversed(subject or ()):
        avas = []
        for key, value in rdn:
            if key in _KEYWORDS:
                avas.append(f"{_KEYWORDS[key]}={_escape(value)}")
            elif key in _OIDS:
                oid, tag = _OIDS[key]
                avas.append(f"{oid}={_der_hex(tag, value)}")
            else:
                avas.append(f"{key}={_escape(value)}")
        rdns.append("+".join(avas))
    return ",".join(rdns)


_RULE = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(?:,\s*|$)")


@dataclass(frozen=True)
class _Rule:
    default: bool
    pattern: re.Pattern | None = None
    replacement: str = ""
    case: str = ""

    def apply(self, dn: str) -> str | None:
        if self.default:
            return dn
        if not self.pattern.fullmatch(dn):
            return None
        out = self.pattern.sub(self.replacement, dn, count=0) if self.pattern.pattern else dn
        return out.lower() if self.case == "L" else out.upper() if self.case == "U" else out


def _java_replacement(text: str) -> str:
    # Java's $1 / ${name} / \$ -> Python's \g<1> / \g<name> / $
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append(text[i + 1].replace("\\", "\\\\"))
            i += 2
        elif c == "$" and i + 1 < len(text) and text[i + 1].isdigit():
            j = i + 1
            while j < len(text) and text[j].isdigit():
                j += 1
            out.append(f"\\g<{text[i + 1:j]}>")
            i = j
        elif c == "$" and text.startswith("{", i + 1):
            j = text.index("}", i)
            out.append(f"\\g<{text[i + 2:j]}>")
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


class SslPrincipalMapper:
    """`ssl.principal.mapping.rules` compiled once; `name(dn)` maps a DN."""

    def __init__(self, rules: str = "DEFAULT"):
        self.rules: list[_Rule] = []
        text = (rules or "DEFAULT").strip()
        pos = 0
        while pos < len(text):
            m = _SPLITTER.match(text, pos)
            if m is None or m.end() == pos:
                raise PrincipalError(f"Invalid rule: {text[pos:]}")
            if m.group(2):
                self.rules.append(_Rule(True))
            elif m.group(3) is not None:
                try:
                    pat = re.compile(m.group(3).replace("\\/", "/"))
                except re.error as e:
                    raise PrincipalError(f"Invalid rule: {m.group(1)}: {e}") from None
                self.rules.append(_Rule(False, pat, _java_replacement(m.group(4).replace("\\/", "/")), m.group(5)))
            else:
                raise PrincipalError(f"Invalid rule: {m.group(1)}")
            pos = m.end()

    def name(self, dn: str) -> str:
        for rule in self.rules:
            out = rule.apply(dn)
            if out is not None:
                return out
        raise PrincipalError(f"No rules apply to {dn}, rules {self.rules}")


def user(name: str) -> str:
    return f"{USER_TYPE}:{name}"


def parse_principal(text: str) -> tuple[str, str]:
    """`User:alice` -> ("User", "alice"); Kafka's SecurityUtils.parseKafkaPrincipal."""
    kind, sep, name = text.partition(":")
    if not sep or not kind:
        raise PrincipalError(f"Principal must be of the form PrincipalType:name, got {text!r}")
    return kind, name

"""Listeners as Kafka configures them.

`listeners=PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9093`, names mapped
to security protocols by `listener.security.protocol.map` (a listener named
after a protocol needs no entry), published addresses from
`advertised.listeners` by listener name, and per-listener overrides
`listener.name.<name>.<property>` (the name in lower case), with SASL's JAAS
config per mechanism: `listener.name.<name>.<mechanism>.sasl.jaas.config`.
"""
from __future__ import annotations

import socket
from dataclasses import dataclass, field

from pylog.core.errors import UsageError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
LISTENER_PREFIX = "listener.name."


@dataclass
class ListenerSpec:
    name: str  # upper case, as Kafka normalises it
    protocol: str
    host: str
    port: int
    advertised_host: str = ""
    advertised_port: int | None = None  # None: the bound port
    props: dict = field(default_factory=dict)  # listener.name.<name>.* with the prefix stripped

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    def get(self, config, key: str, mechanism: str | None = None):
        """A property for this listener: mechanism override, listener override, then the broker's."""
        if mechanism is not None:
            v = self.props.get(f"{mechanism.lower()}.{key}")
            if v is not None:
                return v
        v = self.props.get(key)
        if v is not None:
            return v
        return config.get(key)


def split_uri(text: str, what: str) -> tuple[str | None, str, int]:
    """`NAME://HOST:PORT`, `HOST:PORT` or `[v6]:PORT` -> (NAME or None, host, port)."""
    raw = text.strip()
    name = None
    if "://" in raw:
        name, _, raw = raw.partition("://")
        name = name.upper()
    host, sep, port = raw.rpartition(":")
    if not sep:
        raise UsageError(f"{what}: expected HOST:PORT, got {text!r}")
    host = host.strip("[]")
    try:
        p = int(port)
    except ValueError:
        raise UsageError(f"{what}: port must be a number, got {text!r}") from None
    if not 0 <= p <= 65535:
        raise UsageError(f"{what}: port out of range in {text!r}")
    return name, host, p


def protocol_map(text: str) -> dict[str, str]:
    out = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, sep, proto = item.partition(":")
        proto = proto.strip().upper()
        if not sep or proto not in PROTOCOLS:
            raise UsageError(f"listener.security.protocol.map: invalid entry {item.strip()!r} "
                             f"(NAME:PROTOCOL, PROTOCOL one of {', '.join(PROTOCOLS)})")
        out[name.strip().upper()] = proto
    return out


def _public_host(host: str) -> str:
    # a wildcard bind address is useless to clients: publish this machine's name
    if host in ("", "0.0.0.0", "::"):
        return socket.getfqdn()
    return host


def build_listeners(listener_uris: list[str], advertised_uris: list[str] | None, proto_map_text: str,
                    listener_props: dict[str, str], what: str = "listeners") -> list[ListenerSpec]:
    """ListenerSpecs from the three listener properties and the `listener.name.*` overrides."""
    pmap = protocol_map(proto_map_text)
    specs: list[ListenerSpec] = []
    for uri in listener_uris:
        name, host, port = split_uri(uri, what)
        name = name or "PLAINTEXT"
        if name == "TCP":
            name = "PLAINTEXT"
        proto = pmap.get(name) or (name if name in PROTOCOLS else None)
        if proto is None:
            raise UsageError(f"{what}: listener {name} has no entry in listener.security.protocol.map")
        if any(s.name == name for s in specs):
            raise UsageError(f"{what}: listener {name} is given twice")
        specs.append(ListenerSpec(name, proto, host, port, _public_host(host)))
    by_name = {s.name: s for s in specs}
    for uri in advertised_uris or []:
        name, host, port = split_uri(uri, "advertised.listeners")
        name = name or specs[0].name
        spec = by_name.get(name)
        if spec is None:
            raise UsageError(f"advertised.listeners: {name} is not one of the listeners "
                             f"({', '.join(by_name)})")
        spec.advertised_host, spec.advertised_port = host, port or None
    for key, value in listener_props.items():
        rest = key[len(LISTENER_PREFIX):]
        lname, _, prop = rest.partition(".")
        spec = by_name.get(lname.upper())
        if spec is None or not prop:
            raise UsageError(f"{key}: no listener named {lname!r}")
        spec.props[prop] = value
    return specs

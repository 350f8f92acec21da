"""SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer checks it: one message,
`authzid NUL username NUL password`, users from the listener's JAAS config
(`user_<name>="<password>"`)."""
from __future__ import annotations

import hmac


class PlainError(Exception):
    """Authentication failed; the message is Kafka's."""


def parse(message: bytes) -> tuple[str, str, str]:
    """(authzid, username, password) from a client's PLAIN message."""
    try:
        text = bytes(message).decode("utf-8")
    except UnicodeDecodeError:
        raise PlainError("Invalid SASL/PLAIN response: not UTF-8") from None
    tokens = text.split("\0")
    if len(tokens) != 3:
        raise PlainError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
    authzid, username, password = tokens
    if not username:
        raise PlainError("Authentication failed: username not specified")
    if not password:
        raise PlainError("Authentication failed: password not specified")
    if authzid and authzid != username:
        raise PlainError("Authentication failed: Client requested an authorization id that is "
                         "different from username")
    return authzid, username, password


def authenticate(message: bytes, users: dict[str, str]) -> str:
    """The authenticated username, or PlainError."""
    _, username, password = parse(message)
    expected = users.get(username)
    if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
        raise PlainError("Authentication failed: Invalid username or password")
    return username


def client_message(username: str, password: str) -> bytes:
    return f"\0{username}\0{password}".encode("utf-8")


def users_from_jaas(options: dict[str, str]) -> dict[str, str]:
    """`user_alice="secret"` options of a PlainLoginModule -> {"alice": "secret"}."""
    return {k[5:]: v for k, v in options.items() if k.startswith("user_")}

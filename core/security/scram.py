"""SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka speaks and stores it.

Message logic only: `ScramServer` and `ScramClient` take and return bytes and
raise `ScramError`; sockets are the caller's. Credentials are kept as Kafka
keeps them (UserScramCredentialRecord): salt, StoredKey, ServerKey and the
iteration count, never the password.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass


class ScramError(Exception):
    """The exchange failed; the message is what Kafka reports."""


@dataclass(frozen=True)
class Mechanism:
    name: str
    type: int  # Kafka's ScramMechanism type byte (UserScramCredentialRecord.mechanism)
    hash_name: str
    min_iterations: int = 4096
    max_iterations: int = 16384

    def h(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()

    def hi(self, password: bytes, salt: bytes, iterations: int) -> bytes:
        return hashlib.pbkdf2_hmac(self.hash_name, password, salt, iterations)


SCRAM_SHA_256 = Mechanism("SCRAM-SHA-256", 1, "sha256")
SCRAM_SHA_512 = Mechanism("SCRAM-SHA-512", 2, "sha512")
MECHANISMS = {m.name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}
MECHANISMS_BY_TYPE = {m.type: m for m in MECHANISMS.values()}
DEFAULT_ITERATIONS = 4096


def mechanism(name: str) -> Mechanism:
    try:
        return MECHANISMS[name.upper()]
    except KeyError:
        raise ScramError(f"unsupported SCRAM mechanism {name!r} (SCRAM-SHA-256 or SCRAM-SHA-512)") from None


@dataclass(frozen=True)
class ScramCredential:
    """What the broker stores for one user and mechanism."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def random_salt() -> bytes:
    # Kafka's ScramFormatter salts with the UTF-8 bytes of a random 130-bit
    # number written in base 36; doing the same keeps stored salts alike
    n = secrets.randbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return (out or "0").encode("ascii")


def salted_credential(mech: Mechanism, salted_password: bytes, salt: bytes, iterations: int) -> ScramCredential:
    client_key = mech.hmac(salted_password, b"Client Key")
    return ScramCredential(salt, mech.h(client_key), mech.hmac(salted_password, b"Server Key"), iterations)


def make_credential(mech: Mechanism, password: str, iterations: int = DEFAULT_ITERATIONS,
                    salt: bytes | None = None) -> ScramCredential:
    """Salt and hash `password` as Kafka does for AlterUserScramCredentials / --add-scram."""
    check_iterations(mech, iterations)
    salt = salt if salt is not None else random_salt()
    return salted_credential(mech, mech.hi(password.encode("utf-8"), salt, iterations), salt, iterations)


def check_iterations(mech: Mechanism, iterations: int) -> None:
    if not mech.min_iterations <= iterations <= mech.max_iterations:
        raise ScramError(f"iterations {iterations} for {mech.name} must be between "
                         f"{mech.min_iterations} and {mech.max_iterations}")


def _nonce() -> str:
    return secrets.token_urlsafe(24)


def _escape_name(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _unescape_name(name: str) -> str:
    if "=" in name.replace("=2C", "").replace("=3D", ""):
        raise ScramError(f"Invalid username: {name}")
    return name.replace("=2C", ",").replace("=3D", "=")


def _attrs(text: str) -> dict[str, str]:
    out = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if len(key) != 1 or not eq:
            raise ScramError(f"Invalid SCRAM message attribute {part[:40]!r}")
        out.setdefault(key, value)
    return out


def _first_attrs(bare: str) -> tuple[dict[str, str], dict[str, str]]:
    """A client-first message's attributes and its extensions (`,tokenauth=true` after the nonce:
    names of more than one letter, as Kafka's ScramExtensions)."""
    attrs, extensions = {}, {}
    for part in bare.split(","):
        key, eq, value = part.partition("=")
        if len(key) > 1 and key.isalpha() and eq and "r" in attrs:
            extensions[key] = value
        elif len(key) != 1 or not eq:
            raise ScramError(f"Invalid SCRAM message attribute {part[:40]!r}")
        else:
            attrs.setdefault(key, value)
    return attrs, extensions


def _decode(message: bytes) -> str:
    try:
        return bytes(message).decode("utf-8")
    except UnicodeDecodeError:
        raise ScramError("Invalid SCRAM message: not UTF-8") from None


class ScramServer:
    """Server side of one exchange: client-first -> server-first, client-final -> server-final.

    `lookup(username) -> ScramCredential | None` supplies the stored credential.
    `username` is set after the first message; `complete` after a valid proof.
    """

    def __init__(self, mech: Mechanism, lookup):
        self.mech = mech
        self._lookup = lookup
        self.username: str | None = None
        self.extensions: dict[str, str] = {}  # the client-first message's (tokenauth=true)
        self.complete = False
        self._state = "first"
        self._cred: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""

    def evaluate(self, message: bytes) -> bytes:
        """Feed the client's next message; returns the server's reply."""
        if self._state == "first":
            return self._first(message)
        if self._state == "final":
            return self._final(message)
        raise ScramError("Unexpected SCRAM message after the exchange completed")

    def _first(self, message: bytes) -> bytes:
        text = _decode(message)
        # gs2 header: channel binding flag, optional authzid
        parts = text.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y"):
            raise ScramError("Invalid SCRAM client first message")
        authzid = parts[1]
        bare = parts[2]
        attrs, self.extensions = _first_attrs(bare)
        if "n" not in attrs or "r" not in attrs or not attrs["r"]:
            raise ScramError("Invalid SCRAM client first message")
        if "m" in attrs:
            raise ScramError("SCRAM mandatory extensions are not supported")
        user = _unescape_name(attrs["n"])
        if authzid and _unescape_name(authzid[2:] if authzid.startswith("a=") else authzid) != user:
            raise ScramError("Authentication failed: Client requested an authorization id that is "
                             "different from username")
        self.username = user
        self._cred = self._lookup(user)
        if self._cred is None:
            # answer like for a known user so a client cannot probe for names;
            # the proof check then fails
            fake = make_credential(self.mech, secrets.token_hex(16), self.mech.min_iterations)
            self._cred = ScramCredential(fake.salt, fake.stored_key, fake.server_key, fake.iterations)
            self._unknown = True
        else:
            self._unknown = False
        self._client_first_bare = bare
        self._nonce = attrs["r"] + _nonce()
        self._server_first = (f"r={self._nonce},s={base64.b64encode(self._cred.salt).decode()},"
                              f"i={self._cred.iterations}")
        self._state = "final"
        return self._server_first.encode()

    def _final(self, message: bytes) -> bytes:
        self._state = "done"
        text = _decode(message)
        head, sep, proof_b64 = text.rpartition(",p=")
        if not sep:
            raise ScramError("Invalid SCRAM client final message")
        attrs = _attrs(head)
        # Kafka checks that the nonce *ends with* the server's: librdkafka sends
        # its client nonce in front of the server's combined one
        if not attrs.get("r", "").endswith(self._nonce):
            raise ScramError("Invalid client nonce in the final client message.")
        if attrs.get("c") not in ("biws", "eSws"):  # base64 of "n,," / "y,,"
            raise ScramError("Invalid SCRAM client final message: channel binding")
        try:
            proof = base64.b64decode(proof_b64, validate=True)
        except ValueError:
            raise ScramError("Invalid SCRAM client final message: proof") from None
        cred = self._cred
        auth_message = f"{self._client_first_bare},{self._server_first},{head}".encode()
        signature = self.mech.hmac(cred.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("Authentication failed: Invalid user credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if self._unknown or not hmac.compare_digest(self.mech.h(client_key), cred.stored_key):
            raise ScramError("Authentication failed: Invalid user credentials")
        self.complete = True
        server_sig = self.mech.hmac(cred.server_key, auth_message)
        return b"v=" + base64.b64encode(server_sig)


class ScramClient:
    """Client side: `first()`, `final(server_first)`, `verify(server_final)`."""

    def __init__(self, mech: Mechanism, username: str, password: str, nonce: str | None = None,
                 extensions: dict[str, str] | None = None):
        self.mech = mech
        self.username = username
        self.password = password
        self._nonce = nonce or _nonce()
        ext = "".join(f",{k}={v}" for k, v in (extensions or {}).items())
        self._first_bare = f"n={_escape_name(username)},r={self._nonce}{ext}"
        self._auth_message = b""
        self._salted = b""

    def first(self) -> bytes:
        return ("n,," + self._first_bare).encode()

    def final(self, server_first: bytes) -> bytes:
        text = _decode(server_first)
        attrs = _attrs(text)
        if "e" in attrs:
            raise ScramError(f"SCRAM server error: {attrs['e']}")
        nonce, salt, iters = attrs.get("r", ""), attrs.get("s"), attrs.get("i")
        if not nonce.startswith(self._nonce) or salt is None or iters is None:
            raise ScramError("Invalid SCRAM server first message")
        iterations = int(iters)
        check_iterations(self.mech, iterations)
        self._salted = self.mech.hi(self.password.encode(), base64.b64decode(salt), iterations)
        without_proof = f"c=biws,r={nonce}"
        self._auth_message = f"{self._first_bare},{text},{without_proof}".encode()
        client_key = self.mech.hmac(self._salted, b"Client Key")
        signature = self.mech.hmac(self.mech.h(client_key), self._auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        attrs = _attrs(_decode(server_final))
        if "e" in attrs:
            raise ScramError(f"SCRAM server error: {attrs['e']}")
        server_key = self.mech.hmac(self._salted, b"Server Key")
        expected = self.mech.hmac(server_key, self._auth_message)
        if not hmac.compare_digest(base64.b64decode(attrs.get("v", "")), expected):
            raise ScramError("Invalid server signature in SCRAM server final message")

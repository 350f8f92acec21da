"""Per-listener security runtime and the SASL exchange of one connection.

`ListenerRuntime` holds what a listener needs at accept time: its TLS context,
the SASL mechanisms it serves (`sasl.enabled.mechanisms`), PLAIN users from
its JAAS config and the certificate principal mapper. `SaslSession` follows
Kafka's SaslServerAuthenticator: ApiVersions and SaslHandshake first, then
SaslAuthenticate rounds (or, after a v0 handshake, raw size-prefixed tokens);
a failed authentication answers SASL_AUTHENTICATION_FAILED and closes the
connection; any other request before authentication closes it.

Re-authentication (KIP-368): with `connections.max.reauth.ms` set (per listener
and mechanism, as Kafka's), SaslAuthenticate answers the session's lifetime;
a request on a connection whose session expired closes it, and a
SaslHandshake on an authenticated connection starts re-authentication with
the same mechanism and principal (at most one a second; the request waits for
nothing else: any other request before it completes closes the connection).
"""
from __future__ import annotations

import logging
import struct
import time

from pylog.broker.net.listeners import SASL_MECHANISMS, ListenerSpec
from pylog.core.errors import ErrorCode, UsageError
from pylog.core.protocol import API_KEYS
from pylog.core.security import jaas, plain, principal, scram, tls

log = logging.getLogger("pylog.broker")

SASL_HANDSHAKE_KEY = API_KEYS["SaslHandshake"]
SASL_AUTHENTICATE_KEY = API_KEYS["SaslAuthenticate"]
API_VERSIONS_KEY = API_KEYS["ApiVersions"]
ALLOWED_BEFORE_AUTH = (API_VERSIONS_KEY, SASL_HANDSHAKE_KEY, SASL_AUTHENTICATE_KEY)
_SIZE = struct.Struct(">i")


class ListenerRuntime:
    """A listener's spec plus its TLS context, SASL mechanisms and principal rules."""

    def __init__(self, spec: ListenerSpec, config, store, tokens=None):
        self.spec = spec
        self.config = config
        self.store = store  # SecurityStore: SCRAM credentials
        self.tokens = tokens  # TokenStore: delegation tokens (SCRAM with tokenauth=true)
        self.ssl_context = None
        self.mechanisms: list[str] = []
        self.plain_users: dict[str, str] = {}
        props = dict(config)
        props.update(spec.props)
        try:
            self.mapper = principal.SslPrincipalMapper(spec.get(config, "ssl.principal.mapping.rules") or "DEFAULT")
        except principal.PrincipalError as e:
            raise UsageError(f"ssl.principal.mapping.rules: {e}") from None
        if spec.tls:
            flat = {k: (",".join(v) if isinstance(v, list) else v) for k, v in props.items() if k.startswith("ssl.")}
            try:
                self.ssl_context = tls.server_context(flat)
            except tls.TlsConfigError as e:
                raise UsageError(f"listener {spec.name}: {e}") from None
        if spec.sasl:
            enabled = spec.get(config, "sasl.enabled.mechanisms") or []
            if isinstance(enabled, str):
                enabled = [m.strip() for m in enabled.split(",") if m.strip()]
            unsupported = [m for m in enabled if m.upper() not in SASL_MECHANISMS]
            if unsupported:
                log.warning("listener %s: SASL mechanisms %s are not served by pylog", spec.name,
                            ", ".join(unsupported))
            self.mechanisms = [m.upper() for m in enabled if m.upper() in SASL_MECHANISMS]
            if not self.mechanisms:
                raise UsageError(f"listener {spec.name}: sasl.enabled.mechanisms names no mechanism pylog serves "
                                 f"({', '.join(SASL_MECHANISMS)})")
            if "PLAIN" in self.mechanisms:
                text = spec.get(config, "sasl.jaas.config", "plain")
                if not text:
                    raise UsageError(f"listener {spec.name}: PLAIN needs listener.name.{spec.name.lower()}"
                                     ".plain.sasl.jaas.config with user_NAME=\"PASSWORD\" entries")
                try:
                    module = jaas.parse(text)
                except jaas.JaasError as e:
                    raise UsageError(f"listener.name.{spec.name.lower()}.plain.sasl.jaas.config: {e}") from None
                self.plain_users = plain.users_from_jaas(module.options)

    def on_tls_established(self, conn) -> None:
        """After the TLS handshake: the certificate's principal (SSL listeners)."""
        if self.spec.sasl:
            conn.sasl = SaslSession(self)
            return
        cert = conn.sock.getpeercert()
        if cert and cert.get("subject"):
            conn.principal = principal.user(self.mapper.name(principal.rfc2253(cert["subject"])))

    def on_accept(self, conn) -> None:
        """A connection on a plaintext socket (PLAINTEXT or SASL_PLAINTEXT)."""
        if self.spec.sasl:
            conn.sasl = SaslSession(self)


class SaslFailure(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


class SaslSession:
    """One connection's SASL state: handshake -> authenticate -> done."""

    def __init__(self, listener: ListenerRuntime):
        self.listener = listener
        self.state = "handshake"
        self.mechanism: str | None = None
        self.raw = False  # v0 handshake: tokens follow as raw frames
        self._server = None
        self.expires_at: float | None = None  # monotonic end of the session (connections.max.reauth.ms)
        self._reauth_started = 0.0
        self._previous: tuple[str, str] | None = None  # (mechanism, principal) being re-authenticated

    @property
    def authenticated(self) -> bool:
        return self.state == "done"

    def handshake(self, mechanism: str, version: int) -> dict:
        enabled = self.listener.mechanisms
        if self.state != "handshake":
            raise SaslFailure(ErrorCode.ILLEGAL_SASL_STATE, "Unexpected SaslHandshake request")
        if mechanism not in enabled:
            self.state = "failed"
            return {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": enabled}
        if self._previous is not None and mechanism != self._previous[0]:
            self.state = "bad_mechanism"  # Kafka answers the handshake, then fails the next token
            return {"error_code": 0, "mechanisms": enabled}
        self.mechanism = mechanism
        if mechanism == "PLAIN":
            self._server = _PlainServer(self.listener.plain_users)
        else:
            self._server = scram.ScramServer(scram.MECHANISMS[mechanism], self._scram_credential)
        self.state = "authenticate"
        self.raw = version == 0
        return {"error_code": 0, "mechanisms": enabled}

    def _scram_credential(self, user: str):
        """A user's SCRAM credential, or with `tokenauth=true` a delegation token's (user: the token id)."""
        if self.token_authenticated:
            tokens = self.listener.tokens
            return None if tokens is None else tokens.credential(user, self.mechanism)
        return self.listener.store.credential(user, self.mechanism)

    @property
    def token_authenticated(self) -> bool:
        """Whether the client authenticated (or is authenticating) with a delegation token."""
        server = self._server
        return isinstance(server, scram.ScramServer) and server.extensions.get("tokenauth", "").lower() == "true"

    def authenticate(self, token: bytes) -> bytes:
        """Evaluate one client token; the reply, or SaslFailure."""
        if self.state == "bad_mechanism":
            raise SaslFailure(ErrorCode.SASL_AUTHENTICATION_FAILED,
                              f"SASL mechanism '{self.mechanism}' requested by client is not supported for "
                              f"re-authentication of mechanism '{self._previous[0]}'")
        if self.state != "authenticate":
            raise SaslFailure(ErrorCode.ILLEGAL_SASL_STATE, "Unexpected SaslAuthenticate request")
        try:
            reply = self._server.evaluate(bytes(token))
        except (scram.ScramError, plain.PlainError) as e:
            self.state = "failed"
            msg = str(e)
            # Kafka reports PLAIN's own message but wraps every SCRAM failure in its generic one
            if self.mechanism != "PLAIN" or not msg.startswith("Authentication failed:"):
                msg = (f"Authentication failed during authentication due to invalid credentials with SASL "
                       f"mechanism {self.mechanism}")
            raise SaslFailure(ErrorCode.SASL_AUTHENTICATION_FAILED, msg) from None
        if self._server.complete:
            if self._previous is not None and self.principal != self._previous[1]:
                self.state = "failed"
                old, new = self._previous[1].split(":", 1), self.principal.split(":", 1)
                raise SaslFailure(ErrorCode.SASL_AUTHENTICATION_FAILED,
                                  f"Cannot change principals during re-authentication from {old[0]}.{old[1]}: "
                                  f"{new[0]}.{new[1]}")
            self.state = "done"
            self._previous = None
        return reply

    def start_session(self) -> int:
        """At the end of an authentication: the session's lifetime in ms (0: it never expires).
        A delegation token's session ends at the token's expiry at the latest, as Kafka's."""
        value = self.listener.spec.get(self.listener.config, "connections.max.reauth.ms", self.mechanism)
        lifetime = max(int(value or 0), 0)
        expiry = self._token_expiry_ms()
        if expiry is not None:
            left = max(expiry - int(time.time() * 1000), 0)
            lifetime = min(left, lifetime) if lifetime else left
        ends = lifetime or expiry is not None
        self.expires_at = time.monotonic() + lifetime / 1000.0 if ends else None
        return lifetime

    def _token_expiry_ms(self) -> int | None:
        tokens = self.listener.tokens
        if not self.token_authenticated or tokens is None:
            return None
        return tokens.expiry_ms(self._server.username)

    def gate(self, api_key: int) -> str | None:
        """Why a request must close the connection (None: serve it). A SaslHandshake on an
        authenticated connection whose sessions expire begins re-authentication."""
        if self.state != "done":
            return None if api_key in ALLOWED_BEFORE_AUTH else "before SASL authentication"
        if self.expires_at is None:
            return None
        now = time.monotonic()
        if api_key == SASL_HANDSHAKE_KEY and now - self._reauth_started >= 1.0:
            self._reauth_started = now
            self._previous = (self.mechanism, self.principal)
            self.state, self._server = "handshake", None
            return None
        return "after its SASL session expired (no re-authentication)" if now > self.expires_at else None

    @property
    def principal(self) -> str:
        """The authenticated user; with a delegation token, the token's owner (as Kafka's ScramSaslServer)."""
        name = self._server.username
        if self.token_authenticated and self.listener.tokens is not None:
            name = self.listener.tokens.owner_name(name) or name
        return principal.user(name)


class _PlainServer:
    def __init__(self, users: dict[str, str]):
        self.users = users
        self.username = None
        self.complete = False

    def evaluate(self, token: bytes) -> bytes:
        self.username = plain.authenticate(token, self.users)
        self.complete = True
        return b""


# ---- request handlers (registered in handlers.py) -------------------------------
def sasl_handshake(broker, ctx, body: dict):
    """SaslHandshake: pick the mechanism; v0 means raw tokens follow."""
    conn = ctx.conn
    if conn.sasl is None or conn.sasl.authenticated:
        # not a SASL listener, or already authenticated: Kafka answers ILLEGAL_SASL_STATE
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}
    try:
        out = conn.sasl.handshake(body["mechanism"] or "", ctx.api_version)
    except SaslFailure as e:
        broker.respond_and_close(ctx, {"error_code": e.code, "mechanisms": conn.sasl.listener.mechanisms}, str(e))
        return None
    if out["error_code"]:
        broker.respond_and_close(ctx, out, f"unsupported SASL mechanism {body['mechanism']!r}")
        return None
    return out


def sasl_handshake_error(body, version, code, msg):
    return {"error_code": code, "mechanisms": []}


def sasl_authenticate(broker, ctx, body: dict):
    """SaslAuthenticate: one round of the mechanism; a failure answers and closes."""
    conn = ctx.conn
    if conn.sasl is None or conn.sasl.authenticated:
        return _auth_error(ErrorCode.ILLEGAL_SASL_STATE, "SaslAuthenticate request received after successful "
                                                         "authentication" if conn.sasl else
                           "SASL is not enabled on this listener")
    try:
        reply = conn.sasl.authenticate(body["auth_bytes"] or b"")
    except SaslFailure as e:
        broker.respond_and_close(ctx, _auth_error(e.code, str(e)), f"SASL authentication failed: {e}")
        return None
    lifetime = 0
    if conn.sasl.authenticated:
        conn.principal = conn.sasl.principal
        lifetime = conn.sasl.start_session()
    return {"error_code": 0, "error_message": None, "auth_bytes": reply, "session_lifetime_ms": lifetime}


def sasl_authenticate_error(body, version, code, msg):
    return _auth_error(code, msg)


def _auth_error(code: int, message: str | None) -> dict:
    return {"error_code": code, "error_message": message, "auth_bytes": b"", "session_lifetime_ms": 0}


def raw_token(conn, frame: bytearray) -> None:
    """A raw SASL token after a v0 handshake: evaluate, answer size-prefixed raw bytes."""
    try:
        reply = conn.sasl.authenticate(bytes(frame))
    except SaslFailure as e:
        return conn.close(f"SASL authentication failed: {e}")
    if conn.sasl.authenticated:
        conn.principal = conn.sasl.principal
        conn.sasl.raw = False
        conn.sasl.start_session()
    conn.fill(conn.reserve(), [_SIZE.pack(len(reply)) + reply])

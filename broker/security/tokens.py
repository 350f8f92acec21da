"""Delegation tokens (KIP-48): the durable token store and Kafka's rules for each token API.

A token is an id (a random Uuid's text, as Kafka's), its owner, the principal that asked for it,
the principals that may renew it, and three times: issued, expiry (renewed forward) and
max (the hard end). Its password is the HMAC-SHA512 of the id under
`delegation.token.secret.key`; a client authenticates with SCRAM as the token id and the
HMAC's base64 (`tokenauth=true`), and becomes the token's owner. Kafka keeps tokens as
DelegationTokenRecords in its metadata log; pylog keeps the same fields in
`delegation-tokens.json` in the first log dir, replaced atomically on every change.
Tokens past their expiry are removed every `delegation.token.expiry.check.interval.ms`,
as Kafka's controller sweeps them.
"""
from __future__ import annotations

import base64
import hashlib
import hmac as _hmac
import time
import uuid
from dataclasses import dataclass, replace

from pylog.broker.common.json_state import JsonStateFile
from pylog.core.errors import ErrorCode
from pylog.core.records.kafka_types import uuid_text
from pylog.core.security import scram

FILE_NAME = "delegation-tokens.json"
FORMAT_VERSION = 1
USER_TYPE = "User"


@dataclass(frozen=True)
class Token:
    token_id: str
    owner: str  # "User:alice"
    requester: str
    renewers: tuple[str, ...]
    issue_ms: int
    expiry_ms: int
    max_ms: int
    hmac: bytes

    def owner_or_renewer(self, principal: str) -> bool:
        """May renew or expire it."""
        return principal == self.owner or principal in self.renewers

    def involves(self, principal: str) -> bool:
        """Its owner, requester or a renewer (Describe shows it to them, and its owners filter matches them)."""
        return principal == self.requester or self.owner_or_renewer(principal)

    def expired(self, now_ms: int) -> bool:
        return self.max_ms < now_ms or self.expiry_ms < now_ms


def principal_text(ptype: str | None, name: str | None) -> str:
    return f"{ptype}:{name}"


def split_principal(text: str) -> tuple[str, str]:
    ptype, _, name = text.partition(":")
    return ptype, name


def _sum(now: int, duration: int) -> int:
    return min(now + duration, 2**63 - 1)


class TokenError(Exception):
    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


class TokenStore(JsonStateFile):
    """The tokens of one broker, by id; the SCRAM credentials their HMACs stand for."""

    FILE_NAME = FILE_NAME
    WHAT = "delegation tokens"

    def __init__(self, log_dir: str, config):
        super().__init__(log_dir)
        secret = config.get("delegation.token.secret.key")
        self.secret: bytes | None = secret.encode("utf-8") if secret else None
        self.max_lifetime_ms = int(config.get("delegation.token.max.lifetime.ms"))
        self.renew_ms = int(config.get("delegation.token.expiry.time.ms"))
        self.sweep_interval_ms = int(config.get("delegation.token.expiry.check.interval.ms"))
        self.tokens: dict[str, Token] = {}
        self._credentials: dict[tuple[str, str], scram.ScramCredential] = {}
        self._last_sweep = 0
        self.load()

    @property
    def enabled(self) -> bool:
        return self.secret is not None

    # ---- persistence -------------------------------------------------------
    def _apply(self, doc: dict) -> None:
        tokens = {}
        for r in doc.get("delegation_tokens", []):
            t = Token(r["token_id"], r["owner"], r["requester"], tuple(r["renewers"]), int(r["issue_timestamp"]),
                      int(r["expiration_timestamp"]), int(r["max_timestamp"]), base64.b64decode(r["hmac"]))
            tokens[t.token_id] = t
        self.tokens = tokens

    def _save(self, tokens: dict[str, Token]) -> None:
        self._write({"version": FORMAT_VERSION, "delegation_tokens": [
            {"token_id": t.token_id, "owner": t.owner, "requester": t.requester, "renewers": list(t.renewers),
             "issue_timestamp": t.issue_ms, "expiration_timestamp": t.expiry_ms, "max_timestamp": t.max_ms,
             "hmac": base64.b64encode(t.hmac).decode("ascii")}
            for t in tokens.values()]})

    def _install(self, tokens: dict[str, Token]) -> None:
        """Save, then serve `tokens` (a failed write leaves the old ones in place)."""
        self._save(tokens)
        self.tokens = tokens

    # ---- the token APIs (Kafka's controller rules) ----------------------------
    def make_hmac(self, token_id: str) -> bytes:
        return _hmac.new(self.secret, token_id.encode("utf-8"), hashlib.sha512).digest()

    def create(self, owner: str, requester: str, renewers: list[str], max_lifetime_ms: int) -> Token:
        if not self.enabled:
            raise TokenError(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        now = _now()
        life = self.max_lifetime_ms if max_lifetime_ms <= 0 else min(self.max_lifetime_ms, max_lifetime_ms)
        max_ms = _sum(now, life)
        if any(split_principal(r)[0] != USER_TYPE for r in renewers):
            raise TokenError(ErrorCode.INVALID_PRINCIPAL_TYPE)
        token_id = _random_id()
        token = Token(token_id, owner, requester, tuple(renewers), now, min(max_ms, _sum(now, self.renew_ms)),
                      max_ms, self.make_hmac(token_id))
        with self._lock:
            self._install({**self.tokens, token_id: token})
        return token

    def renew(self, principal: str, token_hmac: bytes, period_ms: int) -> int:
        now = _now()
        token = self._by_hmac(token_hmac)
        if token.expired(now):
            raise TokenError(ErrorCode.DELEGATION_TOKEN_EXPIRED)
        if not token.owner_or_renewer(principal):
            raise TokenError(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH)
        period = self.renew_ms if period_ms <= 0 else min(self.renew_ms, period_ms)
        expiry = min(token.max_ms, now + period)
        with self._lock:
            self._install({**self.tokens, token.token_id: replace(token, expiry_ms=expiry)})
        return expiry

    def expire(self, principal: str, token_hmac: bytes, period_ms: int) -> int:
        now = _now()
        token = self._by_hmac(token_hmac)
        if not token.owner_or_renewer(principal):
            raise TokenError(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH)
        with self._lock:
            if period_ms < 0:  # expire now: the token is gone
                self._install({k: v for k, v in self.tokens.items() if k != token.token_id})
                return now
            if token.expired(now):
                raise TokenError(ErrorCode.DELEGATION_TOKEN_EXPIRED)
            expiry = min(token.max_ms, _sum(now, period_ms))
            self._install({**self.tokens, token.token_id: replace(token, expiry_ms=expiry)})
        return expiry

    def _by_hmac(self, token_hmac: bytes) -> Token:
        if not self.enabled:
            raise TokenError(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        self.sweep()
        for t in self.tokens.values():
            if t.hmac == bytes(token_hmac or b""):
                return t
        raise TokenError(ErrorCode.DELEGATION_TOKEN_NOT_FOUND)

    def sweep(self) -> None:
        """Remove expired tokens once per `delegation.token.expiry.check.interval.ms`."""
        now = _now()
        if now - self._last_sweep < self.sweep_interval_ms:
            return
        self._last_sweep = now
        with self._lock:
            live = {k: t for k, t in self.tokens.items() if not t.expired(now)}
            if len(live) != len(self.tokens):
                self._install(live)

    def listed(self) -> list[Token]:
        self.sweep()
        return list(self.tokens.values())

    # ---- SCRAM with a token ---------------------------------------------------
    def credential(self, token_id: str, mechanism: str) -> scram.ScramCredential | None:
        """The SCRAM credential of a token (password: its HMAC in base64), None for an unknown token."""
        token = self.tokens.get(token_id) if self.enabled else None
        if token is None:
            return None
        key = (token_id, mechanism)
        cred = self._credentials.get(key)
        if cred is None:
            mech = scram.MECHANISMS[mechanism]
            cred = scram.make_credential(mech, base64.b64encode(token.hmac).decode("ascii"), mech.min_iterations)
            self._credentials[key] = cred
        return cred

    def expiry_ms(self, token_id: str) -> int | None:
        token = self.tokens.get(token_id)
        return None if token is None else token.expiry_ms

    def owner_name(self, token_id: str) -> str | None:
        token = self.tokens.get(token_id)
        return None if token is None else split_principal(token.owner)[1]


def _random_id() -> str:
    """A token id as Kafka makes one: a random Uuid in its text form (URL-safe base64, not
    starting with '-')."""
    while True:
        text = uuid_text(uuid.uuid4())
        if not text.startswith("-"):
            return text


def _now() -> int:
    return int(time.time() * 1000)

"""CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken, DescribeDelegationToken.

As Kafka's KafkaApis answers them before its controller does: the three changing APIs are
refused (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) on a PLAINTEXT listener, on one-way TLS
(an anonymous SSL client) and on a connection authenticated with a token; a token for
another owner needs CREATE_TOKENS on that USER; renewers must be users. The token rules
themselves (owner or renewer only, expiry, lifetimes) are the store's
(pylog.broker.security.tokens). Describe lists what the principal owns, asked for or renews, or may
DESCRIBE as a DELEGATION_TOKEN, or DESCRIBE_TOKENS on the owner USER.
"""
from __future__ import annotations

from pylog.broker.api.context import code_of
from pylog.broker.api.views import SecurityView
from pylog.broker.security.tokens import USER_TYPE, TokenError, principal_text, split_principal
from pylog.core.errors import ErrorCode
from pylog.core.security.acl import AclOperation as Op, ResourceType as Res
from pylog.core.security.principal import ANONYMOUS

ERROR_TIMESTAMP = -1  # what Kafka's broker answers when it refuses before the controller


def _allow_token_requests(ctx) -> bool:
    conn = ctx.conn
    listener = conn.listener
    protocol = "PLAINTEXT" if listener is None else listener.spec.protocol
    if protocol == "PLAINTEXT":
        return False
    if protocol == "SSL" and conn.principal == ANONYMOUS:
        return False
    return not (conn.sasl is not None and conn.sasl.token_authenticated)


def _allowed(broker: SecurityView, ctx, op: Op, rtype: Res, name: str) -> bool:
    az = broker.authorizer
    return az is None or az.allowed(ctx, op, rtype, name)


# ---- CreateDelegationToken ---------------------------------------------------
def create_delegation_token(broker: SecurityView, ctx, body: dict) -> dict:
    requester = ctx.conn.principal
    owner_name = body["owner_principal_name"]
    owner = principal_text(body["owner_principal_type"], owner_name) if owner_name else requester
    renewers = [principal_text(r["principal_type"], r["principal_name"]) for r in body["renewers"] or []]

    def refused(code: int, stamp: int = ERROR_TIMESTAMP) -> dict:
        return _create_answer(code, owner, requester, stamp)

    if not _allow_token_requests(ctx):
        return refused(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    if owner != requester and not _allowed(broker, ctx, Op.CREATE_TOKENS, Res.USER, owner):
        return refused(ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED)
    if any(split_principal(r)[0] != USER_TYPE for r in renewers):
        return refused(ErrorCode.INVALID_PRINCIPAL_TYPE)
    try:
        t = broker.tokens.create(owner, requester, renewers, body["max_lifetime_ms"])
    except TokenError as e:
        return refused(e.code, 0)  # the controller's answer: its timestamps unset
    except OSError as e:
        return refused(code_of(e)[0], 0)
    out = _create_answer(0, owner, requester, 0)
    out.update(issue_timestamp_ms=t.issue_ms, expiry_timestamp_ms=t.expiry_ms, max_timestamp_ms=t.max_ms,
               token_id=t.token_id, hmac=t.hmac)
    return out


def _create_answer(code: int, owner: str, requester: str, stamp: int) -> dict:
    otype, oname = split_principal(owner)
    rtype, rname = split_principal(requester)
    return {"error_code": code, "principal_type": otype, "principal_name": oname,
            "token_requester_principal_type": rtype, "token_requester_principal_name": rname,
            "issue_timestamp_ms": stamp, "expiry_timestamp_ms": stamp, "max_timestamp_ms": stamp,
            "token_id": "", "hmac": b"", "throttle_time_ms": 0}


def create_delegation_token_error(body, version, code, msg):
    return {"error_code": code, "principal_type": "", "principal_name": "", "token_requester_principal_type": "",
            "token_requester_principal_name": "", "issue_timestamp_ms": -1, "expiry_timestamp_ms": -1,
            "max_timestamp_ms": -1, "token_id": "", "hmac": b"", "throttle_time_ms": 0}


# ---- RenewDelegationToken / ExpireDelegationToken ------------------------------
def _change(broker: SecurityView, ctx, action, hmac: bytes, period: int) -> dict:
    if not _allow_token_requests(ctx):
        return _expiry_answer(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, ERROR_TIMESTAMP)
    try:
        return _expiry_answer(0, action(ctx.conn.principal, hmac, period))
    except TokenError as e:
        return _expiry_answer(e.code, 0)
    except OSError as e:
        return _expiry_answer(code_of(e)[0], 0)


def _expiry_answer(code: int, expiry: int) -> dict:
    return {"error_code": code, "expiry_timestamp_ms": expiry, "throttle_time_ms": 0}


def renew_delegation_token(broker: SecurityView, ctx, body: dict) -> dict:
    return _change(broker, ctx, broker.tokens.renew, body["hmac"], body["renew_period_ms"])


def renew_delegation_token_error(body, version, code, msg):
    return _expiry_answer(code, ERROR_TIMESTAMP)


def expire_delegation_token(broker: SecurityView, ctx, body: dict) -> dict:
    return _change(broker, ctx, broker.tokens.expire, body["hmac"], body["expiry_time_period_ms"])


def expire_delegation_token_error(body, version, code, msg):
    return _expiry_answer(code, ERROR_TIMESTAMP)


# ---- DescribeDelegationToken ---------------------------------------------------
def describe_delegation_token(broker: SecurityView, ctx, body: dict) -> dict:
    if not _allow_token_requests(ctx):
        return describe_delegation_token_error(body, ctx.api_version, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
                                               None)
    if not broker.tokens.enabled:
        return describe_delegation_token_error(body, ctx.api_version, ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, None)
    owners = body["owners"]
    wanted = None if owners is None else [principal_text(o["principal_type"], o["principal_name"]) for o in owners]
    me = ctx.conn.principal
    out = []
    for t in ([] if wanted == [] else broker.tokens.listed()):
        if wanted is not None and not any(t.involves(w) for w in wanted):
            continue
        if not (t.involves(me) or _allowed(broker, ctx, Op.DESCRIBE, Res.DELEGATION_TOKEN, t.token_id)
                or _allowed(broker, ctx, Op.DESCRIBE_TOKENS, Res.USER, t.owner)):
            continue
        otype, oname = split_principal(t.owner)
        rtype, rname = split_principal(t.requester)
        out.append({"principal_type": otype, "principal_name": oname, "token_requester_principal_type": rtype,
                    "token_requester_principal_name": rname, "issue_timestamp": t.issue_ms,
                    "expiry_timestamp": t.expiry_ms, "max_timestamp": t.max_ms, "token_id": t.token_id,
                    "hmac": t.hmac, "renewers": [dict(zip(("principal_type", "principal_name"), split_principal(r)))
                                                 for r in t.renewers]})
    return {"error_code": 0, "tokens": out, "throttle_time_ms": 0}


def describe_delegation_token_error(body, version, code, msg):
    return {"error_code": code, "tokens": [], "throttle_time_ms": 0}

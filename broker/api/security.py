"""CreateAcls, DescribeAcls, DeleteAcls, DescribeUserScramCredentials, AlterUserScramCredentials.

Who may call them (ALTER / DESCRIBE on the cluster) is decided in security/authorizer.py
before these run; here they change and read the durable store. Without an
authorizer the ACL APIs answer SECURITY_DISABLED, as Kafka does.
"""
from __future__ import annotations

from pylog.broker.api.context import code_of
from pylog.broker.api.views import SecurityView
from pylog.core.errors import ErrorCode
from pylog.core.security import scram
from pylog.core.security.acl import binding_from_wire, binding_to_wire, filter_from_wire

NO_AUTHORIZER = "No Authorizer is configured."


def _store_acls(broker: SecurityView, add: list, remove: list) -> tuple | None:
    """Change the ACLs durably and reload the authorizer; (code, message) when the write failed."""
    if not add and not remove:
        return None
    try:
        broker.security.change_acls(add, remove)
    except OSError as e:
        return code_of(e)
    broker.authorizer.reload()
    return None


# ---- ACLs ----------------------------------------------------------------
def describe_acls(broker: SecurityView, ctx, body: dict) -> dict:
    """DescribeAcls: the ACLs matching the filter, grouped by resource pattern."""
    if broker.authorizer is None:
        return describe_acls_error(body, ctx.api_version, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    f = filter_from_wire(body)
    bad = f.validate()
    if bad:
        return describe_acls_error(body, ctx.api_version, ErrorCode.INVALID_REQUEST, bad)
    groups: dict[tuple, list] = {}
    for b in broker.security.acls:
        if f.matches(b):
            groups.setdefault((int(b.resource_type), b.resource_name, int(b.pattern_type)), []).append(
                {"principal": b.principal, "host": b.host, "operation": int(b.operation),
                 "permission_type": int(b.permission)})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "resources": [
        {"resource_type": rt, "resource_name": name, "pattern_type": pt, "acls": acls}
        for (rt, name, pt), acls in groups.items()]}

def describe_acls_error(body, version, code, msg):
    return {"throttle_time_ms": 0, "error_code": code, "error_message": msg, "resources": []}

def create_acls(broker: SecurityView, ctx, body: dict) -> dict:
    """CreateAcls: validate each binding, store the valid ones durably, reload the authorizer."""
    creations = body["creations"] or []
    if broker.authorizer is None:
        return create_acls_error(body, ctx.api_version, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    results, add = [], []
    for c in creations:
        b = binding_from_wire(c, "resource_pattern_type", lenient=True)
        why = b.validate()
        if why:
            results.append({"error_code": ErrorCode.INVALID_REQUEST, "error_message": why})
        else:
            add.append(b)
            results.append({"error_code": 0, "error_message": None})
    failed = _store_acls(broker, add, [])
    if failed:
        return create_acls_error(body, ctx.api_version, *failed)
    return {"throttle_time_ms": 0, "results": results}

def create_acls_error(body, version, code, msg):
    return {"throttle_time_ms": 0, "results": [{"error_code": code, "error_message": msg}
                                               for _ in body["creations"] or []]}

def delete_acls(broker: SecurityView, ctx, body: dict) -> dict:
    """DeleteAcls: remove every ACL matching each filter; answer what each filter removed."""
    if broker.authorizer is None:
        return delete_acls_error(body, ctx.api_version, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    out, remove = [], []
    for raw in body["filters"] or []:
        f = filter_from_wire(raw)
        bad = f.validate()
        if bad:
            out.append({"error_code": ErrorCode.INVALID_REQUEST, "error_message": bad, "matching_acls": []})
            continue
        matched = [b for b in broker.security.acls if f.matches(b) and b not in remove]
        remove.extend(matched)
        out.append({"error_code": 0, "error_message": None, "matching_acls": [
            {"error_code": 0, "error_message": None, **binding_to_wire(b)} for b in matched]})
    failed = _store_acls(broker, [], remove)
    if failed:
        return delete_acls_error(body, ctx.api_version, *failed)
    return {"throttle_time_ms": 0, "filter_results": out}

def delete_acls_error(body, version, code, msg):
    return {"throttle_time_ms": 0, "filter_results": [
        {"error_code": code, "error_message": msg, "matching_acls": []} for _ in body["filters"] or []]}

# ---- SCRAM credentials -----------------------------------------------------
def describe_user_scram_credentials(broker: SecurityView, ctx, body: dict) -> dict:
    """DescribeUserScramCredentials: mechanisms and iterations per user (never the keys)."""
    users = body["users"]
    creds = broker.security.credentials
    known = sorted({u for u, _ in creds})
    results = []
    names = known if users is None else [u.get("name") for u in users]
    seen: dict[str, int] = {}
    for n in names:
        seen[n] = seen.get(n, 0) + 1
    for n in dict.fromkeys(names):
        if seen[n] > 1:
            results.append({"user": n, "error_code": ErrorCode.DUPLICATE_RESOURCE,
                            "error_message": f"Cannot describe SCRAM credentials for the same user twice in a "
                                             f"single request: {n}", "credential_infos": []})
            continue
        infos = [{"mechanism": scram.MECHANISMS[m].type, "iterations": c.iterations}
                 for (u, m), c in sorted(creds.items()) if u == n]
        if not infos:
            results.append({"user": n, "error_code": ErrorCode.RESOURCE_NOT_FOUND,
                            "error_message": f"Attempt to describe a user credential that does not exist: {n}",
                            "credential_infos": []})
        else:
            results.append({"user": n, "error_code": 0, "error_message": None, "credential_infos": infos})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": results}

def describe_user_scram_credentials_error(body, version, code, msg):
    # Kafka: one result per requested user, with the code and no user name
    return {"throttle_time_ms": 0, "error_code": code, "error_message": msg, "results": [
        {"user": "", "error_code": code, "error_message": msg, "credential_infos": []}
        for _ in body["users"] or ()]}

def alter_user_scram_credentials(broker: SecurityView, ctx, body: dict) -> dict:
    """AlterUserScramCredentials: upserts (salted password from the client) and deletions; a user
    with any error gets none of its changes."""
    dels = body["deletions"] or []
    ups = body["upsertions"] or []
    errors: dict[str, tuple[int, str]] = {}
    order = list(dict.fromkeys([d.get("name") or "" for d in dels] + [u.get("name") or "" for u in ups]))
    counts: dict[tuple, int] = {}
    for item in dels + ups:
        key = (item.get("name") or "", item.get("mechanism"))
        counts[key] = counts.get(key, 0) + 1
    creds = broker.security.credentials
    upserts, deletions = {}, []
    for item, is_upsert in [(d, False) for d in dels] + [(u, True) for u in ups]:
        name = item.get("name") or ""
        if name in errors:
            continue
        mech = scram.MECHANISMS_BY_TYPE.get(item.get("mechanism"))
        if counts[(name, item.get("mechanism"))] > 1:
            errors[name] = (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the "
                                                          "same request")
        elif not name:
            errors[name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        elif mech is None:
            errors[name] = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        elif not is_upsert:
            if (name, mech.name) not in creds:
                errors[name] = (ErrorCode.RESOURCE_NOT_FOUND,
                                "Attempt to delete a user credential that does not exist")
            else:
                deletions.append((name, mech.name))
        else:
            iters = item.get("iterations", 0)
            salt, salted = item.get("salt") or b"", item.get("salted_password") or b""
            if not mech.min_iterations <= iters <= mech.max_iterations:
                errors[name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL,
                                f"Iterations {iters} must be between {mech.min_iterations} and "
                                f"{mech.max_iterations}")
            elif not salt or not salted:
                errors[name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty")
            else:
                upserts[(name, mech.name)] = scram.salted_credential(mech, bytes(salted), bytes(salt), iters)
    # a user with any error has none of its changes applied
    upserts = {k: v for k, v in upserts.items() if k[0] not in errors}
    deletions = [k for k in deletions if k[0] not in errors]
    if upserts or deletions:
        try:
            broker.security.change_credentials(upserts, deletions)
        except OSError as e:
            code, msg = code_of(e)
            return alter_user_scram_credentials_error(body, ctx.api_version, code, msg)
    return {"throttle_time_ms": 0, "results": [
        {"user": n, "error_code": errors.get(n, (0, None))[0], "error_message": errors.get(n, (0, None))[1]}
        for n in order]}

def alter_user_scram_credentials_error(body, version, code, msg):
    names = dict.fromkeys([d.get("name") for d in body["deletions"] or []]
                          + [u.get("name") for u in body["upsertions"] or []])
    return {"throttle_time_ms": 0, "results": [{"user": n, "error_code": code, "error_message": msg}
                                               for n in names]}

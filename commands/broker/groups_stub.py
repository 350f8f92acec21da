"""Group APIs until the group coordinator (issue 7) lands.

Every group request gets COORDINATOR_NOT_AVAILABLE, so clients report "no
coordinator" and retry instead of misreading an empty answer; consumers that
use assign() with explicit offsets work without a coordinator. A transaction
coordinator lookup gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which every
client treats as fatal, so a transactional producer stops at once with a clear
error instead of retrying until its timeout.

`pylog.commands.broker.group_coordinator`, when present, is loaded instead of
this module: it exposes the same `apis(broker) -> list[Api]`.
"""
from __future__ import annotations

from pylog.commands.broker.apis import Api

NO_COORDINATOR = 15
TXN_REFUSED = 53
MESSAGE = "the group coordinator is not available on this pylog broker yet"


def apis(broker) -> list[Api]:
    def find_coordinator(ctx, body):
        return find_coordinator_error(body, ctx.api_version, None, None)

    def find_coordinator_error(body, version, code, msg):
        def one(key_type):
            if code is not None:
                return code, msg
            if key_type == 1:
                return TXN_REFUSED, "transactions are not supported by this pylog broker"
            return NO_COORDINATOR, MESSAGE

        keys = body.get("coordinator_keys") or []
        c, m = one(body.get("key_type", 0))
        return {
            "throttle_time_ms": 0, "error_code": c, "error_message": m, "node_id": -1, "host": "", "port": -1,
            "coordinators": [
                {"key": k, "node_id": -1, "host": "", "port": -1, "error_code": one(body.get("key_type", 0))[0],
                 "error_message": one(body.get("key_type", 0))[1]} for k in keys],
        }

    def simple(code_field_extra=None):
        def handler(ctx, body):
            return error(body, ctx.api_version, NO_COORDINATOR, MESSAGE)

        def error(body, version, code, msg):
            out = {"throttle_time_ms": 0, "error_code": code}
            if code_field_extra:
                out.update(code_field_extra(body, code))
            return out

        return handler, error

    def offset_commit_extra(body, code):
        return {"topics": [{"name": t.get("name"), "partitions": [
            {"partition_index": p.get("partition_index", 0), "error_code": code}
            for p in t.get("partitions") or []]} for t in body.get("topics") or []]}

    def offset_fetch_extra(body, code):
        def topics(ts):
            return [{"name": t.get("name"), "partitions": [
                {"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": None,
                 "error_code": code} for p in t.get("partition_indexes") or []]} for t in ts or []]

        return {"topics": topics(body.get("topics")),
                "groups": [{"group_id": g.get("group_id"), "topics": topics(g.get("topics")), "error_code": code}
                           for g in body.get("groups") or []]}

    def join_extra(body, code):
        return {"generation_id": -1, "protocol_type": None, "protocol_name": None, "leader": "",
                "skip_assignment": False, "member_id": body.get("member_id", ""), "members": []}

    def sync_extra(body, code):
        return {"protocol_type": None, "protocol_name": None, "assignment": b""}

    def leave_extra(body, code):
        return {"members": [{"member_id": m.get("member_id", ""), "group_instance_id": m.get("group_instance_id"),
                             "error_code": code} for m in body.get("members") or []]}

    def describe_extra(body, code):
        return {"groups": [{"error_code": code, "group_id": g, "group_state": "", "protocol_type": "",
                            "protocol_data": "", "members": [], "authorized_operations": -(2**31)}
                           for g in body.get("groups") or []]}

    def list_groups(ctx, body):
        return {"throttle_time_ms": 0, "error_code": 0, "groups": []}  # there are none

    def list_groups_error(body, version, code, msg):
        return {"throttle_time_ms": 0, "error_code": code, "groups": []}

    def delete_extra(body, code):
        return {"results": [{"group_id": g, "error_code": code} for g in body.get("groups_names") or []]}

    def offset_delete_extra(body, code):
        return {"topics": [{"name": t.get("name"), "partitions": [
            {"partition_index": p.get("partition_index", 0), "error_code": code}
            for p in t.get("partitions") or []]} for t in body.get("topics") or []]}

    out = [Api(10, find_coordinator, 0, 6, find_coordinator_error), Api(16, list_groups, 0, 5, list_groups_error)]
    for key, extra, lo, hi in [
        (8, offset_commit_extra, 2, 9), (9, offset_fetch_extra, 1, 9), (11, join_extra, 0, 9),
        (12, None, 0, 4), (13, leave_extra, 0, 5), (14, sync_extra, 0, 5), (15, describe_extra, 0, 5),
        (42, delete_extra, 0, 2), (47, offset_delete_extra, 0, 0),
    ]:
        h, e = simple(extra)
        out.append(Api(key, h, lo, hi, e))
    return out

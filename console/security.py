"""Transactions (ongoing, hanging, abort), ACLs, SCRAM users and client quotas."""
from __future__ import annotations

import time

from pylog.core.client.quota_admin import QuotaAdmin
from pylog.core.client.security_admin import SecurityAdmin
from pylog.core.client.txn_admin import TransactionAdmin
from pylog.core.errors import KafkaError, UsageError


def _lazy(owner, name: str, factory):
    """One admin per kind, made on first use (a cluster without ACLs never connects one)."""
    found = owner.admins.get(name)
    if found is None:
        found = owner.admins[name] = factory(dict(owner.props))
    return found


class SecurityViews:
    def __init__(self, props: dict, allow_writes: bool = False):
        self.props = dict(props)
        self.allow_writes = allow_writes
        self.admins: dict = {}

    def close(self) -> None:
        for a in self.admins.values():
            a.close()

    def txn(self) -> TransactionAdmin:
        return _lazy(self, "txn", TransactionAdmin)

    # ---------------------------------------------------------------- transactions
    def transactions(self, hanging_minutes: float | None = None) -> dict:
        adm = self.txn()
        rows = []
        now = int(time.time() * 1000)
        for t in adm.list_transactions():
            row = {"transactional_id": t.transactional_id, "coordinator": t.coordinator,
                   "producer_id": t.producer_id, "state": t.state}
            try:
                d = adm.describe_transaction(t.transactional_id)
                row.update({"producer_epoch": d.producer_epoch, "timeout_ms": d.timeout_ms,
                            "start_time_ms": d.start_time_ms, "partitions": d.partitions,
                            "duration_ms": now - d.start_time_ms if d.start_time_ms >= 0 else None})
            except KafkaError as e:
                row["error"] = str(e)
            rows.append(row)
        if hanging_minutes is None:  # find-hanging asks every partition's leader: only when asked for
            return {"transactions": rows, "hanging": None, "hanging_after_ms": None}
        max_ms = int(hanging_minutes * 60_000)
        hanging = [{"topic": h.topic, "partition": h.partition, "producer_id": h.producer.producer_id,
                    "producer_epoch": h.producer.producer_epoch, "coordinator_epoch": h.producer.coordinator_epoch,
                    "start_offset": h.producer.current_txn_start_offset, "last_timestamp": h.producer.last_timestamp}
                   for h in adm.find_hanging(None, None, None, max_ms)]
        return {"transactions": rows, "hanging": hanging, "hanging_after_ms": max_ms}

    def abort(self, topic: str, partition: int, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> dict:
        if not self.allow_writes:
            from pylog.console.cluster import ReadOnlyError

            raise ReadOnlyError("read-only console: cannot abort a transaction (start it with --allow-writes)")
        self.txn().abort_transaction(topic, int(partition), int(producer_id), int(producer_epoch),
                                     int(coordinator_epoch))
        return {"aborted": {"topic": topic, "partition": int(partition), "producer_id": int(producer_id)}}

    # ---------------------------------------------------------------- ACLs, users, quotas
    def security(self) -> dict:
        sec = _lazy(self, "security", SecurityAdmin)
        out: dict = {}
        try:
            out["acls"] = [{"resource_type": b.resource_type.name, "resource_name": b.resource_name,
                            "pattern_type": b.pattern_type.name, "principal": b.principal, "host": b.host,
                            "operation": b.operation.name, "permission": b.permission.name}
                           for b in sec.describe_acls()]
        except KafkaError as e:  # SECURITY_DISABLED: no authorizer configured
            out["acls"], out["acls_error"] = [], str(e)
        try:
            out["users"] = [{"user": u, "credentials": [{"mechanism": m, "iterations": i} for m, i in creds]}
                            for u, creds in sorted(sec.describe_users().items())]
        except KafkaError as e:
            out["users"], out["users_error"] = [], str(e)
        quotas = _lazy(self, "quotas", QuotaAdmin)
        try:
            out["quotas"] = [{"entity": [{"type": t, "name": n} for t, n in ent], "values": vals}
                             for ent, vals in quotas.describe([])]
        except (KafkaError, UsageError) as e:
            out["quotas"], out["quotas_error"] = [], str(e)
        return out


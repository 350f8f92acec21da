"""ACL and SCRAM-credential administration (kafka-acls.sh, kafka-configs.sh --entity-type users).

CreateAcls, DescribeAcls and DeleteAcls with Kafka's resource/pattern/operation
codes (core.security.acl); DescribeUserScramCredentials and
AlterUserScramCredentials, salting the password on the client as Kafka's
admin client does, so the password itself never crosses the wire.
"""
from __future__ import annotations

from pylog.core.client.admin import AdminBase
from pylog.core.client.admin import raise_for as _check
from pylog.core.security import scram
from pylog.core.security.acl import AclBinding, AclFilter, binding_from_wire, binding_to_wire, filter_to_wire


class SecurityAdmin(AdminBase):
    """Synchronous facade for ACLs and SCRAM users."""

    _thread_name = "pylog-security-admin"

    # ---- ACLs ------------------------------------------------------------------
    def create_acls(self, bindings: list[AclBinding]) -> None:
        body = {"creations": [binding_to_wire(b, "resource_pattern_type") for b in bindings]}
        resp = self._run(self.client.request_any("CreateAcls", body))
        for b, r in zip(bindings, resp.get("results") or []):
            _check(r.get("error_code", 0), f"cannot create ACL {b.principal} {b.operation.name} on "
                                           f"{b.resource_type.name} {b.resource_name}", r.get("error_message"))

    def describe_acls(self, f: AclFilter | None = None) -> list[AclBinding]:
        resp = self._run(self.client.request_any("DescribeAcls", filter_to_wire(f or AclFilter())))
        _check(resp.get("error_code", 0), "cannot list ACLs", resp.get("error_message"))
        return [binding_from_wire({**r, **a}) for r in resp.get("resources") or [] for a in r.get("acls") or []]

    def delete_acls(self, filters: list[AclFilter]) -> list[AclBinding]:
        resp = self._run(self.client.request_any("DeleteAcls", {"filters": [filter_to_wire(f) for f in filters]}))
        out = []
        for r in resp.get("filter_results") or []:
            _check(r.get("error_code", 0), "cannot remove ACLs", r.get("error_message"))
            for m in r.get("matching_acls") or []:
                _check(m.get("error_code", 0), "cannot remove an ACL", m.get("error_message"))
                out.append(binding_from_wire(m))
        return out

    # ---- SCRAM users -----------------------------------------------------------
    def describe_users(self, names: list[str] | None = None) -> dict[str, list[tuple[str, int]]]:
        """{user: [(mechanism, iterations)]}; unknown names raise RESOURCE_NOT_FOUND."""
        body = {"users": None if not names else [{"name": n} for n in names]}
        resp = self._run(self.client.request_any("DescribeUserScramCredentials", body))
        _check(resp.get("error_code", 0), "cannot describe users", resp.get("error_message"))
        out = {}
        for r in resp.get("results") or []:
            _check(r.get("error_code", 0), f"user {r['user']}", r.get("error_message"))
            out[r["user"]] = [(scram.MECHANISMS_BY_TYPE[c["mechanism"]].name if c["mechanism"] in
                               scram.MECHANISMS_BY_TYPE else str(c["mechanism"]), c["iterations"])
                              for c in r.get("credential_infos") or []]
        return out

    def upsert_user(self, name: str, mechanism: str, password: str,
                    iterations: int = scram.DEFAULT_ITERATIONS) -> None:
        mech = scram.mechanism(mechanism)
        salt = scram.random_salt()
        salted = mech.hi(password.encode("utf-8"), salt, iterations)
        self._alter([], [{"name": name, "mechanism": mech.type, "iterations": iterations, "salt": salt,
                          "salted_password": salted}])

    def delete_user(self, name: str, mechanism: str) -> None:
        self._alter([{"name": name, "mechanism": scram.mechanism(mechanism).type}], [])

    def _alter(self, deletions, upsertions) -> None:
        resp = self._run(self.client.request_any("AlterUserScramCredentials",
                                                 {"deletions": deletions, "upsertions": upsertions}))
        for r in resp.get("results") or []:
            _check(r.get("error_code", 0), f"user {r['user']}", r.get("error_message"))

"""Client-quota administration (kafka-configs.sh --entity-type users/clients): DescribeClientQuotas and
AlterClientQuotas, with entities as [(entity type, name or None for the default entity)]."""
from __future__ import annotations

from pylog.core.client.admin import AdminBase
from pylog.core.client.admin import raise_for as _check

EXACT, DEFAULT, SPECIFIED = 0, 1, 2  # DescribeClientQuotas match types


def _show(entity) -> str:
    return ", ".join(f"{t}={'<default>' if n is None else n}" for t, n in entity)


class QuotaAdmin(AdminBase):
    """Synchronous facade for client quotas."""

    _thread_name = "pylog-quota-admin"

    def describe(self, components: list[tuple[str, int, str | None]], strict: bool = False) -> list[tuple]:
        """[(entity, {key: value})] for the filter [(entity type, match type, name)]."""
        body = {"components": [{"entity_type": t, "match_type": m, "match": n} for t, m, n in components],
                "strict": strict}
        resp = self._run(self.client.request_any("DescribeClientQuotas", body))
        _check(resp.get("error_code", 0), "cannot describe client quotas", resp.get("error_message"))
        return [([(e["entity_type"], e["entity_name"]) for e in r["entity"]],
                 {v["key"]: v["value"] for v in r["values"]}) for r in resp.get("entries") or []]

    def alter(self, entity: list[tuple[str, str | None]], set_values: dict[str, float], remove: list[str],
              validate_only: bool = False) -> None:
        """Set and remove quota keys of one entity."""
        ops = [{"key": k, "value": float(v), "remove": False} for k, v in set_values.items()]
        ops += [{"key": k, "value": 0.0, "remove": True} for k in remove]
        body = {"entries": [{"entity": [{"entity_type": t, "entity_name": n} for t, n in entity], "ops": ops}],
                "validate_only": validate_only}
        resp = self._run(self.client.request_any("AlterClientQuotas", body))
        for r in resp.get("entries") or []:
            _check(r.get("error_code", 0), f"cannot alter quotas of {_show(entity)}", r.get("error_message"))

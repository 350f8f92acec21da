"""Schema registry subjects: versions side by side with a diff, and a compatibility check,
through the registry's REST API (Confluent's, as pylog's registry serves it)."""
from __future__ import annotations

import difflib
import json

from pylog.core.errors import UsageError


def _pretty(schema: str) -> str:
    try:
        return json.dumps(json.loads(schema), indent=2, sort_keys=False)
    except ValueError:
        return schema  # Protobuf source: shown as written


class RegistryView:
    def __init__(self, client):
        self.client = client  # a RegistryClient, or None: the pages say no registry is set

    def _need(self):
        if self.client is None:
            raise UsageError("no schema registry: start the console with --schema-registry URL")
        return self.client

    def subjects(self) -> list[dict]:
        c = self._need()
        out = []
        for s in sorted(c.request("GET", "/subjects")):
            versions = c.request("GET", f"/subjects/{_q(s)}/versions")
            out.append({"subject": s, "versions": versions, "latest": max(versions) if versions else None})
        return out

    def subject(self, subject: str, left: str | None = None, right: str | None = None) -> dict:
        c = self._need()
        versions = c.request("GET", f"/subjects/{_q(subject)}/versions")
        if not versions:
            raise UsageError(f"subject {subject} has no versions")
        right = int(right) if right else versions[-1]
        left = int(left) if left else (versions[-2] if len(versions) > 1 else versions[-1])
        a = c.request("GET", f"/subjects/{_q(subject)}/versions/{left}")
        b = c.request("GET", f"/subjects/{_q(subject)}/versions/{right}")
        try:
            level = c.request("GET", f"/config/{_q(subject)}", query={"defaultToGlobal": "true"})
        except Exception:  # noqa: BLE001 - a registry without per-subject config
            level = {}
        ta, tb = _pretty(a["schema"]), _pretty(b["schema"])
        diff = list(difflib.unified_diff(ta.splitlines(), tb.splitlines(), f"version {left}", f"version {right}",
                                         lineterm=""))
        return {"subject": subject, "versions": versions, "compatibility": level.get("compatibilityLevel"),
                "left": {"version": left, "id": a["id"], "type": a.get("schemaType", "AVRO"), "schema": ta},
                "right": {"version": right, "id": b["id"], "type": b.get("schemaType", "AVRO"), "schema": tb},
                "diff": diff}

    def check(self, subject: str, schema: str, schema_type: str = "AVRO", version: str = "latest") -> dict:
        c = self._need()
        body = {"schema": schema}
        if schema_type and schema_type != "AVRO":
            body["schemaType"] = schema_type
        ans = c.request("POST", f"/compatibility/subjects/{_q(subject)}/versions/{version}", body,
                        query={"verbose": "true"})
        return {"subject": subject, "version": version, "is_compatible": ans.get("is_compatible"),
                "messages": ans.get("messages") or []}


def _q(s: str) -> str:
    from urllib.parse import quote

    return quote(s, safe="")

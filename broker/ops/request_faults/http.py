"""The admin HTTP listener's fault endpoints (served only with faults.enable=true, 403 otherwise):

  GET    /faults        {"enabled": true, "rules": [rule, ...]}
  POST   /faults        a rule's JSON -> 201 and the rule with its id
  DELETE /faults        clear every rule -> {"cleared": N}
  DELETE /faults/ID     clear one rule -> {"cleared": 1}, 404 when there is none
"""
from __future__ import annotations

import json

from pylog.broker.ops.request_faults.rules import FaultRuleError

NOT_ENABLED = ("fault injection is off on this broker: start it with --allow-faults "
               "(faults.enable=true) to use /faults\n")


def answer(engine, method: str, path: str, body: bytes) -> tuple[int, str, bytes]:
    """(status, content type, body) for a request under /faults."""
    if engine is None or not engine.enabled:
        return 403, "text/plain", NOT_ENABLED.encode()
    rest = path[len("/faults"):].strip("/")
    if method in ("GET", "HEAD") and not rest:
        return _json(200, {"enabled": True, "rules": [r.to_dict() for r in engine.rules()]})
    if method in ("GET", "HEAD"):
        rule = engine.get(rest)
        return _json(200, rule.to_dict()) if rule is not None else _json(404, {"error": f"no rule {rest!r}"})
    if method == "POST" and not rest:
        try:
            data = json.loads(body or b"null")
        except ValueError as e:
            return _json(400, {"error": f"the body is not JSON: {e}"})
        try:
            rule = engine.add(data)
        except FaultRuleError as e:
            return _json(400, {"error": str(e)})
        return _json(201, rule.to_dict())
    if method == "DELETE":
        if not rest:
            return _json(200, {"cleared": engine.clear()})
        if engine.remove(rest):
            return _json(200, {"cleared": 1})
        return _json(404, {"error": f"no rule {rest!r}"})
    return _json(405, {"error": f"{method} {path}: use GET, POST or DELETE on /faults"})


def _json(status: int, obj) -> tuple[int, str, bytes]:
    return status, "application/json", (json.dumps(obj) + "\n").encode()

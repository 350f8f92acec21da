"""One injected-fault rule: what it matches, what it does, for how long. One model for the
Python API, the admin HTTP endpoints and the rules file (all speak `to_dict`/`from_dict`).

Kinds:
  error        answer with `error` (per partition where the API has partitions); with
               `after_handling` the request is performed first ("written, answer lost")
  delay        perform the request, send the answer `ms` later
  no_answer    never answer (the client's request timeout fires); `after_handling` performs it
  close        close the connection without answering, before or `after_handling`
  throttle     answer with throttle_time_ms=`ms` and mute the connection for as long (KIP-219)
  offline      the matching partitions have no leader: Metadata shows leader -1 with
               LEADER_NOT_AVAILABLE, Produce/Fetch/ListOffsets/OffsetForLeaderEpoch answer
               NOT_LEADER_OR_FOLLOWER (or `error`)
  coordinator  the coordinator of the matching groups/transactional ids is unavailable:
               FindCoordinator and their requests answer COORDINATOR_NOT_AVAILABLE (or `error`)

Limits: `count` (the next N requests it fires on), `fraction` (the share of matching
requests it fires on), `start_in_ms`/`for_ms` (a time window from when it was added).
A rule with no limit stays until cleared.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from pylog.core.errors import ErrorCode, UsageError
from pylog.core.protocol import API_KEYS, API_NAMES

KINDS = ("error", "delay", "no_answer", "close", "throttle", "offline", "coordinator")
_NEEDS_MS = ("delay", "throttle")
_MATCH_KEYS = ("api", "versions", "topic", "partition", "group", "transactional_id", "client_id", "principal")
_ACTION_KEYS = ("kind", "error", "after_handling", "ms")
_LIMIT_KEYS = ("count", "fraction", "start_in_ms", "for_ms")
FIELDS = ("id", *_MATCH_KEYS, *_ACTION_KEYS, *_LIMIT_KEYS)


class FaultRuleError(UsageError):
    """A rule that cannot be built (unknown API or error name, missing value, ...)."""


def api_key_of(value) -> int:
    """An API by name (`Produce`, case-insensitive) or number."""
    if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
        key = int(value)
        if key in API_NAMES:
            return key
        raise FaultRuleError(f"api {value}: this broker serves no API with that key")
    for name, key in API_KEYS.items():
        if name.lower() == str(value).strip().lower():
            return key
    raise FaultRuleError(f"api {value!r}: not a Kafka API name this broker serves (e.g. Produce, Fetch)")


def error_code_of(value) -> int:
    """A Kafka error by name (`NOT_LEADER_OR_FOLLOWER`, case-insensitive) or code."""
    try:
        if isinstance(value, int) or str(value).strip().lstrip("-").isdigit():
            return int(ErrorCode(int(value)))
        return int(ErrorCode[str(value).strip().upper()])
    except (KeyError, ValueError):
        raise FaultRuleError(f"error {value!r}: not a Kafka error name or code") from None


def _versions(value) -> tuple[int, int] | None:
    if value is None or value == "":
        return None
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return int(value[0]), int(value[1])
    text = str(value).strip()
    lo, sep, hi = text.partition("-")
    try:
        if not sep:
            return int(lo), int(lo)
        return int(lo), int(hi) if hi else 32767
    except ValueError:
        raise FaultRuleError(f"versions {value!r}: expected N, N-M or N-") from None


@dataclass(eq=False)
class FaultRule:
    """A rule and its live state (`hits`: requests it fired on). See the module text."""

    kind: str
    api: int | None = None
    versions: tuple[int, int] | None = None
    topic: str | None = None
    partition: int | None = None
    group: str | None = None
    transactional_id: str | None = None
    client_id: str | None = None
    principal: str | None = None
    error: int | None = None
    after_handling: bool = False
    ms: int = 0
    count: int | None = None
    fraction: float | None = None
    start_in_ms: int = 0
    for_ms: int | None = None
    id: str = ""
    hits: int = 0
    added_at: float = field(default_factory=time.monotonic)
    engine: object = field(default=None, repr=False)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise FaultRuleError(f"kind {self.kind!r}: expected one of {', '.join(KINDS)}")
        if self.kind == "error" and self.error is None:
            raise FaultRuleError("an error rule needs an error name (e.g. NOT_LEADER_OR_FOLLOWER)")
        if self.kind in _NEEDS_MS and self.ms <= 0:
            raise FaultRuleError(f"a {self.kind} rule needs a positive ms")
        if self.kind == "offline" and self.topic is None:
            raise FaultRuleError("an offline rule needs a topic (and optionally a partition)")
        if self.count is not None and self.count < 1:
            raise FaultRuleError(f"count {self.count}: must be at least 1")
        if self.fraction is not None and not 0.0 < self.fraction <= 1.0:
            raise FaultRuleError(f"fraction {self.fraction}: must be in (0, 1]")
        if self.partition is not None and self.topic is None:
            raise FaultRuleError("a partition needs a topic")

    # ---- state -----------------------------------------------------------------------
    @property
    def exhausted(self) -> bool:
        """Fired `count` times, or its window is over: it fires no more."""
        if self.count is not None and self.hits >= self.count:
            return True
        return self.for_ms is not None and time.monotonic() > self.added_at + (self.start_in_ms + self.for_ms) / 1000

    def clear(self) -> None:
        """Remove this rule from its broker (a no-op when already gone)."""
        if self.engine is not None:
            self.engine.remove(self.id)

    def __enter__(self) -> "FaultRule":
        return self

    def __exit__(self, *exc) -> None:
        self.clear()

    # ---- the shared form ---------------------------------------------------------------
    def to_dict(self) -> dict:
        """The JSON form (`state` and `hits` added for listings)."""
        out = {"id": self.id, "kind": self.kind}
        if self.api is not None:
            out["api"] = API_NAMES.get(self.api, self.api)
        if self.versions is not None:
            out["versions"] = f"{self.versions[0]}-{self.versions[1]}"
        for k in ("topic", "partition", "group", "transactional_id", "client_id", "principal"):
            v = getattr(self, k)
            if v is not None:
                out[k] = v
        if self.error is not None:
            out["error"] = ErrorCode(self.error).name
        if self.after_handling:
            out["after_handling"] = True
        if self.ms:
            out["ms"] = self.ms
        for k in ("count", "fraction", "for_ms"):
            v = getattr(self, k)
            if v is not None:
                out[k] = v
        if self.start_in_ms:
            out["start_in_ms"] = self.start_in_ms
        out["hits"] = self.hits
        out["state"] = "done" if self.exhausted else "active"
        return out

    def describe(self) -> str:
        """One line for logs and tables: `Produce topic=orders -> error NOT_LEADER_OR_FOLLOWER (count 3)`."""
        d = self.to_dict()
        what = " ".join(f"{k}={d[k]}" for k in _MATCH_KEYS if k in d and k != "api")
        head = f"{d.get('api', 'any API')}{' ' + what if what else ''}"
        act = self.kind.replace("_", " ")
        if self.error is not None:
            act += f" {ErrorCode(self.error).name}"
        if self.ms:
            act += f" {self.ms} ms"
        if self.after_handling:
            act += " after handling"
        lim = [f"{k} {d[k]}" for k in _LIMIT_KEYS if k in d]
        return f"{head} -> {act}" + (f" ({', '.join(lim)})" if lim else "")


def rule_from_dict(d: dict) -> FaultRule:
    """A rule from its JSON form (unknown keys are an error: a typo must not match everything)."""
    if not isinstance(d, dict):
        raise FaultRuleError(f"a rule must be a JSON object, not {type(d).__name__}")
    unknown = sorted(set(d) - set(FIELDS) - {"hits", "state"})
    if unknown:
        raise FaultRuleError(f"unknown rule field(s): {', '.join(unknown)} (expected {', '.join(FIELDS)})")
    kind = d.get("kind")
    if kind is None:
        kind = "error" if d.get("error") is not None else None
    if kind is None:
        raise FaultRuleError("a rule needs a kind (" + ", ".join(KINDS) + ") or an error")

    def opt_int(k):
        v = d.get(k)
        if v is None:
            return None
        try:
            return int(v)
        except (TypeError, ValueError):
            raise FaultRuleError(f"{k} {v!r}: expected an integer") from None

    fraction = d.get("fraction")
    try:
        fraction = float(fraction) if fraction is not None else None
    except (TypeError, ValueError):
        raise FaultRuleError(f"fraction {fraction!r}: expected a number") from None
    return FaultRule(
        kind=str(kind),
        api=api_key_of(d["api"]) if d.get("api") not in (None, "") else None,
        versions=_versions(d.get("versions")),
        topic=d.get("topic"), partition=opt_int("partition"), group=d.get("group"),
        transactional_id=d.get("transactional_id"), client_id=d.get("client_id"), principal=d.get("principal"),
        error=error_code_of(d["error"]) if d.get("error") not in (None, "") else None,
        after_handling=bool(d.get("after_handling", False)), ms=opt_int("ms") or 0,
        count=opt_int("count"), fraction=fraction, start_in_ms=opt_int("start_in_ms") or 0,
        for_ms=opt_int("for_ms"), id=_rule_id(d.get("id")),
    )


def _rule_id(value) -> str:
    text = "" if value is None else str(value)
    if text and not all(c.isalnum() or c in "-_." for c in text):
        raise FaultRuleError(f"id {text!r}: use letters, digits, '-', '_' and '.'")
    return text


def load_rules_file(path: str | Path) -> list[FaultRule]:
    """Rules from a JSON file: a list of rule objects, or {"rules": [...]}."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise FaultRuleError(f"faults file {p}: {e.strerror or e}") from None
    except ValueError as e:
        raise FaultRuleError(f"faults file {p}: not JSON ({e})") from None
    if isinstance(data, dict):
        data = data.get("rules")
    if not isinstance(data, list):
        raise FaultRuleError(f"faults file {p}: expected a JSON list of rules or {{\"rules\": [...]}}")
    out = []
    for i, d in enumerate(data):
        try:
            out.append(rule_from_dict(d))
        except FaultRuleError as e:
            raise FaultRuleError(f"faults file {p}, rule {i + 1}: {e}") from None
    return out


def rule_from_options(api=None, *, error=None, after_handling: bool = False, delay_ms: int | None = None,
                      no_answer: bool = False, close: bool = False, throttle_ms: int | None = None,
                      offline: bool = False, coordinator_unavailable: bool = False, topic: str | None = None,
                      partition: int | None = None, group: str | None = None, transactional_id: str | None = None,
                      client_id: str | None = None, principal: str | None = None, versions=None,
                      count: int | None = None, fraction: float | None = None, for_ms: int | None = None,
                      start_in_ms: int = 0) -> FaultRule:
    """A rule from keyword options (the Python API's and the CLI's): exactly one action among
    error, delay_ms, no_answer, close, throttle_ms, offline and coordinator_unavailable
    (`error` also names the code an offline or coordinator rule answers with)."""
    actions = [k for k, on in (("delay", delay_ms is not None), ("no_answer", no_answer), ("close", close),
                               ("throttle", throttle_ms is not None), ("offline", offline),
                               ("coordinator", coordinator_unavailable)) if on]
    if len(actions) > 1:
        raise FaultRuleError(f"one action per rule, not {' and '.join(actions)}")
    kind = actions[0] if actions else ("error" if error is not None else None)
    if kind is None:
        raise FaultRuleError("say what the rule does: an error, a delay, no answer, close, throttle, "
                             "offline or coordinator unavailable")
    if error is not None and kind not in ("error", "offline", "coordinator"):
        raise FaultRuleError(f"an error code does not go with a {kind} rule")
    if after_handling and kind not in ("error", "no_answer", "close"):
        raise FaultRuleError(f"after handling applies to error, no answer and close rules, not {kind}")
    return rule_from_dict({k: v for k, v in {
        "kind": kind, "api": api, "versions": versions, "topic": topic, "partition": partition, "group": group,
        "transactional_id": transactional_id, "client_id": client_id, "principal": principal, "error": error,
        "after_handling": after_handling, "ms": delay_ms if kind == "delay" else throttle_ms,
        "count": count, "fraction": fraction, "for_ms": for_ms, "start_in_ms": start_in_ms,
    }.items() if v is not None})

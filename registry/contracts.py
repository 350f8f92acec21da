"""Data contracts: a schema version's `metadata` and `ruleSet`, as Confluent's registry keeps them.

A registration that names no metadata (or no rule set) inherits the subject's latest
version's; then the config's `defaultMetadata`/`defaultRuleSet` are laid under it and
`overrideMetadata`/`overrideRuleSet` over it (subject config first, else the global one).
Metadata merges property by property, tags path by path, `sensitive` as a union; rule sets
merge rule by rule name, a later rule replacing an earlier one of the same name. A version
differs from another when its schema, references, metadata or rule set differ, so changing
only the contract makes a new version (and a new id).
"""
from __future__ import annotations

from pylog.registry import errors as E

_RULE_KINDS = ("migrationRules", "domainRules", "encodingRules")


def body_contract(body: dict) -> tuple[dict | None, dict | None]:
    """The (metadata, ruleSet) a request names; None where it names none."""
    md, rs = body.get("metadata"), body.get("ruleSet")
    if md is not None and not isinstance(md, dict):
        raise E.invalid_schema("\"metadata\" must be an object")
    if rs is not None and not isinstance(rs, dict):
        raise E.invalid_schema("\"ruleSet\" must be an object")
    for kind in _RULE_KINDS:
        for rule in (rs or {}).get(kind) or []:
            if not isinstance(rule, dict) or not isinstance(rule.get("name"), str) or not rule.get("kind"):
                raise E.RestError(422, E.INVALID_SCHEMA, f"Invalid rule set: every rule in {kind} needs a name and a kind")
    return _clean(md), _clean(rs)


def _clean(v):
    """Empty fields dropped (clients send `"tags": {}`, `"sensitive": []`, `"doc": null`), so a
    contract compares equal however it was spelled."""
    if isinstance(v, dict):
        out = {k: _clean(x) for k, x in v.items()}
        out = {k: x for k, x in out.items() if x not in (None, {}, [], "")}
        return out or None
    if isinstance(v, list):
        return [_clean(x) if isinstance(x, dict) else x for x in v]
    return v


def merge_metadata(under: dict | None, over: dict | None) -> dict | None:
    if not under:
        return over or None
    if not over:
        return under or None
    out = {}
    props = {**(under.get("properties") or {}), **(over.get("properties") or {})}
    if props:
        out["properties"] = props
    tags = {k: list(v) for k, v in (under.get("tags") or {}).items()}
    for path, names in (over.get("tags") or {}).items():
        tags[path] = sorted(set(tags.get(path, [])) | set(names))
    if tags:
        out["tags"] = tags
    sensitive = sorted(set(under.get("sensitive") or []) | set(over.get("sensitive") or []))
    if sensitive:
        out["sensitive"] = sensitive
    return out or None


def merge_rule_set(under: dict | None, over: dict | None) -> dict | None:
    if not under:
        return over or None
    if not over:
        return under or None
    out = {}
    for kind in _RULE_KINDS:
        rules = list(under.get(kind) or [])
        for rule in over.get(kind) or []:
            rules = [r for r in rules if r.get("name") != rule.get("name")] + [rule]
        if rules:
            out[kind] = rules
    return out or None


def effective(reg, subject: str, body: dict, latest) -> tuple[dict | None, dict | None]:
    """The metadata and rule set a registration under `subject` stores."""
    md, rs = body_contract(body)
    if md is None and latest is not None:
        md = latest.metadata
    if rs is None and latest is not None:
        rs = latest.rule_set
    cfg = reg.config_extras(subject)
    md = merge_metadata(merge_metadata(cfg.get("defaultMetadata"), md), cfg.get("overrideMetadata"))
    rs = merge_rule_set(merge_rule_set(cfg.get("defaultRuleSet"), rs), cfg.get("overrideRuleSet"))
    return md, rs


def matches_properties(sv, wanted: list[tuple[str, str]]) -> bool:
    props = (sv.metadata or {}).get("properties") or {}
    return all(props.get(k) == v for k, v in wanted)

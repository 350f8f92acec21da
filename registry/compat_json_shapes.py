"""JSON Schema compatibility for the schema's shapes: combined schemas (allOf, anyOf, oneOf),
`not`, `if`/`then`/`else`, tuples and `additionalItems`, dependencies, `patternProperties`
and `propertyNames`. Mixed into compat_json's checker; the diff type names are Confluent's.

- Combined schemas: a schema with other keywords beside a combinator is the allOf of its parts
  (as Confluent's JSON Schema library builds it). Same criterion, or a change Confluent calls
  COMBINED_TYPE_EXTENDED (to anyOf, singleton to oneOf, allOf to a singleton): the branches are
  matched one to one, each writer branch to a reader branch that reads it; fewer branches than
  the smaller side matched is COMBINED_TYPE_SUBSCHEMAS_CHANGED. A sum (anyOf, oneOf) losing
  branches is SUM_TYPE_NARROWED; an allOf gaining branches PRODUCT_TYPE_EXTENDED; another
  criterion change COMBINED_TYPE_CHANGED. A plain writer read by a sum must fit one branch
  (SUM_TYPE_EXTENDED); an allOf writer read by a plain reader must have a branch it reads
  (PRODUCT_TYPE_NARROWED); anything else is TYPE_CHANGED.
- `not`: compared reversed, the writer's excluded schema must read the reader's
  (NOT_TYPE_NARROWED); otherwise NOT_TYPE_EXTENDED. A `not` on one side only: TYPE_CHANGED.
- `if`/`then`/`else`: with the same `if`, `then` and `else` are compared (absent: true); a
  changed, added or removed condition is TYPE_CHANGED (Confluent's library compares no
  conditional schemas at all; pylog refuses what it cannot prove).
- Tuples (`items` as a list, or `prefixItems`): positions both have are compared; an item the
  reader adds is fine when the writer's content model is closed (ITEM_ADDED_TO_CLOSED_CONTENT_MODEL),
  must fit the writer's additionalItems schema when it has one, and breaks when it is open
  (ITEM_ADDED_TO_OPEN_CONTENT_MODEL) unless it is the empty schema; an item the reader drops
  breaks when the reader is closed (ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL). additionalItems:
  closing it is ADDITIONAL_ITEMS_REMOVED, constraining it ADDITIONAL_ITEMS_NARROWED.
- `dependencies`, `dependentRequired`, `dependentSchemas`: a dependency the reader adds
  (DEPENDENCY_ARRAY_ADDED, DEPENDENCY_SCHEMA_ADDED), extends (DEPENDENCY_ARRAY_EXTENDED) or
  changes (DEPENDENCY_ARRAY_CHANGED) breaks; removing or narrowing one is fine; dependent
  schemas on both sides are compared.
- `patternProperties` make a partially open content model: a property added or dropped that a
  pattern covers is compared with that pattern's schema (PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_
  OPEN_CONTENT_MODEL, PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL); patterns on
  both sides are compared; a pattern the reader adds to an open writer breaks.
- `propertyNames` added or narrowed by the reader breaks (PROPERTY_NAMES_NARROWED) unless every
  name the writer allows passes it.
"""
from __future__ import annotations

import json
import re

COMBINERS = ("allOf", "anyOf", "oneOf")
META = {"$schema", "$id", "id", "title", "description", "definitions", "$defs", "default", "examples",
        "$comment", "readOnly", "writeOnly", "deprecated"}
_CONDITIONAL = ("if", "then", "else")


def _key(s) -> str:
    return json.dumps(s, sort_keys=True, default=str)


def _dedupe(branches: list) -> list:
    seen, out = set(), []
    for b in branches:
        k = _key(b)
        if k not in seen:
            seen.add(k)
            out.append(b)
    return out


def shape(s: dict):
    """(kind, branches): kind is a combinator, "not", "if" or None for a plain schema."""
    parts = []
    rest = {k: v for k, v in s.items() if k not in META and k not in COMBINERS and k != "not"
            and k not in _CONDITIONAL}
    if rest:
        parts.append(rest)
    for k in COMBINERS:
        if isinstance(s.get(k), list):
            parts.append(("comb", k))
    if "not" in s:
        parts.append(("not", None))
    if "if" in s:
        parts.append(("if", None))
    if not any(isinstance(p, tuple) for p in parts):
        return None, None
    if len(parts) == 1:
        kind, k = parts[0]
        return (k, _dedupe(s[k])) if kind == "comb" else (kind, None)
    branches = []
    for p in parts:
        if not isinstance(p, tuple):
            branches.append(p)
        elif p[0] == "comb":
            branches.append({p[1]: s[p[1]]})
        elif p[0] == "not":
            branches.append({"not": s["not"]})
        else:
            branches.append({k: s[k] for k in _CONDITIONAL if k in s})
    return "allOf", _dedupe(branches)


def _matching(edges: set, n_left: int) -> int:
    """The size of a maximum matching of a bipartite graph (augmenting paths)."""
    match_right: dict = {}

    def augment(i, seen):
        for (a, j) in edges:
            if a != i or j in seen:
                continue
            seen.add(j)
            if j not in match_right or augment(match_right[j], seen):
                match_right[j] = i
                return True
        return False

    return sum(1 for i in range(n_left) if augment(i, set()))


def _array_parts(s: dict):
    """(items for all, tuple items, additional items) in draft 4-7 and 2020-12 spellings."""
    if isinstance(s.get("prefixItems"), list):
        return None, s["prefixItems"], s.get("items")
    items = s.get("items")
    if isinstance(items, list):
        return None, items, s.get("additionalItems")
    return items, [], s.get("additionalItems")


def _empty(s) -> bool:
    return s is None or s is True or s == {}


def _deps(s: dict):
    arrays, schemas = {}, {}
    for key in ("dependencies", "dependentRequired", "dependentSchemas"):
        for name, v in (s.get(key) or {}).items():
            if isinstance(v, list):
                arrays[name] = set(v)
            else:
                schemas[name] = v
    return arrays, schemas


def pattern_for(s: dict, name: str):
    for pattern, ps in (s.get("patternProperties") or {}).items():
        try:
            if re.search(pattern, name):
                return ps
        except re.error:
            continue
    return None


class ShapeRules:
    """Methods of compat_json's checker (self.run, self.fits, self.fail come from there)."""

    def combined(self, w, wroot, r, rroot, path) -> bool:
        """True when the pair was a combined, `not` or conditional shape (and is now checked)."""
        wk, wb = shape(w)
        rk, rb = shape(r)
        if wk is None and rk is None:
            return False
        if wk == rk == "not":
            if not self.fits(r["not"], rroot, w["not"], wroot):
                self.fail("NOT_TYPE_EXTENDED", f"{path}/not",
                          "the reader excludes instances the writer's `not` allowed")
            return True
        if wk == rk == "if":
            self.conditional(w, wroot, r, rroot, path)
            return True
        w_sum, r_sum = wk in COMBINERS, rk in COMBINERS
        if w_sum and r_sum:
            self.both_combined(wk, wb, wroot, rk, rb, rroot, path)
            return True
        if r_sum and len(rb) == 1:
            self.run(w, wroot, rb[0], rroot, f"{path}/{rk}/0")
            return True
        if w_sum and len(wb) == 1:
            self.run(wb[0], wroot, r, rroot, path)
            return True
        if r_sum and rk != "allOf" and any(self.fits(w, wroot, x, rroot) for x in rb):
            return True  # SUM_TYPE_EXTENDED
        if wk == "allOf" and not r_sum and any(self.fits(x, wroot, r, rroot) for x in wb):
            return True  # PRODUCT_TYPE_NARROWED
        self.fail("TYPE_CHANGED", path, f"the writer is {_kind_text(wk)}, the reader {_kind_text(rk)}")
        return True

    def both_combined(self, wk, wb, wroot, rk, rb, rroot, path) -> None:
        if wk != rk and not (rk == "anyOf" or (len(wb) == 1 and len(rb) == 1) or (len(wb) == 1 and rk == "oneOf")
                             or (len(rb) == 1 and wk == "allOf")):
            self.fail("COMBINED_TYPE_CHANGED", path, f"{wk} changed to {rk}")
            return
        if len(wb) > len(rb) and wk in ("anyOf", "oneOf"):
            self.fail("SUM_TYPE_NARROWED", f"{path}/{wk}",
                      f"the reader's {rk} has {len(rb)} branches, the writer's {wk} {len(wb)}")
        if len(wb) < len(rb) and rk == "allOf":
            self.fail("PRODUCT_TYPE_EXTENDED", f"{path}/{rk}",
                      f"the reader's allOf has {len(rb)} branches, the writer's {wk} {len(wb)}")
        edges = {(i, j) for i, x in enumerate(wb) for j, y in enumerate(rb) if self.fits(x, wroot, y, rroot)}
        if _matching(edges, len(wb)) < min(len(wb), len(rb)):
            self.fail("COMBINED_TYPE_SUBSCHEMAS_CHANGED", f"{path}/{wk}",
                      f"the writer's {wk} branches cannot each be read by a different branch of the reader's {rk}")

    def conditional(self, w, wroot, r, rroot, path) -> None:
        if _key(w.get("if")) != _key(r.get("if")):
            self.fail("TYPE_CHANGED", f"{path}/if", "the condition changed")
            return
        for k in ("then", "else"):
            self.run(w.get(k, True), wroot, r.get(k, True), rroot, f"{path}/{k}")

    def arrays(self, w, wroot, r, rroot, path) -> None:
        w_all, w_tuple, w_add = _array_parts(w)
        r_all, r_tuple, r_add = _array_parts(r)
        if r_all is not None:
            if w_all is None and w_tuple:
                self.fail("SCHEMA_ADDED", f"{path}/items", "the reader has an items schema, the writer a tuple")
            else:
                self.run({} if w_all is None else w_all, wroot, r_all, rroot, f"{path}/items")
        for i in range(min(len(w_tuple), len(r_tuple))):
            self.run(w_tuple[i], wroot, r_tuple[i], rroot, f"{path}/items/{i}")
        for i in range(len(r_tuple), len(w_tuple)):  # items the reader drops
            p = f"{path}/items/{i}"
            if _empty(r_add):
                continue  # ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL
            if r_add is not False:
                if not self.fits(w_tuple[i], wroot, r_add, rroot):
                    self.fail("ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", p,
                              f"item {i} is gone and the reader's additionalItems does not read it")
            elif w_tuple[i] is not False:
                self.fail("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL", p,
                          f"item {i} is gone and the reader's content model is closed")
        for i in range(len(w_tuple), len(r_tuple)):  # items the reader adds
            p = f"{path}/items/{i}"
            if _empty(w_add):
                if not _empty(r_tuple[i]):
                    self.fail("ITEM_ADDED_TO_OPEN_CONTENT_MODEL", p,
                              f"item {i} is new and the writer's content model is open")
            elif w_add is not False and not self.fits(w_add, wroot, r_tuple[i], rroot):
                self.fail("ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", p,
                          f"item {i} is new and does not read the writer's additionalItems")
        self.additional_items(w_add, wroot, r_add, rroot, f"{path}/additionalItems")

    def additional_items(self, w_add, wroot, r_add, rroot, path) -> None:
        if (w_add is False) != (r_add is False):
            if r_add is False:
                self.fail("ADDITIONAL_ITEMS_REMOVED", path, "the reader allows no additional items, the writer did")
            return
        if w_add is False:
            return
        ws, rs = (None if _empty(w_add) else w_add), (None if _empty(r_add) else r_add)
        if ws is None and rs is not None:
            self.fail("ADDITIONAL_ITEMS_NARROWED", path, "the reader constrains additional items the writer allowed")
        elif ws is not None and rs is not None:
            self.run(ws, wroot, rs, rroot, path)

    def dependencies(self, w, wroot, r, rroot, path) -> None:
        wa, ws = _deps(w)
        ra, rs = _deps(r)
        for name, req in ra.items():
            p = f"{path}/dependencies/{name}"
            old = wa.get(name)
            if old is None:
                self.fail("DEPENDENCY_ARRAY_ADDED", p, f"the reader requires {sorted(req)} with '{name}'")
            elif req > old:
                self.fail("DEPENDENCY_ARRAY_EXTENDED", p, f"the reader also requires {sorted(req - old)} with '{name}'")
            elif not req <= old:
                self.fail("DEPENDENCY_ARRAY_CHANGED", p, f"'{name}' requires {sorted(req)}, was {sorted(old)}")
        for name, schema in rs.items():
            p = f"{path}/dependencies/{name}"
            if name not in ws:
                if not _empty(schema):
                    self.fail("DEPENDENCY_SCHEMA_ADDED", p, f"the reader adds a dependent schema for '{name}'")
            else:
                self.run(ws[name], wroot, schema, rroot, p)

    def patterns(self, w, wroot, r, rroot, path, w_open: bool) -> None:
        wp, rp = w.get("patternProperties") or {}, r.get("patternProperties") or {}
        r_ap = r.get("additionalProperties", True)
        for pattern, rs in rp.items():
            p = f"{path}/patternProperties/{pattern}"
            if pattern in wp:
                self.run(wp[pattern], wroot, rs, rroot, p)
            elif w_open and not _empty(rs):
                self.fail("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", p,
                          f"pattern property {pattern!r} is new and the writer's content model is open")
        for pattern, ws in wp.items():
            if pattern in rp:
                continue
            p = f"{path}/patternProperties/{pattern}"
            if r_ap is False and ws is not False:
                self.fail("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", p,
                          f"pattern property {pattern!r} is gone and the reader's content model is closed")
            elif isinstance(r_ap, dict) and r_ap != {}:
                self.run(ws, wroot, r_ap, rroot, p)

    def property_names(self, w, wroot, r, rroot, path, w_names: list, w_closed: bool) -> None:
        rn = r.get("propertyNames")
        if _empty(rn):
            return
        p = f"{path}/propertyNames"
        if w_closed:
            import jsonschema

            bad = [n for n in w_names if not jsonschema.Draft7Validator(rn).is_valid(n)]
            if bad:
                self.fail("PROPERTY_NAMES_NARROWED", p, f"the reader's propertyNames refuse {bad}")
            return
        wn = w.get("propertyNames")
        if not self.fits({"type": "string"} if _empty(wn) else wn, wroot, rn, rroot):
            self.fail("PROPERTY_NAMES_NARROWED", p, "the reader's propertyNames refuse names the writer allowed")


def _kind_text(kind) -> str:
    return {None: "a plain schema", "not": "a `not` schema", "if": "a conditional schema"}.get(kind, f"an {kind}")

"""JSON Schema compatibility, by the rules Confluent documents for its registry.

Asked as: is every instance the writer schema accepts also accepted by the
reader schema? The rules, by Confluent's names:
- types: the reader may widen (integer -> number, one type -> several), not
  narrow or change (TYPE_NARROWED, TYPE_CHANGED);
- open and closed content models: a property the reader adds is fine when the
  writer was closed (additionalProperties false) and breaks when the writer was
  open (PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL: old data may hold anything under
  that name), unless the writer's additionalProperties schema fits it; a
  property the reader drops is fine when the reader is open and breaks when it is
  closed (PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL);
- a property the reader newly requires breaks (REQUIRED_ATTRIBUTE_ADDED);
- closing the content model breaks (ADDITIONAL_PROPERTIES_REMOVED /
  ADDITIONAL_PROPERTIES_NARROWED);
- bounds: a maximum, maxLength, maxItems or maxProperties added or lowered, a
  minimum, minLength, minItems or minProperties added or raised, a pattern or
  multipleOf added or changed, uniqueItems turned on: all break;
- enum values removed (ENUM_ARRAY_NARROWED) or an enum added; const changed;
- combined schemas, `not`, `if`/`then`/`else`, tuples, dependencies, patternProperties and
  propertyNames: compat_json_shapes.py;
- `$ref` resolves within the schema (#/definitions, #/$defs) and to references.
"""
from __future__ import annotations

from pylog.registry.compat_json_shapes import ShapeRules, pattern_for

_NUM_UPPER = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_OBJECT_KEYS = ("additionalProperties", "required", "patternProperties", "dependencies", "dependentRequired",
                "dependentSchemas", "propertyNames")
_ARRAY_KEYS = ("items", "prefixItems", "additionalItems")
_NUM_LOWER = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")


def _types(s: dict):
    t = s.get("type")
    if t is None:
        return None
    return {t} if isinstance(t, str) else set(t)


def _closed(s) -> bool:
    return isinstance(s, dict) and s.get("additionalProperties") is False


class _Check(ShapeRules):
    def __init__(self, reader, writer):
        self.r_root, self.w_root = reader.obj, writer.obj
        self.r_refs = getattr(reader, "ref_objs", {}) or {}
        self.w_refs = getattr(writer, "ref_objs", {}) or {}
        self.out: list[str] = []
        self.seen: set = set()

    def fail(self, kind: str, path: str, text: str) -> None:
        self.out.append(f"{kind} at '{path or '#'}': {text}")

    def deref(self, s, root, refs, depth=0):
        while isinstance(s, dict) and isinstance(s.get("$ref"), str) and depth < 32:
            ref = s["$ref"]
            base, _, pointer = ref.partition("#")
            doc = root if not base else refs.get(base)
            if doc is None:
                return s, root
            root = doc
            node = doc
            for part in [p for p in pointer.split("/") if p]:
                part = part.replace("~1", "/").replace("~0", "~")
                node = node.get(part) if isinstance(node, dict) else None
                if node is None:
                    return s, root
            s = node
            depth += 1
        return s, root

    def run(self, w, wroot, r, rroot, path: str) -> None:
        w, wroot = self.deref(w, wroot, self.w_refs)
        r, rroot = self.deref(r, rroot, self.r_refs)
        if w == r and wroot is self.w_root and rroot is self.r_root:
            return
        pair = (id(w), id(r))
        if pair in self.seen:
            return
        self.seen.add(pair)
        if r is True or r == {}:
            return
        if w is False:
            return
        if r is False:
            self.fail("SCHEMA_NARROWED", path, "the reader accepts nothing")
            return
        if w is True:
            w = {}
        if not isinstance(w, dict) or not isinstance(r, dict):
            return
        if self.combined(w, wroot, r, rroot, path):
            return
        self._type(w, r, path)
        self._bounds(w, r, path)
        self._enum(w, r, path)
        self._object(w, wroot, r, rroot, path)
        self._array(w, wroot, r, rroot, path)

    def fits(self, w, wroot, r, rroot) -> bool:
        sub = _Check.__new__(_Check)
        sub.__dict__.update(self.__dict__, out=[], seen=set(self.seen))
        sub.run(w, wroot, r, rroot, "")
        return not sub.out

    def _type(self, w, r, path):
        wt, rt = _types(w), _types(r)
        if rt is None:
            return
        if wt is None:
            self.fail("TYPE_NARROWED", f"{path}/type", f"the reader allows only {sorted(rt)}")
            return
        missing = {t for t in wt if t not in rt and not (t == "integer" and "number" in rt)}
        if missing:
            kind = "TYPE_CHANGED" if not (wt & rt) else "TYPE_NARROWED"
            self.fail(kind, f"{path}/type", f"the writer's {sorted(missing)} is not in the reader's {sorted(rt)}")

    def _bounds(self, w, r, path):
        for k in _NUM_UPPER:
            if k in r and (k not in w or _num(r[k]) < _num(w[k])):
                self.fail(k.upper() + ("_ADDED" if k not in w else "_DECREASED"), f"{path}/{k}",
                          f"{k} {w.get(k)} -> {r[k]}")
        for k in _NUM_LOWER:
            if k in r and (k not in w or _num(r[k]) > _num(w[k])):
                self.fail(k.upper() + ("_ADDED" if k not in w else "_INCREASED"), f"{path}/{k}",
                          f"{k} {w.get(k)} -> {r[k]}")
        if "pattern" in r and r["pattern"] != w.get("pattern"):
            self.fail("PATTERN_ADDED" if "pattern" not in w else "PATTERN_CHANGED", f"{path}/pattern",
                      f"pattern {w.get('pattern')!r} -> {r['pattern']!r}")
        if "multipleOf" in r:
            wm = w.get("multipleOf")
            if wm is None or _num(wm) % _num(r["multipleOf"]) != 0:
                self.fail("MULTIPLE_OF_ADDED" if wm is None else "MULTIPLE_OF_CHANGED", f"{path}/multipleOf",
                          f"multipleOf {wm} -> {r['multipleOf']}")
        if r.get("uniqueItems") is True and w.get("uniqueItems") is not True:
            self.fail("UNIQUE_ITEMS_ADDED", f"{path}/uniqueItems", "the reader requires unique items")

    def _enum(self, w, r, path):
        if "enum" in r:
            if "enum" not in w and "const" not in w:
                self.fail("ENUM_ARRAY_NARROWED", f"{path}/enum", "the reader adds an enum")
            else:
                wvals = w["enum"] if "enum" in w else [w["const"]]
                gone = [v for v in wvals if v not in r["enum"]]
                if gone:
                    self.fail("ENUM_ARRAY_NARROWED", f"{path}/enum", f"values {gone} are no longer allowed")
        if "const" in r and (w.get("const", object()) != r["const"]) and w.get("enum") != [r["const"]]:
            self.fail("CONST_CHANGED", f"{path}/const", f"const {w.get('const')!r} -> {r['const']!r}")

    def _object(self, w, wroot, r, rroot, path):
        wp, rp = w.get("properties") or {}, r.get("properties") or {}
        if not wp and not rp and not any(k in w or k in r for k in _OBJECT_KEYS):
            return
        w_ap, r_ap = w.get("additionalProperties", True), r.get("additionalProperties", True)
        w_open = (w_ap is True or w_ap == {}) and not w.get("patternProperties")
        for name, rs in rp.items():
            p = f"{path}/properties/{name}"
            covering = pattern_for(w, name)
            if name in wp:
                self.run(wp[name], wroot, rs, rroot, p)
            elif covering is not None:
                if not self.fits(covering, wroot, rs, rroot):
                    self.fail("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", p,
                              f"property '{name}' is new and does not read what the writer's patternProperties allowed")
            elif w_ap is False:
                continue  # OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL
            elif isinstance(w_ap, dict) and w_ap != {}:
                self.run(w_ap, wroot, rs, rroot, p)
            elif not (rs is True or rs == {}):
                self.fail("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", p,
                          f"property '{name}' is new and the writer's content model is open")
        for name, ws in wp.items():
            if name in rp:
                continue
            p = f"{path}/properties/{name}"
            covering = pattern_for(r, name)
            if covering is not None:
                if not self.fits(ws, wroot, covering, rroot):
                    self.fail("PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", p,
                              f"property '{name}' is gone and the reader's patternProperties do not read it")
            elif r_ap is False:
                if ws is not False:
                    self.fail("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", p,
                              f"property '{name}' is gone and the reader's content model is closed")
            elif isinstance(r_ap, dict) and r_ap != {}:
                self.run(ws, wroot, r_ap, rroot, p)
        added = [x for x in r.get("required", ()) if x not in (w.get("required") or ())]
        if added:
            self.fail("REQUIRED_ATTRIBUTE_ADDED", f"{path}/required", f"newly required: {added}")
        if r_ap is False and w_ap is not False:
            self.fail("ADDITIONAL_PROPERTIES_REMOVED", f"{path}/additionalProperties",
                      "the reader's content model is closed, the writer's open")
        elif isinstance(r_ap, dict) and r_ap != {} and w_ap is not False:
            if w_ap is True or w_ap == {}:
                self.fail("ADDITIONAL_PROPERTIES_NARROWED", f"{path}/additionalProperties",
                          "the reader constrains additional properties the writer allowed freely")
            else:
                self.run(w_ap, wroot, r_ap, rroot, f"{path}/additionalProperties")
        self.patterns(w, wroot, r, rroot, path, w_open)
        self.dependencies(w, wroot, r, rroot, path)
        self.property_names(w, wroot, r, rroot, path, list(wp), w_ap is False and not w.get("patternProperties"))

    def _array(self, w, wroot, r, rroot, path):
        if any(k in w or k in r for k in _ARRAY_KEYS):
            self.arrays(w, wroot, r, rroot, path)


def _num(v):
    return v if isinstance(v, (int, float)) else float("inf")


def incompatibilities(reader, writer) -> list[str]:
    """Why `reader` (a JsonSchema) does not accept every instance `writer` accepts; [] when it does."""
    c = _Check(reader, writer)
    c.run(writer.obj, c.w_root, reader.obj, c.r_root, "#")
    return c.out

"""Avro compatibility: can a reader schema read what a writer schema wrote?

The rules are the Avro specification's schema resolution, as Avro's
SchemaCompatibility reports them (and Confluent's registry with it):
- primitives match themselves; a writer's int is read as long, float or double,
  long as float or double, float as double, string as bytes and bytes as string;
- records match by unqualified name (or a reader alias); each reader field is
  found in the writer by name or alias and its type checked, or must have a
  default (READER_FIELD_MISSING_DEFAULT_VALUE); writer fields the reader lacks
  are skipped;
- enums match by name, and each writer symbol must be a reader symbol unless
  the reader has a default (MISSING_ENUM_SYMBOLS);
- fixed types match by name and size; arrays by items, maps by values;
- a writer union: each branch must be readable; a reader union: some branch must
  read the writer's type (MISSING_UNION_BRANCH);
- logical types do not change the resolution (their underlying types do).
Named types resolve through namespaces and references; recursive types are
checked once per pair.
"""
from __future__ import annotations

PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
NAMED = {"record", "error", "enum", "fixed"}
PROMOTIONS = {"int": {"long", "float", "double"}, "long": {"float", "double"}, "float": {"double"},
              "string": {"bytes"}, "bytes": {"string"}}


def _full(name: str, ns: str | None) -> str:
    return name if "." in name or not ns else f"{ns}.{name}"


class _Names:
    """Full name -> (node, namespace of its contents) for every named type of a schema."""

    def __init__(self, roots):
        self.by_name: dict = {}
        for r in roots:
            self._walk(r, None)

    def _walk(self, node, ns):
        if isinstance(node, list):
            for b in node:
                self._walk(b, ns)
        elif isinstance(node, dict):
            t = node.get("type")
            if t in NAMED and isinstance(node.get("name"), str):
                full = _full(node["name"], node.get("namespace", ns) if "." not in node["name"] else None)
                inner = full.rpartition(".")[0] or None
                self.by_name[full] = (node, inner)
                if t in ("record", "error"):
                    for f in node.get("fields", ()):
                        self._walk(f.get("type"), inner)
            elif t == "array":
                self._walk(node.get("items"), ns)
            elif t == "map":
                self._walk(node.get("values"), ns)
            elif isinstance(t, (dict, list)):
                self._walk(t, ns)

    def resolve(self, node, ns):
        """(kind, node, ns): kind is a primitive name, record/enum/fixed/array/map, or union."""
        while True:
            if isinstance(node, list):
                return "union", node, ns
            if isinstance(node, str):
                if node in PRIMITIVES:
                    return node, node, ns
                hit = self.by_name.get(_full(node, ns)) or self.by_name.get(node)
                if hit is None:
                    return "unknown:" + node, node, ns
                node, ns = hit
                continue
            t = node.get("type")
            if isinstance(t, (dict, list)):
                node = t
                continue
            if t in PRIMITIVES:
                return t, node, ns
            if t in NAMED:
                full = _full(node["name"], node.get("namespace", ns) if "." not in node["name"] else None)
                hit = self.by_name.get(full)
                return ("record" if t == "error" else t), node, (hit[1] if hit else ns)
            if t in ("array", "map"):
                return t, node, ns
            if isinstance(t, str):
                node = t
                continue
            return "unknown", node, ns


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _names_match(r: dict, w: dict) -> bool:
    rn, wn = _short(r.get("name", "")), _short(w.get("name", ""))
    return rn == wn or wn in {_short(a) for a in r.get("aliases", ())}


class _Check:
    def __init__(self, reader, writer):
        self.rn = _Names([*getattr(reader, "ref_objs", []), reader.obj])
        self.wn = _Names([*getattr(writer, "ref_objs", []), writer.obj])
        self.seen: set = set()
        self.out: list[str] = []

    def fail(self, kind: str, path: str, text: str) -> None:
        self.out.append(f"{kind} at '{path or '/'}': {text}")

    def run(self, r, rns, w, wns, path: str) -> None:
        rk, rnode, rns = self.rn.resolve(r, rns)
        wk, wnode, wns = self.wn.resolve(w, wns)
        if wk == "union":
            for i, b in enumerate(wnode):
                self.run(rnode if rk == "union" else r, rns, b, wns, f"{path}/{i}")
            return
        if rk == "union":
            branch = self._pick_branch(rnode, rns, wk, wnode)
            if branch is None:
                self.fail("MISSING_UNION_BRANCH", path,
                          f"the reader's union has no branch for the writer's {_describe(wk, wnode)}")
                return
            self.run(branch, rns, wnode, wns, path)
            return
        if rk in PRIMITIVES and wk in PRIMITIVES:
            if rk != wk and rk not in PROMOTIONS.get(wk, ()):
                self.fail("TYPE_MISMATCH", path, f"reader type {rk} does not match writer type {wk}")
            return
        if rk != wk:
            self.fail("TYPE_MISMATCH", path,
                      f"reader type {_describe(rk, rnode)} does not match writer type {_describe(wk, wnode)}")
            return
        if rk == "array":
            self.run(rnode.get("items"), rns, wnode.get("items"), wns, f"{path}/items")
        elif rk == "map":
            self.run(rnode.get("values"), rns, wnode.get("values"), wns, f"{path}/values")
        elif rk in ("record", "enum", "fixed"):
            if not _names_match(rnode, wnode):
                self.fail("NAME_MISMATCH", f"{path}/name",
                          f"expected name {wnode.get('name')!r}, found {rnode.get('name')!r}")
                return
            pair = (id(rnode), id(wnode))
            if pair in self.seen:
                return
            self.seen.add(pair)
            getattr(self, "_" + rk)(rnode, rns, wnode, wns, path)
        elif rk.startswith("unknown"):
            self.fail("TYPE_MISMATCH", path, f"unknown reader type {rnode!r}")

    def _record(self, r, rns, w, wns, path):
        wfields = {f.get("name"): f for f in w.get("fields", ())}
        for i, rf in enumerate(r.get("fields", ())):
            wf = wfields.get(rf.get("name"))
            if wf is None:
                for a in rf.get("aliases", ()):
                    wf = wfields.get(a)
                    if wf is not None:
                        break
            if wf is None:
                if "default" not in rf:
                    self.fail("READER_FIELD_MISSING_DEFAULT_VALUE", f"{path}/fields/{i}",
                              f"field '{rf.get('name')}' has no default value and is missing in the writer's schema")
                continue
            self.run(rf.get("type"), rns, wf.get("type"), wns, f"{path}/fields/{i}/type")

    def _enum(self, r, rns, w, wns, path):
        missing = [s for s in w.get("symbols", ()) if s not in set(r.get("symbols", ()))]
        if missing and "default" not in r:
            self.fail("MISSING_ENUM_SYMBOLS", f"{path}/symbols",
                      f"the reader's enum {r.get('name')!r} lacks the writer's symbols {missing}")

    def _fixed(self, r, rns, w, wns, path):
        if r.get("size") != w.get("size"):
            self.fail("FIXED_SIZE_MISMATCH", f"{path}/size",
                      f"expected fixed size {w.get('size')}, found {r.get('size')}")

    def _pick_branch(self, branches, rns, wk, wnode):
        # the first branch of the same kind (and name for named types), else the first promotion
        resolved = [(b, *self.rn.resolve(b, rns)) for b in branches]
        for b, k, node, _ in resolved:
            if k == wk and (k not in ("record", "enum", "fixed") or _names_match(node, wnode)):
                return b
        for b, k, node, _ in resolved:
            if wk in PRIMITIVES and k in PROMOTIONS.get(wk, ()):
                return b
        return None


def _describe(kind: str, node) -> str:
    if kind in ("record", "enum", "fixed") and isinstance(node, dict):
        return f"{kind} {node.get('name')}"
    return kind


def incompatibilities(reader, writer) -> list[str]:
    """Why `reader` (an AvroSchema) cannot read data written with `writer`; [] when it can."""
    c = _Check(reader, writer)
    c.run(reader.obj, None, writer.obj, None, "")
    return c.out

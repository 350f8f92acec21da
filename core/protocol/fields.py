"""A struct's fields as declared data: Field, version ranges, defaults (the codec compiles them)."""
from __future__ import annotations

from pylog.core.protocol.types import Array, Prim, Struct

MAX_VERSION = 0x7FFF


class _Missing:
    def __repr__(self):
        return "MISSING"


MISSING = _Missing()


def parse_versions(spec) -> tuple[int, int] | None:
    """"3+" -> (3, 32767), "3-7" -> (3, 7), "5" -> (5, 5), "none"/None -> None."""
    if spec is None or spec == "none":
        return None
    if isinstance(spec, tuple):
        return spec
    spec = str(spec).strip()
    if spec.endswith("+"):
        return int(spec[:-1]), MAX_VERSION
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo), int(hi)
    return int(spec), int(spec)


class Field:
    """One field of a struct.

    type: a Prim, Array(...), Struct(...), or a list of Fields (array of struct).
    versions: where the field exists; nullable: where it may be null;
    tag: tagged-field number (the field then lives in the tagged section in
    the versions given by `tagged`, default = `versions`); default: the value
    used when the field is absent from an encoded dict or from the version.
    """

    __slots__ = ("name", "type", "versions", "nullable", "tag", "tagged", "default")

    def __init__(self, name, type, versions="0+", nullable=None, tag=None, tagged=None, default=MISSING):
        if isinstance(type, list):
            type = Array(type)
        self.name = name
        self.type = type
        self.versions = parse_versions(versions)
        self.nullable = parse_versions(nullable)
        self.tag = tag
        self.tagged = parse_versions(tagged) if tagged is not None else (self.versions if tag is not None else None)
        self.default = default

    def present(self, version: int) -> bool:
        """The field exists at `version`."""
        v = self.versions
        return v is not None and v[0] <= version <= v[1]

    def is_tagged(self, version: int) -> bool:
        """The field lives in the tagged section at `version`."""
        t = self.tagged
        return t is not None and t[0] <= version <= t[1]

    def is_nullable(self, version: int) -> bool:
        """The field may be null at `version`."""
        n = self.nullable
        return n is not None and n[0] <= version <= n[1]

    def __repr__(self):
        return f"Field({self.name!r}, {self.type!r})"


def default_of(field: Field):
    """A fresh default value for a field (lists and dicts are new objects)."""
    d = field.default
    t = field.type
    if d is not MISSING:
        if isinstance(d, list):
            return list(d)
        return d
    if isinstance(t, Prim):
        return t.default
    if isinstance(t, Array):
        return []
    if isinstance(t, Struct):
        return defaults_dict(t.fields)
    raise TypeError(t)


def defaults_dict(fields) -> dict:
    """A struct with every field at its default."""
    return {f.name: default_of(f) for f in fields}

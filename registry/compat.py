"""Compatibility levels and the checkers per schema type.

A checker answers the problems found when `reader` reads data written with
`writer` (an empty list: compatible). BACKWARD asks the new schema to read the
old ones' data, FORWARD the old ones to read the new one's, FULL both; the
_TRANSITIVE levels check every live version, the others only the latest.
"""
from __future__ import annotations

LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")
DEFAULT_LEVEL = "BACKWARD"


def checker(schema_type: str):
    if schema_type == "AVRO":
        from pylog.registry.compat_avro import incompatibilities
    elif schema_type == "JSON":
        from pylog.registry.compat_json import incompatibilities
    else:
        from pylog.registry.compat_protobuf import incompatibilities
    return incompatibilities


def check(level: str, new, olds: list) -> list[str]:
    """Messages saying why `new` (a parsed schema) breaks `level` against `olds` (oldest
    first); [] when it does not. Schemas of another type are always incompatible."""
    level = level.upper()
    if level == "NONE" or not olds:
        return []
    against = olds if level.endswith("_TRANSITIVE") else olds[-1:]
    backward = level.startswith(("BACKWARD", "FULL"))
    forward = level.startswith(("FORWARD", "FULL"))
    out: list[str] = []
    for old in reversed(against):
        if old.schema_type != new.schema_type:
            out.append(f"Incompatible schema type: the new schema is {new.schema_type}, "
                       f"the old one {old.schema_type}")
            continue
        fn = checker(new.schema_type)
        if backward:
            out += [f"{m} (the new schema cannot read data written with the old one)" for m in fn(new, old)]
        if forward:
            out += [f"{m} (the old schema cannot read data written with the new one)" for m in fn(old, new)]
    return out

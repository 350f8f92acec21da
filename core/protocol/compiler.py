"""Compile a declared struct at one version into generated decode/encode functions.

Walking a schema per message costs a Python loop and a dispatch per field;
instead each (struct, version, flexible) is turned into straight-line Python
once and cached: consecutive fixed-size fields become a single precompiled
struct.Struct unpack/pack, strings and arrays call small helpers, nested
structs call their own generated functions.

Generated signatures:
    decode(buf: memoryview, pos: int, end: int) -> (dict, next_pos)
    encode(d: dict, out: bytearray, parts: list | None) -> None
`parts` is only used by record-set fields holding a file-slice object
(zero-copy fetch responses); see codec.encode_response_parts.
"""
from __future__ import annotations

import struct
import threading
import uuid

from pylog.core.protocol import types as T
from pylog.core.protocol.fields import MISSING, Field, default_of
from pylog.core.protocol.types import Array, Prim, Struct

__all__ = ["compile_decoder", "compile_encoder", "compile_struct", "generated_source"]

_NS: dict = {
    "_Trunc": T.Truncated,
    "_ruv": T.read_uvarint,
    "_rvl": T.read_varlong,
    "_rs": T.read_string,
    "_rb": T.read_bytes,
    "_rr": T.read_records,
    "_ws": T.write_string,
    "_wb": T.write_bytes,
    "_wr": T.write_records,
    "_wuv": T.write_uvarint,
    "_vlb": T.varlong_bytes,
    "_ub": T.uuid_bytes,
    "_mkuuid": T.make_uuid,
    "_i32f": struct.Struct(">i").unpack_from,
    "_pi32": struct.Struct(">i").pack,
    "_unpack_from": struct.unpack_from,
    "_pack": struct.pack,
    "_MISS": MISSING,
}
_CACHE: dict = {}
_SOURCES: dict = {}
_counter = [0]
# Clients compile lazily from several threads (e.g. a heartbeat thread); the
# cache entry is written before the generated code exists, so compile under a lock.
_LOCK = threading.RLock()


def _const(value) -> str:
    name = f"_K{len(_NS)}"
    _NS[name] = value
    return name


def _lit(value) -> str:
    """A Python expression evaluating to a fresh copy of a default value."""
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if value == value and value not in (float("inf"), float("-inf")) else _const(value)
    if isinstance(value, uuid.UUID):
        return "_K_ZU" if value.int == 0 else _const(value)
    if isinstance(value, list):
        return "[]" if not value else f"list({_const(tuple(value))})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_lit(v)}" for k, v in value.items()) + "}"
    return _const(value)


_NS["_K_ZU"] = T.ZERO_UUID
_SMALL_ARRAYS = 16


def _fixed(field: Field) -> bool:
    t = field.type
    return isinstance(t, Prim) and t.fmt is not None


def compile_decoder(fields, version: int, flexible: bool):
    """The decode function of a struct at one version, generated once and cached."""
    with _LOCK:
        return _NS[_struct_fn(DECODE, fields, version, flexible)]


def compile_encoder(fields, version: int, flexible: bool):
    """The encode function of a struct at one version, generated once and cached."""
    with _LOCK:
        return _NS[_struct_fn(ENCODE, fields, version, flexible)]


def compile_struct(fields, version: int, flexible: bool):
    """(decode, encode) functions for a struct at one version, generated once and cached."""
    return compile_decoder(fields, version, flexible), compile_encoder(fields, version, flexible)


def generated_source(fields, version: int, flexible: bool) -> str:
    """The generated Python of one struct (debugging aid; nested structs have their own)."""
    with _LOCK:
        names = [_struct_fn(kind, fields, version, flexible) for kind in (DECODE, ENCODE)]
        return "\n".join(_SOURCES[n] for n in names)


# Each direction is generated on its own: a client encodes requests and decodes responses
# only, so it compiles half the code it would for both (compiling is most of a short
# command's protocol work).
DECODE, ENCODE = "d", "e"


def _struct_fn(kind, fields, version, flexible) -> str:
    """The name in _NS of the `kind` (DECODE or ENCODE) function of a struct at one version."""
    key = (id(fields), version, flexible, kind)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    _counter[0] += 1
    n = _counter[0]
    name = f"_{kind}{n}"
    _CACHE[key] = name
    # Keep the field list alive so its id() is never reused by another list.
    _NS[f"_F{n}"] = fields
    src = (_gen_decoder if kind == DECODE else _gen_encoder)(name, fields, version, flexible)
    _SOURCES[name] = src
    exec(compile(src, f"<pylog.protocol struct {n} v{version}>", "exec"), _NS)
    return name


# --- decoder ------------------------------------------------------------------

def _split(fields, version, flexible):
    regular, tagged = [], []
    for i, f in enumerate(fields):
        if not f.present(version):
            continue
        if flexible and f.is_tagged(version):
            tagged.append((i, f))
        elif f.tag is not None and not flexible:
            # A tagged-only field in a non-flexible version does not exist.
            continue
        else:
            regular.append((i, f))
    tagged.sort(key=lambda p: p[1].tag)
    return regular, tagged


# the generated code's reader of each length-prefixed and each varint primitive
_SIZED_READERS = {"string": "_rs", "bytes": "_rb", "records": "_rr"}
_VARINT_READERS = {"varint": "_rvl", "uvarint": "_ruv"}


# a nullable struct: a marker byte, then the struct when present
_READ_NULLABLE_STRUCT = """\
if {pos} >= {end}: raise _Trunc('struct marker past the end')
if buf[{pos}] {null_test}:
    {var} = None; {pos} += 1
else:
    {var}, {pos} = {dn}(buf, {pos} + 1, {end})"""
_WRITE_NULLABLE_STRUCT = """\
if {var} is None:
    {out} += {null_marker}
else:
    {out} += b'\\x01'
    {en}({var}, {out}, {parts})"""


def _emit(lines: list, pad: str, template: str, **names) -> None:
    """Append a template's lines, indented by `pad`, with `names` filled in."""
    lines.extend(pad + line for line in template.format(**names).splitlines())


def _prim_read(t: Prim, var, posv, endv, compact, nullable) -> list[str]:
    """The generated lines that read one primitive into `var`."""
    if t.fmt is not None:
        s = _const(struct.Struct(">" + t.fmt))
        out = [f"{var}, = {s}.unpack_from(buf, {posv}); {posv} += {t.size}"]
        return out + [f"{var} = _mkuuid({var})"] if t is T.UUID else out
    if t.kind in _SIZED_READERS:
        return [f"{var}, {posv} = {_SIZED_READERS[t.kind]}(buf, {posv}, {endv}, {compact}, {nullable})"]
    if t.kind in _VARINT_READERS:
        return [f"{var}, {posv} = {_VARINT_READERS[t.kind]}(buf, {posv})"]
    raise TypeError(t)


def _gen_read(lines, ind, var, field, version, flexible, posv, endv):
    t, nullable, pad, C = field.type, field.is_nullable(version), " " * ind, flexible
    if isinstance(t, Prim):
        lines.extend(pad + line for line in _prim_read(t, var, posv, endv, C, nullable))
        return
    if isinstance(t, Struct):
        dn = _struct_fn(DECODE, t.fields, version, flexible)
        if not nullable:
            lines.append(f"{pad}{var}, {posv} = {dn}(buf, {posv}, {endv})")
            return
        # Kafka marks a nullable struct with one int8: -1 null, 1 present; a tagged one
        # with an unsigned varint: 0 null, 1 present.
        _emit(lines, pad, _READ_NULLABLE_STRUCT, pos=posv, end=endv, var=var, dn=dn,
              null_test="== 0" if field.is_tagged(version) else ">= 128")
        return
    if not isinstance(t, Array):
        raise TypeError(t)
    if C:
        lines.append(f"{pad}_n, {posv} = _ruv(buf, {posv}); _n -= 1")
    else:
        lines.append(f"{pad}_n, = _i32f(buf, {posv}); {posv} += 4")
    lines.append(f"{pad}if _n < 0:")
    if nullable:
        lines.append(f"{pad}    if _n != -1: raise _Trunc('negative array length')")
        lines.append(f"{pad}    {var} = None")
    else:
        lines.append(f"{pad}    raise _Trunc('null array for a non-nullable field')")
    lines.append(f"{pad}else:")
    pad2 = pad + "    "
    lines.append(f"{pad2}if _n > {endv} - {posv}: raise _Trunc('array count exceeds the remaining bytes')")
    elem = t.elem
    if isinstance(elem, list):
        dn = _struct_fn(DECODE, elem, version, flexible)
        lines.append(f"{pad2}{var} = []; _ap = {var}.append")
        lines.append(f"{pad2}for _ in range(_n):")
        lines.append(f"{pad2}    _x, {posv} = {dn}(buf, {posv}, {endv}); _ap(_x)")
    elif isinstance(elem, Prim) and elem.fmt is not None and elem is not T.UUID:
        lines.append(f"{pad2}{var} = list(_unpack_from('>%d{elem.fmt}' % _n, buf, {posv})); {posv} += _n * {elem.size}")
    else:
        sub = Field("_elem", elem)
        lines.append(f"{pad2}{var} = []; _ap = {var}.append")
        lines.append(f"{pad2}for _ in range(_n):")
        _gen_read(lines, ind + 8, "_x", sub, version, flexible, posv, endv)
        lines.append(f"{pad2}    _ap(_x)")


def _gen_decoder(name, fields, version, flexible):
    regular, tagged = _split(fields, version, flexible)
    lines = [f"def {name}(buf, pos, end):"]
    run = []

    def flush():
        if not run:
            return
        fmt = ">" + "".join(f.type.fmt for _, f in run)
        s = _const(struct.Struct(fmt))
        size = struct.calcsize(fmt)
        targets = ", ".join(f"v{i}" for i, _ in run)
        lines.append(f"    {targets}, = {s}.unpack_from(buf, pos); pos += {size}")
        for i, f in run:
            if f.type is T.UUID:
                lines.append(f"    v{i} = _mkuuid(v{i})")
        run.clear()

    for i, f in regular:
        if _fixed(f):
            run.append((i, f))
            continue
        flush()
        _gen_read(lines, 4, f"v{i}", f, version, flexible, "pos", "end")
    flush()
    if flexible:
        for i, f in tagged:
            lines.append(f"    v{i} = {_lit(default_of(f))}")
        # Almost every struct carries no tagged fields: one byte, 0.
        lines.append("    if buf[pos] == 0:")
        lines.append("        pos += 1")
        lines.append("    else:")
        lines.append("      _nt, pos = _ruv(buf, pos)")
        lines.append("      for _ in range(_nt):")
        lines.append("        _tag, pos = _ruv(buf, pos)")
        lines.append("        _sz, pos = _ruv(buf, pos)")
        lines.append("        _te = pos + _sz")
        lines.append("        if _te > end: raise _Trunc('tagged field runs past the end')")
        kw = "if"
        for i, f in tagged:
            lines.append(f"        {kw} _tag == {f.tag}:")
            lines.append("            _p = pos")
            _gen_read(lines, 12, f"v{i}", f, version, flexible, "_p", "_te")
            lines.append("            if _p > _te: raise _Trunc('tagged field longer than its size')")
            kw = "elif"
        lines.append("        pos = _te")
    present = {i for i, _ in regular} | {i for i, _ in tagged}
    items = []
    for i, f in enumerate(fields):
        items.append(f"{f.name!r}: " + (f"v{i}" if i in present else _lit(default_of(f))))
    lines.append("    return {" + ", ".join(items) + "}, pos")
    return "\n".join(lines) + "\n"


# --- encoder ------------------------------------------------------------------

def _prim_write(t: Prim, var, outv, partsv, compact, nullable) -> str:
    """The generated line that writes one primitive `var`."""
    if t.fmt is not None:
        return f"{outv} += {_const(struct.Struct('>' + t.fmt))}.pack({f'_ub({var})' if t is T.UUID else var})"
    if t.kind in ("string", "bytes"):
        return f"{'_ws' if t.kind == 'string' else '_wb'}({outv}, {var}, {compact}, {nullable})"
    if t.kind == "records":
        return f"_wr({outv}, {var}, {compact}, {partsv})"
    if t.kind == "varint":
        return f"{outv} += _vlb({var})"
    if t.kind == "uvarint":
        return f"_wuv({outv}, {var})"
    raise TypeError(t)


def _gen_write(lines, ind, var, field, version, flexible, outv, partsv):
    t, nullable, pad, C = field.type, field.is_nullable(version), " " * ind, flexible
    if isinstance(t, Prim):
        lines.append(pad + _prim_write(t, var, outv, partsv, C, nullable))
        return
    if isinstance(t, Struct):
        en = _struct_fn(ENCODE, t.fields, version, flexible)
        if nullable:
            _emit(lines, pad, _WRITE_NULLABLE_STRUCT, var=var, out=outv, en=en, parts=partsv,
                  null_marker="b'\\x00'" if field.is_tagged(version) else "b'\\xff'")
        else:
            lines.append(f"{pad}{en}({var} if {var} is not None else {{}}, {outv}, {partsv})")
        return
    if not isinstance(t, Array):
        raise TypeError(t)
    null = "b'\\x00'" if C else "b'\\xff\\xff\\xff\\xff'"
    lines.append(f"{pad}if {var} is None:")
    if nullable:
        lines.append(f"{pad}    {outv} += {null}")
        lines.append(f"{pad}else:")
        pad2 = pad + "    "
    else:
        lines.append(f"{pad}    {var} = ()")
        pad2 = pad
    if C:
        lines.append(f"{pad2}_n = len({var}) + 1")
        lines.append(f"{pad2}if _n < 128: {outv}.append(_n)")
        lines.append(f"{pad2}else: _wuv({outv}, _n)")
    else:
        lines.append(f"{pad2}{outv} += _pi32(len({var}))")
    elem = t.elem
    if isinstance(elem, list):
        en = _struct_fn(ENCODE, elem, version, flexible)
        lines.append(f"{pad2}for _e in {var}: {en}(_e, {outv}, {partsv})")
    elif isinstance(elem, Prim) and elem.fmt is not None and elem is not T.UUID:
        # Precompiled Structs for the common small counts (replica lists, partition ids).
        tab = _const(tuple(struct.Struct(f">{n}{elem.fmt}") for n in range(_SMALL_ARRAYS)))
        lines.append(f"{pad2}{outv} += ({tab}[len({var})].pack(*{var}) if len({var}) < {_SMALL_ARRAYS} "
                     f"else _pack('>%d{elem.fmt}' % len({var}), *{var}))")
    else:
        sub = Field("_elem", elem)
        lines.append(f"{pad2}for _e in {var}:")
        _gen_write(lines, len(pad2) + 4, "_e", sub, version, flexible, outv, partsv)


def _gen_encoder(name, fields, version, flexible):
    regular, tagged = _split(fields, version, flexible)
    lines = [f"def {name}(d, out, parts):", "    g = d.get"]
    run = []

    def flush():
        if not run:
            return
        fmt = ">" + "".join(f.type.fmt for f in run)
        s = _const(struct.Struct(fmt))
        args = []
        for f in run:
            expr = f"g({f.name!r}, {_lit(default_of(f))})"
            args.append(f"_ub({expr})" if f.type is T.UUID else expr)
        lines.append(f"    out += {s}.pack({', '.join(args)})")
        run.clear()

    for _, f in regular:
        if _fixed(f):
            run.append(f)
            continue
        flush()
        lines.append(f"    _x = g({f.name!r}, {_lit(default_of(f))})")
        _gen_write(lines, 4, "_x", f, version, flexible, "out", "parts")
    flush()
    if flexible:
        if not tagged:
            lines.append("    out.append(0)")
        else:
            lines.append("    _tg = []")
            for _, f in tagged:
                lines.append(f"    _x = g({f.name!r}, _MISS)")
                lines.append(f"    if _x is not _MISS and _x != {_lit(default_of(f))}:")
                lines.append("        _t = bytearray()")
                _gen_write(lines, 8, "_x", f, version, flexible, "_t", "None")
                lines.append(f"        _tg.append(({f.tag}, _t))")
            lines.append("    _wuv(out, len(_tg))")
            lines.append("    for _k, _t in _tg:")
            lines.append("        _wuv(out, _k); _wuv(out, len(_t)); out += _t")
    return "\n".join(lines) + "\n"

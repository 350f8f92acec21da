"""Where the broker's code names an API, read with `ast`: by its name as a string
("Produce"), by its schema constant (`produce.PRODUCE`, `from ...apis.meta import API_VERSIONS`),
or by a bare key number compared with an api key or listed in a table of three or more keys."""
from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

from pylog.core.protocol import SCHEMAS, Api, apis
from support.source_ast import parse_file


def schema_constants() -> dict[str, dict[str, str]]:
    """Per module of pylog.core.protocol.apis: {constant name: API name}."""
    out = {}
    for m in pkgutil.iter_modules(apis.__path__):
        mod = importlib.import_module(f"{apis.__name__}.{m.name}")
        out[mod.__name__] = {k: v.name for k, v in vars(mod).items() if isinstance(v, Api)}
    return out


def _api_key_side(n: ast.expr) -> bool:
    text = ast.unparse(n)
    return text.endswith("api_key") or text.endswith(".key")


def mentions(path: Path, root: Path) -> list[tuple[str, str, int, str]]:
    """(API name, file, line, how: "name" or "number") for each place the file names an API."""
    rel = path.relative_to(root).as_posix()
    consts = schema_constants()
    names = {api.name for api in SCHEMAS.values()}
    keys = {api.key: api.name for api in SCHEMAS.values()}
    by_constant = {api.name.upper() + "KEY" for api in SCHEMAS.values()}  # PRODUCE_KEY, _SASL_HANDSHAKE_KEY
    tree = parse_file(path)
    modules, bound = {}, {}  # local alias -> apis module; local name -> API name
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module:
            for a in n.names:
                if n.module == apis.__name__ and f"{n.module}.{a.name}" in consts:
                    modules[a.asname or a.name] = f"{n.module}.{a.name}"
                elif n.module in consts and a.name in consts[n.module]:
                    bound[a.asname or a.name] = consts[n.module][a.name]
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names:
            out.append((n.value, rel, n.lineno, "name"))
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in modules:
            api = consts[modules[n.value.id]].get(n.attr)
            if api:
                out.append((api, rel, n.lineno, "name"))
        elif isinstance(n, ast.Name) and n.id in bound:
            out.append((bound[n.id], rel, n.lineno, "name"))
        elif isinstance(n, ast.Assign):  # KEY = 17, or A_KEY, B_KEY = 0, 1
            pairs = [(t, n.value) for t in n.targets]
            for t, v in list(pairs):
                if isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple):
                    pairs += list(zip(t.elts, v.elts))
            out += [(keys.get(v.value, f"key {v.value}"), rel, n.lineno, "number") for t, v in pairs
                    if isinstance(t, ast.Name) and t.id.strip("_").upper().replace("_", "") in by_constant
                    and isinstance(v, ast.Constant) and type(v.value) is int]
        elif isinstance(n, ast.Compare) and any(map(_api_key_side, [n.left, *n.comparators])):
            for side in [n.left, *n.comparators]:
                elts = side.elts if isinstance(side, (ast.Set, ast.Tuple, ast.List)) else [side]
                out += [(keys.get(e.value, f"key {e.value}"), rel, n.lineno, "number") for e in elts
                        if isinstance(e, ast.Constant) and type(e.value) is int]
        elif isinstance(n, (ast.Dict, ast.Set)):
            ks = n.keys if isinstance(n, ast.Dict) else n.elts
            ints = [k.value for k in ks if isinstance(k, ast.Constant) and type(k.value) is int]
            if len(ints) >= 3 and len(ints) == len(ks) and all(k in keys for k in ints):
                out += [(keys[k], rel, n.lineno, "number") for k in ints]
    return out

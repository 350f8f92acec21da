"""The graph of pylog's modules, from every import in the source (module level, inside functions,
under `if TYPE_CHECKING:`), and the checks over it: cycles, and imports that go up the layers.

A module is `pylog.<folder>[.<sub>...]`, read from the product folders (support.product). An
import names the most specific module it reaches: `from pylog.a import b` is an edge to
`pylog.a.b` when that is a module, else to `pylog.a`; a relative import is resolved first.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from support.product import product_parts
from support.source_ast import parse_file


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    kind: str  # "module", "function" or "type-checking"

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} (line {self.line}, {self.kind})"


def modules(root: Path) -> dict[str, Path]:
    """Every product module by its dotted name."""
    out = {}
    for part in product_parts(root):
        for p in sorted((root / part).rglob("*.py")):
            parts = list(p.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out["pylog." + ".".join(parts)] = p
    return out


def _imports(tree: ast.Module):
    """(node, kind) for each import statement, kind by where it sits."""
    def walk(node, kind):
        for child in ast.iter_child_nodes(node):
            k = kind
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                k = "function"
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test) and kind == "module":
                k = "type-checking"
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, k
            yield from walk(child, k)
    yield from walk(tree, "module")


def graph(root: Path) -> list[Edge]:
    """Every import of one pylog module by another, self-imports left out."""
    mods = modules(root)

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges = []
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node, kind in _imports(parse_file(path)):
            targets = []
            if isinstance(node, ast.Import):
                targets = [known(a.name) for a in node.names if a.name.startswith("pylog.")]
            else:
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up) + ("." + base if base else "")
                if base == "pylog" or base.startswith("pylog."):
                    targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else known(base) for a in node.names]
            edges += [Edge(name, t, node.lineno, kind) for t in dict.fromkeys(targets) if t and t != name]
    return edges


def cycles(edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    succ: dict[str, list[str]] = {}
    for e in edges:
        succ.setdefault(e.source, []).append(e.target)
        succ.setdefault(e.target, [])
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    for start in sorted(succ):
        if start in index:
            continue
        work = [(start, iter(succ[start]))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(succ[w])))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def rank(name: str, layers: list[tuple[str, ...]]) -> int | None:
    """The layer of a module: the index (0 = top) of the layer naming its longest prefix."""
    best, found = -1, None
    for i, prefixes in enumerate(layers):
        for p in prefixes:
            if (name == p or name.startswith(p + ".")) and len(p) > best:
                best, found = len(p), i
    return found


def upward(edges: list[Edge], layers: list[tuple[str, ...]]) -> list[Edge]:
    """The imports from a module to one of a higher layer (both modules placed in `layers`)."""
    out = []
    for e in edges:
        a, b = rank(e.source, layers), rank(e.target, layers)
        if a is not None and b is not None and b < a:
            out.append(e)
    return out

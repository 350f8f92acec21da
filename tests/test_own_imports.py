"""Each module imports what it uses: `pkg.sub.name` where `pkg.sub` is a submodule needs an
import of `pkg.sub` (or of something inside it) in the same module.

Another module having imported the submodule first is luck, not a contract: `import importlib`
then `importlib.util.find_spec(...)` works in a checkout, where the editable install's finder
has imported importlib.util at start-up, and fails in a plain install with "module 'importlib'
has no attribute 'util'". Whether a package binds a submodule by itself is asked of a fresh
interpreter without `site` (no .pth file, no editable finder), one per package."""
from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from support.product import PRODUCT, ROOT
from support.source_ast import parse_file


def _imported(tree: ast.Module) -> tuple[dict[str, str], set[str]]:
    """(name bound by `import` -> module, every dotted module the source imports)."""
    bound, imported = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                imported.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
                if a.asname:
                    bound[a.asname] = a.name
                else:
                    bound.setdefault(parts[0], parts[0])
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            parts = node.module.split(".")
            imported.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
            imported.update(f"{node.module}.{a.name}" for a in node.names)
    return bound, imported


def _chain(node: ast.Attribute) -> list[str] | None:
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(names)]


def _is_submodule(name: str) -> bool:
    parent = name.rpartition(".")[0]
    try:
        spec = importlib.util.find_spec(parent)
        return bool(spec and spec.submodule_search_locations) and importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def unimported_submodules(path: Path, root: Path = ROOT) -> list[tuple[str, str, str]]:
    """(where, package, attribute) for each `pkg.sub` the module uses without importing `pkg.sub`."""
    tree = parse_file(path)
    bound, imported = _imported(tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
            continue
        chain = _chain(node)
        if not chain or chain[0] not in bound or len(chain) < 2:
            continue
        module = bound[chain[0]]
        for attr in chain[1:]:
            sub = f"{module}.{attr}"
            if sub not in imported and _is_submodule(sub):
                out.append((f"{path.relative_to(root)}:{node.lineno}", module, attr))
                break
            module = sub
    return sorted(set(out))


def binds_by_itself(pairs: set[tuple[str, str]]) -> dict[tuple[str, str], bool]:
    """Whether `import pkg` alone, in an interpreter without site, gives `pkg.attr`."""
    view = Path(os.environ.get("TMPDIR", "/tmp")) / f"pylog-own-imports-{os.getpid()}"
    (view / "pylog").mkdir(parents=True, exist_ok=True)
    import pylog.core  # the parts, wherever they are installed (a checkout or site-packages)
    for part in PRODUCT:
        link = view / "pylog" / part
        if not link.exists():
            link.symlink_to(Path(pylog.core.__path__[0]).parent / part)
    sites = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")]
    paths = [str(view), *dict.fromkeys([*sites, *(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))])]
    out = {}
    for pkg in sorted({p for p, _ in pairs}):
        attrs = sorted(a for p, a in pairs if p == pkg)
        code = f"import sys, json; sys.path[:0] = {paths!r}; import {pkg} as m; print(json.dumps([hasattr(m, a) for a in {attrs!r}]))"
        r = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        out.update({(pkg, a): ok for a, ok in zip(attrs, json.loads(r.stdout))})
    return out


def test_modules_import_the_submodules_they_use():
    found = [u for top in PRODUCT for p in sorted((ROOT / top).rglob("*.py")) for u in unimported_submodules(p)]
    given = binds_by_itself({(pkg, attr) for _, pkg, attr in found})
    bad = [f"{where}: {pkg}.{attr} used, `import {pkg}.{attr}` missing" for where, pkg, attr in found
           if not given[(pkg, attr)]]
    assert not bad, "\n".join(bad)


def test_the_rule_finds_what_it_names(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import importlib\nimport json\nimport email.mime\nimport importlib.machinery\n"
                     "def f(m):\n"
                     "    importlib.util.find_spec(m)\n"   # not imported here: found
                     "    json.decoder.JSONDecodeError\n"  # a submodule json binds itself: a candidate, then cleared
                     "    email.mime.text\n"               # email.mime imported, email.mime.text not: found
                     "    importlib.machinery.PathFinder\n")  # imported: fine
    found = unimported_submodules(probe, tmp_path)
    assert {(pkg, attr) for _, pkg, attr in found} == {("email.mime", "text"), ("importlib", "util"), ("json", "decoder")}
    given = binds_by_itself({(pkg, attr) for _, pkg, attr in found})
    assert given == {("importlib", "util"): False, ("json", "decoder"): True, ("email.mime", "text"): False}

"""The house rules a reader relies on, checked over the product tree with `ast`.

Private names: a name with one leading underscore belongs to the object or
module that defines it. In product code (cli/, commands/, core/, storage/,
testing/):
- `x._name` (read, written or called) is allowed only where `x` is `self`,
  `cls` or `super()`: an object reaches its own privates, never another's;
- a module's own private functions and constants are called by bare name,
  never imported by another module (`from pylog.a import _helper`);
- allowed exceptions, each for a reason: the public API of named tuples
  (`_replace`, `_make`, `_fields`, `_asdict`), and pyspark's `_jsc`, `_jvm`,
  `_gateway`, the only way its Python API reaches the JVM. (The optional compiled
  extensions, `<package>._speedups`, are imported by no statement: each package's
  fastpath module loads its own by name; tests/test_fastpath_every_twin.py checks.)
Dunder names (`__dict__`, `__class__`) are not private.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from support.product import PRODUCT
from support.source_ast import parse_file

pytestmark = pytest.mark.source  # the checkout's text only (tests/support/tiers.py)

ROOT = Path(__file__).resolve().parent.parent
NAMEDTUPLE_API = {"_replace", "_make", "_fields", "_asdict"}
PYSPARK_JVM = {"_jsc", "_jvm", "_gateway"}


def product_modules():
    for top in PRODUCT:
        yield from sorted((ROOT / top).rglob("*.py"))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _own(value: ast.expr) -> bool:
    if isinstance(value, ast.Name) and value.id in ("self", "cls"):
        return True
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super"


def private_uses(path: Path, root: Path = ROOT) -> list[str]:
    """`file:line: what` for each use of another object's or module's private name."""
    tree = parse_file(path)
    rel = path.relative_to(root)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and not _own(node.value):
            if node.attr in NAMEDTUPLE_API:
                continue
            if node.attr in PYSPARK_JVM and rel.parts[:1] == ("spark",):
                continue
            out.append((node.lineno, f"{rel}:{node.lineno}: {ast.unparse(node)}"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pylog"):
            for alias in node.names:
                if _private(alias.name):
                    out.append((node.lineno, f"{rel}:{node.lineno}: from {node.module} import {alias.name}"))
    return [text for _, text in sorted(out)]


def test_no_module_reaches_into_another_objects_privates():
    found = [u for p in product_modules() for u in private_uses(p)]
    assert not found, "private names used from outside their owner:\n" + "\n".join(found)


def test_the_rule_catches_what_it_names(tmp_path):
    """The checker itself: each forbidden form is found, each allowed one passes."""
    (tmp_path / "commands").mkdir()
    probe = tmp_path / "commands" / "probe.py"
    src = (
        "from pylog.core.errors import _hidden\n"  # another module's private: found
        "class A:\n"
        "    def f(self, other):\n"
        "        self._mine()\n"                    # own: allowed
        "        super()._base()\n"                 # own (base class): allowed
        "        other._theirs()\n"                 # another object's: found
        "        other.__dict__\n"                  # dunder: allowed
        "        return other._replace(x=1)\n"      # namedtuple API: allowed
        "def g(mod):\n"
        "    return mod._CONST\n"                   # another module's constant: found
    )
    probe.write_text(src)
    found = private_uses(probe, tmp_path)
    assert [u.split(": ", 1)[1] for u in found] == [
        "from pylog.core.errors import _hidden", "other._theirs", "mod._CONST"]


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(parse_file(path)):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_group_coordinator_and_migration_depend_one_way():
    """The group coordinator owns the migration; the migration and both protocols' modules
    never import the coordinator facade, and the KIP-848 coordinator does not import the
    migration (the facade hands it in as a `ProtocolChanges`)."""
    groups = ROOT / "broker" / "groups"
    facade = "pylog.broker.groups.coordinator"
    migration = "pylog.broker.groups.migration"
    assert migration in _imports(groups / "coordinator.py")
    for p in (groups / "migration.py", groups / "classic.py", groups / "consumer" / "coordinator.py"):
        assert facade not in _imports(p), p
    assert migration not in _imports(groups / "consumer" / "coordinator.py")
    assert migration not in _imports(groups / "classic.py")

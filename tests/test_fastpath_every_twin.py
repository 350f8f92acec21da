"""Every function of the compiled extensions has a pure-Python twin chosen in one place, in the
package that owns its extension, and a property test that names it; and every extension is listed
where the tests and the wheel check look.

Read from the sources, so it holds whether or not the extensions are built: the extensions setup.py
declares (name -> C sources), the functions each extension's C files register (their PyMethodDef
tables), the `fastpath.load("<package>._speedups")` of each owner package's fastpath module, the
`fastpath.choose(name, twin)` calls of the product tree (each through the fastpath module of the
package it imports it from), and the tests/test_fastpath_*.py modules. CRC-32C is the one
exception: its reference is the crc32c package, chosen in core/records/crc.py
(tests/test_fastpath_crc.py compares them).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from support.extensions import declared, folder
from support.native import EXTENSIONS
from support.product import PRODUCT
from support.source_ast import parse

ROOT = Path(__file__).resolve().parent.parent
REFERENCE_PACKAGES = {"crc32c": "core/records/crc.py"}  # compiled function -> where its reference is chosen
_METHOD = re.compile(r'\{"(\w+)",\s*\(PyCFunction\)')


def c_sources(root: Path = ROOT) -> list[Path]:
    """Every C file of the product tree that could build a compiled function."""
    return sorted(p for top in PRODUCT if (root / top).is_dir() for p in (root / top).rglob("_speedups*.c"))


def compiled_functions(root: Path = ROOT) -> dict[str, str]:
    """function -> the extension whose method tables register it (from setup.py's sources)."""
    out: dict[str, str] = {}
    for ext, sources in declared(root).items():
        for src in sources:
            for m in _METHOD.findall((root / src).read_text()):
                assert m not in out, f"{m} is registered twice ({out[m]}, {ext})"
                out[m] = ext
    return out


def _owner_of_fastpath(tree: ast.AST) -> str | None:
    """The package whose fastpath module a module imports as `fastpath`, e.g. "pylog.storage"."""
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and any(a.name == "fastpath" and a.asname is None for a in n.names):
            return n.module
    return None


def chosen(root: Path = ROOT) -> dict[str, list[tuple[str, str, str | None]]]:
    """name -> [(module, twin source, the package whose fastpath chose it)] of every
    `fastpath.choose("name", twin)` in the product."""
    out: dict[str, list[tuple[str, str, str | None]]] = {}
    for top in PRODUCT:
        for p in sorted((root / top).rglob("*.py")):
            tree = parse(p.read_text())
            for n in ast.walk(tree):
                if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("fastpath.choose") and n.args \
                        and isinstance(n.args[0], ast.Constant):
                    twin = ast.unparse(n.args[1]) if len(n.args) > 1 else "None"
                    out.setdefault(n.args[0].value, []).append(
                        (p.relative_to(root).as_posix(), twin, _owner_of_fastpath(tree)))
    return out


def loaded(root: Path = ROOT) -> dict[str, str]:
    """extension -> the module whose `load("...")` loads it."""
    out: dict[str, str] = {}
    for top in PRODUCT:
        for p in sorted((root / top).rglob("*.py")):
            for n in ast.walk(parse(p.read_text())):
                if isinstance(n, ast.Call) and ast.unparse(n.func) in ("load", "fastpath.load") and n.args \
                        and isinstance(n.args[0], ast.Constant):
                    out[n.args[0].value] = p.relative_to(root).as_posix()
    return out


def test_every_extension_is_declared_loaded_by_its_owner_and_tested():
    exts = declared()
    assert len(exts) >= 4, exts  # records, client, storage, CLI text
    in_tree = {p.relative_to(ROOT).as_posix() for p in c_sources()}
    assert in_tree == {s for sources in exts.values() for s in sources}, "a C file no extension builds, or the reverse"
    for name, sources in exts.items():
        assert all(s.startswith(folder(name) + "/") for s in sources), f"{name} builds C files of another package"
    assert loaded() == {name: f"{folder(name)}/fastpath.py" for name in exts}, \
        "each extension is loaded by its own package's fastpath module, and only there"
    assert [e.name for e in EXTENSIONS] == list(exts), "tests/support/native.py lists every declared extension"


def test_every_compiled_function_has_one_python_twin_in_its_owner():
    funcs = compiled_functions()
    assert len(funcs) > 20, funcs  # the method tables were read
    choices = chosen()
    missing = sorted(set(funcs) - set(choices) - set(REFERENCE_PACKAGES))
    assert not missing, f"compiled functions no fastpath.choose names: {missing}"
    assert sorted(set(choices) - set(funcs)) == [], "fastpath.choose names a function no extension has"
    twice = {k: v for k, v in choices.items() if len(v) > 1}
    assert not twice, f"chosen in more than one place: {twice}"
    no_twin = {k: v for k, v in choices.items() if v[0][1] == "None"}
    assert not no_twin, f"compiled functions without a pure-Python twin: {no_twin}"
    elsewhere = {k: (v[0][0], v[0][2], funcs[k]) for k, v in choices.items()
                 if f"{v[0][2]}._speedups" != funcs[k] or not v[0][0].startswith(folder(funcs[k]) + "/")}
    assert not elsewhere, f"chosen outside the package that owns its extension: {elsewhere}"
    for name, where in REFERENCE_PACKAGES.items():
        assert name in funcs and f'"{name}"' in (ROOT / where).read_text()


def test_every_compiled_function_is_named_by_a_property_test():
    tests = "".join(p.read_text() for p in sorted((ROOT / "tests").glob("test_fastpath*.py"))
                    if p.name != Path(__file__).name)
    unnamed = sorted(f for f in compiled_functions() if not re.search(rf"\b{f}\b", tests))
    assert not unnamed, f"compiled functions no tests/test_fastpath_*.py names: {unnamed}"


def test_the_checks_see_a_function_without_a_twin_or_outside_its_owner(tmp_path):
    (tmp_path / "storage").mkdir()
    (tmp_path / "setup.py").write_text('EXTENSIONS = {"pylog.storage._speedups": ["storage/_speedups_x.c"]}\n')
    (tmp_path / "storage" / "_speedups_x.c").write_text(
        'static PyMethodDef M[] = {\n    {"fast_a", (PyCFunction)(void (*)(void))a, METH_FASTCALL, ""},\n'
        '    {"fast_b", (PyCFunction)b, METH_O, ""},\n};\n')
    (tmp_path / "storage" / "m.py").write_text(
        "from pylog.storage import fastpath\nfast_a = fastpath.choose('fast_a', None)\n"
        "fast_b = fastpath.choose('fast_b', fast_b_py)\n")
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "n.py").write_text("from pylog.core.records import fastpath\nc = fastpath.choose('fast_c', c_py)\n")
    (tmp_path / "core" / "fastpath.py").write_text("x = load('pylog.storage._speedups')\n")
    assert compiled_functions(tmp_path) == {"fast_a": "pylog.storage._speedups", "fast_b": "pylog.storage._speedups"}
    assert chosen(tmp_path) == {"fast_a": [("storage/m.py", "None", "pylog.storage")],
                                "fast_b": [("storage/m.py", "fast_b_py", "pylog.storage")],
                                "fast_c": [("core/n.py", "c_py", "pylog.core.records")]}
    assert loaded(tmp_path) == {"pylog.storage._speedups": "core/fastpath.py"}  # not storage/fastpath.py: refused
    assert [p.name for p in c_sources(tmp_path)] == ["_speedups_x.c"]

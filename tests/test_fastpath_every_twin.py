"""Every function of the compiled extension has a pure-Python twin chosen in one place, and a
property test that names it.

Read from the sources, so it holds whether or not the extension is built: the functions the C
files register (their PyMethodDef tables), the `fastpath.choose(name, twin)` calls of the product
tree, and the tests/test_fastpath_*.py modules. CRC-32C is the one exception: its reference is the
crc32c package, chosen in core/records/crc.py (tests/test_fastpath_crc.py compares them).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from support.product import PRODUCT
from support.source_ast import parse

ROOT = Path(__file__).resolve().parent.parent
REFERENCE_PACKAGES = {"crc32c": "core/records/crc.py"}  # compiled function -> where its reference is chosen
_METHOD = re.compile(r'\{"(\w+)",\s*\(PyCFunction\)')


def compiled_functions(root: Path = ROOT) -> set[str]:
    """The names the extension's method tables register."""
    return {m for p in sorted(root.glob("*/_speedups*.c")) for m in _METHOD.findall(p.read_text())}


def chosen(root: Path = ROOT) -> dict[str, list[tuple[str, str]]]:
    """name -> [(module, twin source)] of every `fastpath.choose("name", twin)` in the product."""
    out: dict[str, list[tuple[str, str]]] = {}
    for top in PRODUCT:
        for p in sorted((root / top).rglob("*.py")):
            for n in ast.walk(parse(p.read_text())):
                if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("fastpath.choose") and n.args \
                        and isinstance(n.args[0], ast.Constant):
                    twin = ast.unparse(n.args[1]) if len(n.args) > 1 else "None"
                    out.setdefault(n.args[0].value, []).append((p.relative_to(root).as_posix(), twin))
    return out


def test_every_compiled_function_has_one_python_twin():
    funcs = compiled_functions()
    assert len(funcs) > 20, funcs  # the method tables were read
    choices = chosen()
    missing = sorted(funcs - set(choices) - set(REFERENCE_PACKAGES))
    assert not missing, f"compiled functions no fastpath.choose names: {missing}"
    assert sorted(set(choices) - funcs) == [], "fastpath.choose names a function the extension lacks"
    twice = {k: v for k, v in choices.items() if len(v) > 1}
    assert not twice, f"chosen in more than one place: {twice}"
    no_twin = {k: v for k, v in choices.items() if v[0][1] == "None"}
    assert not no_twin, f"compiled functions without a pure-Python twin: {no_twin}"
    for name, where in REFERENCE_PACKAGES.items():
        assert name in funcs and f'"{name}"' in (ROOT / where).read_text()


def test_every_compiled_function_is_named_by_a_property_test():
    tests = "".join(p.read_text() for p in sorted((ROOT / "tests").glob("test_fastpath*.py"))
                    if p.name != Path(__file__).name)
    unnamed = sorted(f for f in compiled_functions() if not re.search(rf"\b{f}\b", tests))
    assert not unnamed, f"compiled functions no tests/test_fastpath_*.py names: {unnamed}"


def test_the_checks_see_a_function_without_a_twin(tmp_path):
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "_speedups_x.c").write_text(
        'static PyMethodDef M[] = {\n    {"fast_a", (PyCFunction)(void (*)(void))a, METH_FASTCALL, ""},\n'
        '    {"fast_b", (PyCFunction)b, METH_O, ""},\n};\n')
    (tmp_path / "core" / "m.py").write_text(
        "from pylog.core import fastpath\nfast_a = fastpath.choose('fast_a', None)\n"
        "fast_b = fastpath.choose('fast_b', fast_b_py)\n")
    assert compiled_functions(tmp_path) == {"fast_a", "fast_b"}
    assert chosen(tmp_path) == {"fast_a": [("core/m.py", "None")], "fast_b": [("core/m.py", "fast_b_py")]}

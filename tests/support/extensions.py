"""The compiled extensions, as setup.py declares them (read from its text: setup.py runs the build
when imported): {"pylog.<package>._speedups": [its C sources]}. The tests that must cover every
extension (the twin and property tests, the wheel check) take the list from here, so a new
extension is checked the day it is declared."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def declared(root: Path = ROOT) -> dict[str, list[str]]:
    """setup.py's EXTENSIONS."""
    for node in ast.parse((root / "setup.py").read_text()).body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["EXTENSIONS"]:
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py declares no EXTENSIONS")


def folder(name: str) -> str:
    """The tree folder of an extension's package: pylog.core.records._speedups -> core/records."""
    parts = name.split(".")
    assert parts[0] == "pylog" and parts[-1] == "_speedups", name
    return "/".join(parts[1:-1])

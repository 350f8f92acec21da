"""What a venv of the install tier needs beside pylog, read from pyproject.toml.

    python .ci/requirements.py core|floors|test [pyproject.toml]

core    the core dependencies, as declared
floors  each core dependency pinned at the floor it declares (name==floor)
test    the core dependencies and the test extra's, with the extras it names (pylog[spark], ...)
        expanded
"""
from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path


def requirements(kind: str, project: dict) -> list[str]:
    core = list(project["dependencies"])
    if kind == "core":
        return core
    if kind == "floors":
        out = []
        for dep in core:
            name, floor = re.match(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9][^,;\s]*)", dep).groups()
            out.append(f"{name}=={floor}")
        return out
    if kind != "test":
        raise SystemExit(f"requirements.py: unknown kind {kind!r} (core, floors or test)")
    deps, todo, seen = core, ["test"], set()
    while todo:
        extra = todo.pop()
        seen.add(extra)
        for dep in project["optional-dependencies"][extra]:
            named = re.match(r"pylog\[([^\]]+)\]", dep)
            if named:
                todo += [e.strip() for e in named.group(1).split(",") if e.strip() not in seen]
            else:
                deps.append(dep)
    return deps


if __name__ == "__main__":
    path = Path(sys.argv[2] if len(sys.argv) > 2 else Path(__file__).parent.parent / "pyproject.toml")
    print("\n".join(requirements(sys.argv[1], tomllib.loads(path.read_text())["project"])))

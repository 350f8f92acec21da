"""The wheel is the product: every module, data file and man page of the source tree, and the
compiled extensions (each setup.py declares), are in it (the install tier, .ci/install-tier, checks its wheels the same way).

The check's own test builds a copy of the tree with a folder the build cannot find (no
__init__.py) and a data file nobody declared, and requires the check to name both."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.extensions import declared, folder
from support.product import ROOT, product_parts
from support.wheel_contents import missing


def build_wheel(src: Path, out: Path, **env: str) -> Path:
    """`pip wheel` of SRC, with this environment's setuptools when it has one (an isolated build
    would ask the package index for setuptools first)."""
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("setuptools") else []
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q", "-w", str(out), str(src)],
                       capture_output=True, text=True, timeout=600, env={**os.environ, "PIP_NO_INPUT": "1", **env})
    assert r.returncode == 0, r.stdout + r.stderr
    wheel, = out.glob("pylog-*.whl")
    return wheel


def copy_tree(dest: Path) -> Path:
    """The files a build reads: the product's folders, setup.py, pyproject.toml, README.md, man/."""
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info", "build")
    for part in (*product_parts(), "man"):
        shutil.copytree(ROOT / part, dest / part, ignore=ignore)
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, dest / name)
    return dest


@pytest.mark.slow
def test_the_wheel_holds_every_module_data_file_man_page_and_the_extension(tmp_path):
    compiler = shutil.which(os.environ.get("CC", "cc")) is not None
    wheel = build_wheel(copy_tree(tmp_path / "src"), tmp_path / "dist")
    assert missing(wheel, compiled=compiler) == []


@pytest.mark.slow
def test_a_folder_or_data_file_the_build_misses_fails_the_check(tmp_path):
    src = copy_tree(tmp_path / "src")
    (src / "core" / "unlisted").mkdir()
    (src / "core" / "unlisted" / "thing.py").write_text("VALUE = 1\n")  # no __init__.py: not a package
    (src / "commands" / "page.html").write_text("<p>read at run time</p>\n")  # not declared as package data
    wheel = build_wheel(src, tmp_path / "dist", PYLOG_NO_EXTENSION="1")
    assert missing(wheel, root=src, compiled=True) == [
        "pylog/commands/page.html", "pylog/core/unlisted/thing.py",
        *(f"pylog/{folder(n)}/_speedups (the compiled extension {n})" for n in declared(src))]

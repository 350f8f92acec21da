"""What pyproject.toml cannot say: the packages, found in the tree, and the optional compiled
fast path, pylog.core._speedups (plain C, see pylog.core.fastpath).

Every top-level folder with an __init__.py (but tests/ and bench/) is a part of pylog and
installs as `pylog.<folder>`, with every subpackage below it; nothing is listed by hand, so a
new folder cannot be left out of the wheel (tests/test_wheel_contents.py). A failed build (no C compiler, no
Python headers) never fails the install: pylog then runs its pure-Python code,
and `pylog --version` says so. PYLOG_NO_EXTENSION=1 skips the build.
"""
import os
import sys
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """build_ext that warns instead of failing: the extension is an optional speed-up."""

    def run(self):
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 - distutils raises several unrelated types here
            self._skip(e)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001
            self._skip(e)

    @staticmethod
    def _skip(e):
        print(f"WARNING: pylog's optional C extension was not built ({e.__class__.__name__}: {e}); "
              "pylog will run its pure-Python implementation", file=sys.stderr)


NOT_PRODUCT = {"tests", "bench", "build", "dist"}


def product_parts(root: Path) -> list[str]:
    """The top-level folders that are packages of pylog."""
    return sorted(d.name for d in root.iterdir() if d.is_dir() and d.name not in NOT_PRODUCT
                  and not d.name.startswith(".") and (d / "__init__.py").is_file())


def packages(root: Path) -> tuple[list[str], dict[str, str]]:
    """Every package as `pylog.<folder>[.<sub>...]`, and where each part's folder is."""
    names, dirs = [], {}
    for part in product_parts(root):
        dirs[f"pylog.{part}"] = part
        names.append(f"pylog.{part}")
        names += [f"pylog.{part}.{sub}" for sub in find_packages(str(root / part))]
    return names, dirs


HERE = Path(__file__).resolve().parent
PACKAGES, PACKAGE_DIR = packages(HERE)

ext_modules = []
if os.environ.get("PYLOG_NO_EXTENSION", "") in ("", "0"):
    ext_modules.append(Extension("pylog.core._speedups", sources=["core/_speedups.c", "core/_speedups_run.c",
                                                                   "core/_speedups_json.c", "core/_speedups_lines.c"],
                                 depends=["core/_speedups_varint.h", "core/_speedups_murmur2.h", "core/_speedups_records.h"],
                                 extra_compile_args=["-O2", "-std=c99"] if os.name != "nt" else []))

setup(packages=PACKAGES, package_dir=PACKAGE_DIR, ext_modules=ext_modules, cmdclass={"build_ext": OptionalBuildExt})

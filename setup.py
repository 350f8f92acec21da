"""What pyproject.toml cannot say: the packages, found in the tree, and the optional compiled
fast path, one extension per owning package (plain C, see pylog.core.fastpath).

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

# The compiled fast path, one extension per package that owns the pure-Python twins it accelerates
# (each package's fastpath.py chooses between them): name -> its C sources. The headers shared by
# several extensions (core/_speedups_*.h) sit in core/, below every owner.
EXTENSIONS = {
    "pylog.core.records._speedups": ["core/records/_speedups.c"],
    "pylog.core.client._speedups": ["core/client/_speedups.c", "core/client/_speedups_frames.c"],
    "pylog.storage._speedups": ["storage/_speedups.c"],
    "pylog.commands._speedups": ["commands/_speedups.c", "commands/_speedups_json.c", "commands/_speedups_lines.c"],
}
SHARED_HEADERS = sorted(str(p.relative_to(HERE)) for p in (HERE / "core").glob("_speedups_*.h"))

ext_modules = []
if os.environ.get("PYLOG_NO_EXTENSION", "") in ("", "0"):
    ext_modules = [Extension(name, sources=sources, depends=SHARED_HEADERS,
                             extra_compile_args=["-O2", "-std=c99"] if os.name != "nt" else [])
                   for name, sources in EXTENSIONS.items()]

setup(packages=PACKAGES, package_dir=PACKAGE_DIR, ext_modules=ext_modules, cmdclass={"build_ext": OptionalBuildExt})

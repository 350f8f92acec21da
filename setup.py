"""The optional compiled fast path: pylog.core._speedups (plain C, see pylog.core.fastpath).

Everything else is declared in pyproject.toml. A failed build (no C compiler, no
Python headers) never fails the install: pylog then runs its pure-Python code,
and `pylog --version` says so. PYLOG_NO_EXTENSION=1 skips the build.
"""
import os
import sys

from setuptools import Extension, setup
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


ext_modules = []
if os.environ.get("PYLOG_NO_EXTENSION", "") in ("", "0"):
    ext_modules.append(Extension("pylog.core._speedups", sources=["core/_speedups.c", "core/_speedups_run.c",
                                                                   "core/_speedups_json.c", "core/_speedups_lines.c"],
                                 depends=["core/_speedups_varint.h", "core/_speedups_murmur2.h", "core/_speedups_records.h"],
                                 extra_compile_args=["-O2", "-std=c99"] if os.name != "nt" else []))

setup(ext_modules=ext_modules, cmdclass={"build_ext": OptionalBuildExt})

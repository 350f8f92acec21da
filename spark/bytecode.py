"""Compiled bytecode for the zips Spark's Python workers import pyspark and pylog from.

Python's zipimport compiles every module of a zip from source, in every Python worker, with no
cache: pyspark's daemon and worker modules (Spark's python/lib/pyspark.zip) cost a worker started
by an executor 1.5 s of CPU, pylog's task modules (the session's pylog.zip) a few tenths more.
A zip may hold a module's bytecode beside its source (`pkg/mod.pyc`), which zipimport takes first,
as a checked hash-based pyc here: zipimport checks it against the zipped source's hash, so it is
used only with the very source it was compiled from and by the Python it was compiled for,
whatever the clocks and time zones of the machines (a timestamp pyc would compare the zip entry's
local time); any other Python compiles the source as before.

- `zipped_pyc`: the pyc for pylog.zip from the bytecode this interpreter already compiled for the
  source (its `__pycache__` or PYTHONPYCACHEPREFIX; nothing is compiled at a session's start).
- `python_dir_with_bytecode`: the python/ folder of pylog's Spark home (session.ensure_spark_home),
  Spark's zips with their modules compiled once for this interpreter (a second and a half).
"""
from __future__ import annotations

import importlib.util
import marshal
import os
import shutil
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

_MAGIC = importlib.util.MAGIC_NUMBER
_CHECKED_HASH = (0b11).to_bytes(4, "little")  # hash-based, check the source


def zipped_pyc(source: Path, source_bytes: bytes) -> bytes | None:
    """The checked hash-based pyc of `source` (whose content is `source_bytes`) from this
    interpreter's cached bytecode, or None when there is none current for it."""
    try:
        cached = importlib.util.cache_from_source(str(source))
        with open(cached, "rb") as f:
            data = f.read()
        st = os.stat(source)
    except (OSError, NotImplementedError, ValueError):
        return None
    if len(data) < 16 or data[:4] != _MAGIC:
        return None
    flags = int.from_bytes(data[4:8], "little")
    digest = importlib.util.source_hash(source_bytes)
    if flags & 0b1:  # already hash-based: current when its hash is the source's
        if data[8:16] != digest:
            return None
    elif (int.from_bytes(data[8:12], "little") != int(st.st_mtime) & 0xFFFFFFFF
          or int.from_bytes(data[12:16], "little") != st.st_size & 0xFFFFFFFF):
        return None  # a timestamp pyc of another version of the source
    return _MAGIC + _CHECKED_HASH + digest + data[16:]


def _pyc(source_bytes: bytes, code) -> bytes:
    return _MAGIC + _CHECKED_HASH + importlib.util.source_hash(source_bytes) + marshal.dumps(code)


def zip_with_bytecode(src: Path, dest: Path, shown: Path | None = None) -> None:
    """A copy of zip `src` at `dest` with each module's bytecode beside it (test modules aside),
    compiled as zipimport would compile it from the zip at `shown` (the path Python finds it at)."""
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
        names = set(zin.namelist())
        for info in zin.infolist():
            data = zin.read(info)
            zout.writestr(info, data)
            name = info.filename
            if not name.endswith(".py") or "/tests/" in name or f"{name}c" in names:
                continue
            try:  # the file name zipimport gives a module it compiles from the zip
                with warnings.catch_warnings():  # a library's invalid escapes are not this run's to say
                    warnings.simplefilter("ignore")
                    code = compile(data, f"{shown or dest}{os.sep}{name}", "exec", dont_inherit=True)
            except (SyntaxError, ValueError):
                continue
            zout.writestr(f"{name}c", _pyc(data, code))
    os.replace(tmp, dest)


def _copy(src: Path, dest: Path) -> None:
    if src.is_dir():
        shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        shutil.copy2(src, dest)


def python_dir_with_bytecode(home: Path, src_python: Path) -> bool:
    """Point `home`/python (a Spark home's) at a folder like Spark's `src_python` whose lib/*.zip
    hold bytecode for this interpreter, made once (python-<cache tag>, swapped in atomically
    for a run that made or uses `home` at the same time). False when it cannot be made."""
    tag = sys.implementation.cache_tag
    if not tag or not (src_python / "lib").is_dir():
        return False
    target, link = home / f"python-{tag}", home / "python"
    try:
        if not target.is_dir():
            tmp = Path(tempfile.mkdtemp(prefix=f".python-{tag}.", dir=home))
            try:
                tmp.chmod(0o755)
                (tmp / "lib").mkdir()
                for entry in src_python.iterdir():  # copies: the folder outlives the install it came from
                    if entry.name != "lib":
                        _copy(entry, tmp / entry.name)
                for entry in (src_python / "lib").iterdir():
                    if entry.suffix == ".zip":
                        zip_with_bytecode(entry, tmp / "lib" / entry.name, link / "lib" / entry.name)
                    else:
                        _copy(entry, tmp / "lib" / entry.name)
                os.rename(tmp, target)
            except OSError:
                if not target.is_dir():
                    raise
            finally:
                shutil.rmtree(tmp, ignore_errors=True)  # left only when another run made it first
        if link.is_symlink() and os.readlink(link) == target.name:
            return True
        if link.exists() and not link.is_symlink():
            return False  # a folder of someone's own: left alone
        new = home / f".python.{os.getpid()}"
        new.unlink(missing_ok=True)
        new.symlink_to(target.name)
        os.replace(new, link)
        return True
    except (OSError, zipfile.BadZipFile):
        return False
